//! Publisher signatures on the server, against a real PostgreSQL and real HTTP:
//! key registration with proof of possession, publishes verified against the
//! owners' keys, bundles served, and every way of getting a version in that a
//! signature should stop.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use common::*;
use ebpkg_registry::testing::{
    TestRegistry, key_registration, pack_with, publish_body, publish_body_with_bundle, signed_publish_body,
};
use ebpkg_signing::{SignedBundle, SigningKey};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::registry_api::{ApiErrors, PublishResponse, PublisherKey, PublisherKeyList, Scope};
use reqwest::{Method, StatusCode};

/// A registry with the production default: unsigned publishes refused.
fn signed_registry() -> TestRegistry {
    TestRegistry::start_with(Box::new(|c| c.allow_unsigned = false)).unwrap()
}

fn register(reg: &TestRegistry, token: &str, login: &str, key: &SigningKey) -> reqwest::blocking::Response {
    let body = serde_json::to_value(key_registration(login, key).unwrap()).unwrap();
    send(reg, Method::POST, "api/v1/me/keys", token, Some(body))
}

/// A bundle signing `bytes` with `key`, as JSON to tamper with.
fn bundle_json(key: &SigningKey, bytes: &[u8]) -> serde_json::Value {
    serde_json::from_str(ebpkg_signing::sign(key, bytes).unwrap().json()).unwrap()
}

fn detail(r: reqwest::blocking::Response) -> String {
    r.json::<ApiErrors>().unwrap().joined()
}

/// Asserts a refusal with `status` whose message contains `needle`.
fn refused(r: reqwest::blocking::Response, status: StatusCode, needle: &str) -> String {
    assert_eq!(r.status(), status, "expected {status}");
    let text = detail(r);
    assert!(text.contains(needle), "`{needle}` not in: {text}");
    text
}

fn index_lines(reg: &TestRegistry, path: &str) -> Vec<IndexEntry> {
    let r = get(reg, path);
    if r.status() == StatusCode::NOT_FOUND {
        return Vec::new();
    }
    r.text().unwrap().lines().map(|l| IndexEntry::parse_line(l).unwrap().unwrap()).collect()
}

#[test]
fn a_signed_publish_is_verified_recorded_and_served() {
    let reg = signed_registry();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let key = SigningKey::generate().unwrap();
    let registered: PublisherKey = register(&reg, &token, "alice", &key).json().unwrap();
    assert_eq!(&registered.id, key.public().id());
    assert_eq!(registered.owner, "alice");
    assert!(registered.revoked_at.is_none());
    // Registering it again is harmless.
    let again = register(&reg, &token, "alice", &key);
    assert_eq!(again.status(), StatusCode::OK);
    assert_eq!(again.json::<PublisherKey>().unwrap().id, registered.id);

    let packed = pack_with(scratch.path(), "meter", "1.0.0", "", &[]).unwrap();
    let r = publish(&reg, &token, &signed_publish_body(&packed, "meter", "1.0.0", &key).unwrap());
    assert_eq!(r.status(), StatusCode::OK);
    let published: PublishResponse = r.json().unwrap();
    assert_eq!(published.entry.signed_by.as_ref(), Some(key.public().id()));
    let lines = index_lines(&reg, "index/me/te/meter");
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].signed_by.as_ref(), Some(key.public().id()), "the index line names the key");

    let served = get(&reg, "api/v1/packages/meter/1.0.0/bundle");
    assert_eq!(served.status(), StatusCode::OK);
    assert_eq!(served.headers()["content-type"], "application/json");
    let bundle = SignedBundle::parse(&served.bytes().unwrap()).unwrap();
    bundle.verify(key.public(), &packed.bytes).unwrap();

    let hex = key.public().id().to_hex();
    let shown: PublisherKey = get(&reg, &format!("api/v1/keys/{hex}")).json().unwrap();
    assert_eq!(shown, registered);
    let mine: PublisherKeyList = send(&reg, Method::GET, "api/v1/me/keys", &token, None).json().unwrap();
    assert_eq!(mine.keys, vec![registered]);
    assert_eq!(get(&reg, &format!("api/v1/keys/{}", "0".repeat(64))).status(), StatusCode::NOT_FOUND);
    assert_eq!(get(&reg, "api/v1/keys/not-hex").status(), StatusCode::NOT_FOUND);
    assert_eq!(get(&reg, "api/v1/packages/meter/9.9.9/bundle").status(), StatusCode::NOT_FOUND);
}

