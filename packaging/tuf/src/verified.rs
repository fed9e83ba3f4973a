//! The last verified load, kept in the datastore, so that the signed metadata
//! is the freshness oracle of a registry's index: when the registry's timestamp
//! is the one verified last (a `304` to a conditional request, or the same bytes
//! read from a directory), nothing else is fetched or verified — the targets'
//! hashes verified then are still the registry's, and every index file whose
//! bytes hash to its target's is current. When the timestamp changed, a full
//! update runs (`tough`: root rotation, timestamp, snapshot, targets, bins,
//! every rollback and freeze check), but the roles the new snapshot lists at
//! the versions already held are served from the datastore's copies rather than
//! fetched: `tough` verifies them as if they had been.
//!
//! A view is used again only while none of its roles has expired and the clock
//! is not behind the time an earlier load recorded; so a registry (or anyone
//! between it and this machine) that keeps answering "unchanged" can hold this
//! machine on the last view no longer than the signed expiry allows, as a
//! frozen timestamp could. The datastore is trusted as the trusted root beside
//! it is: anyone who can write one can write the other.
//!
//! Layout of [`STATE`] (little-endian; `bytes` is a u32 length and the bytes):
//! magic | format: u32 | SHA-256 of the trusted root: 32 | timestamp: bytes |
//! validators: bytes | root, snapshot, timestamp versions: 3×u64 | expires: bytes |
//! valid until (Unix seconds): i64 | targets: u32, each: name: bytes | sha256: 32 |
//! length: u64 | SHA-256 of everything before: 32.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use tough::{Transport, TransportError, TransportErrorKind, TransportStream};
use url::Url;

use crate::client::TrustedIndex;
use crate::{Error, Result};

/// The file of a datastore holding the last verified view.
pub const STATE: &str = "verified.bin";
/// Where role files verified by the last full update are kept, by version.
const ROLES_DIR: &str = "roles";
const MAGIC: &[u8; 8] = b"EBPKGTUF";
const FORMAT: u32 = 1;
/// Largest state file read: a registry of a million packages fits.
const MAX_STATE_BYTES: u64 = 256 << 20;
/// Largest role file kept or read back (as `client::limits`).
const MAX_ROLE_BYTES: u64 = 8 << 20;

/// What the last verified load saw of the registry's timestamp: what to probe it with.
#[derive(Debug, Clone)]
pub struct LastVerified {
    /// `timestamp.json` as verified.
    pub timestamp: Vec<u8>,
    /// What the transport that fetched it wants to send to ask whether it changed
    /// (an HTTP client's validators, encoded as it likes; empty for a directory).
    pub validators: Vec<u8>,
    root_sha256: [u8; 32],
    index: TrustedIndex,
}

impl LastVerified {
    /// The view itself (its expiry not judged: for reading offline what was
    /// verified last, never for deciding that it is current).
    pub fn into_view(self) -> TrustedIndex {
        self.index
    }
}

/// What asking the registry for its timestamp, conditionally, found.
#[derive(Debug, Clone)]
pub enum Probe {
    /// The timestamp is the one verified last.
    Unchanged,
    /// This is the registry's timestamp now, and how to ask about it next time.
    Fetched { timestamp: Vec<u8>, validators: Vec<u8> },
    /// Nothing was asked (no last view, or the caller cannot ask): a full update.
    NotAsked,
}

/// The last verified view kept in `datastore`, if one is there and reads back
/// whole; anything else is as if there were none.
pub fn last_verified(datastore: &Path) -> Option<LastVerified> {
    let bytes = ebpkg_fs::read(&datastore.join(STATE), MAX_STATE_BYTES).ok()?;
    decode(&bytes)
}

