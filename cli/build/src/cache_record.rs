//! Digest records of cached artifacts: every file of the build cache that can
//! reach the kernel (objects, native chain objects and their descriptions, IR
//! modules) is recorded with its SHA-256 when it is written, and read only
//! through [`CacheRecords::read`], which gives its bytes when they still match
//! the record and a [`Miss`] otherwise — never the bytes of a changed file.
//!
//! ```text
//! <cache>/record.key               32 random bytes, mode 0600: the cache's own key
//! <artifact>.sha256                "sha256 <hex>\nmac <hex>\n" beside each artifact
//! ```
//!
//! The record carries an HMAC-SHA-256, under the cache's key, of the artifact's
//! file name and digest: whoever can replace an artifact but cannot read the key
//! (mode 0600, owned by the cache's user) cannot write a record that matches,
//! nor move a record to another artifact. That is defence in depth: the defence
//! is the cache being private (`ebpkg_fs::private`, checked by the CLI before any
//! command reads the cache); the records catch corruption, swaps by hand and
//! writers that got in anyway, and give `ebpkg status` the digest of what runs.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ebpkg_spec::types::Sha256Digest;
use hmac::{KeyInit, Mac};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The key file's name in the cache root.
pub const KEY_FILE: &str = "record.key";
/// The record's extension, appended to the artifact's file name.
pub const RECORD_EXTENSION: &str = "sha256";
/// A record is two short lines.
const MAX_RECORD_BYTES: u64 = 512;

/// Why a cached artifact was not used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Miss {
    /// Nothing cached (or only part of an entry): a plain miss.
    #[error("{} is not cached", path.display())]
    Absent { path: PathBuf },
    /// The artifact is there but differs from what was recorded when it was
    /// written: damaged, or replaced. Worth a warning.
    #[error(
        "{} does not match the digest recorded when it was cached ({problem}); it was not used",
        path.display()
    )]
    Mismatch { path: PathBuf, problem: String },
}

impl Miss {
    /// Whether the cache held something it should not have (a warning), rather
    /// than nothing.
    pub fn is_mismatch(&self) -> bool {
        matches!(self, Miss::Mismatch { .. })
    }
}

/// The records of one cache directory: its key, read (or made) once.
#[derive(Debug, Clone)]
pub struct CacheRecords {
    /// `None`: the key cannot be read or made safely; nothing is trusted and
    /// nothing recorded (every read is a miss).
    key: Option<[u8; 32]>,
}

/// An artifact's bytes, as recorded.
#[derive(Debug, Clone)]
pub struct Verified {
    pub bytes: Vec<u8>,
    pub sha256: Sha256Digest,
}

impl CacheRecords {
    /// The records of `cache_dir`, its key made when there is none.
    pub fn open(cache_dir: &Path) -> CacheRecords {
        match key(cache_dir) {
            Ok(key) => CacheRecords { key: Some(key) },
            Err(e) => {
                tracing::warn!(cache = %cache_dir.display(), "cache records are off, so cached objects are not used: {e}");
                CacheRecords { key: None }
            }
        }
    }

    fn mac(&self, key: &[u8; 32], name: &str, sha256: &Sha256Digest) -> HmacSha256 {
        // A 32-byte key is always a valid HMAC key (any length is).
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
        mac.update(b"ebpkg cache record v1\0");
        mac.update(&(name.len() as u64).to_le_bytes());
        mac.update(name.as_bytes());
        mac.update(&sha256.0);
        mac
    }

    /// Records `bytes`, just written to `artifact`, and returns their digest.
    /// Written after the artifact: a reader that sees the record sees the file.
    pub fn record(&self, artifact: &Path, bytes: &[u8]) -> std::io::Result<Sha256Digest> {
        let sha256 = Sha256Digest::of(bytes);
        let Some(key) = &self.key else { return Ok(sha256) };
        let mac = self.mac(key, &file_name(artifact), &sha256).finalize().into_bytes();
        let text = format!("sha256 {}\nmac {}\n", sha256.to_hex(), hex(&mac));
        ebpkg_fs::private::write_private(&record_path(artifact), text.as_bytes())?;
        Ok(sha256)
    }

