//! The state directory (default `/var/lib/ebpkg`):
//!
//! ```text
//! <state>/lock                      held by the process changing deployments
//! <state>/deployments/<name>.json   committed deployment records
//! <state>/journal/<name>.json       a transaction in progress (see journal.rs)
//! <state>/logs/                     full verifier logs of failed loads
//! ```
//!
//! Every file is replaced by writing a temporary file, syncing it and renaming it
//! over the old one, so a crash leaves either the old or the new content.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{DeployError, Result};
use crate::journal::Journal;
use crate::record::{DeploymentRecord, FORMAT};

/// The default state directory.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/ebpkg";

/// An opened state directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// Held while deployments change; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> DeployError + 'a {
    move |source| DeployError::Io { what, path: path.to_owned(), source }
}

impl Store {
    /// Opens (creating if needed) the state directory.
    pub fn open(dir: &Path) -> Result<Store> {
        for sub in ["deployments", "journal", "logs"] {
            let d = dir.join(sub);
            fs::create_dir_all(&d).map_err(io("cannot create the state directory", &d))?;
        }
        Ok(Store { dir: dir.to_owned() })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Waits for other processes changing deployments, then excludes them.
    pub fn lock(&self) -> Result<StoreLock> {
        let path = self.dir.join("lock");
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(io("cannot open the lock", &path))?;
        if file.try_lock().is_err() {
            tracing::info!("waiting for another ebpkg process to finish changing deployments");
            file.lock().map_err(io("cannot lock", &path))?;
        }
        Ok(StoreLock { _file: file })
    }

    fn record_path(&self, name: &str) -> PathBuf {
        self.dir.join("deployments").join(format!("{name}.json"))
    }

    fn journal_path(&self, name: &str) -> PathBuf {
        self.dir.join("journal").join(format!("{name}.json"))
    }

    /// Where a verifier log of a failed load is saved.
    pub fn log_path(&self, file: &str) -> PathBuf {
        self.dir.join("logs").join(file)
    }

    pub fn record(&self, name: &str) -> Result<Option<DeploymentRecord>> {
        read_json(&self.record_path(name))
    }

    /// Every committed deployment, by name.
    pub fn records(&self) -> Result<Vec<DeploymentRecord>> {
        let mut out: Vec<DeploymentRecord> = Vec::new();
        for name in json_names(&self.dir.join("deployments"))? {
            if let Some(r) = self.record(&name)? {
                out.push(r);
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Commits a record: from the moment the rename lands, it is the deployment.
    pub fn save_record(&self, record: &DeploymentRecord) -> Result<()> {
        write_json(&self.record_path(&record.name), record)
    }

    pub fn remove_record(&self, name: &str) -> Result<()> {
        remove_file(&self.record_path(name))
    }

    pub fn journal(&self, name: &str) -> Result<Option<Journal>> {
        read_json(&self.journal_path(name))
    }

    /// Every unfinished transaction.
    pub fn journals(&self) -> Result<Vec<Journal>> {
        let mut out = Vec::new();
        for name in json_names(&self.dir.join("journal"))? {
            if let Some(j) = self.journal(&name)? {
                out.push(j);
            }
        }
        Ok(out)
    }

    pub fn save_journal(&self, journal: &Journal) -> Result<()> {
        write_json(&self.journal_path(&journal.deployment), journal)
    }

    pub fn remove_journal(&self, name: &str) -> Result<()> {
        remove_file(&self.journal_path(name))
    }
}

fn json_names(dir: &Path) -> Result<Vec<String>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("cannot list", dir)(e)),
    };
    let mut names: Vec<String> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".json")).map(str::to_owned))
        .collect();
    names.sort();
    Ok(names)
}

fn read_json<T: DeserializeOwned + HasFormat>(path: &Path) -> Result<Option<T>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("cannot read", path)(e)),
    };
    let value: T = serde_json::from_slice(&bytes)
        .map_err(|e| DeployError::CorruptState { path: path.to_owned(), reason: e.to_string() })?;
    if value.format() != FORMAT {
        return Err(DeployError::CorruptState {
            path: path.to_owned(),
            reason: format!(
                "it has format {} but this ebpkg understands {FORMAT}; use the ebpkg that wrote it",
                value.format()
            ),
        });
    }
    Ok(Some(value))
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| DeployError::CorruptState { path: path.to_owned(), reason: format!("cannot serialize: {e}") })?;
    bytes.push(b'\n');
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}",
        path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
        std::process::id()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)?;
        // The rename itself must reach the disk before we act on it.
        File::open(dir)?.sync_all()
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io("cannot write", path)(e)
    })
}

fn remove_file(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => {
            if let Some(dir) = path.parent()
                && let Ok(d) = File::open(dir)
            {
                let _ = d.sync_all();
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("cannot remove", path)(e)),
    }
}

trait HasFormat {
    fn format(&self) -> u32;
}

impl HasFormat for DeploymentRecord {
    fn format(&self) -> u32 {
        self.format
    }
}

impl HasFormat for Journal {
    fn format(&self) -> u32 {
        self.format
    }
}
