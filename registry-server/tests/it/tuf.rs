//! TUF metadata on the server, against real PostgreSQL and HTTP: created over
//! the existing index, re-signed in the transaction of every publish and yank,
//! served under /tuf/, and checked by ebpkg-tuf's client.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use ebpkg_registry::testing::{TestRegistry, pack_with, publish_body};
use reqwest::{Method, StatusCode};

struct Keys {
    _dir: tempfile::TempDir,
    root: PathBuf,
    online: PathBuf,
}

fn keys() -> Keys {
    let dir = tempfile::tempdir().unwrap();
    let (root, online) = (dir.path().join("root.key"), dir.path().join("online.key"));
    Keys { _dir: dir, root, online }
}

const FILES: [&str; 5] = ["root.json", "targets.json", "snapshot.json", "timestamp.json", "1.root.json"];

/// Copies the served metadata into `dir` (with every bin) and loads it the way a
/// client does, from `trusted_root`.
fn load(reg: &TestRegistry, dir: &Path, trusted_root: &Path) -> Result<ebpkg_tuf::TrustedIndex, ebpkg_tuf::Error> {
    std::fs::create_dir_all(dir).unwrap();
    let bins: Vec<String> = ebpkg_tuf::bins::all().map(|(n, _)| format!("{n}.json")).collect();
    for file in FILES.iter().map(|f| f.to_string()).chain(bins) {
        let r = get(reg, &format!("tuf/{file}"));
        assert_eq!(r.status(), StatusCode::OK, "{file}");
        std::fs::write(dir.join(&file), r.bytes().unwrap()).unwrap();
    }
    let url = url::Url::from_directory_path(dir).unwrap();
    ebpkg_tuf::load(trusted_root, &url, &dir.join("../datastore"))
}

#[test]
fn publishes_and_yanks_re_sign_the_metadata_in_their_transaction() {
    let k = keys();
    let online = k.online.clone();
    let reg = TestRegistry::start_with(Box::new(move |c| c.tuf_online_key = Some(online))).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let v1 = pack_with(scratch.path(), "meter", "1.0.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &token, &publish_body(&v1, "meter", "1.0.0").unwrap()).status(), StatusCode::OK);
    // Before `tuf init` there is none, and publishes do not need a key.
    assert_eq!(get(&reg, "tuf/timestamp.json").status(), StatusCode::NOT_FOUND);

    let signed =
        reg.block_on(ebpkg_registry::tuf::init(reg.pool(), std::slice::from_ref(&k.root), 1, &k.online)).unwrap();
    assert_eq!(signed, 1);
    assert!(
        reg.block_on(ebpkg_registry::tuf::init(reg.pool(), std::slice::from_ref(&k.root), 1, &k.online)).is_err(),
        "only once"
    );
    // The catalog's install box tells users to trust the root before they add a package.
    let page = http().get(format!("{}packages/meter", reg.url())).header("Accept", "text/html").send().unwrap();
    let page = page.text().unwrap();
    assert!(page.contains(&format!("ebpkg registry add private {} --root root.json", reg.url())), "{page}");
    assert!(page.contains(&format!(r#"href="{}tuf/root.json""#, reg.url())), "{page}");
    let client = tempfile::tempdir().unwrap();
    let trusted = client.path().join("root.json");
    std::fs::write(&trusted, get(&reg, "tuf/root.json").bytes().unwrap()).unwrap();
    let first = load(&reg, &client.path().join("m1"), &trusted).unwrap();
    first.check("index/me/te/meter", &get(&reg, "index/me/te/meter").bytes().unwrap()).unwrap();

    // A publish re-signs: the new index file checks out, the old one no longer does.
    let old_index = get(&reg, "index/me/te/meter").bytes().unwrap();
    let v2 = pack_with(scratch.path(), "meter", "1.1.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &token, &publish_body(&v2, "meter", "1.1.0").unwrap()).status(), StatusCode::OK);
    let second = load(&reg, &client.path().join("m2"), &trusted).unwrap();
    assert_eq!(second.timestamp_version, first.timestamp_version + 1);
    let new_index = get(&reg, "index/me/te/meter").bytes().unwrap();
    second.check("index/me/te/meter", &new_index).unwrap();
    assert!(second.check("index/me/te/meter", &old_index).is_err(), "the old file is a mix-and-match now");

    // A new package lands in its bin; a yank re-signs too.
    let other = pack_with(scratch.path(), "counter", "1.0.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &token, &publish_body(&other, "counter", "1.0.0").unwrap()).status(), StatusCode::OK);
    assert_eq!(send(&reg, Method::DELETE, "api/v1/packages/meter/1.0.0/yank", &token, None).status(), StatusCode::OK);
    let third = load(&reg, &client.path().join("m3"), &trusted).unwrap();
    assert_eq!(third.timestamp_version, second.timestamp_version + 2);
    third.check("index/co/un/counter", &get(&reg, "index/co/un/counter").bytes().unwrap()).unwrap();
    third.check("index/me/te/meter", &get(&reg, "index/me/te/meter").bytes().unwrap()).unwrap();

    // Serving the rolled-back set now is refused by the client that saw the newer one.
    let refused = load_files_from(&client.path().join("m1"), &trusted);
    assert!(matches!(refused, Err(ebpkg_tuf::Error::Rollback { .. })), "{refused:?}");

    for bad in ["tuf/../config.json", "tuf/ROOT.json", "tuf/nothing.json", "tuf/root.txt"] {
        assert_eq!(get(&reg, bad).status(), StatusCode::NOT_FOUND, "{bad}");
    }
    let timestamp = get(&reg, "tuf/timestamp.json");
    assert_eq!(timestamp.headers()["cache-control"], "no-cache");
}

/// Loads metadata already copied to `dir` (an older copy: a replay).
fn load_files_from(dir: &Path, trusted_root: &Path) -> Result<ebpkg_tuf::TrustedIndex, ebpkg_tuf::Error> {
    let url = url::Url::from_directory_path(dir).unwrap();
    ebpkg_tuf::load(trusted_root, &url, &dir.join("../datastore"))
}

#[test]
fn without_the_online_key_a_tuf_registry_refuses_changes_and_changes_nothing() {
    let k = keys();
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    reg.block_on(ebpkg_registry::tuf::init(reg.pool(), std::slice::from_ref(&k.root), 1, &k.online)).unwrap();
    let timestamp = get(&reg, "tuf/timestamp.json").bytes().unwrap();
    let v1 = pack_with(scratch.path(), "meter", "1.0.0", "", &[]).unwrap();
    let r = publish(&reg, &token, &publish_body(&v1, "meter", "1.0.0").unwrap());
    assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(r.text().unwrap().contains("no online key"));
    assert_eq!(get(&reg, "index/me/te/meter").status(), StatusCode::NOT_FOUND, "nothing was published");
    assert_eq!(get(&reg, "tuf/timestamp.json").bytes().unwrap(), timestamp);

    // The periodic refresh re-signs the timestamp alone.
    assert!(reg.block_on(ebpkg_registry::tuf::refresh(reg.pool(), &k.online)).unwrap());
    assert_ne!(get(&reg, "tuf/timestamp.json").bytes().unwrap(), timestamp);
}
