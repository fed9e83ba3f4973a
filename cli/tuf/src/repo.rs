//! Writing a registry's TUF metadata: [`init`] once, [`update`] on every change
//! of a target (one bin, the snapshot and the timestamp are re-signed),
//! [`refresh`] periodically (a new timestamp; the snapshot and bins too when they
//! would expire soon), [`rotate_root`] to replace the offline key.
//!
//! Files, in one directory (no consistent snapshots: a reader that races a
//! writer gets a mismatch and tries again): `root.json` and `N.root.json` for
//! every root version, `targets.json`, `bins-X.json`, `snapshot.json`,
//! `timestamp.json`. The timestamp is written last: it is what makes a change
//! visible to clients.

use std::collections::{BTreeMap, HashMap};
use std::num::NonZeroU64;
use std::path::Path;

use jiff::{SignedDuration, Timestamp as Time};
use tough::TargetName;
use tough::editor::signed::SignedRole;
use tough::key_source::KeySource;
use tough::schema::decoded::{Decoded, Hex};
use tough::schema::{
    DelegatedRole, DelegatedTargets, Delegations, Hashes, KeyHolder, Metafile, PathHashPrefix, PathSet, Role, RoleKeys,
    RoleType, Root, Signed, Snapshot, Target, Targets, Timestamp,
};

use crate::store::Store;
use crate::{Error, Result, SPEC_VERSION, bins, block_on, keys};

/// A changed target: its name and its new bytes, or `None` when it is removed.
pub type Change = (String, Option<Vec<u8>>);

/// How long each role's metadata stays valid after it is signed.
#[derive(Debug, Clone, Copy)]
pub struct Expiry {
    pub root: SignedDuration,
    pub targets: SignedDuration,
    pub bins: SignedDuration,
    pub snapshot: SignedDuration,
    pub timestamp: SignedDuration,
}

impl Default for Expiry {
    /// Offline roles a year; online ones short, so that a frozen registry is
    /// noticed within a day (the timestamp) and a stale snapshot within a week.
    fn default() -> Expiry {
        let days = |d: i64| SignedDuration::from_hours(24 * d);
        Expiry { root: days(365), targets: days(365), bins: days(90), snapshot: days(7), timestamp: days(1) }
    }
}

fn one() -> NonZeroU64 {
    NonZeroU64::MIN
}

fn next(v: NonZeroU64) -> NonZeroU64 {
    v.saturating_add(1)
}

fn rng() -> aws_lc_rs::rand::SystemRandom {
    aws_lc_rs::rand::SystemRandom::new()
}

fn metadata_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Metadata { detail: format!("{what}: {e}") }
}

fn read<T: serde::de::DeserializeOwned>(store: &dyn Store, file: &str) -> Result<Signed<T>> {
    let bytes = store.read(file)?;
    serde_json::from_slice(&bytes).map_err(|e| Error::BadFile { path: file.into(), problem: e.to_string() })
}

fn write<T: Role + serde::Serialize>(store: &mut dyn Store, file: &str, role: &SignedRole<T>) -> Result<()> {
    store.write(file, role.buffer())
}

fn metafile<T: Role + serde::Serialize>(role: &SignedRole<T>, version: NonZeroU64) -> Metafile {
    Metafile {
        length: Some(*role.length()),
        hashes: Some(Hashes { sha256: Decoded::from(role.sha256().to_vec()), _extra: HashMap::new() }),
        version,
        _extra: HashMap::new(),
    }
}

fn target(bytes: &[u8]) -> Target {
    use sha2::Digest;
    Target {
        length: bytes.len() as u64,
        hashes: Hashes { sha256: Decoded::from(sha2::Sha256::digest(bytes).to_vec()), _extra: HashMap::new() },
        custom: HashMap::new(),
        _extra: HashMap::new(),
    }
}

fn target_name(name: &str) -> Result<TargetName> {
    TargetName::new(name).map_err(|e| metadata_error(&format!("target `{name}`"), e))
}

fn role_keys(ids: &[&Decoded<Hex>]) -> RoleKeys {
    RoleKeys { keyids: ids.iter().map(|id| (*id).clone()).collect(), threshold: one(), _extra: HashMap::new() }
}

