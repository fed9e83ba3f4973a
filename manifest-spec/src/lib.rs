//! The file formats of ebpkg, as SPEC.md describes them: the package manifest
//! (`ebpkg.toml`), the lockfile (`ebpkg.lock`) and registry index lines.
//!
//! Everything here is pure: parsing, validating and writing text. Errors point at
//! `file:line:col` and say how to fix the problem ([`Diagnostic`]).

pub mod attestation;
mod btf;
pub mod cache_layout;
pub mod diagnostic;
pub mod digest;
pub mod id;
pub mod index;
pub mod lockfile;
pub mod manifest;
pub mod names;
pub mod object_items;
pub mod registry_api;
pub mod registry_id;
pub mod schema;
mod toml_input;
pub mod types;

pub use diagnostic::{Diagnostic, Diagnostics};
pub use id::PackageId;
pub use index::{IndexEntry, index_path, index_target};
pub use lockfile::{LockedDependency, LockedPackage, Lockfile};
pub use manifest::{Manifest, ManifestError};
pub use names::{ItemName, PackageName};
pub use registry_id::{RegistryId, RegistryIdError, RegistryKind};
pub use toml_input::{MAX_LOCK_BYTES, MAX_TOML_BYTES};

/// Largest BPF object (prebuilt, compiled or cached) ebpkg reads: as large as any
/// file in a package may be.
pub const MAX_OBJECT_BYTES: u64 = 64 * 1024 * 1024;
