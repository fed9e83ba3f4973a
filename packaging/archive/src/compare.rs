//! Checking an unpacked tree against the archive it came from, entry by entry, as
//! [`verify_tree`](crate::verify_tree) does for cached trees: every file the archive
//! holds must be a regular file with the same bytes, every directory a real
//! directory, and the tree must hold nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::UnpackError;
use crate::target::Target;

pub(crate) struct Compare {
    dir: PathBuf,
}

/// A writer that, instead of writing, reads as many bytes from the tree's file and
/// fails on the first that differs.
pub(crate) struct SameBytes {
    file: File,
    buf: Vec<u8>,
}

/// The I/O error a difference travels as through the copy loop.
#[derive(Debug)]
struct Differs(String);

impl fmt::Display for Differs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Differs {}

/// The difference an I/O error from [`SameBytes`] stands for, if it is one.
pub(crate) fn differs(e: &io::Error) -> Option<String> {
    e.get_ref()?.downcast_ref::<Differs>().map(|d| d.0.clone())
}

impl Write for SameBytes {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.resize(data.len(), 0);
        self.file.read_exact(&mut self.buf).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => io::Error::other(Differs("it is shorter than in the archive".into())),
            _ => e,
        })?;
        if self.buf != data {
            return Err(io::Error::other(Differs("its content differs from the archive's".into())));
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Compare {
    pub(crate) fn new(dir: &Path) -> Compare {
        Compare { dir: dir.to_owned() }
    }

    fn modified(&self, rel: &str, problem: impl Into<String>) -> UnpackError {
        UnpackError::TreeModified { path: self.path_of(rel), problem: problem.into() }
    }

    /// After every entry matched: the tree must hold no other file, directory or link.
    pub(crate) fn nothing_else(
        &self,
        files: &BTreeSet<String>,
        dirs: &BTreeMap<String, bool>,
    ) -> Result<(), UnpackError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |cause| UnpackError::Io { path, cause }
        };
        let mut pending = vec![(self.dir.clone(), String::new())];
        while let Some((dir, rel_dir)) = pending.pop() {
            for entry in fs::read_dir(&dir).map_err(io(&dir))? {
                let entry = entry.map_err(io(&dir))?;
                let name = entry.file_name();
                let Some(name) = name.to_str() else {
                    return Err(UnpackError::TreeModified {
                        path: entry.path(),
                        problem: "the archive has no such file".into(),
                    });
                };
                let rel = if rel_dir.is_empty() { name.to_owned() } else { format!("{rel_dir}/{name}") };
                let kind = entry.file_type().map_err(io(&entry.path()))?;
                if kind.is_dir() && dirs.contains_key(&rel) {
                    pending.push((entry.path(), rel));
                } else if !(kind.is_file() && files.contains(&rel)) {
                    return Err(self.modified(&rel, "the archive has no such file"));
                }
            }
        }
        Ok(())
    }
}

impl Target for Compare {
    type File = SameBytes;

    fn create_dir(&mut self, rel: &str) -> Result<(), UnpackError> {
        match fs::symlink_metadata(self.path_of(rel)) {
            Ok(meta) if meta.file_type().is_dir() => Ok(()),
            Ok(_) => Err(self.modified(rel, "it should be a directory")),
            Err(_) => Err(self.modified(rel, "the directory is missing")),
        }
    }

    fn create_file(&mut self, rel: &str, _executable: bool, size: u64) -> Result<SameBytes, UnpackError> {
        let path = self.path_of(rel);
        let meta = match fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(_) => return Err(self.modified(rel, "the file is missing")),
        };
        if !meta.file_type().is_file() {
            return Err(self.modified(rel, "it should be a regular file"));
        }
        if meta.len() != size {
            return Err(self.modified(rel, format!("it is {} bytes, the archive's is {size}", meta.len())));
        }
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(open_flags())
            .open(&path)
            .map_err(|cause| UnpackError::Io { path, cause })?;
        Ok(SameBytes { file, buf: Vec::new() })
    }

    fn finish_file(&mut self, rel: &str, mut file: SameBytes) -> Result<(), UnpackError> {
        let mut probe = [0u8; 1];
        match file.file.read(&mut probe) {
            Ok(0) => Ok(()),
            Ok(_) => Err(self.modified(rel, "it is longer than in the archive")),
            Err(cause) => Err(UnpackError::Io { path: self.path_of(rel), cause }),
        }
    }

    fn path_of(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }
}

/// No following a link swapped in after the check, no waiting on a FIFO.
fn open_flags() -> i32 {
    (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32
}