async fn sign<T: Role + serde::Serialize>(role: T, holder: &KeyHolder, key: &Path) -> Result<SignedRole<T>> {
    let keys: Vec<Box<dyn KeySource>> = vec![keys::source(key)];
    SignedRole::new(role, holder, &keys, &rng()).await.map_err(|e| metadata_error("signing", e))
}

fn expires(now: Time, after: SignedDuration) -> Result<Time> {
    now.checked_add(after).map_err(|e| metadata_error("an expiry", e))
}

/// The online key's signing of bins, snapshot and timestamp.
struct Online<'a> {
    key: &'a Path,
    now: Time,
    expiry: &'a Expiry,
}

impl Online<'_> {
    async fn bin(
        &self,
        delegations: &Delegations,
        name: &str,
        targets: Targets,
    ) -> Result<SignedRole<DelegatedTargets>> {
        sign(
            DelegatedTargets { name: name.to_owned(), targets },
            &KeyHolder::Delegations(delegations.clone()),
            self.key,
        )
        .await
    }

    /// Signs a snapshot listing `meta` and the timestamp over it, and writes both
    /// (the timestamp last: it is what makes the change visible).
    async fn commit(
        &self,
        store: &mut dyn Store,
        root: &Root,
        version: NonZeroU64,
        meta: HashMap<String, Metafile>,
        ts: NonZeroU64,
    ) -> Result<()> {
        let holder = KeyHolder::Root(root.clone());
        let mut snapshot = Snapshot::new(SPEC_VERSION.into(), version, expires(self.now, self.expiry.snapshot)?);
        snapshot.meta = meta;
        let snapshot = sign(snapshot, &holder, self.key).await?;
        let mut timestamp = Timestamp::new(SPEC_VERSION.into(), ts, expires(self.now, self.expiry.timestamp)?);
        timestamp.meta.insert("snapshot.json".into(), metafile(&snapshot, version));
        let timestamp = sign(timestamp, &holder, self.key).await?;
        write(store, "snapshot.json", &snapshot)?;
        write(store, "timestamp.json", &timestamp)
    }
}

/// Creates the metadata of a registry whose targets are `targets` (name, bytes):
/// root and targets signed with `root_key`, bins, snapshot and timestamp with
/// `online_key`. Refuses a directory that already has a root.
pub fn init(
    store: &mut dyn Store,
    root_key: &Path,
    online_key: &Path,
    targets: &[(String, Vec<u8>)],
    now: Time,
    expiry: &Expiry,
) -> Result<()> {
    if store.exists("root.json") {
        return Err(Error::BadFile {
            path: "root.json".into(),
            problem: "exists: the registry has TUF metadata".into(),
        });
    }
    block_on(async {
        let (root_id, root_pub) = keys::public(root_key)?;
        let (online_id, online_pub) = keys::public(online_key)?;
        let root = Root {
            spec_version: SPEC_VERSION.into(),
            consistent_snapshot: false,
            version: one(),
            expires: expires(now, expiry.root)?,
            keys: HashMap::from([(root_id.clone(), root_pub), (online_id.clone(), online_pub.clone())]),
            roles: HashMap::from([
                (RoleType::Root, role_keys(&[&root_id])),
                (RoleType::Targets, role_keys(&[&root_id])),
                (RoleType::Snapshot, role_keys(&[&online_id])),
                (RoleType::Timestamp, role_keys(&[&online_id])),
            ]),
            _extra: HashMap::new(),
        };
        let holder = KeyHolder::Root(root.clone());
        let signed_root = sign(root.clone(), &holder, root_key).await?;

        let mut delegations = Delegations::new();
        delegations.keys.insert(online_id.clone(), online_pub);
        for (name, prefix) in bins::all() {
            delegations.roles.push(DelegatedRole {
                name,
                keyids: vec![online_id.clone()],
                threshold: one(),
                paths: PathSet::PathHashPrefixes(vec![
                    PathHashPrefix::new(prefix).map_err(|e| metadata_error("a hash prefix", e))?,
                ]),
                terminating: true,
                targets: None,
            });
        }
        let mut top = Targets::new(SPEC_VERSION.into(), one(), expires(now, expiry.targets)?);
        top.delegations = Some(delegations.clone());
        let signed_top = sign(top, &holder, root_key).await?;

        let online = Online { key: online_key, now, expiry };
        let mut by_bin: BTreeMap<String, HashMap<TargetName, Target>> =
            bins::all().map(|(n, _)| (n, HashMap::new())).collect();
        for (name, bytes) in targets {
            by_bin.entry(bins::bin_of(name)).or_default().insert(target_name(name)?, target(bytes));
        }
        let mut meta = HashMap::from([("targets.json".to_owned(), metafile(&signed_top, one()))]);
        for (name, listed) in by_bin {
            let mut role = Targets::new(SPEC_VERSION.into(), one(), expires(now, expiry.bins)?);
            role.targets = listed;
            let signed = online.bin(&delegations, &name, role).await?;
            write(store, &format!("{name}.json"), &signed)?;
            meta.insert(format!("{name}.json"), metafile(&signed, one()));
        }
        write(store, "1.root.json", &signed_root)?;
        write(store, "root.json", &signed_root)?;
        write(store, "targets.json", &signed_top)?;
        online.commit(store, &root, one(), meta, one()).await
    })?
}

