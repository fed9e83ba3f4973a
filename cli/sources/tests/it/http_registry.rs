//! The HTTP client against the real registry server (in this process, on
//! loopback, with its own PostgreSQL database), and against a hostile peer for
//! what the real server never sends (endless or oversized answers, 500s).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::*;
use ebpkg_registry::config::Bucket;
use ebpkg_registry::testing::TestRegistry;
use ebpkg_registry_testing::{HttpPeer, Postgres, respond};
use ebpkg_sources::{ErrorKind, FileRegistry, HttpRegistry, OpenOptions, Registry, RegistryId, open_registry};
use ebpkg_spec::registry_api::Scope;
use ebpkg_spec::types::Sha256Digest;

fn open(url: &str, token: Option<&str>, cache: Option<&std::path::Path>, offline: bool) -> HttpRegistry {
    let options = OpenOptions {
        token: token.map(str::to_owned),
        cache_dir: cache.map(|p| p.to_owned()),
        offline,
        ..OpenOptions::default()
    };
    HttpRegistry::open(&RegistryId::parse(url).unwrap(), &options).unwrap()
}

fn client(reg: &TestRegistry, token: Option<&str>, cache: Option<&std::path::Path>, offline: bool) -> HttpRegistry {
    open(reg.url(), token, cache, offline)
}

/// The cached index file's first line (its validators) and body.
fn cached(path: &std::path::Path) -> (serde_json::Value, String) {
    let text = std::fs::read_to_string(path).unwrap();
    let (head, body) = text.split_once('\n').unwrap();
    (serde_json::from_str(head).unwrap(), body.to_owned())
}

#[test]
fn publish_index_download_and_revalidation() {
    let reg = TestRegistry::start().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let token = reg.token("alice", &[], &[]).unwrap();
    let http = client(&reg, Some(&token), Some(&cache), false);
    let packed = pack_described(tmp.path(), "meter", "1.0.0", "Rate meters", &["rate"], "ip6_meter");
    let entry = http.publish(&packed.archive(), &packed.manifest, None).unwrap();
    assert_eq!(entry.cksum, packed.sha256);

    let entries = http.index(&name("meter")).unwrap().unwrap();
    assert_eq!(entries, std::slice::from_ref(&entry));
    let archive = http.download(&entry).unwrap();
    assert_eq!(Sha256Digest::of(&archive), packed.sha256);
    assert_eq!(http.index(&name("nothing")).unwrap(), None);

    // The cache keeps the body with both validators.
    let path = http.cached_index_path(&name("meter")).unwrap();
    let (validators, body) = cached(&path);
    let etag = validators["etag"].as_str().unwrap().to_owned();
    let date = validators["last-modified"].as_str().unwrap().to_owned();
    assert!(etag.starts_with('"') && date.ends_with("GMT"), "{validators}");
    assert!(body.contains("\"yanked\":false"), "{body}");

    // The cached copy is used when the server answers 304: make the cached body
    // differ from the server's (same validators) and see it come back. By ETag…
    let mut yanked = entry.clone();
    yanked.yanked = true;
    // (Without the body's CRC-32, which would refuse a body changed by hand.)
    assert!(validators["crc32"].is_u64(), "{validators}");
    let mut header = validators.clone();
    header.as_object_mut().unwrap().remove("crc32");
    std::fs::write(&path, format!("{header}\n{}\n", yanked.to_line())).unwrap();
    let again = client(&reg, None, Some(&cache), false).index(&name("meter")).unwrap().unwrap();
    assert!(again[0].yanked, "the server said 304 and the cached body was used");
    // …and by date alone (If-Modified-Since).
    std::fs::write(&path, format!("{}\n{}\n", serde_json::json!({ "last-modified": date }), yanked.to_line())).unwrap();
    let by_date = client(&reg, None, Some(&cache), false).index(&name("meter")).unwrap().unwrap();
    assert!(by_date[0].yanked, "304 to If-Modified-Since");
    // A stale ETag gets the new file, which replaces the cached one.
    std::fs::write(&path, format!("{}\n{}\n", serde_json::json!({ "etag": "\"stale\"" }), yanked.to_line())).unwrap();
    let fresh = client(&reg, None, Some(&cache), false).index(&name("meter")).unwrap().unwrap();
    assert!(!fresh[0].yanked);
    assert_eq!(cached(&path), (validators, body), "the server's file and validators are cached again");

    // A package the server does not have loses its cache entry.
    let ghost = http.cached_index_path(&name("ghost")).unwrap();
    std::fs::create_dir_all(ghost.parent().unwrap()).unwrap();
    std::fs::copy(&path, &ghost).unwrap();
    assert_eq!(http.index(&name("ghost")).unwrap(), None);
    assert!(!ghost.exists());
}