    /// Writes `bytes` to `artifact` (atomically, mode 0600, its directory made
    /// 0700) and records them.
    pub fn write(&self, artifact: &Path, bytes: &[u8]) -> std::io::Result<Sha256Digest> {
        ebpkg_fs::private::write_private(artifact, bytes)?;
        self.record(artifact, bytes)
    }

    /// [`CacheRecords::read`] as a cache lookup: any miss is `None`, and
    /// `on_mismatch` hears of one that found something it should not have (to
    /// warn, saying what happens instead).
    pub fn lookup(&self, artifact: &Path, max: u64, on_mismatch: impl FnOnce(&Miss)) -> Option<Verified> {
        match self.read(artifact, max) {
            Ok(v) => Some(v),
            Err(miss) => {
                if miss.is_mismatch() {
                    on_mismatch(&miss);
                }
                None
            }
        }
    }

    /// The bytes of `artifact` (at most `max`) when its record is there and
    /// matches them, and the file is the caller's and writable by no one else.
    pub fn read(&self, artifact: &Path, max: u64) -> Result<Verified, Miss> {
        let absent = || Miss::Absent { path: artifact.to_owned() };
        let mismatch = |problem: String| Miss::Mismatch { path: artifact.to_owned(), problem };
        let opened = match ebpkg_fs::open(artifact, max) {
            Ok(o) => o,
            Err(e) if e.is_not_found() => return Err(absent()),
            Err(e) => return Err(mismatch(e.to_string())),
        };
        let meta = opened.file.metadata().map_err(|e| mismatch(e.to_string()))?;
        ebpkg_fs::private::check_file(artifact, &meta).map_err(|e| mismatch(e.reason()))?;
        let (bytes, _) = opened.read_all_keep().map_err(|e| mismatch(e.to_string()))?;
        let record = match ebpkg_fs::read_text(&record_path(artifact), MAX_RECORD_BYTES) {
            Ok(r) => r,
            // Written before records existed, or by a writer that died between
            // the two files: not a sign of tampering, but not usable either.
            Err(e) if e.is_not_found() => {
                tracing::debug!(path = %artifact.display(), "cached without a digest record; not used");
                return Err(absent());
            }
            Err(e) => return Err(mismatch(e.to_string())),
        };
        let Some(key) = &self.key else { return Err(absent()) };
        let (recorded, mac) = parse(&record).ok_or_else(|| mismatch("its record is not readable".into()))?;
        let expected = self.mac(key, &file_name(artifact), &recorded);
        if expected.verify_slice(&mac).is_err() {
            return Err(mismatch("its record was not written by this cache".into()));
        }
        let sha256 = Sha256Digest::of(&bytes);
        if sha256 != recorded {
            return Err(mismatch(format!("recorded sha256 {recorded}, found {sha256}")));
        }
        Ok(Verified { bytes, sha256 })
    }
}

/// `<artifact>.sha256`.
pub fn record_path(artifact: &Path) -> PathBuf {
    let mut name = artifact.as_os_str().to_owned();
    name.push(".");
    name.push(RECORD_EXTENSION);
    PathBuf::from(name)
}

