//! The API against a real server, a real PostgreSQL database and real HTTP on
//! loopback: every endpoint's successes and refusals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use ebpkg_registry::testing::{TestRegistry, pack_described, pack_with, publish_body};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::registry_api::{
    ApiErrors, IndexConfig, MatchedOn, OwnersResponse, PackageInfo, PublishAllowed, PublishResponse, Scope,
    SearchResponse, TokenCreated, TokenList, VersionInfo,
};
use ebpkg_spec::types::Sha256Digest;
use reqwest::StatusCode;
use reqwest::header::{CACHE_CONTROL, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, RETRY_AFTER};

#[test]
fn publish_then_index_and_download_with_cargo_caching() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let packed = pack_described(scratch.path(), "meter", "1.0.0", "Rate meters", &["rate"], "ip6_meter").unwrap();
    let r = publish(&reg, &token, &publish_body(&packed, "meter", "1.0.0").unwrap());
    assert_eq!(r.status(), StatusCode::OK);
    let published: PublishResponse = r.json().unwrap();
    assert_eq!(published.entry, IndexEntry::from_manifest(&packed.manifest, packed.sha256));

    let config: IndexConfig = get(&reg, "index/config.json").json().unwrap();
    assert_eq!(config.api.as_deref(), Some(reg.url().trim_end_matches('/')));
    assert!(!config.auth_required);

    let index = get(&reg, "index/me/te/meter");
    assert_eq!(index.status(), StatusCode::OK);
    assert_eq!(index.headers()[CACHE_CONTROL], "public, max-age=600");
    let etag = index.headers()[ETAG].to_str().unwrap().to_owned();
    let modified = index.headers()[LAST_MODIFIED].to_str().unwrap().to_owned();
    let text = index.text().unwrap();
    assert_eq!(etag, format!("\"{}\"", Sha256Digest::of(text.as_bytes())), "a strong ETag: the file's digest");
    assert_eq!(text, format!("{}\n", published.entry.to_line()));
    let again = http().get(format!("{}index/me/te/meter", reg.url())).header(IF_NONE_MATCH, &etag).send().unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    let since =
        http().get(format!("{}index/me/te/meter", reg.url())).header(IF_MODIFIED_SINCE, &modified).send().unwrap();
    assert_eq!(since.status(), StatusCode::NOT_MODIFIED);
    let stale = http().get(format!("{}index/me/te/meter", reg.url())).header(IF_NONE_MATCH, "\"0000\"").send().unwrap();
    assert_eq!(stale.status(), StatusCode::OK);
    // Names are lowercase: an uppercase path names no package.
    assert_eq!(get(&reg, "index/me/te/METER").status(), StatusCode::NOT_FOUND);

    let url = config.download_url(&published.entry.name, &published.entry.vers, &published.entry.cksum);
    let archive = http().get(url).send().unwrap();
    assert_eq!(archive.status(), StatusCode::OK);
    assert_eq!(archive.headers()[CACHE_CONTROL], "public, max-age=31536000, immutable");
    assert_eq!(archive.bytes().unwrap().as_ref(), packed.bytes.as_slice());

    let version: VersionInfo = get(&reg, "api/v1/packages/meter/1.0.0").json().unwrap();
    assert_eq!(version.entry, published.entry);
    assert_eq!(version.readme.as_deref(), Some("# meter\n\nRate meters\n"));
    assert_eq!(version.license.as_deref(), Some("MIT"));
    assert_eq!(version.entry.programs[0].name.as_str(), "ip6_meter");
    let info: PackageInfo = get(&reg, "api/v1/packages/meter").json().unwrap();
    assert_eq!(info.owners.iter().map(|o| o.login.as_str()).collect::<Vec<_>>(), ["alice"]);
    assert_eq!(info.versions.len(), 1);
    assert_eq!(info.versions[0].size, packed.bytes.len() as u64);
}

#[test]
fn unknown_packages_and_paths_are_404s() {
    let reg = TestRegistry::start().unwrap();
    for path in [
        "index/3/n/net",
        "index/ne/t/net",
        "index/xx/yy/meter",
        "index/me/te/../../3/n/net",
        "index/%2e%2e/%2e%2e/etc/passwd",
        "index/",
        "api/v1/packages/net",
        "api/v1/packages/net/1.0.0",
        "api/v1/packages/net/1.0.0/download",
        "api/v1/packages/net/not-a-version/download",
        "api/v1/packages/..%2f..%2fetc/1.0.0/download",
        "api/v1/nothing-here",
    ] {
        let r = get(&reg, path);
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
        let body: ApiErrors = r.json().unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(!body.joined().is_empty());
    }
}