#[test]
fn offline_reads_the_cache_and_never_the_network() {
    let reg = TestRegistry::start().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let token = reg.token("alice", &[], &[]).unwrap();
    let http = client(&reg, Some(&token), Some(&cache), false);
    let packed = pack(tmp.path(), "my-pkg", "1.0.0");
    let entry = http.publish(&packed.archive(), &packed.manifest, None).unwrap();
    assert_eq!(http.index(&name("my_pkg")).unwrap().unwrap(), std::slice::from_ref(&entry));
    let url = reg.url().to_owned();
    drop(reg); // no server any more: offline must not need one

    let offline = open(&url, Some(&token), Some(&cache), true);
    assert_eq!(offline.index(&name("my-pkg")).unwrap().unwrap(), std::slice::from_ref(&entry));
    assert_eq!(offline.names().unwrap(), [name("my-pkg")], "names as published, from the cache");
    let e = offline.index(&name("net")).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OfflineIndex { .. }), "{e}");
    assert!(e.to_string().contains("without --offline"), "{e}");
    let refusals = [
        offline.search("m", 5).map(drop).unwrap_err(),
        offline.download(&entry).map(drop).unwrap_err(),
        offline.publish(&packed.archive(), &packed.manifest, None).map(drop).unwrap_err(),
        offline.set_yanked(&name("my-pkg"), &version("1.0.0"), true).map(drop).unwrap_err(),
        offline.owners(&name("my-pkg")).map(drop).unwrap_err(),
    ];
    for e in refusals {
        assert!(matches!(e.kind(), ErrorKind::OfflineRegistry { .. }), "{e}");
        assert!(e.to_string().contains(&url) && e.to_string().contains("offline mode"), "{e}");
    }
    // Without a cache directory nothing is known offline.
    assert!(open(&url, None, None, true).index(&name("my-pkg")).is_err());
}

