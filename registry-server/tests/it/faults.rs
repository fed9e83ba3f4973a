//! Faults: the server killed in the middle of a publish, PostgreSQL restarted
//! under a running server, the blob store gone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use ebpkg_registry::testing::{TestRegistry, pack_with, publish_body, signed_publish_body};
use ebpkg_registry_testing::Postgres;
use ebpkg_spec::types::Sha256Digest;
use reqwest::StatusCode;

#[test]
fn a_publish_killed_at_any_point_leaves_no_version_or_a_whole_one() {
    let pg = Postgres::shared().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let packed = pack_with(scratch.path(), "crashy", "1.0.0", "", &[]).unwrap();
    // Signed, as the binary's default (unsigned refused) wants: the signature
    // and its key row are part of what a crash must leave whole or absent.
    let key = ebpkg_signing::SigningKey::generate().unwrap();
    let body = signed_publish_body(&packed, "crashy", "1.0.0", &key).unwrap();
    for point in ["unpacked", "archive-stored", "before-commit", "committed"] {
        let db = pg.database().unwrap();
        let blobs = tempfile::tempdir().unwrap();
        admin(&db, &["migrate"]);
        admin(&db, &["user", "create", "alice"]);
        let token = admin(&db, &["token", "create", "--user", "alice"]).trim().to_owned();

        let mut dying = Binary::serve(&db, blobs.path(), Some(point));
        register_key_at(&dying.url, &token, "alice", &key);
        let sent = http()
            .put(format!("{}api/v1/packages/new", dying.url))
            .header("Authorization", &token)
            .body(body.clone())
            .send();
        assert!(sent.is_err(), "{point}: the server answered instead of dying: {sent:?}");
        let status = dying.child.wait().unwrap();
        assert!(!status.success(), "{point}: killed");

        let server = Binary::serve(&db, blobs.path(), None);
        let index = server.get("index/cr/as/crashy");
        let again = http()
            .put(format!("{}api/v1/packages/new", server.url))
            .header("Authorization", &token)
            .body(body.clone())
            .send()
            .unwrap();
        if point == "committed" {
            assert_eq!(index.status(), StatusCode::OK, "{point}: the committed version is listed");
            assert_eq!(again.status(), StatusCode::CONFLICT, "{point}");
        } else {
            assert_eq!(index.status(), StatusCode::NOT_FOUND, "{point}: nothing partial is listed");
            assert_eq!(again.status(), StatusCode::OK, "{point}: nothing left behind trips the next publish");
        }
        let bundle = server.get("api/v1/packages/crashy/1.0.0/bundle");
        assert_eq!(bundle.status(), StatusCode::OK, "{point}");
        ebpkg_signing::SignedBundle::parse(&bundle.bytes().unwrap())
            .unwrap()
            .verify(key.public(), &packed.bytes)
            .unwrap();
        let archive = server.get("api/v1/packages/crashy/1.0.0/download");
        assert_eq!(archive.status(), StatusCode::OK, "{point}");
        assert_eq!(Sha256Digest::of(&archive.bytes().unwrap()), packed.sha256, "{point}");
    }
}

#[test]
fn a_postgres_restart_gives_clean_503s_then_the_server_recovers_by_itself() {
    let pg = Postgres::start().unwrap();
    let reg = TestRegistry::start_on(pg.database().unwrap(), Box::new(|_| {})).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let body = |v: &str| publish_body(&pack_with(scratch.path(), "steady", v, "", &[]).unwrap(), "steady", v).unwrap();
    assert_eq!(publish(&reg, &token, &body("1.0.0")).status(), StatusCode::OK);

    pg.stop().unwrap();
    for path in ["index/st/ea/steady", "api/v1/packages?q=steady", "readyz"] {
        let r = get(&reg, path);
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE, "{path}");
        if path != "readyz" {
            assert!(r.headers().contains_key("retry-after"), "{path}");
            assert!(r.text().unwrap().contains("database is unavailable"), "{path}");
        }
    }
    assert_eq!(publish(&reg, &token, &body("1.1.0")).status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(get(&reg, "healthz").status(), StatusCode::OK, "the process itself is alive");

    pg.start_again().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while get(&reg, "index/st/ea/steady").status() != StatusCode::OK {
        assert!(Instant::now() < deadline, "the server did not recover");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(publish(&reg, &token, &body("1.1.0")).status(), StatusCode::OK);
    assert_eq!(get(&reg, "index/st/ea/steady").text().unwrap().lines().count(), 2);
    drop(reg);
}

#[test]
fn an_unreachable_blob_store_refuses_the_publish_and_lists_nothing() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    // The blob directory becomes something no file can be written under.
    std::fs::remove_dir_all(reg.blob_dir()).unwrap();
    std::fs::write(reg.blob_dir(), b"not a directory").unwrap();
    let body = publish_body(&pack_with(scratch.path(), "lost", "1.0.0", "", &[]).unwrap(), "lost", "1.0.0").unwrap();
    let r = publish(&reg, &token, &body);
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.text().unwrap().contains("blob store"));
    assert_eq!(get(&reg, "index/lo/st/lost").status(), StatusCode::NOT_FOUND);
    std::fs::remove_file(reg.blob_dir()).unwrap();
    std::fs::create_dir(reg.blob_dir()).unwrap();
    assert_eq!(publish(&reg, &token, &body).status(), StatusCode::OK, "and works once it is back");
}
