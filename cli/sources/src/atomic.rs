//! Writing files so that readers never see them half-written.
//!
//! A file is written under a temporary name in its final directory, flushed to disk,
//! then renamed over the final name. `rename` within one file system is atomic: a
//! reader opening the path gets the old file or the new one, never a mix, and a crash
//! leaves at worst a stray temporary file (named `.tmp-…`, which nothing reads).

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};

/// Prefix of temporary files; no package name, index file or archive starts with it.
pub(crate) const TEMP_PREFIX: &str = ".tmp-";

/// Replaces (or creates) `path` with `bytes`, atomically and durably.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(Error::io("create directory", dir))?;
    let mut temp =
        tempfile::Builder::new().prefix(TEMP_PREFIX).tempfile_in(dir).map_err(Error::io("create a file in", dir))?;
    temp.write_all(bytes).map_err(Error::io("write", temp.path()))?;
    // Data before rename: otherwise a crash right after the rename can leave the new
    // name pointing at an empty file on some file systems.
    temp.as_file().sync_all().map_err(Error::io("flush", temp.path()))?;
    temp.persist(path).map_err(|e| ErrorKind::Io {
        action: "rename a temporary file to",
        path: path.to_owned(),
        source: e.error,
    })?;
    sync_dir(dir)
}

/// Makes a rename or creation in `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(Error::io("flush directory", dir))
}
