//! The metadata this crate writes, loaded by its client against a real
//! directory, and every way an attacker who controls the registry's files (but
//! not its keys) could try to get stale or foreign index files accepted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use ebpkg_tuf::{Error, Expiry, keys, repo};
use jiff::{SignedDuration, Timestamp};

struct Registry {
    _tmp: tempfile::TempDir,
    meta: PathBuf,
    root_key: PathBuf,
    online_key: PathBuf,
    client_root: PathBuf,
    datastore: PathBuf,
}

fn targets() -> Vec<(String, Vec<u8>)> {
    vec![
        ("config.json".into(), b"{\"ebpkg-registry\":1}\n".to_vec()),
        ("index/3/n/net".into(), b"{\"name\":\"net\",\"vers\":\"1.0.0\"}\n".to_vec()),
        ("index/me/te/meter".into(), b"{\"name\":\"meter\",\"vers\":\"1.0.0\"}\n".to_vec()),
    ]
}

impl Registry {
    fn new(now: Timestamp) -> Registry {
        let tmp = tempfile::tempdir().unwrap();
        let meta = tmp.path().join("registry/tuf");
        let root_key = tmp.path().join("root.key");
        let online_key = tmp.path().join("online.key");
        keys::generate(&root_key).unwrap();
        keys::generate(&online_key).unwrap();
        repo::init(
            &mut ebpkg_tuf::DirStore::new(&meta),
            std::slice::from_ref(&root_key),
            1,
            &online_key,
            &targets(),
            now,
            &Expiry::default(),
        )
        .unwrap();
        let client = tmp.path().join("client");
        std::fs::create_dir_all(&client).unwrap();
        let client_root = client.join("root.json");
        std::fs::copy(meta.join("root.json"), &client_root).unwrap();
        Registry { meta, root_key, online_key, client_root, datastore: client.join("datastore"), _tmp: tmp }
    }

    fn load(&self) -> Result<ebpkg_tuf::TrustedIndex, Error> {
        let url = url::Url::from_directory_path(&self.meta).unwrap();
        let loaded = ebpkg_tuf::load(&self.client_root, &url, &self.datastore)?;
        std::fs::write(&self.client_root, &loaded.root_json).unwrap();
        Ok(loaded)
    }

    fn update(&self, target: &str, bytes: &[u8]) {
        repo::update(
            &mut ebpkg_tuf::DirStore::new(&self.meta),
            &self.online_key,
            &[(target.into(), Some(bytes.to_vec()))],
            Timestamp::now(),
            &Expiry::default(),
        )
        .unwrap();
    }

    fn file(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.meta.join(name)).unwrap()
    }

    fn put(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.meta.join(name), bytes).unwrap();
    }
}

fn bin_file(target: &str) -> String {
    format!("{}.json", ebpkg_tuf::bins::bin_of(target))
}

#[test]
fn signed_targets_load_and_check() {
    let reg = Registry::new(Timestamp::now());
    let index = reg.load().unwrap();
    assert_eq!(index.len(), 3);
    for (name, bytes) in targets() {
        index.check(&name, &bytes).unwrap();
    }
    let other = index.check("index/3/n/net", b"{\"name\":\"net\",\"vers\":\"6.6.6\"}\n").unwrap_err();
    assert!(matches!(other, Error::Mismatch { .. }), "{other}");
    let unlisted = index.check("index/ev/il/evil", b"x").unwrap_err();
    assert!(matches!(unlisted, Error::NotListed { .. }), "{unlisted}");
    assert!(unlisted.to_string().contains("not in the registry's signed metadata"));
}