/// Loads the registry's metadata as [`crate::load_with`] does, unless `probe`
/// says its timestamp is the one `last` verified and that view is still valid:
/// then that view, with nothing fetched. A full update keeps its view and role
/// files in `datastore` for the next load.
pub fn load_probed<T: Transport + Send + Sync + Clone + 'static>(
    trusted_root: &Path,
    metadata_url: &Url,
    datastore: &Path,
    transport: T,
    last: Option<LastVerified>,
    probe: Probe,
) -> Result<TrustedIndex> {
    let root = ebpkg_fs::read(trusted_root, crate::client::MAX_ROOT_BYTES)
        .map_err(|e| Error::BadFile { path: trusted_root.to_owned(), problem: e.to_string() })?;
    let root_sha256: [u8; 32] = Sha256::digest(&root).into();
    if let Some(last) = last {
        let unchanged = match &probe {
            Probe::Unchanged => true,
            Probe::Fetched { timestamp, .. } => *timestamp == last.timestamp,
            Probe::NotAsked => false,
        };
        if unchanged
            && last.root_sha256 == root_sha256
            && jiff::Timestamp::now() < last.index.valid_until
            && crate::client::recorded_time_ahead(datastore).is_none()
        {
            tracing::debug!(snapshot = last.index.snapshot_version, "TUF timestamp unchanged: the last verified view");
            let mut index = last.index;
            index.root_json = root;
            return Ok(index);
        }
    }
    let (timestamp, validators) = match probe {
        Probe::Fetched { timestamp, validators } => (Some(timestamp), validators),
        Probe::Unchanged | Probe::NotAsked => (None, Vec::new()),
    };
    let roles = datastore.join(ROLES_DIR);
    let caching = Caching::new(transport.clone(), timestamp.clone(), Some(roles.clone()));
    let index = match crate::client::load_with(trusted_root, metadata_url, datastore, caching.clone()) {
        Ok(index) => index,
        // A kept role file that does not verify (damaged on disk) must not stop
        // the update: once more, everything fetched.
        Err(e) if caching.served_kept() => {
            tracing::debug!("TUF update with kept role files failed ({e}); again, fetching every role");
            crate::client::load_with(trusted_root, metadata_url, datastore, Caching::new(transport, timestamp, None))?
        }
        Err(e) => return Err(e),
    };
    let seen = caching.seen();
    if let Err(e) = keep(datastore, &roles, &index, &seen, &validators) {
        // Only the next load's speed depends on it.
        tracing::warn!("cannot keep the verified TUF metadata in {}: {e}", datastore.display());
    }
    Ok(index)
}

/// Keeps the role files of a full update and its view.
fn keep(datastore: &Path, roles: &Path, index: &TrustedIndex, seen: &Seen, validators: &[u8]) -> std::io::Result<()> {
    ebpkg_fs::private::create_private_dir(roles)?;
    for (role, version, bytes) in &seen.roles {
        let path = roles.join(format!("{version}.{role}"));
        if !path.exists() {
            ebpkg_fs::private::write_private(&path, bytes)?;
        }
    }
    // Versions no longer listed go.
    let listed: Vec<String> = seen.listed.iter().map(|(role, version)| format!("{version}.{role}")).collect();
    for entry in std::fs::read_dir(roles)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !listed.contains(&name) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let Some(timestamp) = &seen.timestamp else { return Ok(()) };
    let root_sha256: [u8; 32] = Sha256::digest(&index.root_json).into();
    ebpkg_fs::private::write_private(&datastore.join(STATE), &encode(index, root_sha256, timestamp, validators))
}

/// What a full update's transport saw.
#[derive(Debug, Default)]
struct Seen {
    /// `timestamp.json` as served to `tough`.
    timestamp: Option<Vec<u8>>,
    /// The roles the snapshot lists (file name, version).
    listed: Vec<(String, u64)>,
    /// Role files served (file name, version, bytes), to keep.
    roles: Vec<(String, u64, Vec<u8>)>,
    /// Whether a kept role file was served.
    served_kept: bool,
}

/// A transport that serves the probed timestamp, and role files the snapshot
/// lists at a version already kept, from memory and the datastore.
#[derive(Clone)]
struct Caching<T> {
    inner: T,
    timestamp: Option<Vec<u8>>,
    roles: Option<PathBuf>,
    seen: Arc<Mutex<Seen>>,
}

impl<T> Caching<T> {
    fn new(inner: T, timestamp: Option<Vec<u8>>, roles: Option<PathBuf>) -> Caching<T> {
        Caching { inner, timestamp, roles, seen: Arc::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn served_kept(&self) -> bool {
        self.lock().served_kept
    }

    fn seen(&self) -> Seen {
        std::mem::take(&mut *self.lock())
    }
}

impl<T> std::fmt::Debug for Caching<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caching").field("roles", &self.roles).finish_non_exhaustive()
    }
}

