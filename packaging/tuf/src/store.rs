//! Where metadata files live: a directory (a file:// registry), or memory (a
//! registry server reads its rows, lets [`crate::repo`] change them, and
//! writes back what changed, in its own transaction).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::{Error, Result};

/// Longest metadata file read.
const MAX_METADATA_BYTES: u64 = 16 * 1024 * 1024;

/// Metadata files by name (`root.json`, `bins-3.json`, …).
pub trait Store {
    fn read(&self, file: &str) -> Result<Vec<u8>>;
    fn write(&mut self, file: &str, bytes: &[u8]) -> Result<()>;
    fn exists(&self, file: &str) -> bool;
}

/// The files of one directory, written atomically.
#[derive(Debug, Clone)]
pub struct DirStore {
    dir: PathBuf,
}

impl DirStore {
    pub fn new(dir: impl Into<PathBuf>) -> DirStore {
        DirStore { dir: dir.into() }
    }
}

impl Store for DirStore {
    fn read(&self, file: &str) -> Result<Vec<u8>> {
        let path = self.dir.join(file);
        ebpkg_fs::read(&path, MAX_METADATA_BYTES).map_err(|e| Error::BadFile { path, problem: e.to_string() })
    }

    fn write(&mut self, file: &str, bytes: &[u8]) -> Result<()> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| Error::Io { what: format!("creating {}", self.dir.display()), cause: e })?;
        let path = self.dir.join(file);
        ebpkg_fs::write_atomic(&path, bytes, 0o644)
            .map_err(|e| Error::Io { what: format!("writing {}", path.display()), cause: e })
    }

    fn exists(&self, file: &str) -> bool {
        self.dir.join(file).is_file()
    }
}

/// Files in memory, remembering which were written.
#[derive(Debug, Clone, Default)]
pub struct MemStore {
    files: BTreeMap<String, Vec<u8>>,
    written: BTreeSet<String>,
}

impl MemStore {
    pub fn new(files: BTreeMap<String, Vec<u8>>) -> MemStore {
        MemStore { files, written: BTreeSet::new() }
    }

    /// The files written since [`MemStore::new`], in name order.
    pub fn written(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.written.iter().filter_map(|n| self.files.get(n).map(|b| (n.as_str(), b.as_slice())))
    }

    pub fn get(&self, file: &str) -> Option<&[u8]> {
        self.files.get(file).map(Vec::as_slice)
    }
}

impl Store for MemStore {
    fn read(&self, file: &str) -> Result<Vec<u8>> {
        self.files.get(file).cloned().ok_or_else(|| Error::BadFile { path: file.into(), problem: "missing".into() })
    }

    fn write(&mut self, file: &str, bytes: &[u8]) -> Result<()> {
        self.files.insert(file.to_owned(), bytes.to_vec());
        self.written.insert(file.to_owned());
        Ok(())
    }

    fn exists(&self, file: &str) -> bool {
        self.files.contains_key(file)
    }
}
