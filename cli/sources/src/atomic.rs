//! Writing files so that readers never see them half-written.
//!
//! A file is written under a temporary name in its final directory, flushed to disk,
//! then renamed over the final name. `rename` within one file system is atomic: a
//! reader opening the path gets the old file or the new one, never a mix, and a crash
//! leaves at worst a stray temporary file (named `.tmp-…`, which nothing reads).

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// Prefix of temporary files; no package name, index file or archive starts with it.
pub(crate) const TEMP_PREFIX: &str = ".tmp-";

/// Files are readable by everyone and directories searchable, whatever the umask:
/// a registry (or a cache) written by root is read by other users.
const FILE_MODE: u32 = 0o644;
const DIR_MODE: u32 = 0o755;

/// Creates `dir` and its missing parents with mode 0755.
pub(crate) fn create_dirs(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dirs(parent)?;
    }
    match fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(DIR_MODE))
            .map_err(Error::io("set the permissions of", dir)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(ErrorKind::Io { action: "create directory", path: dir.to_owned(), cause: e }.into()),
    }
}

/// Replaces (or creates) `path` with `bytes`, atomically and durably.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dirs(dir)?;
    let mut temp =
        tempfile::Builder::new().prefix(TEMP_PREFIX).tempfile_in(dir).map_err(Error::io("create a file in", dir))?;
    temp.as_file()
        .set_permissions(fs::Permissions::from_mode(FILE_MODE))
        .map_err(Error::io("set the permissions of", temp.path()))?;
    temp.write_all(bytes).map_err(Error::io("write", temp.path()))?;
    // Data before rename: otherwise a crash right after the rename can leave the new
    // name pointing at an empty file on some file systems.
    temp.as_file().sync_all().map_err(Error::io("flush", temp.path()))?;
    temp.persist(path).map_err(|e| ErrorKind::Io {
        action: "rename a temporary file to",
        path: path.to_owned(),
        cause: e.error,
    })?;
    sync_dir(dir)
}

/// Makes a rename or creation in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(Error::io("flush directory", dir))
}