#[test]
fn a_change_resigns_one_bin_the_snapshot_and_the_timestamp() {
    let reg = Registry::new(Timestamp::now());
    let first = reg.load().unwrap();
    let changed = "index/3/n/net";
    let before: Vec<(String, Vec<u8>)> =
        ebpkg_tuf::bins::all().map(|(n, _)| (n.clone(), reg.file(&format!("{n}.json")))).collect();
    let targets_before = reg.file("targets.json");
    let new_line = b"{\"name\":\"net\",\"vers\":\"1.0.0\"}\n{\"name\":\"net\",\"vers\":\"1.1.0\"}\n";
    reg.update(changed, new_line);
    for (name, bytes) in before {
        let now = reg.file(&format!("{name}.json"));
        assert_eq!(
            now != bytes,
            format!("{name}.json") == bin_file(changed),
            "{name} re-signed only if it holds the change"
        );
    }
    assert_eq!(reg.file("targets.json"), targets_before, "the offline-signed targets role is untouched");
    let second = reg.load().unwrap();
    assert_eq!(second.snapshot_version, first.snapshot_version + 1);
    assert_eq!(second.timestamp_version, first.timestamp_version + 1);
    second.check(changed, new_line).unwrap();
    // The old file is now a mix-and-match.
    let stale = second.check(changed, &targets()[1].1).unwrap_err();
    assert!(matches!(stale, Error::Mismatch { .. }), "{stale}");
    assert!(stale.to_string().contains("mix-and-match"), "{stale}");
}

#[test]
fn rolled_back_metadata_is_refused() {
    let reg = Registry::new(Timestamp::now());
    reg.load().unwrap();
    let old: Vec<(String, Vec<u8>)> = ["timestamp.json", "snapshot.json", &bin_file("index/3/n/net")]
        .iter()
        .map(|f| (f.to_string(), reg.file(f)))
        .collect();
    reg.update("index/3/n/net", b"newer\n");
    reg.load().unwrap();
    // The registry (or a man in the middle) serves the older, validly signed set.
    for (file, bytes) in &old {
        reg.put(file, bytes);
    }
    let err = reg.load().unwrap_err();
    assert!(matches!(err, Error::Rollback { .. }), "{err}");
    assert!(err.to_string().contains("rollback"), "{err}");
}

#[test]
fn an_old_snapshot_under_a_new_timestamp_is_refused() {
    let reg = Registry::new(Timestamp::now());
    let old_snapshot = reg.file("snapshot.json");
    reg.update("index/3/n/net", b"newer\n");
    reg.put("snapshot.json", &old_snapshot);
    let err = reg.load().unwrap_err();
    assert!(!matches!(err, Error::Unavailable { .. }), "refused for what it is, not as unreachable: {err}");
}

#[test]
fn expired_metadata_is_a_freeze_and_a_refresh_thaws_it() {
    let two_days_ago = Timestamp::now().checked_sub(SignedDuration::from_hours(48)).unwrap();
    let reg = Registry::new(two_days_ago);
    let err = reg.load().unwrap_err();
    assert!(matches!(err, Error::Expired { .. }), "{err}");
    assert!(err.to_string().contains("freeze"), "{err}");
    repo::refresh(&mut ebpkg_tuf::DirStore::new(&reg.meta), &reg.online_key, Timestamp::now(), &Expiry::default())
        .unwrap();
    let index = reg.load().unwrap();
    index.check("index/3/n/net", &targets()[1].1).unwrap();
}

#[test]
fn a_tampered_or_foreign_signed_file_is_refused() {
    let reg = Registry::new(Timestamp::now());
    reg.load().unwrap();
    // A bin edited to list another file, without the online key.
    let bin = bin_file("index/3/n/net");
    let text = String::from_utf8(reg.file(&bin)).unwrap();
    let forged = text.replacen("\"length\"", "\"length\": 1, \"x\"", 1);
    reg.put(&bin, forged.as_bytes());
    assert!(reg.load().is_err(), "a bin that does not match the snapshot");

    // Metadata signed by a key the root does not list.
    let other = Registry::new(Timestamp::now());
    for file in ["timestamp.json", "snapshot.json", "targets.json", &bin] {
        reg.put(file, &other.file(file));
    }
    let err = reg.load().unwrap_err();
    assert!(matches!(err, Error::BadSignature { .. }), "{err}");
}

