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
use std::path::{Path, PathBuf};

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
    role_keys_threshold(ids, one())
}

fn role_keys_threshold(ids: &[&Decoded<Hex>], threshold: NonZeroU64) -> RoleKeys {
    RoleKeys { keyids: ids.iter().map(|id| (*id).clone()).collect(), threshold, _extra: HashMap::new() }
}

async fn sign<T: Role + serde::Serialize>(role: T, holder: &KeyHolder, key: &Path) -> Result<SignedRole<T>> {
    sign_with(role, holder, &[key.to_path_buf()]).await
}

/// A key's TUF id and public half.
type PublicKey = (Decoded<Hex>, tough::schema::key::Key);

/// Signs with every key in `keys` the holder lists for the role.
async fn sign_with<T: Role + serde::Serialize>(role: T, holder: &KeyHolder, keys: &[PathBuf]) -> Result<SignedRole<T>> {
    let sources: Vec<Box<dyn KeySource>> = keys.iter().map(|k| keys::source(k)).collect();
    SignedRole::new(role, holder, &sources, &rng()).await.map_err(|e| metadata_error("signing", e))
}

/// The public halves of the offline keys, checked against the threshold.
fn offline_keys(keys: &[PathBuf], threshold: u64) -> Result<(Vec<PublicKey>, NonZeroU64)> {
    let threshold = NonZeroU64::new(threshold)
        .filter(|t| t.get() <= keys.len() as u64)
        .ok_or_else(|| metadata_error("the root threshold", format!("{threshold} of {} key(s)", keys.len())))?;
    Ok((keys.iter().map(|k| keys::public(k)).collect::<Result<_>>()?, threshold))
}

/// `now + after`, in whole seconds: the specification writes `expires` as
/// `YYYY-MM-DDTHH:MM:SSZ`, and python-tuf (the reference implementation) refuses
/// every role whose `expires` has a fraction.
fn expires(now: Time, after: SignedDuration) -> Result<Time> {
    let at = now.checked_add(after).map_err(|e| metadata_error("an expiry", e))?;
    Time::from_second(at.as_second()).map_err(|e| metadata_error("an expiry", e))
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

    /// The bin `name`'s next version of `role` (a later expiry), signed and
    /// recorded in `meta` for the snapshot; the caller writes it.
    async fn next_bin(
        &self,
        delegations: &Delegations,
        name: &str,
        mut role: Targets,
        meta: &mut HashMap<String, Metafile>,
    ) -> Result<(String, SignedRole<DelegatedTargets>)> {
        role.version = next(role.version);
        role.expires = expires(self.now, self.expiry.bins)?;
        let version = role.version;
        let signed = self.bin(delegations, name, role).await?;
        let file = format!("{name}.json");
        meta.insert(file.clone(), metafile(&signed, version));
        Ok((file, signed))
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
    root_keys: &[PathBuf],
    threshold: u64,
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
        let (offline, threshold) = offline_keys(root_keys, threshold)?;
        let (online_id, online_pub) = keys::public(online_key)?;
        let offline_ids: Vec<&Decoded<Hex>> = offline.iter().map(|(id, _)| id).collect();
        let mut all_keys: HashMap<_, _> = offline.iter().cloned().collect();
        all_keys.insert(online_id.clone(), online_pub.clone());
        let root = Root {
            spec_version: SPEC_VERSION.into(),
            consistent_snapshot: false,
            version: one(),
            expires: expires(now, expiry.root)?,
            keys: all_keys,
            roles: HashMap::from([
                (RoleType::Root, role_keys_threshold(&offline_ids, threshold)),
                (RoleType::Targets, role_keys_threshold(&offline_ids, threshold)),
                (RoleType::Snapshot, role_keys(&[&online_id])),
                (RoleType::Timestamp, role_keys(&[&online_id])),
            ]),
            _extra: HashMap::new(),
        };
        let holder = KeyHolder::Root(root.clone());
        let signed_root = sign_with(root.clone(), &holder, root_keys).await?;

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
        let signed_top = sign_with(top, &holder, root_keys).await?;

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
            let (file, signed) = online.next_bin(&delegations, &name, role.signed, &mut meta).await?;
            write(store, &file, &signed)?;
        }
        online.commit(store, &root.signed, next(snapshot.signed.version), meta, next(timestamp.signed.version)).await
    })?
}

/// Whether the metadata in `store` already signs `bytes` as `target` (so a
/// change to it would re-sign nothing).
pub fn signs(store: &dyn Store, target: &str, bytes: &[u8]) -> Result<bool> {
    let role: Signed<Targets> = read(store, &format!("{}.json", bins::bin_of(target)))?;
    let wanted = self::target(bytes);
    Ok(role
        .signed
        .targets
        .get(&target_name(target)?)
        .is_some_and(|t| t.length == wanted.length && t.hashes.sha256 == wanted.hashes.sha256))
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
                let role: Signed<Targets> = read(&*store, &format!("{name}.json"))?;
                let (file, signed) = online.next_bin(&delegations, &name, role.signed, &mut meta).await?;
                write(store, &file, &signed)?;
            }
        }
        online.commit(store, &root.signed, next(snapshot.signed.version), meta, next(timestamp.signed.version)).await
    })?
}

