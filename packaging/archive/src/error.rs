//! What can go wrong packing and unpacking, said so that a person knows what to do.

use std::io;
use std::path::PathBuf;

use ebpkg_spec::types::Sha256Digest;
use ebpkg_spec::{Diagnostics, ManifestError};

/// Why a package directory could not be packed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// `ebpkg.toml` is missing, unreadable or invalid; [`PackError::render`] shows its
    /// diagnostics with source lines.
    #[error(transparent)]
    Manifest(ManifestError),
    #[error("cannot read {}: {cause}", path.display())]
    Io { path: PathBuf, cause: io::Error },
    #[error(
        "{} is a symbolic link; packages hold only regular files and directories. \
         Replace it with a copy of what it points to, or move it out of the package directory",
        path.display()
    )]
    Symlink { path: PathBuf },
    #[error(
        "{} is a {kind}; packages hold only regular files and directories. Move it out of the package directory",
        path.display()
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("the name of {} is not valid UTF-8; rename it, package paths must be UTF-8", path.display())]
    NonUtf8Name { path: PathBuf },
    #[error("the name of {} {problem}; rename it", path.display())]
    BadName { path: PathBuf, problem: &'static str },
    #[error(
        "{item} in ebpkg.toml names `{path}`, which is not a regular file in the package directory; \
         add the file or correct the path"
    )]
    MissingReferenced { item: String, path: String },
    #[error(
        "{item} in ebpkg.toml says the sha256 of `{path}` is {expected}, but the file's is {actual}; \
         rebuild the object or write sha256 = \"{actual}\""
    )]
    PrebuiltMismatch { item: String, path: String, expected: Sha256Digest, actual: Sha256Digest },
    #[error(
        "the package's files add up to more than {limit} bytes, the most a package may hold; \
         move large files (build outputs, test data) out of the package directory"
    )]
    TooLarge { limit: u64 },
    #[error(
        "the package has more than {limit} files, the most a package may hold; \
         move generated or test files out of the package directory"
    )]
    TooManyFiles { limit: u64 },
    /// The archive was built but `unpack` would refuse it (with default limits).
    #[error(
        "the packed archive would be refused when unpacked: {reason}. \
         Highly compressible files (zero-filled data, huge generated tables) are the usual cause; \
         remove them from the package"
    )]
    Unpackable { reason: String },
}

impl PackError {
    /// The error as the CLI prints it: manifest diagnostics with source lines and carets,
    /// other errors as one line.
    pub fn render(&self) -> String {
        match self {
            PackError::Manifest(e) => e.render(),
            other => format!("{other}\n"),
        }
    }
}

/// Why an archive could not be unpacked. Whatever the error, nothing was left behind:
/// neither `dest` nor a temporary directory exists afterwards (except for
/// [`UnpackError::DestinationExists`], where `dest` is what was already there).
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    #[error(
        "the archive's sha256 is {actual}, but {expected} was expected: it is corrupted or was tampered with. \
         Nothing was unpacked; delete the downloaded file and fetch it again"
    )]
    DigestMismatch { expected: Sha256Digest, actual: Sha256Digest },
    /// `dest` exists already. Destinations are content-addressed, so callers usually
    /// treat this as a cache hit.
    #[error("{} already exists; unpacking never overwrites, remove it to unpack again", path.display())]
    DestinationExists { path: PathBuf },
    #[error("cannot write {}: {cause}", path.display())]
    Io { path: PathBuf, cause: io::Error },
    #[error("the archive is not a valid .tar.gz: {detail}")]
    Corrupt { detail: String },
    #[error("archive entry `{path}` {problem}; refusing to unpack it (the archive may be malicious)")]
    UnsafePath { path: String, problem: &'static str },
    #[error("archive entry `{path}` is not under `{prefix}/`, where every entry of this package's archive must be")]
    OutsidePrefix { path: String, prefix: String },
    #[error("archive entry `{path}` is a {kind}; package archives hold only regular files and directories")]
    UnsupportedEntry { path: String, kind: String },
    #[error("archive entry `{path}` appears twice, or both as a file and as a directory")]
    Duplicate { path: String },
    #[error("the archive has more than {limit} entries, the most allowed")]
    TooManyEntries { limit: u64 },
    #[error("archive entry `{path}` is {size} bytes, more than the {limit} bytes a file may hold")]
    FileTooLarge { path: String, size: u64, limit: u64 },
    #[error("the archive is {size} bytes, more than the {limit} bytes an archive may have")]
    ArchiveTooLarge { size: u64, limit: u64 },
    #[error("{} was changed after it was unpacked: {problem}", path.display())]
    TreeModified { path: PathBuf, problem: String },
    #[error("the archive unpacks to more than {limit} bytes, the most allowed")]
    TooLarge { limit: u64 },
    #[error(
        "the archive expands more than {limit} times its compressed size; \
         it looks like a decompression bomb and was not unpacked"
    )]
    CompressionRatio { limit: u64 },
    #[error("the archive has no `{prefix}/ebpkg.toml`, so it is not an ebpkg package")]
    MissingManifest { prefix: String },
    #[error("the archive's ebpkg.toml is invalid:\n{0}")]
    InvalidManifest(Diagnostics),
    #[error(
        "the archive holds package {found}, but {expected} was asked for; \
         the registry or cache returned the wrong archive"
    )]
    WrongPackage { expected: String, found: String },
    #[error("{item} in the archive's ebpkg.toml names `{path}`, which the archive does not contain")]
    MissingReferenced { item: String, path: String },
}