#[test]
fn publishes_that_must_be_refused_change_nothing() {
    let reg = TestRegistry::start_with(Box::new(|c| c.max_archive_bytes = 64 * 1024)).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let good = pack_with(scratch.path(), "my-pkg", "1.0.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &token, &publish_body(&good, "my-pkg", "1.0.0").unwrap()).status(), StatusCode::OK);
    let before = get(&reg, "index/my/-p/my-pkg").text().unwrap();

    let refuse = |body: Vec<u8>, status: StatusCode, says: &str| {
        let r = publish(&reg, &token, &body);
        assert_eq!(r.status(), status, "{says}");
        let detail = r.json::<ApiErrors>().unwrap().joined();
        assert!(detail.contains(says), "`{detail}` should say `{says}`");
    };
    // The version exists (also with other build metadata), the name collides.
    refuse(publish_body(&good, "my-pkg", "1.0.0").unwrap(), StatusCode::CONFLICT, "already exists");
    let build = pack_with(scratch.path(), "my-pkg", "1.0.0+b", "", &[]).unwrap();
    refuse(publish_body(&build, "my-pkg", "1.0.0+b").unwrap(), StatusCode::CONFLICT, "already exists");
    let other = pack_with(scratch.path(), "my_pkg", "2.0.0", "", &[]).unwrap();
    refuse(
        publish_body(&other, "my_pkg", "2.0.0").unwrap(),
        StatusCode::CONFLICT,
        "collides with the existing package `my-pkg`",
    );
    // A new name that could pass for the existing one, published by someone else
    // (an owner may publish look-alikes of their own package).
    let bob = reg.token("bob", &[], &[]).unwrap();
    for close in ["my_pkg_", "mypkg", "my-pk9"] {
        let impostor = pack_with(scratch.path(), close, "1.0.0", "", &[]).unwrap();
        let body = publish_body(&impostor, close, "1.0.0").unwrap();
        let r = publish(&reg, &bob, &body);
        if close == "my-pk9" {
            // (`9` is not a look-alike of `g`: a name apart.)
            assert_eq!(r.status(), StatusCode::OK);
            continue;
        }
        assert_eq!(r.status(), StatusCode::CONFLICT, "{close}");
        let detail = r.json::<ApiErrors>().unwrap().joined();
        assert!(detail.contains("too close to the existing package `my-pkg`"), "{detail}");
        assert_eq!(get(&reg, &format!("index/{}", ebpkg_spec::index_path(close))).status(), StatusCode::NOT_FOUND);
    }
    // A JSON body over the limit, refused by the body limit: in the API's shape.
    let huge = serde_json::json!({"users": vec!["x".repeat(1000); 200]});
    let r = send(&reg, reqwest::Method::PUT, "api/v1/packages/my-pkg/owners", &token, Some(huge));
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert!(r.json::<ApiErrors>().unwrap().joined().contains("larger"));
    // A user name the database could not hold (Schemathesis found the 500).
    for users in [serde_json::json!({"users": ["al\u{0}ice"]}), serde_json::json!({"users": ["\u{e9}"]})] {
        for method in [reqwest::Method::PUT, reqwest::Method::DELETE] {
            let r = send(&reg, method, "api/v1/packages/my-pkg/owners", &token, Some(users.clone()));
            assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{users}");
            assert!(r.json::<ApiErrors>().unwrap().joined().contains("not a user name"), "{users}");
        }
    }
    // The metadata does not describe the archive.
    let v2 = pack_with(scratch.path(), "my-pkg", "2.0.0", "", &[]).unwrap();
    refuse(publish_body(&v2, "my-pkg", "2.0.1").unwrap(), StatusCode::BAD_REQUEST, "refused");
    let mut lying = publish_body(&v2, "my-pkg", "2.0.0").unwrap();
    let at = lying.len() - 10;
    lying[at] ^= 1;
    refuse(lying, StatusCode::BAD_REQUEST, "SHA-256");
    // Framing: truncated, trailing, announced too large, metadata too large or bad.
    let body = publish_body(&v2, "my-pkg", "2.0.0").unwrap();
    refuse(body[..body.len() - 1].to_vec(), StatusCode::BAD_REQUEST, "ended early");
    refuse([body.clone(), vec![0]].concat(), StatusCode::BAD_REQUEST, "follow the archive");
    refuse(vec![1, 0], StatusCode::BAD_REQUEST, "ended early");
    // A length read from bytes that are not the framing announces more than was
    // sent: a malformed body (400), not a large one. Too large is a body that is.
    refuse(
        b"\x01\x02\x03\x04 and more".to_vec(),
        StatusCode::BAD_REQUEST,
        "malformed: it announces 67305985 bytes of publish metadata, but only 9 byte(s) follow",
    );
    refuse(u32::MAX.to_le_bytes().to_vec(), StatusCode::BAD_REQUEST, "malformed");
    // JSON where the binary body belongs (Schemathesis sent `null`): text is not
    // read as a length, and the message says what the body is instead.
    for json in [&b"null"[..], b"{}", b"{\"name\": \"my-pkg\"}", b"garbage, not a publish body"] {
        refuse(json.to_vec(), StatusCode::BAD_REQUEST, "starts with text");
    }
    let mut huge_metadata = u32::MAX.to_le_bytes().to_vec();
    huge_metadata.resize(4 + 64 * 1024 + 1, b' ');
    refuse(huge_metadata, StatusCode::PAYLOAD_TOO_LARGE, "publish metadata is 4294967295 bytes");
    let mut huge_archive = frame(br#"{"name":"my-pkg","vers":"3.0.0","cksum":"0000000000000000000000000000000000000000000000000000000000000000"}"#);
    huge_archive.extend_from_slice(&(1u32 << 30).to_le_bytes());
    refuse(huge_archive.clone(), StatusCode::BAD_REQUEST, "announces 1073741824 bytes of archive, but only 0 byte(s)");
    huge_archive.resize(huge_archive.len() + 64 * 1024 + 1, 0);
    refuse(huge_archive, StatusCode::PAYLOAD_TOO_LARGE, "archive");
    let bomb = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    refuse(frame(bomb.as_bytes()), StatusCode::BAD_REQUEST, "metadata is not valid");
    refuse(frame(br#"{"name":"my-pkg","vers":"3.0.0","cksum":"00","extra":1}"#), StatusCode::BAD_REQUEST, "metadata");
    refuse(frame(b"\xff\xfe"), StatusCode::BAD_REQUEST, "metadata");
    // Hostile archives: not gzip, a path escaping the package, a bomb.
    for (archive, says) in hostile_archives() {
        let metadata = format!(r#"{{"name":"my-pkg","vers":"4.0.0","cksum":"{}"}}"#, Sha256Digest::of(&archive));
        let mut body = frame(metadata.as_bytes());
        body.extend_from_slice(&frame(&archive));
        refuse(body, StatusCode::BAD_REQUEST, says);
    }
    assert_eq!(get(&reg, "index/my/-p/my-pkg").text().unwrap(), before, "nothing changed");
    assert_eq!(get(&reg, "index/my/_p/my_pkg").text().unwrap(), before, "one package, either spelling");
    let info: PackageInfo = get(&reg, "api/v1/packages/my-pkg").json().unwrap();
    assert_eq!(info.versions.len(), 1);
}

#[test]
fn tokens_scopes_and_owners_decide_every_action() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let owner = reg.token("owner", &[], &[]).unwrap();
    reg.user("stranger").unwrap();
    let pack = |v: &str| publish_body(&pack_with(scratch.path(), "guard", v, "", &[]).unwrap(), "guard", v).unwrap();
    let first = pack_with(scratch.path(), "guard", "1.0.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &owner, &publish_body(&first, "guard", "1.0.0").unwrap()).status(), StatusCode::OK);
    // Attestations are signed with a key of an owner's.
    let key = ebpkg_signing::SigningKey::generate().unwrap();
    register_key_at(reg.url(), &owner, "owner", &key);

    // Token kinds: (label, secret or None for no token).
    let expired = reg.token("owner", &[], &[]).unwrap();
    reg.block_on(
        sqlx::query!(
            "UPDATE api_tokens SET expires_at = now() - interval '1 day' WHERE token_sha256 = $1",
            &ebpkg_registry::auth::digest(&expired)[..],
        )
        .execute(reg.pool()),
    )
    .unwrap();
    let revoked = reg.token("owner", &[], &[]).unwrap();
    reg.block_on(
        sqlx::query!(
            "UPDATE api_tokens SET revoked_at = now() WHERE token_sha256 = $1",
            &ebpkg_registry::auth::digest(&revoked)[..],
        )
        .execute(reg.pool()),
    )
    .unwrap();
    let kinds: Vec<(&str, Option<String>)> = vec![
        ("owner, every power", Some(owner.clone())),
        ("owner, publish-new", Some(reg.token("owner", &[Scope::PublishNew], &[]).unwrap())),
        ("owner, publish-update", Some(reg.token("owner", &[Scope::PublishUpdate], &[]).unwrap())),
        ("owner, yank", Some(reg.token("owner", &[Scope::Yank], &[]).unwrap())),
        ("owner, change-owners", Some(reg.token("owner", &[Scope::ChangeOwners], &[]).unwrap())),
        ("owner, every scope but for other packages", Some(reg.token("owner", &Scope::ALL, &["other-*"]).unwrap())),
        ("owner, every scope for guard*", Some(reg.token("owner", &Scope::ALL, &["guard*"]).unwrap())),
        ("non-owner, every power", Some(reg.token("stranger", &[], &[]).unwrap())),
        ("expired", Some(expired)),
        ("revoked", Some(revoked)),
        ("garbage", Some("ebpkg_not-a-token".into())),
        ("no token", None),
    ];
    // Expected status per action, in the order of `kinds`.
    use StatusCode as S;
    const OK: S = S::OK;
    const NO: S = S::FORBIDDEN;
    const AUTH: S = S::UNAUTHORIZED;
    let table: [(&str, [S; 12]); 6] = [
        ("publish new package", [OK, OK, NO, NO, NO, NO, OK, OK, AUTH, AUTH, AUTH, AUTH]),
        ("publish new version", [OK, NO, OK, NO, NO, NO, OK, NO, AUTH, AUTH, AUTH, AUTH]),
        ("attest a version", [OK, NO, OK, NO, NO, NO, OK, NO, AUTH, AUTH, AUTH, AUTH]),
        ("yank", [OK, NO, NO, OK, NO, NO, OK, NO, AUTH, AUTH, AUTH, AUTH]),
        ("add owner", [OK, NO, NO, NO, OK, NO, OK, NO, AUTH, AUTH, AUTH, AUTH]),
        ("create token", [OK, NO, NO, NO, NO, NO, NO, OK, AUTH, AUTH, AUTH, AUTH]),
    ];
    let mut next = 0;
    for (action, expected) in table {
        for ((label, token), want) in kinds.iter().zip(expected) {
            next += 1;
            // A publish is first checked (`packages/new/check`): the same answer, in the same words.
            let checked = match action {
                "publish new package" => Some(check_publish(&reg, token.as_deref(), &format!("guard{next}"), "1.0.0")),
                "publish new version" => Some(check_publish(&reg, token.as_deref(), "guard", &format!("2.0.{next}"))),
                _ => None,
            };
            let mut request = match action {
                "publish new package" => {
                    let name = format!("guard{next}");
                    let body =
                        publish_body(&pack_with(scratch.path(), &name, "1.0.0", "", &[]).unwrap(), &name, "1.0.0")
                            .unwrap();
                    http().put(format!("{}api/v1/packages/new", reg.url())).body(body)
                }
                "publish new version" => {
                    http().put(format!("{}api/v1/packages/new", reg.url())).body(pack(&format!("2.0.{next}")))
                }
                "attest a version" => {
                    let kernels = vec![ebpkg_registry::testing::kernel_observation(&format!("6.1.{next}"), &[], None)];
                    let signed =
                        ebpkg_registry::testing::attestation(&key, "guard", "1.0.0", &first.sha256, kernels).unwrap();
                    http()
                        .post(format!("{}api/v1/packages/guard/1.0.0/attestations", reg.url()))
                        .header("Content-Type", "application/json")
                        .body(signed.json().to_owned())
                }
                "yank" => http().delete(format!("{}api/v1/packages/guard/1.0.0/yank", reg.url())),
                "add owner" => http()
                    .put(format!("{}api/v1/packages/guard/owners", reg.url()))
                    .json(&serde_json::json!({"users": ["owner"]})),
                "create token" => {
                    http().put(format!("{}api/v1/tokens", reg.url())).json(&serde_json::json!({"name": "t"}))
                }
                _ => unreachable!(),
            };
            if let Some(token) = token {
                request = request.header("Authorization", token);
            }
            let response = request.send().unwrap();
            let status = response.status();
            let detail =
                if status.is_success() { String::new() } else { response.json::<ApiErrors>().unwrap().joined() };
            assert_eq!(status, want, "{action} with {label}: {detail}");
            if let Some((checked, said)) = checked {
                assert_eq!(checked, status, "the check of `{action}` with {label}: {said}");
                if !status.is_success() {
                    assert_eq!(said, detail, "the check of `{action}` with {label}: the same words");
                }
            }
        }
    }
}

/// `POST api/v1/packages/new/check`: its status and error detail (empty when allowed).
fn check_publish(reg: &TestRegistry, token: Option<&str>, name: &str, vers: &str) -> (StatusCode, String) {
    let mut request = http()
        .post(format!("{}api/v1/packages/new/check", reg.url()))
        .json(&serde_json::json!({"name": name, "vers": vers}));
    if let Some(token) = token {
        request = request.header("Authorization", token);
    }
    let response = request.send().unwrap();
    let status = response.status();
    if status.is_success() {
        let allowed: PublishAllowed = response.json().unwrap();
        (status, if allowed.new_package { String::new() } else { "(a new version)".to_owned() })
    } else {
        (status, response.json::<ApiErrors>().unwrap().joined())
    }
}

/// The check answers 409 as the publish would: a version that exists, a name
/// spelt differently, a name too close to another's package.
#[test]
fn the_publish_check_answers_conflicts_as_the_publish_does() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let alice = reg.token("alice", &[], &[]).unwrap();
    let bob = reg.token("bob", &[], &[]).unwrap();
    let body =
        publish_body(&pack_with(scratch.path(), "my-pkg", "1.0.0", "", &[]).unwrap(), "my-pkg", "1.0.0").unwrap();
    assert_eq!(publish(&reg, &alice, &body).status(), StatusCode::OK);
    for (token, name, vers, says) in [
        (&alice, "my-pkg", "1.0.0", "already exists"),
        (&alice, "my_pkg", "1.1.0", "collides with the existing package `my-pkg`"),
        (&bob, "my-pkg", "1.1.0", "is not an owner of `my-pkg`"),
        (&bob, "rny-pkg", "1.0.0", "too close to the existing package `my-pkg`"),
    ] {
        let (status, detail) = check_publish(&reg, Some(token), name, vers);
        assert!(detail.contains(says), "{name}@{vers}: {detail}");
        let body = publish_body(&pack_with(scratch.path(), name, vers, "", &[]).unwrap(), name, vers).unwrap();
        let real = publish(&reg, token, &body);
        assert_eq!(real.status(), status, "{name}@{vers}");
        assert_eq!(real.json::<ApiErrors>().unwrap().joined(), detail, "{name}@{vers}: the same words");
    }
    // Allowed: a new version of an existing package, or a new package.
    assert_eq!(check_publish(&reg, Some(&alice), "my-pkg", "1.1.0"), (StatusCode::OK, "(a new version)".to_owned()));
    assert_eq!(check_publish(&reg, Some(&alice), "other", "0.1.0"), (StatusCode::OK, String::new()));
    // Not of the form a version has: refused as a malformed body, before anything.
    let (status, _) = check_publish(&reg, Some(&alice), "my-pkg", "1.0");
    assert!(status == StatusCode::UNPROCESSABLE_ENTITY || status == StatusCode::BAD_REQUEST, "{status}");
}

#[test]
fn yank_owners_and_tokens() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let alice = reg.token("alice", &[], &[]).unwrap();
    reg.user("bob").unwrap();
    for v in ["1.0.0", "1.1.0"] {
        let body = publish_body(&pack_with(scratch.path(), "net", v, "", &[]).unwrap(), "net", v).unwrap();
        assert_eq!(publish(&reg, &alice, &body).status(), StatusCode::OK);
    }
    let lines = |reg: &TestRegistry| -> Vec<IndexEntry> {
        get(reg, "index/3/n/net").text().unwrap().lines().map(|l| IndexEntry::parse_line(l).unwrap().unwrap()).collect()
    };
    let before = get(&reg, "index/3/n/net").text().unwrap();
    let yank = send(&reg, reqwest::Method::DELETE, "api/v1/packages/net/1.0.0/yank", &alice, None);
    assert_eq!(yank.status(), StatusCode::OK);
    let after = lines(&reg);
    assert!(after[0].yanked && !after[1].yanked);
    // Only the flag changed.
    let mut unyanked = after[0].clone();
    unyanked.yanked = false;
    assert_eq!(format!("{}\n{}\n", unyanked.to_line(), after[1].to_line()), before);
    let again = send(&reg, reqwest::Method::DELETE, "api/v1/packages/net/1.0.0/yank", &alice, None);
    assert!(again.text().unwrap().contains("already yanked"));
    assert_eq!(
        send(&reg, reqwest::Method::PUT, "api/v1/packages/net/1.0.0/unyank", &alice, None).status(),
        StatusCode::OK
    );
    assert_eq!(get(&reg, "index/3/n/net").text().unwrap(), before, "unyank restores the exact bytes");
    assert_eq!(
        send(&reg, reqwest::Method::DELETE, "api/v1/packages/net/9.0.0/yank", &alice, None).status(),
        StatusCode::NOT_FOUND
    );

    // A registry that trusts no OIDC issuer has no trusted publishing to
    // configure: 404, as for the exchange (its document names no issuer).
    let body = serde_json::json!({"issuer": "https://token.actions.githubusercontent.com", "repository": "acme/net", "workflow": "publish.yml"});
    let none = send(&reg, reqwest::Method::POST, "api/v1/packages/net/trusted_publishers", &alice, Some(body));
    assert_eq!(none.status(), StatusCode::NOT_FOUND);
    assert!(none.json::<ApiErrors>().unwrap().joined().contains("does not do trusted publishing"));

    // Owners: add bob, bob may now publish; the last owner cannot be removed.
    let users = |names: &[&str]| serde_json::json!({ "users": names });
    let add = send(&reg, reqwest::Method::PUT, "api/v1/packages/net/owners", &alice, Some(users(&["bob"])));
    assert_eq!(add.status(), StatusCode::OK);
    let owners: OwnersResponse = get(&reg, "api/v1/packages/net/owners").json().unwrap();
    assert_eq!(owners.users.iter().map(|o| o.login.as_str()).collect::<Vec<_>>(), ["alice", "bob"]);
    let nobody = send(&reg, reqwest::Method::PUT, "api/v1/packages/net/owners", &alice, Some(users(&["nobody"])));
    assert_eq!(nobody.status(), StatusCode::NOT_FOUND);
    let bob = reg.token("bob", &[], &[]).unwrap();
    let body = publish_body(&pack_with(scratch.path(), "net", "1.2.0", "", &[]).unwrap(), "net", "1.2.0").unwrap();
    assert_eq!(publish(&reg, &bob, &body).status(), StatusCode::OK);
    assert_eq!(
        send(&reg, reqwest::Method::DELETE, "api/v1/packages/net/owners", &bob, Some(users(&["alice"]))).status(),
        StatusCode::OK
    );
    let last = send(&reg, reqwest::Method::DELETE, "api/v1/packages/net/owners", &bob, Some(users(&["bob"])));
    assert_eq!(last.status(), StatusCode::BAD_REQUEST);
    assert!(last.json::<ApiErrors>().unwrap().joined().contains("no owner left"));
    let body = publish_body(&pack_with(scratch.path(), "net", "1.3.0", "", &[]).unwrap(), "net", "1.3.0").unwrap();
    assert_eq!(publish(&reg, &alice, &body).status(), StatusCode::FORBIDDEN, "alice is no longer an owner");

    // Tokens over the API: created (secret once), listed without secrets, revoked.
    let created: TokenCreated = send(
        &reg,
        reqwest::Method::PUT,
        "api/v1/tokens",
        &alice,
        Some(
            serde_json::json!({"name": "ci", "scopes": ["publish-update"], "packages": ["net"], "expires_in_days": 30}),
        ),
    )
    .json()
    .unwrap();
    assert!(created.secret.starts_with("ebpkg_") && created.token.expires_at.is_some());
    // 0 days made a token that never expired; it is refused now, and so is more
    // than ten years.
    for days in [0, 3651] {
        let body = serde_json::json!({"name": "ci", "scopes": [], "packages": [], "expires_in_days": days});
        let refused = send(&reg, reqwest::Method::PUT, "api/v1/tokens", &alice, Some(body));
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{days} days");
    }
    // A name as /api/openapi.json says (limits::TOKEN_NAME_*): 1 to 64
    // characters, printable, not only white space; 30.0 days is 30 (a JSON
    // Schema integer).
    let token_named = |name: &str, days: serde_json::Value| {
        let body = serde_json::json!({"name": name, "expires_in_days": days});
        send(&reg, reqwest::Method::PUT, "api/v1/tokens", &alice, Some(body)).status()
    };
    for name in ["", "   ", "\u{3000}", "a\u{85}b", &"x".repeat(65)] {
        assert_eq!(token_named(name, serde_json::json!(1)), StatusCode::BAD_REQUEST, "{name:?}");
    }
    for name in [" padded ", &"\u{e9}".repeat(64)] {
        assert_eq!(token_named(name, serde_json::json!(30.0)), StatusCode::OK, "{name:?}");
    }
    let listed = send(&reg, reqwest::Method::GET, "api/v1/tokens", &alice, None);
    let text = listed.text().unwrap();
    assert!(!text.contains(&created.secret), "secrets are never listed");
    let list: TokenList = serde_json::from_str(&text).unwrap();
    assert!(list.tokens.iter().any(|t| t.id == created.token.id && t.scopes == [Scope::PublishUpdate]));
    let stored: i64 = reg
        .block_on(
            sqlx::query_scalar!(
                r#"SELECT count(*) AS "count!" FROM api_tokens WHERE token_sha256 = $1"#,
                &ebpkg_registry::auth::digest(&created.secret)[..],
            )
            .fetch_one(reg.pool()),
        )
        .unwrap();
    assert_eq!(stored, 1, "stored as its SHA-256");
    let me = send(&reg, reqwest::Method::GET, "api/v1/me", &created.secret, None);
    assert_eq!(me.status(), StatusCode::OK);
    let path = format!("api/v1/tokens/{}", created.token.id);
    assert_eq!(send(&reg, reqwest::Method::DELETE, &path, &alice, None).status(), StatusCode::OK);
    assert_eq!(send(&reg, reqwest::Method::GET, "api/v1/me", &created.secret, None).status(), StatusCode::UNAUTHORIZED);
    assert_eq!(send(&reg, reqwest::Method::DELETE, &path, &alice, None).status(), StatusCode::NOT_FOUND);
    let bad = send(
        &reg,
        reqwest::Method::PUT,
        "api/v1/tokens",
        &alice,
        Some(serde_json::json!({"name": "x", "scopes": ["root"]})),
    );
    assert!(bad.status().is_client_error());
}

#[test]
fn search_ranks_like_the_file_registry_and_pages() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    for (name, description, keywords, program) in [
        ("meter", "Per-destination meters", &["rate"][..], "ip6_dst_meter"),
        ("meter-extra", "More meters", &["rate"][..], "extra_prog"),
        ("fastmeter", "Meters, faster", &[][..], "fm"),
        ("sampler", "Samples packets", &["meter"][..], "sample"),
        ("guard", "Guards", &[][..], "meter_guard"),
        ("policer", "Polices flows by their metered rate", &[][..], "police"),
        ("unrelated", "Nothing to see", &[][..], "nop"),
    ] {
        let packed = pack_described(scratch.path(), name, "1.0.0", description, keywords, program).unwrap();
        assert_eq!(publish(&reg, &token, &publish_body(&packed, name, "1.0.0").unwrap()).status(), StatusCode::OK);
    }
    let search: SearchResponse = get(&reg, "api/v1/packages?q=meter").json().unwrap();
    let got: Vec<(&str, MatchedOn)> = search.packages.iter().map(|h| (h.name.as_str(), h.matched_on)).collect();
    assert_eq!(
        got,
        [
            ("meter", MatchedOn::Name),
            ("meter-extra", MatchedOn::NamePrefix),
            ("fastmeter", MatchedOn::NameSubstring),
            ("sampler", MatchedOn::Keyword),
            ("guard", MatchedOn::Program),
            ("policer", MatchedOn::Description),
        ]
    );
    assert_eq!(search.meta.total, 6);
    // Full text: a word form of the description.
    let stems: SearchResponse = get(&reg, "api/v1/packages?q=sampling").json().unwrap();
    assert!(stems.packages.iter().any(|h| h.name.as_str() == "sampler"), "{stems:?}");
    let page2: SearchResponse = get(&reg, "api/v1/packages?q=meter&per_page=4&page=2").json().unwrap();
    assert_eq!(page2.packages.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["guard", "policer"]);
    let all: SearchResponse = get(&reg, "api/v1/packages?q=").json().unwrap();
    assert_eq!(all.meta.total, 7);
    assert!(all.packages.iter().all(|h| h.matched_on == MatchedOn::Everything));
    assert_eq!(get(&reg, &format!("api/v1/packages?q={}", "x".repeat(300))).status(), StatusCode::BAD_REQUEST);
    // What broke the server before (a 500): a NUL, which PostgreSQL's text cannot
    // hold; limits beyond the documented ones are refused, not clamped.
    // What /api/openapi.json says (limits::SEARCH_QUERY_*): 256 characters, not
    // bytes, and no control character, U+0080 to U+009F among them.
    let wide = "%C3%A9".repeat(256);
    assert_eq!(get(&reg, &format!("api/v1/packages?q={wide}")).status(), StatusCode::OK, "256 characters");
    assert_eq!(get(&reg, &format!("api/v1/packages?q={wide}%C3%A9")).status(), StatusCode::BAD_REQUEST);
    for query in ["q=%00", "q=me%01ter", "q=%C2%80", "q=meter&per_page=101", "q=meter&per_page=0", "q=meter&page=0"] {
        let answer = get(&reg, &format!("api/v1/packages?{query}"));
        assert_eq!(answer.status(), StatusCode::BAD_REQUEST, "{query}");
        let errors: ebpkg_spec::registry_api::ApiErrors = answer.json().unwrap();
        assert!(!errors.joined().is_empty(), "{query}");
    }
    // An index path that is not ASCII (a panic from slicing inside a character).
    for path in ["index/%F0%9F%A6%81", "index/3/%C3%A9/%C3%A9ab", "index/%C3%A9a/bc/%C3%A9abc"] {
        assert_eq!(get(&reg, path).status(), StatusCode::NOT_FOUND, "{path}");
    }
}

#[test]
fn publish_rate_limits_answer_429_with_retry_after() {
    let reg = TestRegistry::start_with(Box::new(|c| {
        c.new_version = ebpkg_registry::config::Bucket { burst: 2, interval: std::time::Duration::from_secs(3600) };
        c.ip_rate_per_minute = 60;
    }))
    .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let body = |v: &str| publish_body(&pack_with(scratch.path(), "net", v, "", &[]).unwrap(), "net", v).unwrap();
    assert_eq!(publish(&reg, &token, &body("1.0.0")).status(), StatusCode::OK, "a new package");
    assert_eq!(publish(&reg, &token, &body("1.0.1")).status(), StatusCode::OK);
    assert_eq!(publish(&reg, &token, &body("1.0.2")).status(), StatusCode::OK);
    let limited = publish(&reg, &token, &body("1.0.3"));
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = limited.headers()[RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((3000..=3600).contains(&wait), "{wait}");
    assert!(get(&reg, "index/3/n/net").text().unwrap().lines().count() == 3, "the refused version is not listed");
    // Per IP: 60 a minute with a burst of 15; the publishes above took 4, so at
    // least 11 more pass, then 429 (a slow machine refills a token a second, so
    // the count is a floor, not an exact number).
    let mut passed = 0;
    let mut statuses = Vec::new();
    while statuses.len() < 60 {
        let status = get(&reg, "api/v1/packages?q=net").status();
        statuses.push(status);
        if status != StatusCode::OK {
            break;
        }
        passed += 1;
    }
    assert_eq!(statuses.last(), Some(&StatusCode::TOO_MANY_REQUESTS), "{statuses:?}");
    assert!(passed >= 11, "{statuses:?}");
    // Adding an attestation is limited per IP (asked at once, before a token can
    // come back into the bucket on a slow machine); the index and downloads are
    // not, nor is reading attestations (each install reads them).
    let attestations = format!("{}api/v1/packages/net/1.0.0/attestations", reg.url());
    assert_eq!(http().post(&attestations).body("{}").send().unwrap().status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(get(&reg, "index/3/n/net").status(), StatusCode::OK);
    let read = http().get(&attestations).send().unwrap();
    assert_eq!(read.status(), StatusCode::NOT_FOUND, "not limited: {}", read.text().unwrap());
}

#[test]
fn a_larger_new_package_burst_takes_effect_at_once() {
    let small = ebpkg_registry::config::Bucket { burst: 2, interval: std::time::Duration::from_secs(3600) };
    let reg = TestRegistry::start_with(Box::new(move |c| c.new_package = small)).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let body =
        |name: &str| publish_body(&pack_with(scratch.path(), name, "1.0.0", "", &[]).unwrap(), name, "1.0.0").unwrap();
    for name in ["alpha", "bravo"] {
        assert_eq!(publish(&reg, &token, &body(name)).status(), StatusCode::OK, "{name}");
    }
    assert_eq!(publish(&reg, &token, &body("charlie")).status(), StatusCode::TOO_MANY_REQUESTS);
    // The operator restarts with a bucket of 5 (a replica on the same database):
    // three more at once, not an hour's wait for the old bucket to refill.
    let database_url = reg.config().database_url.clone();
    let bigger = TestRegistry::start_with(Box::new(move |c| {
        c.database_url = database_url;
        c.new_package = ebpkg_registry::config::Bucket { burst: 5, interval: std::time::Duration::from_secs(3600) };
    }))
    .unwrap();
    for name in ["charlie", "delta", "echo"] {
        assert_eq!(publish(&bigger, &token, &body(name)).status(), StatusCode::OK, "{name}");
    }
    let refused = publish(&bigger, &token, &body("foxtrot"));
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key(RETRY_AFTER));
}

#[test]
fn operations_endpoints_and_the_openapi_document_match_the_routes() {
    let reg = TestRegistry::start().unwrap();
    assert_eq!(get(&reg, "healthz").status(), StatusCode::OK);
    assert_eq!(get(&reg, "readyz").text().unwrap(), "ready\n");
    let _ = get(&reg, "index/3/n/net");
    let metrics = get(&reg, "metrics").text().unwrap();
    assert!(metrics.contains("ebpkg_registry_requests_total"), "{metrics}");
    assert!(metrics.contains("route=\"/index/{*path}\""), "{metrics}");
    assert!(metrics.contains("ebpkg_registry_request_duration_seconds_bucket"));
    assert!(metrics.contains("ebpkg_registry_db_pool_connections"));

    let doc: serde_json::Value = get(&reg, "api/openapi.json").json().unwrap();
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 15, "{:?}", paths.keys());
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            // Fill path parameters with values that exist in shape.
            let concrete = path
                .replace("{name}", "meter")
                .replace("{version}", "1.0.0")
                .replace("{id}", "1")
                .replace("{path}", "me/te/meter");
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let r = http().request(m, format!("{}{}", reg.url(), concrete.trim_start_matches('/'))).send().unwrap();
            let status = r.status();
            let body = r.text().unwrap_or_default();
            assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
            assert!(!body.contains("no such route"), "{method} {path} is documented but not routed");
            // Every status the server answered with is documented.
            let documented = op["responses"].as_object().unwrap();
            assert!(
                documented.contains_key(status.as_str()),
                "{method} {path} answered {status}, documented: {:?}",
                documented.keys()
            );
        }
    }
    for schema in ["IndexEntry", "SearchResponse", "PackageInfo", "VersionInfo", "ApiErrors", "TokenCreated"] {
        assert!(doc["components"]["schemas"].get(schema).is_some(), "{schema}");
    }
    let text = doc.to_string();
    assert!(!text.contains("#/$defs/"), "every reference resolves inside the document");
    assert_eq!(doc["info"]["title"], "ebpkg registry");
    assert_eq!(doc["info"]["version"], env!("CARGO_PKG_VERSION"));
    let mut ids: Vec<&str> = paths
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .map(|op| op["operationId"].as_str().unwrap())
        .collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "operationIds are unique: {ids:?}");
    // Attestations: read and added at one path, each operation with its bodies.
    let attestations = &paths["/api/v1/packages/{name}/{version}/attestations"];
    assert_eq!(attestations["get"]["operationId"], "get_attestations");
    assert_eq!(attestations["post"]["operationId"], "add_attestation");
    assert_eq!(
        attestations["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/AttestationFile"
    );
    assert!(attestations["get"]["responses"].get("304").is_some());
    assert_eq!(
        attestations["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/SigstoreBundle"
    );
    assert_eq!(
        attestations["post"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/AttestationAccepted"
    );
    for status in ["400", "401", "403", "404", "409", "413", "422"] {
        assert!(attestations["post"]["responses"].get(status).is_some(), "POST attestations documents {status}");
    }
    let create = &paths["/api/v1/tokens"]["put"];
    assert_eq!(create["requestBody"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/NewToken");
    // Each request states the limits its handler checks, from the same
    // constants (tests/it/conformance.rs has Schemathesis hold the server to them).
    use ebpkg_spec::registry_api::limits;
    let schemas = &doc["components"]["schemas"];
    let name = &schemas["NewToken"]["properties"]["name"];
    assert_eq!(
        (&name["minLength"], &name["maxLength"]),
        (&serde_json::json!(1), &serde_json::json!(limits::TOKEN_NAME_MAX))
    );
    assert_eq!(name["pattern"], limits::TOKEN_NAME_PATTERN);
    assert_eq!(schemas["NewToken"]["properties"]["packages"]["maxItems"], limits::TOKEN_MAX_GLOBS);
    assert_eq!(schemas["NewToken"]["properties"]["expires_in_days"]["maximum"], limits::TOKEN_MAX_EXPIRY_DAYS);
    let users = &schemas["OwnersRequest"]["properties"]["users"];
    assert_eq!(
        (&users["minItems"], &users["maxItems"]),
        (&serde_json::json!(1), &serde_json::json!(limits::MAX_OWNERS_PER_REQUEST))
    );
    assert_eq!(users["items"]["pattern"], limits::LOGIN_PATTERN);
    assert_eq!(schemas["NewPublisherKey"]["properties"]["pem"]["pattern"], limits::PEM_PUBLIC_KEY_PATTERN);
    assert_eq!(schemas["NewTrustedPublisher"]["properties"]["repository"]["pattern"], limits::REPOSITORY_PATTERN);
    assert_eq!(schemas["NewTrustedPublisher"]["properties"]["workflow"]["pattern"], limits::WORKFLOW_PATTERN);
    assert_eq!(
        schemas["SigstoreBundle"]["required"],
        serde_json::json!(["mediaType", "verificationMaterial", "dsseEnvelope"])
    );
    let search = paths["/api/v1/packages"]["get"]["parameters"].as_array().unwrap();
    let q = search.iter().find(|p| p["name"] == "q").unwrap();
    assert_eq!(
        (&q["schema"]["maxLength"], &q["schema"]["pattern"]),
        (&serde_json::json!(limits::SEARCH_QUERY_MAX), &serde_json::json!(limits::SEARCH_QUERY_PATTERN))
    );
    let publish_body =
        &paths["/api/v1/packages/new"]["put"]["requestBody"]["content"]["application/octet-stream"]["schema"];
    assert_eq!(
        (&publish_body["type"], &publish_body["format"]),
        (&serde_json::json!("string"), &serde_json::json!("binary"))
    );

    // What axum's extractors refuse (not JSON, the wrong type, no field) answers
    // in the API's error shape, as documented.
    let token = reg.token("alice", &[], &[]).unwrap();
    let url = format!("{}api/v1/tokens", reg.url());
    let bad_requests = [
        (Some("application/json"), "{", StatusCode::BAD_REQUEST),
        (None, "{}", StatusCode::UNSUPPORTED_MEDIA_TYPE),
        (Some("application/json"), "{\"scopes\": 3}", StatusCode::UNPROCESSABLE_ENTITY),
    ];
    for (content_type, body, status) in bad_requests {
        let mut request = http().put(&url).header("Authorization", &token).body(body);
        if let Some(content_type) = content_type {
            request = request.header("Content-Type", content_type);
        }
        let r = request.send().unwrap();
        assert_eq!(r.status(), status, "{body}");
        assert!(create["responses"].get(status.as_str()).is_some(), "{status} is documented");
        let errors: ApiErrors = r.json().unwrap_or_else(|e| panic!("{body}: {e}"));
        assert!(!errors.joined().is_empty(), "{body}");
    }
    let r = http()
        .delete(format!("{}api/v1/tokens/not-a-number", reg.url()))
        .header("Authorization", &token)
        .send()
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(!r.json::<ApiErrors>().unwrap().joined().is_empty(), "a path that is not a number, in the API's shape");
}

#[test]
fn a_private_registry_wants_a_token_for_reads_too() {
    let reg = TestRegistry::start_with(Box::new(|c| c.auth_required = true)).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[Scope::Yank], &["nothing-*"]).unwrap();
    let owner = reg.token("owner", &[], &[]).unwrap();
    let packed = pack_with(scratch.path(), "secret", "1.0.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &owner, &publish_body(&packed, "secret", "1.0.0").unwrap()).status(), StatusCode::OK);
    let config: IndexConfig = get(&reg, "index/config.json").json().unwrap();
    assert!(config.auth_required);
    for path in ["healthz", "readyz", "metrics", "api/openapi.json"] {
        assert_eq!(get(&reg, path).status(), StatusCode::OK, "{path} stays open");
    }
    for path in [
        "index/se/cr/secret",
        "api/v1/packages/secret/1.0.0/download",
        "api/v1/packages?q=secret",
        "api/v1/packages/secret",
        "api/v1/packages/secret/1.0.0",
        "api/v1/packages/secret/owners",
    ] {
        assert_eq!(get(&reg, path).status(), StatusCode::UNAUTHORIZED, "{path} without a token");
        let with = http().get(format!("{}{path}", reg.url())).header("Authorization", &token).send().unwrap();
        assert_eq!(with.status(), StatusCode::OK, "{path} with any valid token, whatever its scopes");
        // What one token holder reads, a shared cache in front must not hand to others.
        if let Some(cache) = with.headers().get(CACHE_CONTROL) {
            assert!(cache.to_str().unwrap().starts_with("private"), "{path}: {cache:?}");
        }
    }
}

/// The operator's first command: migrations, the administrator and a token that
/// works, and what to do next; run again, it changes nothing but a new token.
#[test]
fn init_makes_the_administrator_and_a_working_token_and_says_what_next() {
    let database = ebpkg_registry_testing::Postgres::shared().unwrap().database().unwrap();
    let bin = env!("CARGO_BIN_EXE_ebpkg-registry");
    let init = || {
        std::process::Command::new(bin)
            .args(["--database-url", &database.url(), "--public-url", "https://ebpkg.corp.example/", "init"])
            .args(["--admin", "alice"])
            .output()
            .unwrap()
    };
    let first = init();
    let said = String::from_utf8_lossy(&first.stderr).into_owned();
    assert!(first.status.success(), "{said}");
    assert!(said.contains("migration(s) applied") && said.contains("created user `alice`"), "{said}");
    assert!(said.contains("ebpkg login --registry https://ebpkg.corp.example/"), "{said}");
    assert!(said.contains("ebpkg owner key add default --registry https://ebpkg.corp.example/"), "{said}");
    let secret = String::from_utf8_lossy(&first.stdout).trim().to_owned();
    // The token works against a server on that database.
    let url = database.url();
    let reg = TestRegistry::start_with(Box::new(move |c| c.database_url = url)).unwrap();
    let me: serde_json::Value =
        http().get(format!("{}api/v1/me", reg.url())).header("Authorization", &secret).send().unwrap().json().unwrap();
    assert_eq!(me["login"], "alice", "{me}");
    // Again, configured by a file: the next steps name the file's public URL.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registry.toml");
    let settings = format!(
        "database-url = \"{}\"\nlisten = \"0.0.0.0:9443\"\npublic-url = \"https://pkgs.corp.example:9443/\"\n",
        database.url()
    );
    std::fs::write(&file, settings).unwrap();
    let again =
        std::process::Command::new(bin).arg("--config").arg(&file).args(["init", "--admin", "alice"]).output().unwrap();
    let said = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(again.status.success() && said.contains("exists already"), "{said}");
    assert!(said.contains("ebpkg login --registry https://pkgs.corp.example:9443/"), "{said}");
    assert!(!said.contains("127.0.0.1:8080"), "{said}");
    assert_ne!(String::from_utf8_lossy(&again.stdout).trim(), secret, "another token");
}

/// `ebpkg-registry token list|revoke`: on the database, for any user; a revoked
/// token is refused by the next request.
#[test]
fn the_administrator_lists_and_revokes_tokens_and_a_revoked_one_is_refused_at_once() {
    let reg = TestRegistry::start().unwrap();
    let secret = reg.token("carol", &[Scope::PublishNew], &["net*"]).unwrap();
    let bin = env!("CARGO_BIN_EXE_ebpkg-registry");
    let admin = |args: &[&str]| {
        std::process::Command::new(bin).args(["--database-url", &reg.database().url()]).args(args).output().unwrap()
    };
    let me = || http().get(format!("{}api/v1/me", reg.url())).header("Authorization", &secret).send().unwrap();
    assert_eq!(me().status(), StatusCode::OK);
    let listed = admin(&["token", "list", "--user", "carol"]);
    let text = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    let line = text.lines().next().unwrap_or_default();
    for part in ["test token of carol", "publish-new", "packages net*", "never expires", "last used 20"] {
        assert!(line.contains(part), "`{part}` in {text}");
    }
    assert!(!text.contains(&secret), "never a secret: {text}");
    let id = line.split('\t').next().unwrap();
    let revoked = admin(&["token", "revoke", id]);
    assert!(revoked.status.success(), "{}", String::from_utf8_lossy(&revoked.stderr));
    assert!(String::from_utf8_lossy(&revoked.stdout).contains("of `carol`"));
    let refused = me();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(refused.text().unwrap().contains("was revoked"));
    let again = admin(&["token", "revoke", id]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains(&format!("no live token with id {id}")));
    let none = admin(&["token", "list", "--user", "carol"]);
    assert!(none.stdout.is_empty() && String::from_utf8_lossy(&none.stderr).contains("no live token"));
    let nobody = admin(&["token", "list", "--user", "nobody"]);
    assert!(String::from_utf8_lossy(&nobody.stderr).contains("no user `nobody`"));
}

/// The administration commands' --help lists the settings they read, not the
/// ~22 of `serve`; `serve --help` lists them all.
#[test]
fn each_commands_help_lists_only_the_settings_it_reads() {
    let bin = env!("CARGO_BIN_EXE_ebpkg-registry");
    let help = |args: &[&str]| {
        let out = std::process::Command::new(bin).args(args).arg("--help").output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for command in [&["token", "create"][..], &["token", "list"], &["token", "revoke"], &["user"], &["tuf", "init"]] {
        let text = help(command);
        assert!(text.contains("--database-url") && text.contains("--config"), "{command:?}: {text}");
        for serving in ["--listen", "--max-archive-bytes", "--trusted-proxy", "--ip-rate-per-minute", "--storage"] {
            assert!(!text.contains(serving), "{command:?} repeats {serving}: {text}");
        }
    }
    let tuf_init = help(&["tuf", "init"]);
    let online_key = tuf_init.lines().find(|l| l.trim_start().starts_with("--online-key <FILE>")).unwrap_or_default();
    assert!(online_key.contains("The online key"), "--online-key is described: {tuf_init}");
    let init = help(&["init"]);
    assert!(init.contains("--public-url") && !init.contains("--max-archive-bytes"), "{init}");
    let serve = help(&["serve"]);
    assert!(serve.contains("--max-archive-bytes") && serve.contains("--trusted-proxy"), "{serve}");
    // Hidden is still accepted: the settings are global, wherever they are written.
    let out = std::process::Command::new(bin)
        .args(["user", "create", "--listen", "127.0.0.1:1", "--database-url", "postgres://nobody@127.0.0.1:1/x", "x"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("unexpected argument"), "{out:?}");
}

#[test]
fn the_admin_command_prints_no_secret_and_refuses_a_token_expiry_of_zero() {
    let bin = env!("CARGO_BIN_EXE_ebpkg-registry");
    let help = std::process::Command::new(bin)
        .args(["serve", "--help"])
        .env("EBPKG_REGISTRY_DATABASE_URL", "postgres://ebpkg:hunter2secret@db.example/ebpkg")
        .env("EBPKG_REGISTRY_STORAGE", "s3://bucket?secret=s3cretkey")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{}", String::from_utf8_lossy(&help.stderr));
    assert!(text.contains("EBPKG_REGISTRY_DATABASE_URL"), "{text}");
    assert!(!text.contains("hunter2secret") && !text.contains("s3cretkey"), "--help prints a secret: {text}");

    // Refused before the database is even asked.
    let out = std::process::Command::new(bin)
        .args([
            "--database-url",
            "postgres://nobody@127.0.0.1:1/none",
            "token",
            "create",
            "--expires",
            "0",
            "--user",
            "alice",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--expires") && stderr.contains("1..=3650"), "{stderr}");
}

/// A package `objs@version` whose program `counted` is shipped only as the object
/// clang makes of `c`, with `extra` added to its ebpkg.toml.
fn pack_with_object(scratch: &std::path::Path, version: &str, c: &str, extra: &str) -> ebpkg_archive::Packed {
    let dir = scratch.join(format!("objs-{version}"));
    std::fs::create_dir_all(dir.join("prebuilt")).unwrap();
    std::fs::write(dir.join("counted.c"), c).unwrap();
    let object = dir.join("prebuilt/counted.o");
    let out = std::process::Command::new("clang")
        // With BTF (`-g`), which an object with maps needs; the same bytes in any
        // directory.
        .args(["-g", "-target", "bpf", "-O2", "-c"])
        .arg(format!("-fdebug-prefix-map={}=.", dir.display()))
        .arg(dir.join("counted.c"))
        .arg("-o")
        .arg(&object)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_file(dir.join("counted.c")).unwrap();
    let sha = Sha256Digest::of(&std::fs::read(&object).unwrap()).to_hex();
    let toml = format!(
        "[package]\nname = \"objs\"\nversion = \"{version}\"\n\n[[program]]\nname = \"counted\"\nhook = \"xdp\"\n\
         prebuilt = {{ object = \"prebuilt/counted.o\", sha256 = \"{sha}\" }}\n{extra}"
    );
    std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();
    ebpkg_archive::pack(&dir).unwrap()
}

#[test]
fn a_prebuilt_object_must_hold_what_its_manifest_declares_and_nothing_more() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let c = "#define SEC(n) __attribute__((section(n), used))\n\
             struct { int (*type)[2]; int (*max_entries)[1]; unsigned *key; unsigned long long *value; } extra SEC(\".maps\");\n\
             SEC(\"xdp\") int counted(void *ctx) { return 2; }\n\
             char LICENSE[] SEC(\"license\") = \"GPL\";\n";
    let refused = |packed: &ebpkg_archive::Packed, version: &str, says: &str| {
        let r = publish(&reg, &token, &publish_body(packed, "objs", version).unwrap());
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{says}");
        let detail = r.json::<ApiErrors>().unwrap().joined();
        assert!(detail.contains(&format!("objs@{version}: the prebuilt object prebuilt/counted.o")), "{detail}");
        assert!(detail.contains(says), "`{detail}` should say `{says}`");
        assert_eq!(get(&reg, &format!("index/{}", ebpkg_spec::index_path("objs"))).status(), StatusCode::NOT_FOUND);
    };
    // A map the manifest does not declare.
    refused(&pack_with_object(scratch.path(), "1.0.0", c, ""), "1.0.0", "defines the map `extra`");
    // A program the manifest declares in the object, which it lacks.
    let missing = "\n[[program]]\nname = \"other\"\nhook = \"xdp\"\nprebuilt = { object = \"prebuilt/counted.o\", \
                   sha256 = \"SHA\" }\n[[program.map]]\nname = \"extra\"\ndoc = \"counts\"\n";
    let first = pack_with_object(scratch.path(), "1.0.1", c, "[[program.map]]\nname = \"extra\"\ndoc = \"counts\"\n");
    let sha = first.manifest.programs[0].prebuilt.as_ref().unwrap().sha256.to_hex();
    let lacking = pack_with_object(scratch.path(), "1.0.2", c, &missing.replace("SHA", &sha));
    refused(&lacking, "1.0.2", "lacks the program `other`");
    // Declared, it is published.
    assert_eq!(publish(&reg, &token, &publish_body(&first, "objs", "1.0.1").unwrap()).status(), StatusCode::OK);
}

#[test]
fn look_alikes_of_another_publishers_package_are_refused_but_an_owner_may_publish_their_own() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let alice = reg.token("alice", &[], &[]).unwrap();
    let bob = reg.token("bob", &[], &[]).unwrap();
    let body = |name: &str| publish_body(&pack_with(scratch.path(), name, "1.0.0", "", &[]).unwrap(), name, "1.0.0");
    assert_eq!(publish(&reg, &alice, &body("meter").unwrap()).status(), StatusCode::OK);
    for close in ["rneter", "rn3ter"] {
        let r = publish(&reg, &bob, &body(close).unwrap());
        assert_eq!(r.status(), StatusCode::CONFLICT, "{close}");
        let detail = r.json::<ApiErrors>().unwrap().joined();
        assert!(
            detail.contains("too close to the existing package `meter`") && detail.contains("`rn` as `m`"),
            "{detail}"
        );
        assert_eq!(get(&reg, &format!("index/{}", ebpkg_spec::index_path(close))).status(), StatusCode::NOT_FOUND);
    }
    // Alice owns `meter`: her look-alike of it is hers to publish.
    assert_eq!(publish(&reg, &alice, &body("rneter").unwrap()).status(), StatusCode::OK);
    assert_eq!(get(&reg, "index/rn/et/rneter").status(), StatusCode::OK);
}

#[test]
fn the_name_skeleton_in_sql_is_the_one_in_rust() {
    let reg = TestRegistry::start().unwrap();
    let names = [
        "ddos",
        "dd_os",
        "dd0s",
        "DD-0S",
        "fl1ter5",
        "i-1-l",
        "a_b-c",
        "x9",
        "hike_s5i0",
        "rneter",
        "rn3ter",
        "r-n",
        "vvv",
        "c1ock",
        "CL-rn_VV",
        "rrnn",
        "ccl",
        "vw",
        "wv",
        "rnm",
        "mrn",
        "dcl",
        "W-M_D",
    ];
    for name in names {
        let sql: String = reg
            .block_on(
                sqlx::query_scalar!(r#"SELECT ebpkg_name_skeleton($1) AS "skeleton!""#, name).fetch_one(reg.pool()),
            )
            .unwrap();
        assert_eq!(sql, ebpkg_spec::names::skeleton(name), "{name}");
    }
    // Every spelling of a look-alike is one skeleton, in SQL as in Rust.
    let skeleton_in_sql = |name: &str| -> String {
        reg.block_on(
            sqlx::query_scalar!(r#"SELECT ebpkg_name_skeleton($1) AS "skeleton!""#, name).fetch_one(reg.pool()),
        )
        .unwrap()
    };
    for (one, other) in [("vvv", "vw"), ("vw", "wv"), ("rnm", "mm"), ("mrn", "rnrn"), ("cld", "dd")] {
        assert_eq!(skeleton_in_sql(one), skeleton_in_sql(other), "{one} {other}");
    }
}
