//! Many clients at once against one server: publishes of one version race, and
//! downloads run while versions are published.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::{Arc, Barrier};

use common::*;
use ebpkg_registry::testing::{TestRegistry, pack_with, publish_body};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::types::Sha256Digest;
use reqwest::StatusCode;

#[test]
fn twenty_publishes_of_one_version_make_exactly_one() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    // Twenty different archives of the same name@version: only one may win.
    let bodies: Vec<Vec<u8>> = (0..20)
        .map(|i| {
            let extra = format!("description = \"attempt {i}\"\n");
            publish_body(&pack_with(scratch.path(), "race", "1.0.0", &extra, &[]).unwrap(), "race", "1.0.0").unwrap()
        })
        .collect();
    let barrier = Arc::new(Barrier::new(bodies.len()));
    let url = reg.url().to_owned();
    let statuses: Vec<StatusCode> = std::thread::scope(|s| {
        let handles: Vec<_> = bodies
            .iter()
            .map(|body| {
                let (barrier, url, token) = (barrier.clone(), url.clone(), token.clone());
                s.spawn(move || {
                    let client = http();
                    barrier.wait();
                    // A 503 (the database pool busy past its acquire timeout, as on a
                    // loaded CI machine) is the server shedding load, and says so with
                    // Retry-After and "retry later": retried here as its pipeline would
                    // re-run the publish. What must hold is the outcome: one winner,
                    // every other attempt a conflict, never two versions.
                    for _ in 0..20 {
                        let status = client
                            .put(format!("{url}api/v1/packages/new"))
                            .header("Authorization", token.clone())
                            .body(body.clone())
                            .send()
                            .unwrap()
                            .status();
                        if status != StatusCode::SERVICE_UNAVAILABLE {
                            return status;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(500));
                    }
                    StatusCode::SERVICE_UNAVAILABLE
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::OK).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == StatusCode::CONFLICT).count(), 19, "{statuses:?}");
    let index = get(&reg, "index/ra/ce/race").text().unwrap();
    let entries: Vec<IndexEntry> = index.lines().map(|l| IndexEntry::parse_line(l).unwrap().unwrap()).collect();
    assert_eq!(entries.len(), 1);
    let archive = get(&reg, "api/v1/packages/race/1.0.0/download").bytes().unwrap();
    assert_eq!(Sha256Digest::of(&archive), entries[0].cksum, "the listed archive is the winner's");
}

#[test]
fn two_hundred_downloads_in_flight_while_versions_are_published() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let first = pack_with(scratch.path(), "busy", "1.0.0", "", &[("src/big.txt", &"x".repeat(200_000))]).unwrap();
    assert_eq!(publish(&reg, &token, &publish_body(&first, "busy", "1.0.0").unwrap()).status(), StatusCode::OK);
    let later: Vec<Vec<u8>> = (1..=10)
        .map(|i| {
            let v = format!("1.{i}.0");
            publish_body(&pack_with(scratch.path(), "busy", &v, "", &[]).unwrap(), "busy", &v).unwrap()
        })
        .collect();
    let url = reg.url().to_owned();
    // 200 downloads at once (one thread each, released together with the publisher).
    let barrier = Arc::new(Barrier::new(201));
    let (downloads, publishes) = std::thread::scope(|s| {
        let downloaders: Vec<_> = (0..200)
            .map(|_| {
                let (url, barrier) = (url.clone(), barrier.clone());
                s.spawn(move || {
                    let client = http();
                    barrier.wait();
                    let r = client.get(format!("{url}api/v1/packages/busy/1.0.0/download")).send().unwrap();
                    (r.status(), Sha256Digest::of(&r.bytes().unwrap()))
                })
            })
            .collect();
        let publisher = s.spawn(|| {
            barrier.wait();
            later.iter().map(|b| publish(&reg, &token, b).status()).collect::<Vec<_>>()
        });
        let downloads: Vec<_> = downloaders.into_iter().map(|h| h.join().unwrap()).collect();
        (downloads, publisher.join().unwrap())
    });
    assert_eq!(downloads.len(), 200);
    assert!(downloads.iter().all(|(s, d)| *s == StatusCode::OK && *d == first.sha256));
    assert!(publishes.iter().all(|s| *s == StatusCode::OK), "{publishes:?}");
    let index = get(&reg, "index/bu/sy/busy").text().unwrap();
    let entries: Vec<IndexEntry> = index.lines().map(|l| IndexEntry::parse_line(l).unwrap().unwrap()).collect();
    assert_eq!(entries.len(), 11);
    for e in &entries {
        let bytes = get(&reg, &format!("api/v1/packages/busy/{}/download", e.vers)).bytes().unwrap();
        assert_eq!(Sha256Digest::of(&bytes), e.cksum, "{}", e.vers);
    }
    // Download counts reach the database within a flush or two.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let counted: i64 = reg
            .block_on(sqlx::query_scalar!("SELECT downloads FROM packages WHERE name = 'busy'").fetch_one(reg.pool()))
            .unwrap();
        if counted >= 211 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "only {counted} downloads counted");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