#[test]
fn yank_owners_search_and_errors() {
    let reg = TestRegistry::start().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    reg.user("bob").unwrap();
    let http = client(&reg, Some(&token), None, false);
    let file = FileRegistry::at(&tmp.path().join("file-registry")).unwrap();
    for (n, d, k, p) in [
        ("meter", "Per-destination meters", &["rate"][..], "ip6_dst_meter"),
        ("fastmeter", "Meters, faster", &[][..], "fm"),
        ("sampler", "Samples packets", &["meter"][..], "sample"),
        ("guard", "Guards", &[][..], "meter_guard"),
    ] {
        let packed = pack_described(tmp.path(), n, "1.0.0", d, k, p);
        http.publish(&packed.archive(), &packed.manifest, None).unwrap();
        file.publish(&packed.archive(), &packed.manifest, None).unwrap();
    }
    // Search answers as the file registry does, across pages too.
    for query in ["meter", "", "samp", "nothing-like-it"] {
        assert_eq!(http.search(query, 20).unwrap(), file.search(query, 20).unwrap(), "`{query}`");
    }
    assert_eq!(http.search("meter", 2).unwrap(), file.search("meter", 2).unwrap());
    assert_eq!(http.search("", 0).unwrap(), []);
    assert_eq!(http.names().unwrap(), file.names().unwrap());

    let yanked = http.set_yanked(&name("meter"), &version("1.0.0"), true).unwrap();
    assert!(yanked.yanked);
    assert!(http.index(&name("meter")).unwrap().unwrap()[0].yanked);
    assert!(!http.set_yanked(&name("meter"), &version("1.0.0"), false).unwrap().yanked);

    assert!(http.add_owners(&name("meter"), &["bob".into()]).unwrap().contains("bob"));
    let owners: Vec<String> = http.owners(&name("meter")).unwrap().into_iter().map(|o| o.login).collect();
    assert_eq!(owners, ["alice", "bob"]);
    http.remove_owners(&name("meter"), &["bob".into()]).unwrap();
    let e = file.owners(&name("meter")).unwrap_err();
    assert!(e.to_string().contains("no accounts"), "{e}");

    // Errors say what was being done, the method, URL, status, the server's
    // words and what to do.
    let packed = pack(tmp.path(), "meter", "1.0.0");
    let e = http.publish(&packed.archive(), &packed.manifest, None).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 409, .. }), "{text}");
    for part in ["publishing meter@1.0.0", "PUT ", "api/v1/packages/new", "409 Conflict", "bump the version"] {
        assert!(text.contains(part), "`{part}` in {text}");
    }
    assert_eq!(text.matches("bump the version").count(), 1, "said once: {text}");
    let anonymous = client(&reg, None, None, false);
    let e = anonymous.publish(&packed.archive(), &packed.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NeedsToken { .. }), "{e}");
    assert!(e.to_string().contains(&format!("ebpkg login --registry {}", reg.url())), "{e}");
    let wrong = client(&reg, Some("ebpkg_wrong"), None, false);
    let e = wrong.set_yanked(&name("meter"), &version("1.0.0"), true).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 401, .. }), "{e}");
    assert!(e.to_string().contains("yanking meter@1.0.0") && e.to_string().contains("ebpkg login"), "{e}");
    let bob = reg.token("bob", &[], &[]).unwrap();
    let e = client(&reg, Some(&bob), None, false).set_yanked(&name("meter"), &version("1.0.0"), true).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 403, .. }), "{e}");
    assert!(e.to_string().contains("ebpkg owner add"), "{e}");
    // A token without the scope.
    let narrow = reg.token("alice", &[Scope::PublishNew], &[]).unwrap();
    let e = client(&reg, Some(&narrow), None, false).set_yanked(&name("meter"), &version("1.0.0"), true).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 403, .. }), "{e}");
    assert!(e.to_string().contains("scope"), "{e}");
    let e = http.set_yanked(&name("meter"), &version("9.9.9"), true).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 404, .. }), "{e}");

    // A URL that is not a registry server's.
    let e = open(&format!("{}nested/", reg.url()), None, None, false).index(&name("meter")).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotARegistryServer { status: 404, .. }), "{e}");
    assert!(e.to_string().contains("index/config.json answered 404 Not Found"), "{e}");
    let reg_url = RegistryId::parse(reg.url()).unwrap();
    assert!(open_registry(&reg_url, &OpenOptions::default()).is_ok());
}

#[test]
fn a_package_too_large_for_the_registry_is_refused_with_413() {
    let reg = TestRegistry::start_with(Box::new(|c| c.max_archive_bytes = 4096)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let http = client(&reg, Some(&reg.token("alice", &[], &[]).unwrap()), None, false);
    let mut x = 0x9e37_79b9_7f4a_7c15u64; // xorshift: letters that do not compress
    let noise: String = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect();
    let packed = pack_with(tmp.path(), "big", "1.0.0", "", &[("data.txt", &noise)]);
    let e = http.publish(&packed.archive(), &packed.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 413, .. }), "{e}");
    assert!(e.to_string().contains("publishing big@1.0.0") && e.to_string().contains("leave out"), "{e}");
}

#[test]
fn a_publish_reports_its_upload_progress() {
    let reg = TestRegistry::start().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::<(u64, u64)>::new()));
    let record = seen.clone();
    let options = OpenOptions {
        token: Some(reg.token("alice", &[], &[]).unwrap()),
        upload_progress: Some(Arc::new(move |sent, total| record.lock().unwrap().push((sent, total)))),
        ..OpenOptions::default()
    };
    let http = HttpRegistry::open(&RegistryId::parse(reg.url()).unwrap(), &options).unwrap();
    let packed = pack_with(tmp.path(), "big", "1.0.0", "", &[("data.txt", &"z".repeat(300_000))]);
    http.publish(&packed.archive(), &packed.manifest, None).unwrap();
    let seen = seen.lock().unwrap();
    let total = seen.last().unwrap().1;
    assert!(total > packed.bytes.len() as u64, "the whole body: framing and archive");
    assert_eq!(seen.last().unwrap().0, total, "it ends complete");
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "it only grows");
}