fn stream(bytes: Vec<u8>) -> TransportStream {
    Box::pin(futures_util::stream::iter([Ok(tough::Bytes::from(bytes))]))
}

/// The versions a snapshot's bytes list for each role file (`bins-3.json` → 7).
fn listed_versions(snapshot: &[u8]) -> Vec<(String, u64)> {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(snapshot) else { return Vec::new() };
    let Some(meta) = value["signed"]["meta"].as_object() else { return Vec::new() };
    meta.iter().filter_map(|(name, m)| Some((name.clone(), m["version"].as_u64()?))).collect()
}

impl<T: Transport + Send + Sync + Clone + 'static> Caching<T> {
    async fn fetch_all(&self, url: Url) -> std::result::Result<Vec<u8>, TransportError> {
        use futures_util::StreamExt;
        let mut s = self.inner.fetch(url.clone()).await?;
        let mut out = Vec::new();
        // (`tough` bounds what it reads of what is served here; this reads no
        // more than the largest role it allows.)
        while let Some(chunk) = s.next().await {
            out.extend_from_slice(&chunk?);
            if out.len() as u64 > MAX_ROLE_BYTES {
                return Err(TransportError::new(TransportErrorKind::Other, url));
            }
        }
        Ok(out)
    }
}

#[tough::async_trait]
impl<T: Transport + Send + Sync + Clone + 'static> Transport for Caching<T> {
    async fn fetch(&self, url: Url) -> std::result::Result<TransportStream, TransportError> {
        let file = url.path_segments().and_then(|mut s| s.next_back()).unwrap_or_default().to_owned();
        if file == "timestamp.json" {
            let bytes = match &self.timestamp {
                Some(bytes) => bytes.clone(),
                None => self.fetch_all(url).await?,
            };
            self.lock().timestamp = Some(bytes.clone());
            return Ok(stream(bytes));
        }
        let listed = self.lock().listed.iter().find(|(role, _)| *role == file).map(|(_, v)| *v);
        if let (Some(version), Some(roles)) = (listed, &self.roles)
            && let Ok(bytes) = ebpkg_fs::read(&roles.join(format!("{version}.{file}")), MAX_ROLE_BYTES)
        {
            let mut seen = self.lock();
            seen.served_kept = true;
            seen.roles.push((file, version, bytes.clone()));
            return Ok(stream(bytes));
        }
        let bytes = self.fetch_all(url).await?;
        let mut seen = self.lock();
        if file == "snapshot.json" {
            seen.listed = listed_versions(&bytes);
        } else if let Some(version) = listed {
            seen.roles.push((file, version, bytes.clone()));
        }
        Ok(stream(bytes))
    }
}

fn encode(index: &TrustedIndex, root_sha256: [u8; 32], timestamp: &[u8], validators: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + timestamp.len() + index.len() * 64);
    let bytes = |out: &mut Vec<u8>, b: &[u8]| {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    };
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&root_sha256);
    bytes(&mut out, timestamp);
    bytes(&mut out, validators);
    for v in [index.root_version, index.snapshot_version, index.timestamp_version] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    bytes(&mut out, index.expires.as_bytes());
    out.extend_from_slice(&index.valid_until.as_second().to_le_bytes());
    out.extend_from_slice(&(index.len() as u32).to_le_bytes());
    for (name, sha256, length) in index.listed() {
        bytes(&mut out, name.as_bytes());
        out.extend_from_slice(sha256);
        out.extend_from_slice(&length.to_le_bytes());
    }
    let sum: [u8; 32] = Sha256::digest(&out).into();
    out.extend_from_slice(&sum);
    out
}

/// Reads what [`encode`] wrote; `None` for anything else.
fn decode(all: &[u8]) -> Option<LastVerified> {
    let body = all.get(..all.len().checked_sub(32)?)?;
    if Sha256::digest(body).as_slice() != &all[body.len()..] {
        return None;
    }
    decode_body(body)
}

