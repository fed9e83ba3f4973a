//! Scaling out: two replicas of the real binary on one PostgreSQL database and
//! one blob store, behind nginx as the load balancer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};

use common::*;
use ebpkg_registry::testing::{pack_with, signed_publish_body};
use ebpkg_registry_testing::{Nginx, Postgres, free_port};
use ebpkg_spec::types::Sha256Digest;
use reqwest::StatusCode;

#[test]
fn two_replicas_behind_nginx_share_everything_and_one_can_stop_mid_traffic() {
    let db = Postgres::shared().unwrap().database().unwrap();
    let blobs = tempfile::tempdir().unwrap();
    admin(&db, &["migrate"]);
    admin(&db, &["user", "create", "alice"]);
    let token = admin(&db, &["token", "create", "--user", "alice"]).trim().to_owned();
    let mut a = Binary::serve(&db, blobs.path(), None);
    let b = Binary::serve(&db, blobs.path(), None);

    // A key registered through B signs a publish through A.
    let key = ebpkg_signing::SigningKey::generate().unwrap();
    register_key_at(&b.url, &token, "alice", &key);
    // Published through one, visible through the other at once.
    let scratch = tempfile::tempdir().unwrap();
    let packed = pack_with(scratch.path(), "shared", "1.0.0", "", &[("src/data.txt", &"d".repeat(100_000))]).unwrap();
    let r = http()
        .put(format!("{}api/v1/packages/new", a.url))
        .header("Authorization", &token)
        .body(signed_publish_body(&packed, "shared", "1.0.0", &key).unwrap())
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(b.get("index/sh/ar/shared").text().unwrap(), a.get("index/sh/ar/shared").text().unwrap());
    assert_eq!(Sha256Digest::of(&b.get("api/v1/packages/shared/1.0.0/download").bytes().unwrap()), packed.sha256);

    // B caches the index file in memory; a change made through A reaches it by
    // NOTIFY at A's commit: B never keeps serving the old file.
    for (i, version) in ["1.0.1", "1.0.2", "1.0.3"].iter().enumerate() {
        assert_eq!(b.get("index/sh/ar/shared").text().unwrap().lines().count(), i + 1);
        let next = pack_with(scratch.path(), "shared", version, "", &[]).unwrap();
        let r = http()
            .put(format!("{}api/v1/packages/new", a.url))
            .header("Authorization", &token)
            .body(signed_publish_body(&next, "shared", version, &key).unwrap())
            .send()
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while b.get("index/sh/ar/shared").text().unwrap().lines().count() != i + 2 {
            assert!(std::time::Instant::now() < deadline, "replica B still serves the index before {version}");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    let metrics = b.get("metrics").text().unwrap();
    let hits: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("ebpkg_registry_index_cache_total{result=\"hit\"} "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0.0);
    assert!(hits > 0.0, "replica B answered from its cache: {metrics}");
    let yank = http()
        .delete(format!("{}api/v1/packages/shared/1.0.3/yank", a.url))
        .header("Authorization", &token)
        .send()
        .unwrap();
    assert_eq!(yank.status(), StatusCode::OK);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while !b.get("index/sh/ar/shared").text().unwrap().contains("\"yanked\":true") {
        assert!(std::time::Instant::now() < deadline, "replica B did not see the yank");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }

    let port = free_port().unwrap();
    let _nginx = Nginx::start(&format!(
        "upstream registry {{ server 127.0.0.1:{}; server 127.0.0.1:{}; }}\n\
         server {{\n  listen 127.0.0.1:{port};\n  client_max_body_size 64m;\n  \
         location / {{ proxy_pass http://registry; proxy_next_upstream error timeout http_502 http_503; \
         proxy_set_header X-Forwarded-For $remote_addr; }}\n}}",
        a.port, b.port
    ))
    .unwrap();
    let lb = format!("http://127.0.0.1:{port}/");

    // A download loop through nginx while replica A is stopped (SIGTERM: it
    // finishes what it serves and exits): nginx retries on B what A refused.
    let stop = AtomicBool::new(false);
    let (results, stopped) = std::thread::scope(|s| {
        let loops: Vec<_> = (0..4)
            .map(|_| {
                let (lb, stop) = (lb.clone(), &stop);
                s.spawn(move || {
                    let client = http();
                    let mut out = Vec::new();
                    while !stop.load(Ordering::Relaxed) || out.len() < 50 {
                        let r = client.get(format!("{lb}api/v1/packages/shared/1.0.0/download")).send();
                        out.push(r.map(|r| (r.status(), Sha256Digest::of(&r.bytes().unwrap_or_default()))));
                        if out.len() >= 400 {
                            break;
                        }
                    }
                    out
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let stopped = a.terminate();
        std::thread::sleep(std::time::Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        (loops.into_iter().flat_map(|h| h.join().unwrap()).collect::<Vec<_>>(), stopped)
    });
    assert!(stopped.success(), "replica A shut down cleanly: {stopped:?}");
    let failed: Vec<_> =
        results.iter().filter(|r| !matches!(r, Ok((StatusCode::OK, d)) if *d == packed.sha256)).collect();
    assert!(results.len() >= 200, "{} downloads", results.len());
    assert!(
        failed.is_empty(),
        "{} of {} downloads failed: {:?}",
        failed.len(),
        results.len(),
        &failed[..failed.len().min(3)]
    );
    // And publishing through the balancer still works with one replica.
    let next = pack_with(scratch.path(), "shared", "1.1.0", "", &[]).unwrap();
    assert_eq!(http().get(format!("{lb}index/sh/ar/shared")).send().unwrap().text().unwrap().lines().count(), 4);
    let r = http()
        .put(format!("{lb}api/v1/packages/new"))
        .header("Authorization", &token)
        .body(signed_publish_body(&next, "shared", "1.1.0", &key).unwrap())
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}