#[test]
fn threads_share_one_registry_client() {
    let reg = TestRegistry::start().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let http = Arc::new(client(&reg, Some(&reg.token("alice", &[], &[]).unwrap()), Some(&cache), false));
    let mut expected = Vec::new();
    for n in ["aa", "bb", "cc", "dd"] {
        let packed = pack(tmp.path(), n, "1.0.0");
        http.publish(&packed.archive(), &packed.manifest, None).unwrap();
        expected.push((name(n), packed.sha256));
    }
    std::thread::scope(|s| {
        for _ in 0..8 {
            let http = http.clone();
            let expected = &expected;
            s.spawn(move || {
                for (n, digest) in expected {
                    let entries = http.index(n).unwrap().unwrap();
                    assert_eq!(Sha256Digest::of(&http.download(&entries[0]).unwrap()), *digest);
                }
            });
        }
    });
}

#[test]
fn server_errors_are_retried_after_the_wait_the_server_asks_for() {
    let pg = Postgres::start().unwrap();
    let reg = TestRegistry::start_on(pg.database().unwrap(), Box::new(|_| {})).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let http = client(&reg, Some(&reg.token("alice", &[], &[]).unwrap()), None, false);
    let packed = pack(tmp.path(), "steady", "1.0.0");
    http.publish(&packed.archive(), &packed.manifest, None).unwrap();

    // The database goes away; it is back a second later. The first search gets
    // 503 with Retry-After (5 s), the client waits that long and asks again.
    pg.stop().unwrap();
    let started = Instant::now();
    let hits = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_secs(1));
            pg.start_again().unwrap();
        });
        http.search("steady", 5)
    })
    .unwrap();
    assert_eq!(hits[0].name, name("steady"));
    assert!(started.elapsed() >= Duration::from_secs(5), "it waited as asked: {:?}", started.elapsed());

    // A publish is sent once: a 503 comes back at once.
    pg.stop().unwrap();
    let started = Instant::now();
    let packed = pack(tmp.path(), "steady", "1.1.0");
    let e = http.publish(&packed.archive(), &packed.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 503, retry_after: Some(_), .. }), "{e}");
    assert!(started.elapsed() < Duration::from_secs(4), "not repeated: {:?}", started.elapsed());
    assert!(e.to_string().contains("try again later"), "{e}");
    pg.start_again().unwrap();
    drop(reg);
}

#[test]
fn rate_limits_delay_reads_and_refuse_publishes_at_once() {
    // 20 requests a minute with a burst of 10: past it, a wait of up to 3 s.
    let reg = TestRegistry::start_with(Box::new(|c| {
        c.ip_rate_per_minute = 20;
        c.new_package = Bucket { burst: 1, interval: Duration::from_secs(5) };
    }))
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let http = client(&reg, Some(&reg.token("alice", &[], &[]).unwrap()), None, false);
    let packed = pack(tmp.path(), "first", "1.0.0");
    http.publish(&packed.archive(), &packed.manifest, None).unwrap();
    let started = Instant::now();
    let packed = pack(tmp.path(), "second", "1.0.0");
    let e = http.publish(&packed.archive(), &packed.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 429, retry_after: Some(1..=5), .. }), "{e}");
    assert!(started.elapsed() < Duration::from_secs(1), "a publish is never repeated: {:?}", started.elapsed());
    assert!(e.to_string().contains("try again in"), "{e}");

    // Use up the per-IP budget with plain requests, then search: the client
    // waits as told (Retry-After) and gets its answer.
    let raw = reqwest::blocking::Client::new();
    let search = format!("{}api/v1/packages?q=first", reg.url());
    let mut refused = false;
    for _ in 0..50 {
        if raw.get(&search).send().unwrap().status() == reqwest::StatusCode::TOO_MANY_REQUESTS {
            refused = true;
            break;
        }
    }
    assert!(refused, "the limit was reached");
    let started = Instant::now();
    assert_eq!(http.search("first", 5).unwrap()[0].name, name("first"));
    assert!(started.elapsed() >= Duration::from_millis(900), "it waited: {:?}", started.elapsed());
}