/// For the fuzz target and tests: [`decode`] past its checksum (which random
/// bytes would almost never pass), and a valid body to mutate.
#[doc(hidden)]
pub mod fuzzing {
    /// Whether `body`, sealed with its checksum, reads as a view; never a panic.
    pub fn decode_body(body: &[u8]) -> bool {
        super::decode_body(body).is_some()
    }

    /// A view of two targets, encoded without its checksum.
    pub fn sample_body() -> Vec<u8> {
        let targets = [("index/3/n/net".to_owned(), vec![7; 32], 120), ("config.json".to_owned(), vec![1; 32], 20)];
        let until = jiff::Timestamp::from_second(2_000_000_000).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let index = super::TrustedIndex::from_listed(targets, Vec::new(), [1, 5, 9], "2033-05-18".into(), until);
        let mut all = super::encode(&index, [3; 32], b"{}", b"{\"etag\":\"x\"}");
        all.truncate(all.len() - 32);
        all
    }
}

fn decode_body(body: &[u8]) -> Option<LastVerified> {
    let mut r = Reader(body);
    if r.take(MAGIC.len())? != MAGIC || r.u32()? != FORMAT {
        return None;
    }
    let root_sha256: [u8; 32] = r.take(32)?.try_into().ok()?;
    let timestamp = r.bytes()?.to_vec();
    let validators = r.bytes()?.to_vec();
    let versions = [r.u64()?, r.u64()?, r.u64()?];
    let expires = String::from_utf8(r.bytes()?.to_vec()).ok()?;
    let valid_until = jiff::Timestamp::from_second(i64::from_le_bytes(r.take(8)?.try_into().ok()?)).ok()?;
    let n = r.u32()? as usize;
    let mut targets = Vec::with_capacity(n.min(1 << 20));
    for _ in 0..n {
        let name = String::from_utf8(r.bytes()?.to_vec()).ok()?;
        let sha256 = r.take(32)?.to_vec();
        targets.push((name, sha256, r.u64()?));
    }
    if !r.0.is_empty() {
        return None;
    }
    let index = TrustedIndex::from_listed(targets, Vec::new(), versions, expires, valid_until);
    Some(LastVerified { timestamp, validators, root_sha256, index })
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn index() -> TrustedIndex {
        let targets = [("index/3/n/net".to_owned(), vec![7; 32], 120), ("config.json".to_owned(), vec![1; 32], 20)];
        let until = jiff::Timestamp::from_second(2_000_000_000).unwrap();
        TrustedIndex::from_listed(targets, b"root".to_vec(), [1, 5, 9], "2033-05-18T03:33:20Z".into(), until)
    }

    #[test]
    fn a_view_reads_back_whole_and_any_damage_reads_as_none() {
        let encoded = encode(&index(), [3; 32], b"{\"ts\":1}", b"etag");
        let back = decode(&encoded).unwrap();
        assert_eq!((back.timestamp.as_slice(), back.validators.as_slice()), (&b"{\"ts\":1}"[..], &b"etag"[..]));
        assert_eq!(back.root_sha256, [3; 32]);
        assert_eq!(back.index.target("index/3/n/net"), Some(([7; 32], 120)));
        assert_eq!(back.index.len(), 2);
        assert_eq!((back.index.snapshot_version, back.index.valid_until), (5, index().valid_until));
        for at in [0, 9, 20, encoded.len() / 2, encoded.len() - 1] {
            let mut bad = encoded.clone();
            bad[at] ^= 1;
            assert!(decode(&bad).is_none(), "a flipped byte at {at}");
        }
        assert!(decode(&encoded[..encoded.len() - 1]).is_none());
        assert!(decode(b"").is_none());
    }

    #[test]
    fn snapshot_versions_are_read_from_its_meta() {
        let snapshot = br#"{"signed":{"meta":{"targets.json":{"version":3},"bins-a.json":{"version":12}}}}"#;
        let mut listed = listed_versions(snapshot);
        listed.sort();
        assert_eq!(listed, [("bins-a.json".to_owned(), 12), ("targets.json".to_owned(), 3)]);
        assert!(listed_versions(b"not json").is_empty());
    }
}
