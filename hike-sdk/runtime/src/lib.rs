//! The user-space side of a HIKe VM instance, over libbpf-rs.
//!
//! A [`Runtime`] is one instance rooted at a bpffs directory (default
//! `/sys/fs/bpf/hike`; every call takes the root, so tests and several runtimes
//! coexist). It creates and pins the VM's maps ([`Runtime::init`]), registers HIKe
//! programs under persistent ids ([`Runtime::register_object`]), validates and
//! installs chains ([`Runtime::install_chain`], [`Runtime::replace_chain`]), loads,
//! configures and attaches loaders ([`Runtime::load_loader`],
//! [`Runtime::configure_loader`], [`Runtime::attach_loader`]) and reports
//! [`Runtime::status`]. docs/RUNTIME.md describes the pin layout and guarantees.

pub mod abi;
mod chains;
mod clock;
mod config_flip;
mod error;
pub mod kernel_btf;
mod layout;
mod link;
mod load;
mod loaders;
pub mod map_shape;
pub mod meta;
mod native;
#[cfg(feature = "test-objects")]
pub mod native_testing;
pub mod objects;
mod owner;
mod package_maps;
mod programs;
mod repair;
mod root_safety;
mod runtime;
mod scratch;
pub mod signature;
mod status;
mod sys;
#[cfg(feature = "testing")]
pub mod testing;
mod testrun;
pub mod verifier;
mod verify;
pub mod vm_access;

pub use chains::ChainSpec;
pub use clock::Clock;
pub use error::{Result, RuntimeError};
pub use hike_bytecode::{ChainId, ProgId};
pub use layout::{DEFAULT_ROOT, Layout};
pub use link::AttachMode;
pub use load::object_programs;
pub use loaders::{Attachment, ConfigMapSpec, LoaderInfo, LoaderObject, MapEntry};
pub use native::{NativeInstalled, NativeModule, NativeObject};
pub use package_maps::{FilteredEntries, PackageMap};
pub use programs::{ProgramObject, RegisteredProgram, SharedMaps};
pub use runtime::{InitOptions, Runtime};
pub use scratch::{ScratchPath, ScratchRoot};
pub use signature::Signature;
pub use status::{ChainStatus, Counters, ProgramStatus, Status};
pub use testrun::{ProgramRun, TestRun, TestRunOptions, run_program};
pub use verifier::VerifierFailure;
pub use verify::VerifierStats;