#[test]
fn endless_metadata_is_refused() {
    let reg = Registry::new(Timestamp::now());
    let mut huge = reg.file("timestamp.json");
    huge.truncate(huge.len() - 2);
    huge.extend(std::iter::repeat_n(b' ', 64 * 1024));
    huge.extend_from_slice(b"}\n");
    reg.put("timestamp.json", &huge);
    let err = reg.load().unwrap_err();
    assert!(matches!(err, Error::TooLarge { .. }), "{err}");
}

#[test]
fn the_root_rotates_and_the_old_key_signs_nothing_after() {
    let reg = Registry::new(Timestamp::now());
    reg.load().unwrap();
    let new_root = reg._tmp.path().join("root2.key");
    keys::generate(&new_root).unwrap();
    repo::rotate_root(
        &mut ebpkg_tuf::DirStore::new(&reg.meta),
        std::slice::from_ref(&reg.root_key),
        std::slice::from_ref(&new_root),
        1,
        &reg.online_key,
        Timestamp::now(),
        &Expiry::default(),
    )
    .unwrap();
    let index = reg.load().unwrap();
    assert_eq!(index.root_version, 2, "the client followed the rotation from the root it trusted");
    index.check("config.json", &targets()[0].1).unwrap();

    // Whoever still holds the old key signs a root v3 with it (valid under v1,
    // not under v2, which the client now trusts).
    forge_root_v3(&reg.meta, &reg.root_key);
    let err = reg.load().unwrap_err();
    assert!(matches!(err, Error::BadSignature { .. }), "{err}");
}

#[test]
fn keys_are_private_and_never_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let path: &Path = &tmp.path().join("k.key");
    keys::generate(path).unwrap();
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(path).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    assert!(keys::generate(path).is_err());
}

/// Writes `3.root.json`: root v2's content with version 3 and the rotated-out
/// key back as the root key, signed by that key the way v1 would accept.
fn forge_root_v3(meta: &Path, old_key: &Path) {
    use tough::editor::signed::SignedRole;
    use tough::key_source::{KeySource, LocalKeySource};
    use tough::schema::{KeyHolder, Root, Signed};
    let v1: Signed<Root> = serde_json::from_slice(&std::fs::read(meta.join("1.root.json")).unwrap()).unwrap();
    let v2: Signed<Root> = serde_json::from_slice(&std::fs::read(meta.join("root.json")).unwrap()).unwrap();
    let mut v3 = v2.signed.clone();
    v3.version = std::num::NonZeroU64::new(3).unwrap();
    v3.keys.extend(v1.signed.keys.clone());
    v3.roles = v1.signed.roles.clone();
    let keys: Vec<Box<dyn KeySource>> = vec![Box::new(LocalKeySource { path: old_key.to_owned() })];
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let signed = runtime
        .block_on(SignedRole::new(v3, &KeyHolder::Root(v1.signed), &keys, &aws_lc_rs::rand::SystemRandom::new()))
        .unwrap();
    std::fs::write(meta.join("3.root.json"), signed.buffer()).unwrap();
}

#[test]
fn a_root_threshold_needs_that_many_offline_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let meta = tmp.path().join("tuf");
    let k: Vec<PathBuf> = (1..=3).map(|i| tmp.path().join(format!("root{i}.key"))).collect();
    for key in &k {
        keys::generate(key).unwrap();
    }
    let online = tmp.path().join("online.key");
    keys::generate(&online).unwrap();
    let now = Timestamp::now();
    let two_of_two = [k[0].clone(), k[1].clone()];
    assert!(
        repo::init(&mut ebpkg_tuf::DirStore::new(&meta), &two_of_two, 3, &online, &targets(), now, &Expiry::default())
            .is_err(),
        "a threshold above the number of keys"
    );
    repo::init(&mut ebpkg_tuf::DirStore::new(&meta), &two_of_two, 2, &online, &targets(), now, &Expiry::default())
        .unwrap();
    let client_root = tmp.path().join("trusted.json");
    std::fs::copy(meta.join("root.json"), &client_root).unwrap();
    let url = url::Url::from_directory_path(&meta).unwrap();
    let datastore = tmp.path().join("datastore");
    ebpkg_tuf::load(&client_root, &url, &datastore).unwrap();

    // Whoever holds one of the two keys alone cannot hand the root to a key of theirs.
    repo::rotate_root(
        &mut ebpkg_tuf::DirStore::new(&meta),
        &k[..1],
        &k[2..],
        1,
        &online,
        Timestamp::now(),
        &Expiry::default(),
    )
    .unwrap();
    let err = ebpkg_tuf::load(&client_root, &url, &datastore).unwrap_err();
    assert!(matches!(err, Error::BadSignature { .. }), "{err}");
}