/// Replaces the offline keys: a new root version listing `new_keys` (with
/// `threshold`) for the root and targets roles, signed by both the old and the
/// new keys (so clients that trust the old root accept it), then targets
/// re-signed with the new keys.
pub fn rotate_root(
    store: &mut dyn Store,
    old_keys: &[PathBuf],
    new_keys: &[PathBuf],
    threshold: u64,
    online_key: &Path,
    now: Time,
    expiry: &Expiry,
) -> Result<()> {
    let old: Signed<Root> = read(&*store, "root.json")?;
    let top: Signed<Targets> = read(&*store, "targets.json")?;
    let snapshot: Signed<Snapshot> = read(&*store, "snapshot.json")?;
    let timestamp: Signed<Timestamp> = read(&*store, "timestamp.json")?;
    block_on(async {
        let (fresh, threshold) = offline_keys(new_keys, threshold)?;
        let mut root = old.signed.clone();
        root.version = next(root.version);
        root.expires = expires(now, expiry.root)?;
        let fresh_ids: Vec<&Decoded<Hex>> = fresh.iter().map(|(id, _)| id).collect();
        for role in [RoleType::Root, RoleType::Targets] {
            root.roles.insert(role, role_keys_threshold(&fresh_ids, threshold));
        }
        root.keys.extend(fresh.iter().cloned());
        drop_unused_keys(&mut root);
        let by_new = sign_with(root.clone(), &KeyHolder::Root(root.clone()), new_keys).await?;
        let by_old = sign_with(root.clone(), &KeyHolder::Root(old.signed.clone()), old_keys).await?;
        let signed_root = by_new
            .add_old_signatures(by_old.signed().signatures.clone())
            .map_err(|e| metadata_error("cross-signing the new root", e))?;

        let mut targets = top.signed.clone();
        targets.version = next(targets.version);
        targets.expires = expires(now, expiry.targets)?;
        let targets_version = targets.version;
        let signed_top = sign_with(targets, &KeyHolder::Root(root.clone()), new_keys).await?;

        write(store, &format!("{}.root.json", root.version), &signed_root)?;
        write(store, "root.json", &signed_root)?;
        write(store, "targets.json", &signed_top)?;
        let mut meta = snapshot.signed.meta.clone();
        meta.insert("targets.json".into(), metafile(&signed_top, targets_version));
        let online = Online { key: online_key, now, expiry };
        online.commit(store, &root, next(snapshot.signed.version), meta, next(timestamp.signed.version)).await
    })?
}

/// Replaces the online key (after it leaked, or after someone used it to sign
/// absurdly high versions: a fast-forward attack). A new root version, signed
/// with the offline `root_keys`, names `new_online` for snapshot and timestamp;
/// targets delegates the bins to it; every bin is re-signed with it, and the
/// snapshot and timestamp start again at version 1 — clients drop what they
/// trusted of those two roles when their keys change, so the high versions are
/// forgotten.
pub fn rotate_online(
    store: &mut dyn Store,
    root_keys: &[PathBuf],
    new_online: &Path,
    now: Time,
    expiry: &Expiry,
) -> Result<()> {
    let old: Signed<Root> = read(&*store, "root.json")?;
    let top: Signed<Targets> = read(&*store, "targets.json")?;
    block_on(async {
        let (online_id, online_pub) = keys::public(new_online)?;
        let mut root = old.signed.clone();
        root.version = next(root.version);
        root.expires = expires(now, expiry.root)?;
        root.keys.insert(online_id.clone(), online_pub.clone());
        for role in [RoleType::Snapshot, RoleType::Timestamp] {
            root.roles.insert(role, role_keys(&[&online_id]));
        }
        drop_unused_keys(&mut root);
        let signed_root = sign_with(root.clone(), &KeyHolder::Root(root.clone()), root_keys).await?;

        let mut targets = top.signed.clone();
        let mut delegations =
            targets.delegations.clone().ok_or_else(|| metadata_error("targets.json", "no delegations"))?;
        delegations.keys = HashMap::from([(online_id.clone(), online_pub)]);
        for role in &mut delegations.roles {
            role.keyids = vec![online_id.clone()];
        }
        targets.delegations = Some(delegations.clone());
        targets.version = next(targets.version);
        targets.expires = expires(now, expiry.targets)?;
        let targets_version = targets.version;
        let signed_top = sign_with(targets, &KeyHolder::Root(root.clone()), root_keys).await?;

        let online = Online { key: new_online, now, expiry };
        let mut meta = HashMap::from([("targets.json".to_owned(), metafile(&signed_top, targets_version))]);
        let mut bins = Vec::new();
        for (name, _) in bins::all() {
            let role: Signed<Targets> = read(&*store, &format!("{name}.json"))?;
            bins.push(online.next_bin(&delegations, &name, role.signed, &mut meta).await?);
        }
        write(store, &format!("{}.root.json", root.version), &signed_root)?;
        write(store, "root.json", &signed_root)?;
        write(store, "targets.json", &signed_top)?;
        for (file, signed) in &bins {
            write(store, file, signed)?;
        }
        online.commit(store, &root, one(), meta, one()).await
    })?
}