/// A publish hashes its archive once: the digest computed when it is checked
/// against the metadata serves the in-memory read (no unpacking to a scratch
/// directory, no second hash), the signature (verified against that digest), the
/// index line and the blob's name.
#[test]
fn a_signed_publish_hashes_its_archive_once() {
    let reg = signed_registry();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let key = SigningKey::generate().unwrap();
    assert_eq!(register(&reg, &token, "alice", &key).status(), StatusCode::OK);
    // A package no other test publishes: digests are counted per process, by value.
    let readme = "readme = \"README.md\"\n";
    let packed = pack_with(scratch.path(), "hashed-once", "1.0.0", readme, &[("README.md", "# once\n")]).unwrap();
    let body = signed_publish_body(&packed, "hashed-once", "1.0.0", &key).unwrap();
    let before = ebpkg_spec::digest::testing::times_computed(&packed.sha256);
    let r = publish(&reg, &token, &body);
    assert_eq!(r.status(), StatusCode::OK);
    let published: PublishResponse = r.json().unwrap();
    assert_eq!(published.entry.cksum, packed.sha256);
    assert_eq!(published.entry.signed_by.as_ref(), Some(key.public().id()));
    let hashed = ebpkg_spec::digest::testing::times_computed(&packed.sha256) - before;
    assert_eq!(hashed, 1, "the server hashed the archive {hashed} times");
}

#[test]
fn unsigned_publishes_are_refused_by_default_and_accepted_where_allowed() {
    let reg = signed_registry();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    let packed = pack_with(scratch.path(), "meter", "1.0.0", "", &[]).unwrap();
    refused(
        publish(&reg, &token, &publish_body(&packed, "meter", "1.0.0").unwrap()),
        StatusCode::UNPROCESSABLE_ENTITY,
        "accepts only signed versions",
    );
    assert!(index_lines(&reg, "index/me/te/meter").is_empty(), "nothing was published");
    let config: ebpkg_spec::registry_api::IndexConfig = get(&reg, "index/config.json").json().unwrap();
    assert!(config.require_signatures, "config.json tells clients before they upload");
    drop(reg);

    let open = TestRegistry::start().unwrap();
    assert!(open.config().allow_unsigned);
    let config: ebpkg_spec::registry_api::IndexConfig = get(&open, "index/config.json").json().unwrap();
    assert!(!config.require_signatures);
    let token = open.token("alice", &[], &[]).unwrap();
    let r = publish(&open, &token, &publish_body(&packed, "meter", "1.0.0").unwrap());
    assert_eq!(r.status(), StatusCode::OK);
    assert!(r.json::<PublishResponse>().unwrap().entry.signed_by.is_none());
    refused(get(&open, "api/v1/packages/meter/1.0.0/bundle"), StatusCode::NOT_FOUND, "published unsigned");
}

