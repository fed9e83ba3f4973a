//! Package archives: the `.tar.gz` files that carry an ebpkg package from its author to
//! a registry and from there to every host that installs it.
//!
//! - [`pack`] turns a package directory into a deterministic archive: the same files
//!   always give the same bytes, so the archive's SHA-256 identifies the package
//!   contents and can be signed, locked and cached by.
//! - [`unpack`] checks an archive's digest, then extracts it as untrusted input:
//!   only regular files and directories under `<name>-<version>/`, within [`Limits`],
//!   into a temporary directory renamed into place only when everything succeeded.
//! - [`VerifiedArchive`] is an archive checked once against its digest;
//!   [`unpack_verified`], [`verify_tree_verified`] and [`read_verified`] (the same
//!   checks, in memory, keeping only the files asked for) use it without hashing
//!   it again.
//! - [`tree_digest`] is what a package directory is known by before it is packed:
//!   a digest of the files its archive would hold, streamed, without packing.
//!
//! README.md describes the format and the rules in full.

mod compare;
mod digest;
mod error;
mod extract;
mod limits;
mod memory;
mod pack;
mod paths;
mod references;
mod select;
mod stream;
mod target;
mod tree_digest;
mod unpack;
mod verified;

pub use digest::sha256_file;
pub use error::{PackError, UnpackError};
pub use limits::{Limits, PackLimits};
pub use memory::{PackageFiles, read_verified};
pub use pack::{Packed, PackedFile, pack, pack_with_limits};
pub use paths::archive_prefix;
pub use tree_digest::tree_digest;
pub use unpack::{Unpacked, unpack, unpack_verified, verify_tree, verify_tree_verified};
pub use verified::VerifiedArchive;