/// Removes keys no role lists any more.
fn drop_unused_keys(root: &mut Root) {
    let used: Vec<Decoded<Hex>> = root.roles.values().flat_map(|r| r.keyids.iter().cloned()).collect();
    root.keys.retain(|id, _| used.contains(id));
}

/// A key rotation an operator asks for: new offline keys (with their
/// threshold), a new online key, or both (offline first). With the `clap`
/// feature, the arguments that ask for it, declared once for `ebpkg registry
/// tuf-rotate` and `ebpkg-registry tuf rotate`: at least one new key is required.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "clap", command(group(clap::ArgGroup::new("new_keys").required(true).multiple(true)
    .args(["new_root_keys", "new_online_key"]))))]
pub struct Rotation {
    /// The current offline keys (repeatable).
    #[cfg_attr(feature = "clap", arg(long = "root-key", value_name = "FILE", required = true))]
    pub root_keys: Vec<PathBuf>,
    /// The current online key.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub online_key: PathBuf,
    /// New offline keys (repeatable; generated when missing), cross-signed by
    /// the current ones so that clients follow.
    #[cfg_attr(feature = "clap", arg(long = "new-root-key", value_name = "FILE"))]
    pub new_root_keys: Vec<PathBuf>,
    /// How many of the new offline keys must sign.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 1))]
    pub threshold: u64,
    /// A new online key (generated when missing), which signs from then on.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub new_online_key: Option<PathBuf>,
}

/// Applies `rotation`, generating the new keys that do not exist yet.
pub fn rotate(store: &mut dyn Store, rotation: &Rotation, now: Time, expiry: &Expiry) -> Result<()> {
    for key in rotation.new_root_keys.iter().chain(&rotation.new_online_key) {
        if !key.exists() {
            keys::generate(key)?;
        }
    }
    let mut offline = rotation.root_keys.clone();
    if !rotation.new_root_keys.is_empty() {
        let (new, threshold) = (&rotation.new_root_keys, rotation.threshold);
        rotate_root(store, &rotation.root_keys, new, threshold, &rotation.online_key, now, expiry)?;
        offline.clone_from(&rotation.new_root_keys);
    }
    if let Some(online) = &rotation.new_online_key {
        rotate_online(store, &offline, online, now, expiry)?;
    }
    Ok(())
}

/// Refuses a key that is not the online key the current root names: a writer
/// checks it before changing anything, so a stale key never leaves an index file
/// the metadata does not sign.
pub fn check_online_key(store: &dyn Store, key: &Path) -> Result<()> {
    let root: Signed<Root> = read(store, "root.json")?;
    let (id, _) = keys::public(key)?;
    if root.signed.roles.get(&RoleType::Timestamp).is_some_and(|r| r.keyids.contains(&id)) {
        return Ok(());
    }
    Err(Error::BadSignature {
        role: "timestamp".into(),
        detail: format!(
            "{} is not the registry's online key (root version {} names another); use the current one",
            key.display(),
            root.signed.version
        ),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn expiries_are_whole_seconds_as_the_specification_writes_them() {
        let now: super::Time = "2026-11-28T08:39:33.290918818Z".parse().unwrap();
        let at = super::expires(now, jiff::SignedDuration::from_hours(24)).unwrap();
        assert_eq!(serde_json::to_string(&at).unwrap(), "\"2026-11-29T08:39:33Z\"");
    }

    /// The arguments both `tuf rotate` commands flatten: a rotation names at least
    /// one new key, or the parser refuses it.
    #[cfg(feature = "clap")]
    #[test]
    fn a_rotation_from_the_command_line_names_a_new_key() {
        use clap::Parser;
        #[derive(Parser)]
        struct Rotate {
            #[command(flatten)]
            rotation: super::Rotation,
        }
        let current = ["rotate", "--root-key", "r1", "--root-key", "r2", "--online-key", "o"];
        let refused = Rotate::try_parse_from(current).err().unwrap();
        assert_eq!(refused.kind(), clap::error::ErrorKind::MissingRequiredArgument, "{refused}");
        assert!(refused.to_string().contains("--new-root-key"), "{refused}");
        let online = Rotate::try_parse_from([&current[..], &["--new-online-key", "n"]].concat()).unwrap().rotation;
        assert_eq!(online.root_keys, [std::path::PathBuf::from("r1"), "r2".into()]);
        assert_eq!((online.new_online_key, online.new_root_keys.len(), online.threshold), (Some("n".into()), 0, 1));
        let offline = ["--new-root-key", "a", "--new-root-key", "b", "--threshold", "2"];
        let offline = Rotate::try_parse_from([&current[..], &offline[..]].concat()).unwrap().rotation;
        assert_eq!((offline.new_root_keys.len(), offline.threshold, offline.new_online_key), (2, 2, None));
    }
}