#[test]
fn registering_a_key_needs_its_private_half_and_an_unrestricted_token() {
    let reg = signed_registry();
    let alice = reg.token("alice", &[], &[]).unwrap();
    let mallory = reg.token("mallory", &[], &[]).unwrap();
    let key = SigningKey::generate().unwrap();
    let other = SigningKey::generate().unwrap();

    // Mallory replays Alice's proof: it names Alice, so it proves nothing for Mallory.
    let alices = serde_json::to_value(key_registration("alice", &key).unwrap()).unwrap();
    refused(
        send(&reg, Method::POST, "api/v1/me/keys", &mallory, Some(alices)),
        StatusCode::BAD_REQUEST,
        "does not show that you hold key",
    );
    // A proof signed with another key.
    let mut forged = key_registration("mallory", &other).unwrap();
    forged.pem = key.public().to_pem();
    refused(
        send(&reg, Method::POST, "api/v1/me/keys", &mallory, Some(serde_json::to_value(forged).unwrap())),
        StatusCode::BAD_REQUEST,
        "does not show that you hold key",
    );
    // Not a P-256 public key, and no proof at all.
    refused(
        send(
            &reg,
            Method::POST,
            "api/v1/me/keys",
            &alice,
            Some(
                serde_json::json!({"pem": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "proof": {}}),
            ),
        ),
        StatusCode::BAD_REQUEST,
        "",
    );
    let no_proof =
        send(&reg, Method::POST, "api/v1/me/keys", &alice, Some(serde_json::json!({"pem": key.public().to_pem()})));
    assert!(no_proof.status().is_client_error(), "{}", no_proof.status());
    // A publish-only token cannot add a key (a leaked CI token must not mint signers).
    let narrow = reg.token("alice", &[Scope::PublishUpdate], &[]).unwrap();
    refused(register(&reg, &narrow, "alice", &key), StatusCode::FORBIDDEN, "unrestricted token");
    refused(
        send(&reg, Method::DELETE, &format!("api/v1/me/keys/{}", key.public().id().to_hex()), &narrow, None),
        StatusCode::FORBIDDEN,
        "unrestricted token",
    );
    // Nothing of the above registered anything.
    assert_eq!(get(&reg, &format!("api/v1/keys/{}", key.public().id().to_hex())).status(), StatusCode::NOT_FOUND);

    // Alice registers it; then nobody else can, even with a valid proof of their own holding it.
    assert_eq!(register(&reg, &alice, "alice", &key).status(), StatusCode::OK);
    refused(register(&reg, &mallory, "mallory", &key), StatusCode::CONFLICT, "registered by another user");
    // Revoked keys stay revoked.
    let hex = key.public().id().to_hex();
    let revoked: PublisherKey =
        send(&reg, Method::DELETE, &format!("api/v1/me/keys/{hex}"), &alice, None).json().unwrap();
    assert!(revoked.revoked_at.is_some());
    refused(register(&reg, &alice, "alice", &key), StatusCode::CONFLICT, "cannot be registered again");
    refused(
        send(&reg, Method::DELETE, &format!("api/v1/me/keys/{hex}"), &mallory, None),
        StatusCode::NOT_FOUND,
        "you have no publisher key",
    );
}

