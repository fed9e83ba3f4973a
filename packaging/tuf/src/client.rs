//! Loading a registry's TUF metadata as a client: from the newest root this
//! machine trusts, through `tough`'s update workflow (root rotation, timestamp,
//! snapshot, targets, bins; rollback, freeze and size checks), into the signed
//! hashes of every target, against which fetched index files are checked.

use std::collections::HashMap;
use std::path::Path;

use tough::{ExpirationEnforcement, FilesystemTransport, Limits, RepositoryLoader};
use url::Url;

use crate::{Error, Result, block_on};

/// Longest trusted root read.
pub(crate) const MAX_ROOT_BYTES: u64 = 512 * 1024;

/// Limits on what the registry may send: metadata of a registry of a hundred
/// thousand packages fits well inside them.
pub fn limits() -> Limits {
    Limits {
        max_root_size: MAX_ROOT_BYTES,
        max_targets_size: 8 * 1024 * 1024,
        max_timestamp_size: 16 * 1024,
        max_snapshot_size: 256 * 1024,
        max_root_updates: 64,
    }
}

/// What signed metadata says each target is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    sha256: Vec<u8>,
    length: u64,
}

/// The verified view of a registry's metadata.
#[derive(Debug, Clone)]
pub struct TrustedIndex {
    targets: HashMap<String, Listed>,
    /// The root now trusted (after any rotation), to persist for the next load.
    pub root_json: Vec<u8>,
    pub root_version: u64,
    pub snapshot_version: u64,
    pub timestamp_version: u64,
    /// When the timestamp expires: until then, the registry cannot freeze this
    /// view without being noticed.
    pub expires: String,
    /// When the first of the roles this view rests on (root, timestamp,
    /// snapshot, targets, every bin) expires: past it, the view is not used
    /// again without a full update (`verified.rs`).
    pub valid_until: jiff::Timestamp,
}

impl TrustedIndex {
    /// Whether signed metadata lists `target`.
    pub fn lists(&self, target: &str) -> bool {
        self.targets.contains_key(target)
    }

    /// Checks fetched bytes against the signed hash and length of `target`.
    pub fn check(&self, target: &str, bytes: &[u8]) -> Result<()> {
        use sha2::Digest;
        let Some(listed) = self.targets.get(target) else {
            return Err(Error::NotListed { target: target.to_owned() });
        };
        let actual = sha2::Sha256::digest(bytes);
        if listed.length != bytes.len() as u64 || listed.sha256.as_slice() != actual.as_slice() {
            return Err(Error::Mismatch {
                target: target.to_owned(),
                expected: hex::encode(&listed.sha256),
                expected_len: listed.length,
                actual: hex::encode(actual),
                actual_len: bytes.len() as u64,
            });
        }
        Ok(())
    }

    /// The signed SHA-256 and length of `target`, when the metadata lists it.
    pub fn target(&self, target: &str) -> Option<([u8; 32], u64)> {
        let listed = self.targets.get(target)?;
        Some((listed.sha256.as_slice().try_into().ok()?, listed.length))
    }

    /// Every target with its signed SHA-256 and length (what `verified.rs` keeps).
    pub(crate) fn listed(&self) -> impl Iterator<Item = (&str, &[u8], u64)> {
        self.targets.iter().map(|(name, l)| (name.as_str(), l.sha256.as_slice(), l.length))
    }

    /// A view made of targets a previous load verified (`verified.rs`).
    pub(crate) fn from_listed(
        targets: impl IntoIterator<Item = (String, Vec<u8>, u64)>,
        root_json: Vec<u8>,
        versions: [u64; 3],
        expires: String,
        valid_until: jiff::Timestamp,
    ) -> TrustedIndex {
        TrustedIndex {
            targets: targets.into_iter().map(|(name, sha256, length)| (name, Listed { sha256, length })).collect(),
            root_json,
            root_version: versions[0],
            snapshot_version: versions[1],
            timestamp_version: versions[2],
            expires,
            valid_until,
        }
    }

    /// How many targets signed metadata lists.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }
}

/// The file of a datastore where `tough` keeps the latest system time a load saw:
/// a later load refuses to run with the clock behind it.
pub const LATEST_KNOWN_TIME: &str = "latest_known_time.json";

/// The time recorded in `datastore`, when it is ahead of this machine's clock
/// (every load would then be refused until the clock passes it).
pub fn recorded_time_ahead(datastore: &Path) -> Option<jiff::Timestamp> {
    let bytes = ebpkg_fs::read(&datastore.join(LATEST_KNOWN_TIME), 4096).ok()?;
    let recorded: jiff::Timestamp = serde_json::from_slice(&bytes).ok()?;
    (recorded > jiff::Timestamp::now()).then_some(recorded)
}