#[test]
fn connection_failures_are_retried_then_reported() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port(); // closed again
    let url = format!("http://127.0.0.1:{port}/");
    let started = Instant::now();
    let e = open(&url, None, None, false).index(&name("meter")).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e.kind(), ErrorKind::Network { attempts: 3, .. }), "{text}");
    assert!(started.elapsed() >= Duration::from_millis(750), "backoff of 0.25 s then 0.5 s at least");
    for part in ["reading the configuration", "GET ", &url, "failed 3 times", "refused", "HTTPS_PROXY"] {
        assert!(text.contains(part), "`{part}` in {text}");
    }
}

/// A hostile HTTP/1.1 peer on loopback, for what the real server never sends:
/// `config.json` as a registry serves it (`auth-required` as asked), every other
/// request answered by `answer`. Answers while it lives.
fn hostile(auth_required: bool, answer: fn(&mut TcpStream)) -> (String, HttpPeer) {
    hostile_with_dl(auth_required, None, answer)
}

/// [`hostile`] whose `config.json` names `dl` as where archives are downloaded.
fn hostile_with_dl(auth_required: bool, dl: Option<String>, answer: fn(&mut TcpStream)) -> (String, HttpPeer) {
    // Given, or the peer itself: known once it listens, before anyone asks.
    let where_dl = Arc::new(OnceLock::<String>::new());
    let config = where_dl.clone();
    let peer = HttpPeer::start(move |request, stream| {
        if request.line().starts_with("GET /index/config.json ") {
            let body = format!("{{\"dl\":\"{}\",\"auth-required\":{auth_required}}}", config.get().unwrap());
            let _ = respond(stream, "200 OK", &[("Connection", "close")], body.as_bytes());
        } else {
            answer(stream);
        }
    })
    .unwrap();
    where_dl.set(dl.unwrap_or_else(|| format!("{}dl", peer.url()))).unwrap();
    (peer.url(), peer)
}

/// The heads of the requests `peer` answered with `answer` (not `config.json`).
fn heads(peer: &HttpPeer) -> Vec<String> {
    peer.requests().into_iter().filter(|r| !r.line().starts_with("GET /index/config.json ")).map(|r| r.head).collect()
}

fn not_found(s: &mut TcpStream) {
    let _ = respond(s, "404 Not Found", &[("Connection", "close")], b"");
}

#[test]
fn a_token_goes_with_reads_only_where_the_registry_requires_it() {
    for required in [false, true] {
        let (url, peer) = hostile(required, not_found);
        let http = open(&url, Some("ebpkg_secret"), None, false);
        assert_eq!(http.index(&name("meter")).unwrap(), None);
        let _ = http.search("m", 5);
        let heads = heads(&peer);
        assert_eq!(heads.len(), 2, "{heads:?}");
        for head in heads.iter() {
            let sent = head.to_ascii_lowercase().contains("authorization: ebpkg_secret");
            assert_eq!(sent, required, "auth-required {required}: {head}");
            assert!(head.contains(concat!("ebpkg/", env!("CARGO_PKG_VERSION"))), "the user agent: {head}");
        }
    }
}

#[test]
fn a_token_is_never_sent_to_another_origin() {
    // Where the registry sends downloads (`dl`, e.g. a CDN or a bucket): another
    // port of the same host is another origin already.
    let (elsewhere, other_peer) = hostile(false, not_found);
    let dl = format!("{elsewhere}dl/{{name}}/{{version}}");
    let (url, peer) = hostile_with_dl(true, Some(dl), not_found);
    let http = open(&url, Some("ebpkg_secret"), None, false);
    assert_eq!(http.index(&name("meter")).unwrap(), None);
    let entry: ebpkg_spec::IndexEntry = serde_json::from_str(&format!(
        r#"{{"v":1,"name":"meter","vers":"1.0.0","deps":[],"cksum":"{}","yanked":false}}"#,
        Sha256Digest::of(b"x")
    ))
    .unwrap();
    let e = http.download(&entry).unwrap_err();
    assert!(e.to_string().contains("404"), "{e}");
    let other = heads(&other_peer);
    assert!(other.iter().any(|h| h.starts_with("GET /dl/meter/1.0.0")), "the download went elsewhere: {other:?}");
    for head in other.iter() {
        assert!(!head.to_ascii_lowercase().contains("authorization"), "the token left its origin: {head}");
    }
    // The registry's own origin still gets it (its index is private).
    let heads = heads(&peer);
    assert!(heads.iter().all(|h| h.to_ascii_lowercase().contains("authorization: ebpkg_secret")), "{heads:?}");
}