#[test]
fn publishes_signed_by_the_wrong_key_or_for_other_bytes_are_refused() {
    let reg = signed_registry();
    let scratch = tempfile::tempdir().unwrap();
    let alice = reg.token("alice", &[], &[]).unwrap();
    let bob = reg.token("bob", &[], &[]).unwrap();
    let alices = SigningKey::generate().unwrap();
    let bobs = SigningKey::generate().unwrap();
    let unregistered = SigningKey::generate().unwrap();
    assert_eq!(register(&reg, &alice, "alice", &alices).status(), StatusCode::OK);
    assert_eq!(register(&reg, &bob, "bob", &bobs).status(), StatusCode::OK);
    let v1 = pack_with(scratch.path(), "meter", "1.0.0", "", &[]).unwrap();
    assert_eq!(
        publish(&reg, &alice, &signed_publish_body(&v1, "meter", "1.0.0", &alices).unwrap()).status(),
        StatusCode::OK
    );
    let v2 = pack_with(scratch.path(), "meter", "1.1.0", "", &[]).unwrap();

    // A key nobody registered.
    refused(
        publish(&reg, &alice, &signed_publish_body(&v2, "meter", "1.1.0", &unregistered).unwrap()),
        StatusCode::FORBIDDEN,
        "not registered with this registry",
    );
    // Bob's key: Bob is not an owner of meter (not even with Alice's token).
    refused(
        publish(&reg, &alice, &signed_publish_body(&v2, "meter", "1.1.0", &bobs).unwrap()),
        StatusCode::FORBIDDEN,
        "who is not an owner",
    );
    // A bundle made for another archive (v1's bundle replayed with v2).
    let v1_bundle = bundle_json(&alices, &v1.bytes);
    refused(
        publish(&reg, &alice, &publish_body_with_bundle(&v2, "meter", "1.1.0", v1_bundle).unwrap()),
        StatusCode::UNPROCESSABLE_ENTITY,
        "made for another archive",
    );
    // A bundle that claims v2's digest with a signature over other bytes.
    let mut lying = bundle_json(&alices, &v1.bytes);
    lying["messageSignature"]["messageDigest"]["digest"] = B64.encode(v2.sha256.0).into();
    refused(
        publish(&reg, &alice, &publish_body_with_bundle(&v2, "meter", "1.1.0", lying).unwrap()),
        StatusCode::UNPROCESSABLE_ENTITY,
        "does not verify with key",
    );
    // A tampered signature.
    let mut tampered = bundle_json(&alices, &v2.bytes);
    let flipped = {
        let mut raw = B64.decode(tampered["messageSignature"]["signature"].as_str().unwrap()).unwrap();
        // The last byte of the DER signature is inside `s`: still a well-formed
        // signature, just not the right one.
        *raw.last_mut().unwrap() ^= 0x01;
        B64.encode(raw)
    };
    tampered["messageSignature"]["signature"] = flipped.into();
    refused(
        publish(&reg, &alice, &publish_body_with_bundle(&v2, "meter", "1.1.0", tampered).unwrap()),
        StatusCode::UNPROCESSABLE_ENTITY,
        "does not verify with key",
    );
    // Not a bundle at all.
    refused(
        publish(&reg, &alice, &publish_body_with_bundle(&v2, "meter", "1.1.0", serde_json::json!({"a": 1})).unwrap()),
        StatusCode::BAD_REQUEST,
        "signature bundle was refused",
    );
    // The very same publish again: versions are immutable.
    refused(
        publish(&reg, &alice, &signed_publish_body(&v1, "meter", "1.0.0", &alices).unwrap()),
        StatusCode::CONFLICT,
        "already exists",
    );
    let lines = index_lines(&reg, "index/me/te/meter");
    assert_eq!(lines.len(), 1, "only the first publish got in: {lines:?}");

    // A new package signed with someone else's key.
    let other = pack_with(scratch.path(), "counter", "1.0.0", "", &[]).unwrap();
    refused(
        publish(&reg, &alice, &signed_publish_body(&other, "counter", "1.0.0", &bobs).unwrap()),
        StatusCode::FORBIDDEN,
        "who is not an owner",
    );
    assert!(index_lines(&reg, "index/co/un/counter").is_empty());
}