/// Records changed targets — `Some(bytes)` added or replaced, `None` removed —
/// re-signing only their bins, then the snapshot and the timestamp.
pub fn update(store: &mut dyn Store, online_key: &Path, changes: &[Change], now: Time, expiry: &Expiry) -> Result<()> {
    let root: Signed<Root> = read(&*store, "root.json")?;
    let top: Signed<Targets> = read(&*store, "targets.json")?;
    let snapshot: Signed<Snapshot> = read(&*store, "snapshot.json")?;
    let timestamp: Signed<Timestamp> = read(&*store, "timestamp.json")?;
    let delegations = top.signed.delegations.clone().ok_or_else(|| metadata_error("targets.json", "no delegations"))?;
    let mut by_bin: BTreeMap<String, Vec<&Change>> = BTreeMap::new();
    for change in changes {
        by_bin.entry(bins::bin_of(&change.0)).or_default().push(change);
    }
    block_on(async {
        let online = Online { key: online_key, now, expiry };
        let mut meta = snapshot.signed.meta.clone();
        for (name, changes) in by_bin {
            let file = format!("{name}.json");
            let mut role: Signed<Targets> = read(&*store, &file)?;
            for (target_path, bytes) in changes {
                let key = target_name(target_path)?;
                match bytes {
                    Some(bytes) => role.signed.targets.insert(key, target(bytes)),
                    None => role.signed.targets.remove(&key),
                };
            }
            role.signed.version = next(role.signed.version);
            role.signed.expires = expires(now, expiry.bins)?;
            let version = role.signed.version;
            let signed = online.bin(&delegations, &name, role.signed).await?;
            write(store, &file, &signed)?;
            meta.insert(file, metafile(&signed, version));
        }
        online.commit(store, &root.signed, next(snapshot.signed.version), meta, next(timestamp.signed.version)).await
    })?
}

/// A new timestamp (and a new snapshot and bins when they would expire within
/// a day): what keeps a registry that did not change from looking frozen.
pub fn refresh(store: &mut dyn Store, online_key: &Path, now: Time, expiry: &Expiry) -> Result<()> {
    let soon = expires(now, SignedDuration::from_hours(24))?;
    let snapshot: Signed<Snapshot> = read(&*store, "snapshot.json")?;
    let mut bins_due = false;
    for (name, _) in bins::all() {
        let role: Signed<Targets> = read(&*store, &format!("{name}.json"))?;
        bins_due |= role.signed.expires <= soon;
    }
    if bins_due || snapshot.signed.expires <= soon {
        return resign_bins(store, online_key, now, expiry, bins_due);
    }
    let root: Signed<Root> = read(&*store, "root.json")?;
    let timestamp: Signed<Timestamp> = read(&*store, "timestamp.json")?;
    block_on(async {
        let holder = KeyHolder::Root(root.signed.clone());
        let mut fresh =
            Timestamp::new(SPEC_VERSION.into(), next(timestamp.signed.version), expires(now, expiry.timestamp)?);
        fresh.meta = timestamp.signed.meta.clone();
        let fresh = sign(fresh, &holder, online_key).await?;
        write(store, "timestamp.json", &fresh)
    })?
}

