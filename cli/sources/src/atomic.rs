//! Writing files so that readers never see them half-written.
//!
//! A file is written under a temporary name in its final directory, flushed to disk,
//! then renamed over the final name. `rename` within one file system is atomic: a
//! reader opening the path gets the old file or the new one, never a mix, and a crash
//! leaves at worst a stray temporary file (named `.tmp-…`, which nothing reads).

use std::path::Path;

use crate::error::{Error, Result};

/// Prefix of temporary files; no package name, index file or archive starts with it.
pub(crate) use ebpkg_fs::temp::TEMP_PREFIX;

/// A registry's files are readable by everyone and its directories searchable,
/// whatever the umask: a registry written by root is read by other users. A
/// cache's are its user's alone ([`write_private`]).
const FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;

/// Creates `dir` and its missing parents with mode 0755.
pub(crate) fn create_dirs(dir: &Path) -> Result<()> {
    ebpkg_fs::create_dirs(dir, DIR_MODE).map_err(Error::io("create directory", dir))
}

/// Replaces (or creates) `path` with `bytes`, atomically and durably.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    create_dirs(path.parent().unwrap_or(Path::new(".")))?;
    ebpkg_fs::write_atomic(path, bytes, FILE_MODE).map_err(Error::io("write", path))
}

/// Replaces (or creates) the cache file `path` with `bytes`, atomically and
/// durably: mode 0600, its missing directories 0700 (`ebpkg_fs::private`).
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    ebpkg_fs::private::write_private(path, bytes).map_err(Error::io("write", path))
}

/// Creates the cache directory `dir` and its missing parents with mode 0700.
pub(crate) fn create_private_dirs(dir: &Path) -> Result<()> {
    ebpkg_fs::private::create_private_dir(dir).map_err(Error::io("create directory", dir))
}
