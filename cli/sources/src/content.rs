//! Content-addressed archive stores, as the file registry and the cache both keep them:
//! `archives/<first 2 hex digits>/<64 hex digits>.tar.gz`.
//!
//! A file's name is its SHA-256, so a file is either complete and correct or detectably
//! wrong; the two-digit directories keep any one directory small.

use std::fs;
use std::io;
use std::path::Path;

use ebpkg_archive::Limits;
use ebpkg_fs::ReadError;
use ebpkg_spec::types::Sha256Digest;

use crate::error::{ErrorKind, Result};

/// The directory of archives under a registry or cache root.
/// Where the archive with this digest lives under `root`.
pub(crate) use ebpkg_spec::cache_layout::archive_file as archive_path;

/// Whether the file at `path` exists and hashes to `digest`. A missing file is
/// `false`; a present but wrong one is `false` too (the caller replaces it), and so
/// is anything that is not a regular file of at most an archive's size (a link to
/// a device, a FIFO, a huge sparse file), which is refused without being read.
pub(crate) fn holds(path: &Path, digest: &Sha256Digest) -> Result<bool> {
    let actual = present(ebpkg_archive::sha256_file(path, Limits::default().max_archive_bytes))?;
    Ok(actual.is_some_and(|actual| actual == *digest))
}

/// The archive at `path` when it is there and hashes to `digest`: read once and
/// hashed once. Missing, wrong, or not a regular file of at most an archive's
/// size (refused without being read) is `None`; the caller replaces it.
pub(crate) fn read_verified(path: &Path, digest: &Sha256Digest) -> Result<Option<ebpkg_archive::VerifiedArchive>> {
    let Some(bytes) = present(ebpkg_fs::read(path, Limits::default().max_archive_bytes))? else { return Ok(None) };
    Ok(ebpkg_archive::VerifiedArchive::check(bytes, digest, &Limits::default()).ok())
}

/// What was read of a file that should be an archive: nothing when it is missing,
/// or is not a regular file of at most an archive's size (said, and left for the
/// caller to replace); an error only when it could not be read.
fn present<T>(read: std::result::Result<T, ReadError>) -> Result<Option<T>> {
    match read {
        Ok(value) => Ok(Some(value)),
        Err(ReadError::NotFound { .. }) => Ok(None),
        Err(e @ (ReadError::NotRegular { .. } | ReadError::TooLarge { .. })) => {
            tracing::warn!("{e}; it is not the archive it is named after");
            Ok(None)
        }
        Err(ReadError::Io { path, cause }) => Err(ErrorKind::Io { action: "read", path, cause }.into()),
    }
}

/// Removes a file that may already be gone.
pub(crate) fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ErrorKind::Io { action: "remove", path: path.to_owned(), cause: e }.into()),
    }
}
