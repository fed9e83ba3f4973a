//! Building HIKe packages: a package's C sources become CO-RE BPF objects for the
//! running kernel, through a content-addressed build cache.
//!
//! ```text
//! Toolchain::detect ─┐
//! Btf::kernel ───────┼─> Builder::new ─> Builder::build(&plan(&package)) ─> Vec<BuiltObject>
//! PackageToBuild ─> plan ┘
//! ```
//!
//! - [`Toolchain`] finds clang (and checks libbpf's headers) and bpftool.
//! - [`Btf`] is the kernel BTF objects are built against; its digest keys the
//!   cached `vmlinux.h` and objects.
//! - [`plan`] turns a manifest into [`BuildUnit`]s, one per (file, hook).
//! - [`Builder::build`] checks prebuilt objects, reuses cached objects (when
//!   they match their digest records, [`cache_record`]) and compiles the rest
//!   in parallel, reporting every failure.
//!
//! Nothing here loads into the kernel; the loader crate takes the objects.
//! README.md explains the flags, the cache key and the cache layout.

mod btf;
mod builder;
mod cache;
mod cache_key;
pub mod cache_record;
mod compile;
mod elf_check;
mod error;
mod plan;
mod rebuild;
mod sdk;
pub mod temps;
mod toolchain;

pub use btf::{Btf, KERNEL_BTF, VmlinuxHeader};
pub use builder::{BuildEvent, Builder, BuiltObject};
pub use cache::object_path;
pub use cache_key::{CacheKeyInput, FORMAT_VERSION, KeyKernel, cache_key};
pub use cache_record::{CacheRecords, Miss, Verified};
pub use elf_check::{EM_BPF, ElfProblem, check_bpf_object, compiler_of};
pub use error::{BtfError, BuildError, CompileError, PackageFileError, PrebuiltMismatch};
pub use plan::{BuildUnit, PackageToBuild, UnitInput, plan};
pub use rebuild::{RebuildOutcome, Rebuilt, ShippedObject};
pub use toolchain::{
    BPFTOOL_ENV, CLANG_ENV, MIN_CLANG_MAJOR, ToolRequest, ToolSource, Toolchain, ToolchainError, ToolchainOptions,
    parse_clang_version, target_arch,
};

/// The HIKe SDK headers this build of ebpkg carries.
pub mod sdk_headers {
    pub use crate::sdk::{HEADERS, InstalledSdk, REFERENCE_VMLINUX_H, digest, install};
}