fn file_name(artifact: &Path) -> String {
    artifact.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse(record: &str) -> Option<(Sha256Digest, Vec<u8>)> {
    let mut lines = record.lines();
    let sha = Sha256Digest::from_canonical_hex(lines.next()?.strip_prefix("sha256 ")?)?;
    let mac_hex = lines.next()?.strip_prefix("mac ")?;
    if mac_hex.len() != 64 || lines.next().is_some() {
        return None;
    }
    let mac = (0..32).map(|i| u8::from_str_radix(mac_hex.get(2 * i..2 * i + 2)?, 16).ok()).collect::<Option<_>>()?;
    Some((sha, mac))
}

/// The cache's key: read when it is the caller's and no one else can read or
/// write it; made (0600, never replacing one a concurrent process made) when
/// there is none.
fn key(cache_dir: &Path) -> std::io::Result<[u8; 32]> {
    let path = cache_dir.join(KEY_FILE);
    match read_key(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        other => return other,
    }
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
    ebpkg_fs::private::create_private_dir(cache_dir)?;
    let tmp = tempfile::Builder::new().prefix(&ebpkg_fs::temp::prefix()).tempfile_in(cache_dir)?;
    std::fs::write(tmp.path(), key)?;
    tmp.as_file().sync_all()?;
    // A hard link never replaces: when another process made the key first, its
    // key is the one (records it wrote already use it).
    match std::fs::hard_link(tmp.path(), &path) {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(&path),
        Err(e) => Err(e),
    }
}

fn read_key(path: &Path) -> std::io::Result<[u8; 32]> {
    let opened = ebpkg_fs::open(path, 32).map_err(|e| match e {
        ebpkg_fs::ReadError::NotFound { .. } => std::io::Error::from(std::io::ErrorKind::NotFound),
        other => std::io::Error::other(other.to_string()),
    })?;
    let meta = opened.file.metadata()?;
    ebpkg_fs::private::check_file(path, &meta).map_err(|e| std::io::Error::other(e.to_string()))?;
    if meta.mode() & 0o077 != 0 {
        return Err(std::io::Error::other(format!(
            "{} can be read by others (mode {:o}); remove it and run the command again",
            path.display(),
            meta.mode() & 0o7777
        )));
    }
    let (bytes, _) = opened.read_all_keep().map_err(|e| std::io::Error::other(e.to_string()))?;
    bytes.try_into().map_err(|_| std::io::Error::other(format!("{} is not 32 bytes", path.display())))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_changed_artifact_or_record_is_a_mismatch() {
        let dir = tempfile::tempdir().unwrap();
        let records = CacheRecords::open(dir.path());
        let a = dir.path().join("a.o");
        let b = dir.path().join("b.o");
        let sha = records.write(&a, b"one").unwrap();
        records.write(&b, b"two").unwrap();
        let v = records.read(&a, 100).unwrap();
        assert_eq!((v.bytes.as_slice(), v.sha256), (&b"one"[..], sha));
        // The same records, read by another process.
        assert_eq!(CacheRecords::open(dir.path()).read(&a, 100).unwrap().sha256, sha);

        // The artifact replaced, alone.
        ebpkg_fs::write_atomic(&a, b"evil", 0o600).unwrap();
        let e = records.read(&a, 100).unwrap_err();
        assert!(e.is_mismatch() && e.to_string().contains("recorded sha256"), "{e}");
        // ... with a record of its own digest, but no key.
        let forged = format!("sha256 {}\nmac {}\n", Sha256Digest::of(b"evil").to_hex(), "00".repeat(32));
        std::fs::write(record_path(&a), forged).unwrap();
        assert!(records.read(&a, 100).unwrap_err().to_string().contains("not written by this cache"));
        // ... with another artifact's (genuine) record.
        std::fs::copy(&b, &a).unwrap();
        std::fs::copy(record_path(&b), record_path(&a)).unwrap();
        assert!(records.read(&a, 100).unwrap_err().is_mismatch());
        // A missing record is a plain miss.
        std::fs::remove_file(record_path(&b)).unwrap();
        assert_eq!(records.read(&b, 100).unwrap_err(), Miss::Absent { path: b.clone() });
        // Another cache's key verifies none of them.
        let other = tempfile::tempdir().unwrap();
        let c = other.path().join("a.o");
        CacheRecords::open(other.path()).write(&c, b"one").unwrap();
        std::fs::copy(record_path(&c), record_path(&a)).unwrap();
        std::fs::write(&a, b"one").unwrap();
        assert!(records.read(&a, 100).unwrap_err().is_mismatch());
    }

    #[test]
    fn a_key_others_can_read_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        CacheRecords::open(dir.path());
        let key = dir.path().join(KEY_FILE);
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let records = CacheRecords::open(dir.path());
        assert!(records.key.is_none());
        let a = dir.path().join("a.o");
        records.write(&a, b"one").unwrap();
        assert!(records.read(&a, 100).is_err());
    }
}
