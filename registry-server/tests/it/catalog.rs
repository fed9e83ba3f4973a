//! The web catalog against a real registry (PostgreSQL, HTTP) holding the
//! first-party packages as published: its HTTP semantics (ETags and 304,
//! caching, redirects, 404s with suggestions, the sitemap, sanitized READMEs,
//! content negotiation), and, in headless Chromium, what a person sees: home, a
//! search and a package page and its documentation, no console errors, and
//! screenshots at desktop and phone widths.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::*;
use ebpkg_registry::testing::{
    TestRegistry, attestation, kernel_observation, pack_with, publish_body, signed_publish_body,
};
use ebpkg_registry_testing::Browser;
use ebpkg_signing::SigningKey;
use reqwest::StatusCode;
use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LOCATION};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// Publishes first-party packages from `packages/` as `alice`, dependencies
/// first.
fn publish_first_party(reg: &TestRegistry, token: &str, names: &[&str]) {
    for name in names {
        let packed = ebpkg_archive::pack(&repo_root().join("packages").join(name)).unwrap();
        let version = packed.manifest.package.version.to_string();
        let r = publish(reg, token, &publish_body(&packed, name, &version).unwrap());
        assert_eq!(r.status(), StatusCode::OK, "publishing {name}: {}", r.text().unwrap());
    }
}

fn html(reg: &TestRegistry, path: &str) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let r = http()
        .get(format!("{}{}", reg.url(), path.trim_start_matches('/')))
        .header("Accept", "text/html")
        .send()
        .unwrap();
    let status = r.status();
    let headers = r.headers().clone();
    (status, headers, r.text().unwrap())
}

fn no_redirects() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

