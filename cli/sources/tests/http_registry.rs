//! The HTTP client against the real registry server (in this process, on
//! loopback, with its own PostgreSQL database).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ebpkg_registry::testing::TestRegistry;
use ebpkg_sources::{ErrorKind, FileRegistry, HttpRegistry, OpenOptions, Registry, RegistryUrl, open_registry};
use ebpkg_spec::types::Sha256Digest;

fn client(reg: &TestRegistry, token: Option<&str>, cache: Option<&std::path::Path>, offline: bool) -> HttpRegistry {
    let url = RegistryUrl::parse(reg.url()).unwrap();
    let options = OpenOptions {
        token: token.map(str::to_owned),
        cache_dir: cache.map(|p| p.to_owned()),
        offline,
        upload_progress: None,
    };
    HttpRegistry::open(&url, &options).unwrap()
}

#[test]
fn publish_index_download_and_revalidation() {
    let reg = TestRegistry::start().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let token = reg.token("alice", &[], &[]).unwrap();
    let http = client(&reg, Some(&token), Some(&cache), false);
    let packed = pack_described(tmp.path(), "meter", "1.0.0", "Rate meters", &["rate"], "ip6_meter");
    let entry = http.publish(&packed.bytes, &packed.manifest).unwrap();
    assert_eq!(entry.cksum, packed.sha256);

    let entries = http.index(&name("meter")).unwrap().unwrap();
    assert_eq!(entries, std::slice::from_ref(&entry));
    let archive = http.download(&entry).unwrap();
    assert_eq!(Sha256Digest::of(&archive), packed.sha256);
    assert_eq!(http.index(&name("nothing")).unwrap(), None);

    // The cached copy is used when the server answers 304: make the cached body
    // differ from the server's (same ETag) and see it come back.
    let cached = ebpkg_spec::cache_layout::CacheLayout::new(&cache).http_index(reg.url(), "me/te/meter");
    let text = std::fs::read_to_string(&cached).unwrap();
    let (etag, body) = text.split_once('\n').unwrap();
    let mut yanked = entry.clone();
    yanked.yanked = true;
    std::fs::write(&cached, format!("{etag}\n{}\n", yanked.to_line())).unwrap();
    assert!(body.contains("\"yanked\":false"));
    let again = client(&reg, None, Some(&cache), false).index(&name("meter")).unwrap().unwrap();
    assert!(again[0].yanked, "the server said 304 and the cached body was used");
    // A stale ETag gets the new file.
    std::fs::write(&cached, format!("\"stale\"\n{}\n", yanked.to_line())).unwrap();
    let fresh = client(&reg, None, Some(&cache), false).index(&name("meter")).unwrap().unwrap();
    assert!(!fresh[0].yanked);

    // Offline: from the cache only.
    let offline = client(&reg, None, Some(&cache), true);
    assert_eq!(offline.index(&name("meter")).unwrap().unwrap(), [entry]);
    let e = offline.index(&name("net")).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::OfflineIndex { .. }), "{e}");
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
        http.publish(&packed.bytes, &packed.manifest).unwrap();
        file.publish(&packed.bytes, &packed.manifest).unwrap();
    }
    // Search answers as the file registry does.
    for query in ["meter", "", "samp"] {
        assert_eq!(http.search(query, 20).unwrap(), file.search(query, 20).unwrap(), "`{query}`");
    }
    assert_eq!(http.search("meter", 2).unwrap().len(), 2);
    assert_eq!(http.names().unwrap(), file.names().unwrap());

    let yanked = http.set_yanked(&name("meter"), &version("1.0.0"), true).unwrap();
    assert!(yanked.yanked);
    assert!(!http.set_yanked(&name("meter"), &version("1.0.0"), false).unwrap().yanked);

    assert!(http.add_owners(&name("meter"), &["bob".into()]).unwrap().contains("bob"));
    let owners: Vec<String> = http.owners(&name("meter")).unwrap().into_iter().map(|o| o.login).collect();
    assert_eq!(owners, ["alice", "bob"]);
    http.remove_owners(&name("meter"), &["bob".into()]).unwrap();
    let e = file.owners(&name("meter")).unwrap_err();
    assert!(e.to_string().contains("no accounts"), "{e}");

    // Errors name the method, URL, status and what to do.
    let packed = pack(tmp.path(), "meter", "1.0.0");
    let e = http.publish(&packed.bytes, &packed.manifest).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 409, .. }), "{text}");
    assert!(
        text.contains("PUT ") && text.contains("api/v1/packages/new") && text.contains("bump the version"),
        "{text}"
    );
    let anonymous = client(&reg, None, None, false);
    let e = anonymous.publish(&packed.bytes, &packed.manifest).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NeedsToken { .. }) && e.to_string().contains("ebpkg login"), "{e}");
    let wrong = client(&reg, Some("ebpkg_wrong"), None, false);
    let e = wrong.set_yanked(&name("meter"), &version("1.0.0"), true).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 401, .. }) && e.to_string().contains("ebpkg login"), "{e}");
    let bob = reg.token("bob", &[], &[]).unwrap();
    let e = client(&reg, Some(&bob), None, false).set_yanked(&name("meter"), &version("1.0.0"), true).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Http { status: 403, .. }), "{e}");
    let reg_url = RegistryUrl::parse(reg.url()).unwrap();
    assert!(open_registry(&reg_url, &OpenOptions::default()).is_ok());
}

#[test]
fn a_publish_reports_its_upload_progress() {
    let reg = TestRegistry::start().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(u64, u64)>::new()));
    let record = seen.clone();
    let options = OpenOptions {
        token: Some(reg.token("alice", &[], &[]).unwrap()),
        upload_progress: Some(std::sync::Arc::new(move |sent, total| record.lock().unwrap().push((sent, total)))),
        ..OpenOptions::default()
    };
    let http = HttpRegistry::open(&RegistryUrl::parse(reg.url()).unwrap(), &options).unwrap();
    let packed = pack_with(tmp.path(), "big", "1.0.0", "", &[("data.txt", &"z".repeat(300_000))]);
    http.publish(&packed.bytes, &packed.manifest).unwrap();
    let seen = seen.lock().unwrap();
    let total = seen.last().unwrap().1;
    assert!(total > packed.bytes.len() as u64, "the whole body: framing and archive");
    assert_eq!(seen.last().unwrap().0, total, "it ends complete");
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "it only grows");
}