/// A role's `spec_version`: `1.MINOR.PATCH`, the major version this client (and
/// the specification it follows) reads.
fn check_spec_version(role: &str, version: &str) -> Result<()> {
    let mut parts = version.split('.');
    let numeric = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let (major, minor, patch) = (parts.next(), parts.next(), parts.next());
    if major == Some("1") && numeric(minor) && numeric(patch) && parts.next().is_none() {
        return Ok(());
    }
    Err(Error::Metadata {
        detail: format!("the {role} metadata says spec_version \"{version}\"; this client reads TUF 1.x metadata only"),
    })
}

/// Key ids as the specification writes them: lower-case hex. `tough` compares
/// their decoded bytes, so `ABCD…` would pass it; python-tuf compares the
/// strings, and the two would disagree on what a role's keys are. Looked for
/// where key ids live — the signatures, `keys`, the roles' and delegated roles'
/// `keyids` — and nowhere else (a target's custom data may say anything).
fn check_key_ids<T: serde::Serialize>(role: &str, metadata: &T) -> Result<()> {
    use serde_json::Value;
    fn canonical(id: &str) -> bool {
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }
    fn role_keyids(roles: Option<&Value>) -> Vec<&str> {
        let each: Vec<&Value> = match roles {
            Some(Value::Object(map)) => map.values().collect(),
            Some(Value::Array(items)) => items.iter().collect(),
            _ => Vec::new(),
        };
        each.iter().filter_map(|r| r["keyids"].as_array()).flatten().filter_map(Value::as_str).collect()
    }
    let value = serde_json::to_value(metadata).map_err(|e| Error::Metadata { detail: e.to_string() })?;
    let signed = &value["signed"];
    let mut ids: Vec<&str> =
        value["signatures"].as_array().into_iter().flatten().filter_map(|s| s["keyid"].as_str()).collect();
    for keys in [&signed["keys"], &signed["delegations"]["keys"]] {
        ids.extend(keys.as_object().into_iter().flat_map(|m| m.keys().map(String::as_str)));
    }
    ids.extend(role_keyids(signed.get("roles")));
    ids.extend(role_keyids(signed["delegations"].get("roles")));
    match ids.into_iter().find(|id| !canonical(id)) {
        None => Ok(()),
        Some(id) => Err(Error::Metadata {
            detail: format!(
                "the {role} metadata names key id \"{id}\"; key ids are lower-case hex (TUF specification)"
            ),
        }),
    }
}

/// Loads the metadata at `metadata_url` (a `file://` directory) starting from
/// the root in `trusted_root`, keeping what it trusts in `datastore` (the
/// previous timestamp and snapshot, against rollback). The caller persists
/// [`TrustedIndex::root_json`] as its new trusted root.
pub fn load(trusted_root: &Path, metadata_url: &Url, datastore: &Path) -> Result<TrustedIndex> {
    load_with(trusted_root, metadata_url, datastore, FilesystemTransport)
}