/// Re-signs every bin (when `all_bins`) with a later expiry, then the snapshot
/// and the timestamp.
fn resign_bins(store: &mut dyn Store, online_key: &Path, now: Time, expiry: &Expiry, all_bins: bool) -> Result<()> {
    let root: Signed<Root> = read(&*store, "root.json")?;
    let top: Signed<Targets> = read(&*store, "targets.json")?;
    let snapshot: Signed<Snapshot> = read(&*store, "snapshot.json")?;
    let timestamp: Signed<Timestamp> = read(&*store, "timestamp.json")?;
    let delegations = top.signed.delegations.clone().ok_or_else(|| metadata_error("targets.json", "no delegations"))?;
    block_on(async {
        let online = Online { key: online_key, now, expiry };
        let mut meta = snapshot.signed.meta.clone();
        if all_bins {
            for (name, _) in bins::all() {
                let file = format!("{name}.json");
                let mut role: Signed<Targets> = read(&*store, &file)?;
                role.signed.version = next(role.signed.version);
                role.signed.expires = expires(now, expiry.bins)?;
                let version = role.signed.version;
                let signed = online.bin(&delegations, &name, role.signed).await?;
                write(store, &file, &signed)?;
                meta.insert(file, metafile(&signed, version));
            }
        }
        online.commit(store, &root.signed, next(snapshot.signed.version), meta, next(timestamp.signed.version)).await
    })?
}

/// Replaces the offline key: a new root version listing `new_root_key` for the
/// root and targets roles, signed by both the old and the new key (so clients
/// that trust the old root accept it), then targets re-signed with the new key.
pub fn rotate_root(
    store: &mut dyn Store,
    old_root_key: &Path,
    new_root_key: &Path,
    online_key: &Path,
    now: Time,
    expiry: &Expiry,
) -> Result<()> {
    let old: Signed<Root> = read(&*store, "root.json")?;
    let top: Signed<Targets> = read(&*store, "targets.json")?;
    let snapshot: Signed<Snapshot> = read(&*store, "snapshot.json")?;
    let timestamp: Signed<Timestamp> = read(&*store, "timestamp.json")?;
    block_on(async {
        let (old_id, _) = keys::public(old_root_key)?;
        let (new_id, new_pub) = keys::public(new_root_key)?;
        let mut root = old.signed.clone();
        root.version = next(root.version);
        root.expires = expires(now, expiry.root)?;
        root.keys.insert(new_id.clone(), new_pub);
        for role in [RoleType::Root, RoleType::Targets] {
            root.roles.insert(role, role_keys(&[&new_id]));
        }
        let still_used = root.roles.values().any(|r| r.keyids.contains(&old_id));
        if !still_used {
            root.keys.remove(&old_id);
        }
        let by_new = sign(root.clone(), &KeyHolder::Root(root.clone()), new_root_key).await?;
        let by_old = sign(root.clone(), &KeyHolder::Root(old.signed.clone()), old_root_key).await?;
        let signed_root = by_new
            .add_old_signatures(by_old.signed().signatures.clone())
            .map_err(|e| metadata_error("cross-signing the new root", e))?;

        let mut targets = top.signed.clone();
        targets.version = next(targets.version);
        targets.expires = expires(now, expiry.targets)?;
        let targets_version = targets.version;
        let signed_top = sign(targets, &KeyHolder::Root(root.clone()), new_root_key).await?;

        write(store, &format!("{}.root.json", root.version), &signed_root)?;
        write(store, "root.json", &signed_root)?;
        write(store, "targets.json", &signed_top)?;
        let mut meta = snapshot.signed.meta.clone();
        meta.insert("targets.json".into(), metafile(&signed_top, targets_version));
        let online = Online { key: online_key, now, expiry };
        online.commit(store, &root, next(snapshot.signed.version), meta, next(timestamp.signed.version)).await
    })?
}