#[test]
fn a_server_that_never_finishes_is_given_up_on_at_the_deadline() {
    // A byte a second: every read is well within its timeout, the answer never ends.
    let (url, peer) = hostile(false, |s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\n");
        for _ in 0..120 {
            if s.write_all(b"x").and_then(|()| s.flush()).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let deadlines = ebpkg_sources::Deadlines { answer: Duration::from_secs(2), archive: Duration::from_secs(3) };
    let options = OpenOptions { deadlines, ..OpenOptions::default() };
    let http = HttpRegistry::open(&RegistryId::parse(&url).unwrap(), &options).unwrap();
    let started = Instant::now();
    let e = http.index(&name("meter")).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::TooSlow { secs: 2, .. }), "{e}");
    let text = e.to_string();
    assert!(text.contains(&format!("{url}index/")) && text.contains("EBPKG_HTTP_DEADLINE"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert_eq!(heads(&peer).len(), 1, "a server this slow is not asked again");
    // The default gives an index file two minutes, an archive ten.
    assert_eq!(
        ebpkg_sources::Deadlines::default(),
        ebpkg_sources::Deadlines { answer: Duration::from_secs(120), archive: Duration::from_secs(600) }
    );
}

#[test]
fn answers_are_bounded_whatever_the_server_sends() {
    // A length announced beyond the limit: refused before a byte of it is read.
    let (url, _peer) = hostile(false, |s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\nConnection: close\r\n\r\n");
    });
    let started = Instant::now();
    let e = open(&url, None, None, false).index(&name("meter")).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::BadResponse { .. }), "{e}");
    assert!(e.to_string().contains("at most 67108864 bytes") && e.to_string().contains("1099511627776"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // No length, and no end: the read stops past the limit.
    let (url, _peer) = hostile(false, |s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
        let chunk = vec![b'x'; 1 << 20];
        while s.write_all(&chunk).is_ok() {}
    });
    let e = open(&url, None, None, false).index(&name("meter")).unwrap_err();
    assert!(e.to_string().contains("67108865 or more"), "{e}");

    // A 500 with an endless body: the error reads a little of it, and a GET is
    // asked three times in all, a publish once.
    let (url, peer) = hostile(false, |s| {
        let _ = s.write_all(b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\n");
        let chunk = vec![b'y'; 1 << 16];
        while s.write_all(&chunk).is_ok() {}
    });
    let e = open(&url, None, None, false).index(&name("meter")).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 500, .. }), "{e}");
    assert!(e.to_string().len() < 2000, "the detail is the start of the body: {e}");
    assert_eq!(heads(&peer).len(), 3);
    let tmp = tempfile::tempdir().unwrap();
    let packed = pack(tmp.path(), "meter", "1.0.0");
    let e = open(&url, Some("ebpkg_t"), None, false).publish(&packed.archive(), &packed.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 500, .. }), "{e}");
    assert_eq!(heads(&peer).len(), 4, "a publish is sent once");
}

#[test]
fn a_private_registry_is_read_with_the_token() {
    let reg = TestRegistry::start_with(Box::new(|c| c.auth_required = true)).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let http = client(&reg, Some(&token), Some(&tmp.path().join("cache")), false);
    let packed = pack(tmp.path(), "secret", "1.0.0");
    let entry = http.publish(&packed.archive(), &packed.manifest, None).unwrap();
    assert_eq!(http.index(&name("secret")).unwrap().unwrap(), std::slice::from_ref(&entry));
    assert_eq!(Sha256Digest::of(&http.download(&entry).unwrap()), packed.sha256);
    assert_eq!(http.search("secret", 5).unwrap().len(), 1);
    let anonymous = client(&reg, None, None, false);
    let e = anonymous.index(&name("secret")).unwrap_err();
    assert!(e.to_string().contains("401"), "{e}");
}