/// [`load`] over another transport (a registry server's, with its bounds and
/// token).
pub fn load_with<T: tough::Transport + Send + Sync + 'static>(
    trusted_root: &Path,
    metadata_url: &Url,
    datastore: &Path,
    transport: T,
) -> Result<TrustedIndex> {
    let root = ebpkg_fs::read(trusted_root, MAX_ROOT_BYTES)
        .map_err(|e| Error::BadFile { path: trusted_root.to_owned(), problem: e.to_string() })?;
    ebpkg_fs::private::create_private_dir(datastore)
        .map_err(|e| Error::Io { what: format!("creating {}", datastore.display()), cause: e })?;
    let base = if metadata_url.path().ends_with('/') {
        metadata_url.clone()
    } else {
        let mut u = metadata_url.clone();
        u.set_path(&format!("{}/", u.path()));
        u
    };
    let repo = block_on(async {
        RepositoryLoader::new(&root, base.clone(), base.clone())
            .transport(transport)
            .limits(limits())
            .datastore(datastore)
            .expiration_enforcement(ExpirationEnforcement::Safe)
            .load()
            .await
    })?
    .map_err(|e| match e {
        tough::error::Error::SystemTimeSteppedBackward { sys_time, latest_known_time } => Error::ClockBehind {
            file: datastore.join(LATEST_KNOWN_TIME),
            recorded: latest_known_time.to_string(),
            now: sys_time.to_string(),
        },
        e => Error::from_tough(e),
    })?;
    // tough writes its datastore with the umask's modes; it is the cache's, so
    // its user's alone (a failure is only that: the directory is 0700).
    if let Err(e) = ebpkg_fs::private::restrict_tree(datastore) {
        tracing::debug!("cannot make {} private: {e}", datastore.display());
    }
    // tough reads any spec_version; the specification (and python-tuf) only 1.x.
    for (role, version) in [
        ("root", &repo.root().signed.spec_version),
        ("timestamp", &repo.timestamp().signed.spec_version),
        ("snapshot", &repo.snapshot().signed.spec_version),
        ("targets", &repo.targets().signed.spec_version),
    ] {
        check_spec_version(role, version)?;
    }
    check_key_ids("root", repo.root())?;
    check_key_ids("timestamp", repo.timestamp())?;
    check_key_ids("snapshot", repo.snapshot())?;
    check_key_ids("targets", repo.targets())?;
    let mut delegated: Vec<&tough::schema::DelegatedRole> = Vec::new();
    if let Some(d) = &repo.targets().signed.delegations {
        delegated.extend(d.roles.iter());
    }
    while let Some(role) = delegated.pop() {
        if let Some(signed) = &role.targets {
            check_key_ids(&role.name, signed)?;
            if let Some(d) = &signed.signed.delegations {
                delegated.extend(d.roles.iter());
            }
        }
    }
    let mut valid_until = [
        repo.root().signed.expires,
        repo.timestamp().signed.expires,
        repo.snapshot().signed.expires,
        repo.targets().signed.expires,
    ]
    .into_iter()
    .min()
    .unwrap_or(jiff::Timestamp::MIN);
    let mut delegated: Vec<&tough::schema::DelegatedRole> =
        repo.targets().signed.delegations.iter().flat_map(|d| d.roles.iter()).collect();
    while let Some(role) = delegated.pop() {
        if let Some(signed) = &role.targets {
            valid_until = valid_until.min(signed.signed.expires);
            delegated.extend(signed.signed.delegations.iter().flat_map(|d| d.roles.iter()));
        }
    }
    let targets = repo
        .all_targets()
        .map(|(name, t)| (name.raw().to_owned(), Listed { sha256: t.hashes.sha256.to_vec(), length: t.length }))
        .collect();
    let root_json = serde_json::to_vec_pretty(repo.root()).map_err(|e| Error::Metadata { detail: e.to_string() })?;
    Ok(TrustedIndex {
        targets,
        root_json,
        root_version: repo.root().signed.version.get(),
        snapshot_version: repo.snapshot().signed.version.get(),
        timestamp_version: repo.timestamp().signed.version.get(),
        expires: repo.timestamp().signed.expires.to_string(),
        valid_until,
    })
}

#[cfg(test)]
mod key_id_tests {
    #[test]
    fn key_ids_are_lower_case_hex_everywhere_they_appear() {
        let id = "ab".repeat(32);
        let good = serde_json::json!({"signatures": [{"keyid": id, "sig": "00"}],
            "signed": {"keys": {id.clone(): {}}, "roles": {"root": {"keyids": [id]}},
                       "targets": {"t": {"custom": {"keys": {"NOT-A-KEY": 1}, "keyid": "Whatever"}}}}});
        assert!(super::check_key_ids("root", &good).is_ok(), "custom data is not metadata");
        for bad in [
            serde_json::json!({"signatures": [{"keyid": "AB".repeat(32)}]}),
            serde_json::json!({"signed": {"keys": {"AB".repeat(32): {}}}}),
            serde_json::json!({"signed": {"delegations": {"roles": [{"keyids": [id.clone(), "aB".repeat(32)]}]}}}),
            serde_json::json!({"signed": {"delegations": {"keys": {"AB".repeat(32): {}}}}}),
        ] {
            let e = super::check_key_ids("bins-3", &bad).unwrap_err().to_string();
            assert!(e.contains("bins-3") && e.contains("lower-case"), "{e}");
        }
    }
}

#[cfg(test)]
mod spec_version_tests {
    #[test]
    fn only_the_first_major_version_is_read() {
        for ok in ["1.0.0", "1.0.31", "1.2.3"] {
            assert!(super::check_spec_version("root", ok).is_ok(), "{ok}");
        }
        for bad in ["2.0.0", "1.0", "1", "1.0.0.0", "01.0.0", "1.x.0", "", "1.0.0-rc1"] {
            let e = super::check_spec_version("timestamp", bad).unwrap_err().to_string();
            assert!(e.contains("spec_version") && e.contains("timestamp"), "{bad}: {e}");
        }
    }
}
