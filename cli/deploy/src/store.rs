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
//!
//! What is read here decides what root's next command does to the kernel, so the
//! directory is root's alone: created with explicit modes whatever the umask, and
//! refused (as ssh and sudo refuse their files) when it, a file in it, or a
//! directory above it could be written by another user ([`crate::safety`]).

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{DeployError, Result};
use crate::journal::Journal;
use crate::record::{DeploymentRecord, FORMAT};
use crate::safety;

/// Largest record or journal read (a deployment with every id in use is far smaller).
const MAX_STATE_FILE: u64 = 16 << 20;

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

pub(crate) fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> DeployError + 'a {
    move |cause| DeployError::Io { what, path: path.to_owned(), cause }
}

impl Store {
    /// Opens (creating if needed) the state directory. Refuses one that another
    /// user could write to.
    pub fn open(dir: &Path) -> Result<Store> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)
            .map_err(io("cannot create the state directory", dir))?;
        safety::check_dir_and_ancestors(dir)?;
        for (sub, mode) in [("deployments", 0o755), ("journal", 0o700), ("logs", 0o755), ("generations", 0o755)] {
            let d = dir.join(sub);
            match fs::DirBuilder::new().mode(mode).create(&d) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                    return Err(io("cannot create the state directory", &d)(e));
                }
                _ => {}
            }
            safety::check_dir(&d)?;
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
            .mode(0o600)
            .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
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

    /// Moves a journal that must not be acted on out of the way (to
    /// `journal/rejected/`), keeping it for a person to look at.
    pub fn reject_journal(&self, name: &str) -> Result<PathBuf> {
        let dir = self.dir.join("journal").join("rejected");
        match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(io("cannot create", &dir)(e)),
            _ => {}
        }
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let to = dir.join(format!("{name}.json.{stamp}"));
        let from = self.journal_path(name);
        fs::rename(&from, &to).map_err(io("cannot move", &from))?;
        Ok(to)
    }

    /// Names of the journals present, whether or not they can be read.
    pub fn journal_names(&self) -> Result<Vec<String>> {
        json_names(&self.dir.join("journal"))
    }

    /// Temporary files and directories whose writer died, anywhere a command
    /// writes in the state directory: `deployments/`, `journal/` (and its
    /// `rejected/`), `logs/`, and each deployment's `generations/<name>/` (where
    /// a generation is assembled in a temporary directory).
    pub fn stale_temp_files(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> =
            ["deployments", "journal", "journal/rejected", "logs"].iter().map(|d| self.dir.join(d)).collect();
        let generations = self.dir.join("generations");
        dirs.extend(fs::read_dir(&generations).into_iter().flatten().flatten().map(|e| e.path()));
        dirs.push(generations);
        let mut out = Vec::new();
        for dir in dirs {
            for e in fs::read_dir(&dir).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                // `.<file>.tmp-<pid>` is how versions before ebpkg-fs named them.
                let legacy = name.rsplit_once(".tmp-").and_then(|(_, pid)| pid.parse::<u32>().ok());
                let dead = ebpkg_fs::temp::is_stale(&name) || legacy.is_some_and(|pid| !ebpkg_fs::temp::alive(pid));
                if name.starts_with('.') && dead && !e.file_type().is_ok_and(|t| t.is_symlink()) {
                    out.push(e.path());
                }
            }
        }
        out.sort();
        out
    }

    /// Removes what [`Store::stale_temp_files`] finds (a command killed while
    /// writing leaves them, and nothing else would); returns what it removed.
    /// Tidying, never a failure: what cannot be removed stays for `ebpkg doctor`.
    pub fn remove_stale_temp_files(&self) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        for path in self.stale_temp_files() {
            let result = if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
            match result {
                Ok(()) => {
                    tracing::info!(path = %path.display(), "removed a temporary file of a process that died");
                    removed.push(path);
                }
                Err(e) => tracing::warn!("cannot remove {}: {e}", path.display()),
            }
        }
        removed
    }

    /// Writes a verifier log (readable by the user who reads the error).
    pub fn save_log(&self, file: &str, text: &str) -> Result<PathBuf> {
        let path = self.log_path(file);
        write_file(&path, text.as_bytes(), 0o644)?;
        Ok(path)
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

pub(crate) fn read_json<T: DeserializeOwned + HasFormat>(path: &Path) -> Result<Option<T>> {
    let file = match File::options()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("cannot read", path)(e)),
    };
    let meta = file.metadata().map_err(io("cannot inspect", path))?;
    safety::check_file(path, &meta)?;
    if meta.len() > MAX_STATE_FILE {
        return Err(DeployError::CorruptState {
            path: path.to_owned(),
            reason: format!("it is {} bytes, more than any record ({MAX_STATE_FILE} bytes)", meta.len()),
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_STATE_FILE).read_to_end(&mut bytes).map_err(io("cannot read", path))?;
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

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| DeployError::CorruptState { path: path.to_owned(), reason: format!("cannot serialize: {e}") })?;
    bytes.push(b'\n');
    let private = path.parent().and_then(Path::file_name).is_some_and(|d| d == "journal");
    write_file(path, &bytes, if private { 0o600 } else { 0o644 })
}

/// Replaces `path` with `bytes` (mode `mode` whatever the umask), durably.
fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    ebpkg_fs::write_atomic(path, bytes, mode).map_err(io("cannot write", path))
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

pub(crate) trait HasFormat {
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