#[test]
fn pages_have_correct_http_semantics_and_safe_content() {
    let reg = TestRegistry::start().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    publish_first_party(&reg, &token, &["net", "basic", "meter", "ddos"]);

    // Home lists what was published, with the security headers.
    let (status, headers, body) = html(&reg, "/");
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[CONTENT_TYPE], "text/html; charset=utf-8");
    assert!(headers["content-security-policy"].to_str().unwrap().contains("script-src 'self'"));
    assert!(body.contains(r#"href="/packages/ddos""#), "{body}");
    assert!(body.contains("4 packages"), "{body}");

    // Package page: install line, items, dependencies, dependents, signature status.
    let (status, headers, net) = html(&reg, "/packages/net");
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[CACHE_CONTROL], "public, max-age=60");
    // The install line names this registry (no client has it by default); no TUF root to trust here.
    assert!(net.contains(&format!("ebpkg add net --from {}", reg.url())), "{net}");
    assert!(net.contains(&format!("[registry] default = &quot;{}&quot;", reg.url())), "{net}");
    assert!(!net.contains("--root root.json"), "{net}");
    assert!(net.contains(r#"href="/packages/net/1.0.0/docs#program.l2_redirect""#), "{net}");
    assert!(net.contains(r#"href="/packages/ddos""#), "ddos depends on net: {net}");
    assert!(net.contains("unsigned"), "{net}");
    assert!(net.contains("GPL-2.0-only"), "{net}");
    let (_, _, ddos) = html(&reg, "/packages/ddos");
    assert!(ddos.contains(r#"href="/packages/net""#) && ddos.contains("^1.0"), "dependencies: {ddos}");

    // Documentation: a program's arguments with types and meaning, a map's fields,
    // a chain's source.
    let (status, _, docs) = html(&reg, "/packages/net/1.0.0/docs");
    assert_eq!(status, StatusCode::OK);
    assert!(docs.contains("l2_redirect(ifindex: u32)"), "{docs}");
    assert!(docs.contains("the interface index to send it out of"), "{docs}");
    let (_, _, meter) = html(&reg, "/packages/meter/docs");
    assert!(meter.contains("ip6_dst_counters") && meter.contains("packets counted for this destination"), "{meter}");
    let (_, _, chain) = html(&reg, "/packages/ddos/docs");
    let source = std::fs::read_to_string(repo_root().join("packages/ddos/chains/ddos.eclat")).unwrap();
    let first_line = source.lines().find(|l| !l.trim().is_empty()).unwrap();
    let escaped = first_line.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    assert!(chain.contains(&escaped), "the chain's source `{escaped}` is shown: {chain}");

    // ETag and 304; a publish changes the page and its tag.
    let etag = http().get(format!("{}packages/meter", reg.url())).send().unwrap().headers()[ETAG].clone();
    let again = http().get(format!("{}packages/meter", reg.url())).header(IF_NONE_MATCH, etag.clone()).send().unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert!(again.bytes().unwrap().is_empty());
    let scratch = tempfile::tempdir().unwrap();
    let key = SigningKey::generate().unwrap();
    register_key_at(reg.url(), &token, "alice", &key);
    let packed =
        pack_with(scratch.path(), "meter", "1.1.0", "description = \"meters\"\nlicense = \"MIT\"\n", &[]).unwrap();
    assert_eq!(
        publish(&reg, &token, &signed_publish_body(&packed, "meter", "1.1.0", &key).unwrap()).status(),
        StatusCode::OK
    );
    let changed = http().get(format!("{}packages/meter", reg.url())).header(IF_NONE_MATCH, etag).send().unwrap();
    assert_eq!(changed.status(), StatusCode::OK);
    let page = changed.text().unwrap();
    assert!(page.contains("1.1.0") && page.contains("signed with key") && page.contains(">alice<"), "{page}");
    // The old version's page says it is not the newest and pins the version.
    let (_, _, old) = html(&reg, "/packages/meter/1.0.0");
    assert!(old.contains("not the newest") && old.contains("ebpkg add meter@=1.0.0"), "{old}");

    // A name spelled differently redirects to the package's spelling.
    let r = no_redirects().get(format!("{}packages/Meter/docs", reg.url())).send().unwrap();
    assert_eq!(r.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(r.headers()[LOCATION], "/packages/meter/docs");

    // 404s suggest close names; unknown versions say so.
    let (status, headers, missing) = html(&reg, "/packages/metr");
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(headers[CACHE_CONTROL], "no-cache");
    assert!(missing.contains("Did you mean") && missing.contains(r#"href="/packages/meter""#), "{missing}");
    let (status, _, missing) = html(&reg, "/packages/dd0s");
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(missing.contains(r#"href="/packages/ddos""#), "{missing}");
    let (status, _, body) = html(&reg, "/packages/meter/9.9.9");
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("has no version 9.9.9"), "{body}");
    let (status, _, body) = html(&reg, "/packages/..%2Fetc");
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // Unknown paths: a page for browsers, the API's JSON for programs.
    let (status, headers, _) = html(&reg, "/nowhere");
    assert_eq!((status, headers[CONTENT_TYPE].to_str().unwrap()), (StatusCode::NOT_FOUND, "text/html; charset=utf-8"));
    let r = get(&reg, "nowhere");
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.text().unwrap().contains("\"errors\""));

    // Search: the API's ranking, paginated, query escaped.
    let (_, _, results) = html(&reg, "/search?q=meter");
    assert!(
        results.find("/packages/meter").unwrap() < results.find("/packages/ddos").unwrap_or(usize::MAX),
        "{results}"
    );
    let (_, _, results) = html(&reg, "/search?q=%3Cscript%3Ealert(1)%3C/script%3E");
    assert!(!results.contains("<script>alert"), "{results}");
    let (status, _, _) = html(&reg, &format!("/search?q={}", "a".repeat(300)));
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // The API's rule: 256 characters (not bytes), and no control character.
    let (status, _, _) = html(&reg, &format!("/search?q={}", "%C3%A9".repeat(200)));
    assert_eq!(status, StatusCode::OK, "200 characters of 2 bytes each");
    let (status, _, _) = html(&reg, "/search?q=me%00ter");
    assert_eq!(status, StatusCode::BAD_REQUEST, "a NUL never reaches the database");

    // A hostile README is rendered without its script, handlers or javascript: links.
    let readme = "# Evil\n\n<script>alert(1)</script><img src=x onerror=alert(2)>\n\n[x](javascript:alert(3))\n";
    let packed =
        pack_with(scratch.path(), "evil", "1.0.0", "readme = \"README.md\"\n", &[("README.md", readme)]).unwrap();
    assert_eq!(publish(&reg, &token, &publish_body(&packed, "evil", "1.0.0").unwrap()).status(), StatusCode::OK);
    let (_, _, evil) = html(&reg, "/packages/evil");
    assert!(evil.contains("<h1>Evil</h1>"), "{evil}");
    for bad in ["alert(1)", "onerror", "javascript:"] {
        assert!(!evil.contains(bad), "`{bad}` reached the page: {evil}");
    }

    // Owner page, sitemap, robots, static files.
    let (status, _, alice) = html(&reg, "/users/alice");
    assert_eq!(status, StatusCode::OK);
    assert!(alice.contains(r#"href="/packages/ddos""#) && alice.contains("owns 5 packages"), "{alice}");
    assert_eq!(html(&reg, "/users/nobody").0, StatusCode::NOT_FOUND);
    let sitemap = get(&reg, "sitemap.xml").text().unwrap();
    assert!(sitemap.contains("/packages/ddos</loc>") && sitemap.contains("<urlset"), "{sitemap}");
    assert!(get(&reg, "robots.txt").text().unwrap().contains("Sitemap: "));
    let css = net.split("rel=\"stylesheet\" href=\"").nth(1).unwrap().split('"').next().unwrap();
    let r = get(&reg, css.trim_start_matches('/'));
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()[CACHE_CONTROL], "public, max-age=31536000, immutable");
    assert_eq!(get(&reg, "static/catalog.0000.css").status(), StatusCode::NOT_FOUND);
}

/// The version page's Kernels section: a sentence on how to publish one when
/// there is none; one row per kernel once an attestation is added, shown at
/// once (the page cache drops the page), with whose key it was and whether
/// that key was revoked since. The "Kernel" requirement line stays.
#[test]
fn a_version_page_shows_its_kernels_and_a_new_attestation_at_once() {
    let reg = TestRegistry::start().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let key = SigningKey::generate().unwrap();
    register_key_at(reg.url(), &token, "alice", &key);
    let packed = pack_with(scratch.path(), "meter", "1.0.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &token, &publish_body(&packed, "meter", "1.0.0").unwrap()).status(), StatusCode::OK);
    let (_, _, before) = html(&reg, "/packages/meter");
    assert!(before.contains("<h2 id=\"kernels\">Kernels</h2>"), "{before}");
    assert!(before.contains("No kernel verification has been published for this version"), "{before}");
    assert!(before.contains("<code>ebpkg attest</code>"), "{before}");
    assert!(before.contains("<dt>Kernel</dt>"), "the requirement line stays: {before}");

    let kernels = vec![
        kernel_observation("6.1.0-56-amd64", &["ip6_meter", "ip6_dst_tbmon"], None),
        kernel_observation("5.10.0-46-amd64", &["ip6_meter"], Some(("ip6_dst_tbmon", "BPF_STX uses reserved fields"))),
    ];
    let signed = attestation(&key, "meter", "1.0.0", &packed.sha256, kernels).unwrap();
    let r = http()
        .post(format!("{}api/v1/packages/meter/1.0.0/attestations", reg.url()))
        .header("Authorization", &token)
        .body(signed.json().to_owned())
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().unwrap());
    // At once: the cached page was dropped.
    let (_, _, after) = html(&reg, "/packages/meter");
    assert!(!after.contains("No kernel verification has been published"), "{after}");
    for shown in [
        "<code>6.1.0-56-amd64</code>",
        "<code>5.10.0-46-amd64</code>",
        "x86_64",
        "verified (2 items; native tier 2 of 2)",
        "refused: program <code>ip6_dst_tbmon</code>: BPF_STX uses reserved fields",
        "2026-12-01",
        r#"<a href="/users/alice">alice</a>"#,
    ] {
        assert!(after.contains(shown), "`{shown}` is not on the page: {after}");
    }
    let short = key.public().id().to_string();
    assert!(after.contains(&format!(">{}…</code>", &short[..16])), "the key, shortened: {after}");
    assert!(!after.contains("key revoked"), "{after}");
    assert!(!after.contains("Rebuilt by"), "no rebuild attestation yet: {after}");

    // A rebuild attestation goes in the same file and gets a section of its
    // own: who rebuilt which shipped object, with which compiler, and what
    // they found. Anyone may rebuild: carol, no owner, attaches one signed
    // with her own key, and the page names her account.
    let carol = reg.token("carol", &[], &[]).unwrap();
    let carols = SigningKey::generate().unwrap();
    register_key_at(reg.url(), &carol, "carol", &carols);
    let rebuild = ebpkg_registry::testing::rebuild_attestation(&carols, "meter", "1.0.0", &packed.sha256).unwrap();
    let r = http()
        .post(format!("{}api/v1/packages/meter/1.0.0/attestations", reg.url()))
        .header("Authorization", &carol)
        .body(rebuild.json().to_owned())
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().unwrap());
    let (_, _, rebuilt) = html(&reg, "/packages/meter");
    for shown in [
        "<h2 id=\"rebuilt\">Rebuilt by</h2>",
        "<code>prebuilt/xdp/src/meter.bpf.c.o</code>",
        "Debian clang version 14.0.6",
        "2026-12-02",
        "of <a href=\"/users/carol\">carol</a>",
    ] {
        assert!(rebuilt.contains(shown), "`{shown}` is not on the page: {rebuilt}");
    }
    assert!(!rebuilt.contains("signed with publisher keys"), "{rebuilt}");
    assert!(!rebuilt.contains("no longer an owner"), "a rebuilder need not be an owner: {rebuilt}");
    assert!(!rebuilt.contains("an attestation this page cannot read"), "not a kernel row: {rebuilt}");

    // Alice revokes the key: the attestation stays, marked.
    let hex = key.public().id().to_hex();
    let r = http().delete(format!("{}api/v1/me/keys/{hex}", reg.url())).header("Authorization", &token).send().unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let (status, _, version_page) = html(&reg, "/packages/meter/1.0.0");
    assert_eq!(status, StatusCode::OK);
    assert!(
        version_page.contains("<code>6.1.0-56-amd64</code>") && version_page.contains("key revoked"),
        "{version_page}"
    );
}

#[test]
fn a_private_registry_keeps_its_pages_private() {
    let reg = TestRegistry::start_with(Box::new(|c| c.auth_required = true)).unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    publish_first_party(&reg, &token, &["net"]);
    assert_eq!(html(&reg, "/packages/net").0, StatusCode::UNAUTHORIZED);
    let r = http().get(format!("{}packages/net", reg.url())).header("Authorization", &token).send().unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()[CACHE_CONTROL], "private, max-age=60");
}

/// What a person sees, in a real browser: the key content of home, a search, a
/// package page and its documentation; no console errors or failed loads; no
/// WCAG 2 AA violation axe-core can find (contrast, labels, landmarks, names);
/// a phone-width layout without sideways scrolling. Screenshots are kept under
/// the test's output directory for people to look at.
#[test]
fn a_browser_shows_home_search_package_and_docs_without_errors() {
    let reg = TestRegistry::start().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    publish_first_party(&reg, &token, &["net", "basic", "meter", "sets", "sampler", "ddos"]);
    // ddos 1.0.0 has an attestation (a kernel that verified it, one that refused
    // a program); net has none.
    let key = SigningKey::generate().unwrap();
    register_key_at(reg.url(), &token, "alice", &key);
    let ddos = ebpkg_archive::pack(&repo_root().join("packages/ddos")).unwrap();
    let kernels = vec![
        kernel_observation("6.1.0-56-amd64", &["ddos_meter", "ddos_sampler"], None),
        kernel_observation("5.10.0-46-amd64", &["ddos_meter"], Some(("ddos_sampler", "BPF_STX uses reserved fields"))),
    ];
    let version = ddos.manifest.package.version.to_string();
    let signed = attestation(&key, "ddos", &version, &ddos.sha256, kernels).unwrap();
    let r = http()
        .post(format!("{}api/v1/packages/ddos/{version}/attestations", reg.url()))
        .header("Authorization", &token)
        .body(signed.json().to_owned())
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK, "{}", r.text().unwrap());
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("catalog-screenshots");
    let base = reg.url().trim_end_matches('/').to_owned();
    let mut browser = Browser::launch().unwrap();
    let pages = [
        // Nothing was published twice: nothing is "updated" yet (it listed the new packages again).
        ("home", "/", vec!["Reusable eBPF programs", "New packages", "ddos", "No package has a new version since"]),
        ("search", "/search?q=ddos", vec!["Search: ddos", "ddos", "1.0.0"]),
        (
            "package",
            "/packages/ddos",
            vec![
                "ebpkg add ddos",
                "Dependencies",
                "net",
                "README",
                "GPL-2.0-only",
                "Kernels",
                "6.1.0-56-amd64",
                "verified (2 items; native tier 2 of 2)",
                "refused: program ddos_sampler: BPF_STX uses reserved fields",
            ],
        ),
        (
            "package-unattested",
            "/packages/net",
            vec!["Kernels", "No kernel verification has been published for this version", "ebpkg attest"],
        ),
        (
            "docs",
            "/packages/net/docs",
            vec![
                "l2_redirect(ifindex: u32)",
                "the interface index to send it out of",
                "Arguments",
                "from prog.net import l2_redirect",
            ],
        ),
    ];
    for (width, height, mobile, label) in [(1280, 900, false, "desktop"), (390, 844, true, "phone")] {
        browser.viewport(width, height, mobile).unwrap();
        for (name, path, expected) in &pages {
            let visit = browser.visit(&format!("{base}{path}")).unwrap();
            assert_eq!(visit.status, Some(200), "{path}");
            assert!(visit.problems.is_empty(), "{path} at {label} width: {:?}", visit.problems);
            for text in expected {
                assert!(visit.text.contains(text), "{path} does not show `{text}`:\n{}", visit.text);
            }
            let violations = browser.accessibility_violations().unwrap();
            assert!(violations.is_empty(), "{path} at {label} width, WCAG 2 AA (axe-core): {violations:#?}");
            // Nothing wider than the screen: a phone scrolls down, not sideways.
            let overflow = browser.eval("document.documentElement.scrollWidth - window.innerWidth").unwrap();
            assert!(overflow.as_i64().unwrap_or(i64::MAX) <= 0, "{path} scrolls sideways by {overflow} px at {label}");
            // Nor does the package page's table of kernels: stacked like the items.
            if *name == "package" {
                let kernels = browser
                    .eval("(() => { const w = document.querySelector('section[aria-labelledby=kernels] .table-wrap'); return w ? w.scrollWidth - w.clientWidth : -1 })()")
                    .unwrap();
                assert!(
                    kernels.as_i64().is_some_and(|o| (0..=0).contains(&o)),
                    "kernels table scrolls by {kernels} at {label}"
                );
            }
            // Nor does the package page's table of items: on a phone, each row is stacked.
            if *name == "package" {
                let items = browser
                    .eval("(() => { const w = document.querySelector('#items ~ .table-wrap, section[aria-labelledby=items] .table-wrap'); return w ? w.scrollWidth - w.clientWidth : -1 })()")
                    .unwrap();
                assert!(
                    items.as_i64().is_some_and(|o| (0..=0).contains(&o)),
                    "items table scrolls by {items} at {label}"
                );
                // The README's own title is the heading (ours is for screen readers only).
                let shown = browser.eval("getComputedStyle(document.getElementById('readme')).position").unwrap();
                assert_eq!(shown, "absolute", "the README heading is hidden when the README has a title");
            }
            let file = out.join(format!("{name}-{label}.png"));
            browser.screenshot(&file).unwrap();
            assert!(std::fs::metadata(&file).unwrap().len() > 10_000, "{} is (nearly) empty", file.display());
            eprintln!("screenshot: {}", file.display());
        }
    }
    // The copy button is there (the script ran) and labelled.
    let _ = browser.visit(&format!("{base}/packages/ddos")).unwrap();
    let button_after = browser.eval("(() => { const b = document.querySelector('button[data-copy]'); return b && !b.hidden ? b.dataset.copy : null })()").unwrap();
    assert_eq!(button_after, format!("ebpkg add ddos --from {}", reg.url()).as_str());
    // A search by keyboard: focus the box, type, submit.
    browser
        .eval("document.getElementById('q-top').value = 'token bucket'; document.querySelector('form.search').submit()")
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let text = browser.eval("document.body.innerText").unwrap();
    assert!(text.as_str().unwrap().contains("meter"), "{text}");
}

/// Pages are kept for seconds, and dropped at any change a notification
/// announces: a change written behind the server's back (no NOTIFY) is not seen
/// until one arrives.
#[test]
fn rendered_pages_are_cached_until_a_change_is_announced() {
    let reg = TestRegistry::start().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    publish_first_party(&reg, &token, &["meter"]);
    let downloads =
        |page: &str| page.split("<dt>Downloads</dt><dd>").nth(1).and_then(|r| r.split('<').next()).map(str::to_owned);
    let (_, _, first) = html(&reg, "/packages/meter");
    assert_eq!(downloads(&first).as_deref(), Some("0"), "{first}");
    reg.block_on(sqlx::query!("UPDATE versions SET downloads = 4242").execute(reg.pool())).unwrap();
    let (_, _, cached) = html(&reg, "/packages/meter");
    assert_eq!(downloads(&cached).as_deref(), Some("0"), "served from the cache");
    reg.block_on(sqlx::query!("SELECT pg_notify('ebpkg_index', 'meter')").execute(reg.pool())).unwrap();
    let start = std::time::Instant::now();
    loop {
        let (_, _, page) = html(&reg, "/packages/meter");
        if downloads(&page).as_deref() == Some("4242") {
            break;
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(5), "the notification did not drop the page");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Revalidation is answered for cached pages too.
    let r = http().get(format!("{}packages/meter", reg.url())).send().unwrap();
    let etag = r.headers()[ETAG].clone();
    let again = http().get(format!("{}packages/meter", reg.url())).header(IF_NONE_MATCH, etag).send().unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
}