#[test]
fn a_fast_forwarded_timestamp_is_undone_by_rotating_the_online_key() {
    let reg = Registry::new(Timestamp::now());
    reg.load().unwrap();
    let own = reg.file("timestamp.json");
    // Someone with the online key signs a timestamp a million versions ahead,
    // and a client trusts it.
    forge_timestamp(&reg.meta, &reg.online_key, 1_000_000);
    assert_eq!(reg.load().unwrap().timestamp_version, 1_000_000);
    // The operator's own timestamp is now a "rollback" for that client.
    reg.put("timestamp.json", &own);
    assert!(matches!(reg.load().unwrap_err(), Error::Rollback { .. }));
    // Rotating the online key restarts snapshot and timestamp at version 1, and
    // the client, seeing their keys change, forgets the forged versions.
    let fresh = reg._tmp.path().join("online2.key");
    keys::generate(&fresh).unwrap();
    repo::rotate_online(
        &mut ebpkg_tuf::DirStore::new(&reg.meta),
        std::slice::from_ref(&reg.root_key),
        &fresh,
        Timestamp::now(),
        &Expiry::default(),
    )
    .unwrap();
    let index = reg.load().unwrap();
    assert_eq!(index.timestamp_version, 1);
    index.check("index/3/n/net", &targets()[1].1).unwrap();
    // And the old online key signs nothing any more.
    forge_timestamp(&reg.meta, &reg.online_key, 2);
    assert!(reg.load().is_err());
}

/// Overwrites `timestamp.json` with the same content at `version`, signed with
/// `key` as the current root's timestamp key would sign.
fn forge_timestamp(meta: &Path, key: &Path, version: u64) {
    use tough::editor::signed::SignedRole;
    use tough::key_source::{KeySource, LocalKeySource};
    use tough::schema::{KeyHolder, Root, Signed, Timestamp as Ts};
    let root: Signed<Root> = serde_json::from_slice(&std::fs::read(meta.join("root.json")).unwrap()).unwrap();
    let mut ts: Signed<Ts> = serde_json::from_slice(&std::fs::read(meta.join("timestamp.json")).unwrap()).unwrap();
    ts.signed.version = std::num::NonZeroU64::new(version).unwrap();
    // A root that lists `key` for the timestamp, only to sign with it.
    let mut holder = root.signed.clone();
    let pair = tough::sign::parse_keypair(&std::fs::read(key).unwrap()).unwrap();
    let tuf_key = tough::sign::Sign::tuf_key(&pair);
    let id = tuf_key.key_id().unwrap();
    holder.keys.insert(id.clone(), tuf_key);
    holder.roles.get_mut(&tough::schema::RoleType::Timestamp).unwrap().keyids = vec![id];
    let keys: Vec<Box<dyn KeySource>> = vec![Box::new(LocalKeySource { path: key.to_owned() })];
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let signed = runtime
        .block_on(SignedRole::new(ts.signed, &KeyHolder::Root(holder), &keys, &aws_lc_rs::rand::SystemRandom::new()))
        .unwrap();
    std::fs::write(meta.join("timestamp.json"), signed.buffer()).unwrap();
}