#[test]
fn any_owners_key_signs_and_revocation_or_removal_ends_it() {
    let reg = signed_registry();
    let scratch = tempfile::tempdir().unwrap();
    let alice = reg.token("alice", &[], &[]).unwrap();
    let bob = reg.token("bob", &[], &[]).unwrap();
    let alices = SigningKey::generate().unwrap();
    let bobs = SigningKey::generate().unwrap();
    assert_eq!(register(&reg, &alice, "alice", &alices).status(), StatusCode::OK);
    assert_eq!(register(&reg, &bob, "bob", &bobs).status(), StatusCode::OK);
    let pack = |v: &str| pack_with(scratch.path(), "meter", v, "", &[]).unwrap();
    let v1 = pack("1.0.0");
    assert_eq!(
        publish(&reg, &alice, &signed_publish_body(&v1, "meter", "1.0.0", &alices).unwrap()).status(),
        StatusCode::OK
    );
    let owners = serde_json::json!({"users": ["bob"]});
    assert_eq!(send(&reg, Method::PUT, "api/v1/packages/meter/owners", &alice, Some(owners)).status(), StatusCode::OK);
    // Bob, now an owner, signs with his key; Alice's token may publish it (CI with one owner's key).
    let v2 = pack("1.1.0");
    let r = publish(&reg, &alice, &signed_publish_body(&v2, "meter", "1.1.0", &bobs).unwrap());
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<PublishResponse>().unwrap().entry.signed_by.as_ref(), Some(bobs.public().id()));

    // A bundle without a key hint is checked against every owner's live key.
    let v3 = pack("1.2.0");
    let mut unhinted = bundle_json(&bobs, &v3.bytes);
    unhinted["verificationMaterial"]["publicKey"]["hint"] = "".into();
    let r = publish(&reg, &bob, &publish_body_with_bundle(&v3, "meter", "1.2.0", unhinted).unwrap());
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<PublishResponse>().unwrap().entry.signed_by.as_ref(), Some(bobs.public().id()));

    // Bob revokes his key: it signs nothing more, and says so to clients.
    let hex = bobs.public().id().to_hex();
    assert_eq!(send(&reg, Method::DELETE, &format!("api/v1/me/keys/{hex}"), &bob, None).status(), StatusCode::OK);
    let v4 = pack("1.3.0");
    refused(
        publish(&reg, &bob, &signed_publish_body(&v4, "meter", "1.3.0", &bobs).unwrap()),
        StatusCode::FORBIDDEN,
        "revoked",
    );
    let shown: PublisherKey = get(&reg, &format!("api/v1/keys/{hex}")).json().unwrap();
    assert!(shown.revoked_at.is_some());
    // What it signed before stays listed, still naming it (installs decide).
    let lines = index_lines(&reg, "index/me/te/meter");
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1].signed_by.as_ref(), Some(bobs.public().id()));

    // Alice is removed as an owner: her key no longer signs meter.
    let gone = serde_json::json!({"users": ["alice"]});
    assert_eq!(send(&reg, Method::DELETE, "api/v1/packages/meter/owners", &bob, Some(gone)).status(), StatusCode::OK);
    refused(
        publish(&reg, &bob, &signed_publish_body(&v4, "meter", "1.3.0", &alices).unwrap()),
        StatusCode::FORBIDDEN,
        "who is not an owner",
    );
    assert_eq!(index_lines(&reg, "index/me/te/meter").len(), 3);
}

/// The publish check (`packages/new/check`) with the key a version would be
/// signed with: the key's refusals the publish gives before the archive, in its
/// words (403 a key that is not a live owner's); without a key, no signature is
/// checked (one made elsewhere, with cosign, comes with the publish).
#[test]
fn the_publish_check_answers_for_the_signing_key_as_the_publish_does() {
    let reg = signed_registry();
    let scratch = tempfile::tempdir().unwrap();
    let alice = reg.token("alice", &[], &[]).unwrap();
    let key = SigningKey::generate().unwrap();
    let id = key.public().id().to_string();
    let check = |key: Option<&str>| {
        let mut body = serde_json::json!({"name": "signed", "vers": "1.0.0"});
        if let Some(key) = key {
            body["key"] = serde_json::Value::from(key);
        }
        let r = send(&reg, Method::POST, "api/v1/packages/new/check", &alice, Some(body));
        let status = r.status();
        (status, if status.is_success() { String::new() } else { r.json::<ApiErrors>().unwrap().joined() })
    };
    let packed = pack_with(scratch.path(), "signed", "1.0.0", "", &[]).unwrap();
    let real = |body: Vec<u8>| {
        let r = publish(&reg, &alice, &body);
        (r.status(), r.json::<ApiErrors>().unwrap().joined())
    };
    assert_eq!(check(None), (StatusCode::OK, String::new()));
    let unregistered = check(Some(&id));
    assert!(unregistered.1.contains("not registered with this registry"), "{}", unregistered.1);
    assert_eq!(unregistered, real(signed_publish_body(&packed, "signed", "1.0.0", &key).unwrap()));
    assert_eq!(register(&reg, &alice, "alice", &key).status(), StatusCode::OK);
    assert_eq!(check(Some(&id)), (StatusCode::OK, String::new()));
}
