//! Kernel verification attestations on the server, against real PostgreSQL and
//! HTTP: an owner's attestation accepted, served byte for byte and signed by
//! the TUF metadata; every way an attestation or its upload can be wrong
//! refused with nothing changed; the limit per version; concurrent adds; TUF
//! created after attestations; private registries.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use common::*;
use ebpkg_registry::testing::{
    TestRegistry, attestation, kernel_observation, pack_with, publish_body, rebuild_attestation,
};
use ebpkg_signing::{SignedAttestation, SigningKey};
use ebpkg_spec::attestation::{AttestationFile, MAX_ATTESTATIONS, attestation_target};
use ebpkg_spec::registry_api::{ApiErrors, AttestationAccepted, Scope};
use ebpkg_spec::types::Sha256Digest;
use reqwest::blocking::Response;
use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use reqwest::{Method, StatusCode};

const PATH: &str = "api/v1/packages/meter/1.0.0/attestations";

fn post(reg: &TestRegistry, path: &str, token: Option<&str>, body: impl Into<Vec<u8>>) -> Response {
    let mut request =
        http().post(format!("{}{path}", reg.url())).header(CONTENT_TYPE, "application/json").body(body.into());
    if let Some(token) = token {
        request = request.header("Authorization", token);
    }
    request.send().unwrap()
}

fn accepted(r: Response) -> AttestationAccepted {
    let status = r.status();
    let text = r.text().unwrap();
    assert_eq!(status, StatusCode::OK, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// Asserts a refusal with `status` whose message contains `needle`.
fn refused(r: Response, status: StatusCode, needle: &str) -> String {
    assert_eq!(r.status(), status, "expected {status} saying `{needle}`");
    let text = r.json::<ApiErrors>().unwrap().joined();
    assert!(text.contains(needle), "`{needle}` not in: {text}");
    text
}

/// A verified kernel and a refused one.
fn two_kernels() -> Vec<ebpkg_spec::attestation::KernelObservation> {
    vec![
        kernel_observation("6.1.0-56-amd64", &["ip6_meter", "ip6_dst_tbmon"], None),
        kernel_observation("5.10.0-46-amd64", &["ip6_meter"], Some(("ip6_dst_tbmon", "BPF_STX uses reserved fields"))),
    ]
}

struct Keys {
    _dir: tempfile::TempDir,
    root: PathBuf,
    online: PathBuf,
}

fn tuf_keys() -> Keys {
    let dir = tempfile::tempdir().unwrap();
    let (root, online) = (dir.path().join("root.key"), dir.path().join("online.key"));
    Keys { _dir: dir, root, online }
}

/// A registry whose TUF metadata `k`'s online key signs, once [`init_tuf`] has
/// created it.
fn tuf_registry(k: &Keys) -> TestRegistry {
    let online = k.online.clone();
    TestRegistry::start_with(Box::new(move |c| c.tuf_online_key = Some(online))).unwrap()
}

/// Creates `reg`'s TUF metadata with `k`; answers how many targets it signed.
fn init_tuf(reg: &TestRegistry, k: &Keys) -> usize {
    reg.block_on(ebpkg_registry::tuf::init(reg.pool(), std::slice::from_ref(&k.root), 1, &k.online)).unwrap()
}

/// `reg` once alice has registered `key` and published meter 1.0.0 (`packed`).
struct Meter {
    reg: TestRegistry,
    alice: String,
    key: SigningKey,
    packed: ebpkg_archive::Packed,
    _scratch: tempfile::TempDir,
}

fn meter_published(reg: TestRegistry) -> Meter {
    let scratch = tempfile::tempdir().unwrap();
    let alice = reg.token("alice", &[], &[]).unwrap();
    let key = SigningKey::generate().unwrap();
    register_key_at(reg.url(), &alice, "alice", &key);
    let packed = pack_with(scratch.path(), "meter", "1.0.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &alice, &publish_body(&packed, "meter", "1.0.0").unwrap()).status(), StatusCode::OK);
    Meter { reg, alice, key, packed, _scratch: scratch }
}

/// Copies the served metadata into `dir` and loads it as a client does, from
/// `trusted_root` (the datastore beside `dir` remembers what was seen).
fn load_tuf(reg: &TestRegistry, dir: &Path, trusted_root: &Path) -> ebpkg_tuf::TrustedIndex {
    std::fs::create_dir_all(dir).unwrap();
    let bins = ebpkg_tuf::bins::all().map(|(n, _)| format!("{n}.json"));
    let files = ["root.json", "1.root.json", "targets.json", "snapshot.json", "timestamp.json"];
    for file in files.iter().map(|f| f.to_string()).chain(bins) {
        let r = get(reg, &format!("tuf/{file}"));
        assert_eq!(r.status(), StatusCode::OK, "{file}");
        std::fs::write(dir.join(&file), r.bytes().unwrap()).unwrap();
    }
    let url = url::Url::from_directory_path(dir).unwrap();
    ebpkg_tuf::load(trusted_root, &url, &dir.join("../datastore")).unwrap()
}

fn target(name: &str, version: &str) -> String {
    attestation_target(&ebpkg_spec::PackageName::new(name).unwrap(), &semver::Version::parse(version).unwrap())
}

#[test]
fn an_owners_attestation_is_accepted_served_byte_for_byte_and_signed_by_tuf() {
    let k = tuf_keys();
    let reg = tuf_registry(&k);
    init_tuf(&reg, &k);
    let Meter { reg, alice, key, packed, _scratch } = meter_published(reg);
    refused(get(&reg, PATH), StatusCode::NOT_FOUND, "meter@1.0.0 has no attestation");

    // A CI token with publish-update for the package adds it.
    let ci = reg.token("alice", &[Scope::PublishUpdate], &["meter"]).unwrap();
    let first = attestation(&key, "meter", "1.0.0", &packed.sha256, two_kernels()).unwrap();
    let answer = accepted(post(&reg, PATH, Some(&ci), first.json()));
    assert_eq!(
        answer,
        AttestationAccepted {
            attestations: 1,
            kernels: vec!["6.1.0-56-amd64".into(), "5.10.0-46-amd64".into()],
            added: true
        }
    );

    // Served: the file of the bundles, with a strong ETag and revalidation.
    let served = get(&reg, PATH);
    assert_eq!(served.status(), StatusCode::OK);
    assert_eq!(served.headers()[CONTENT_TYPE], "application/json");
    assert_eq!(served.headers()[CACHE_CONTROL], "public, max-age=600");
    let etag = served.headers()[ETAG].to_str().unwrap().to_owned();
    let bytes = served.bytes().unwrap().to_vec();
    assert_eq!(etag, format!("\"{}\"", Sha256Digest::of(&bytes)));
    let file = AttestationFile::parse(&bytes).unwrap();
    assert_eq!(file.to_bytes(), bytes, "the file's canonical bytes");
    assert_eq!(file.attestations, vec![serde_json::from_str::<serde_json::Value>(first.json()).unwrap()]);
    let read = SignedAttestation::parse(&serde_json::to_vec(&file.attestations[0]).unwrap()).unwrap();
    read.verify(key.public()).unwrap();
    read.kernel_verification(&packed.manifest.package.name, &packed.manifest.package.version, &packed.sha256).unwrap();
    let again = http().get(format!("{}{PATH}", reg.url())).header(IF_NONE_MATCH, &etag).send().unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    let stale = http().get(format!("{}{PATH}", reg.url())).header(IF_NONE_MATCH, "\"00\"").send().unwrap();
    assert_eq!(stale.status(), StatusCode::OK);
    // Build metadata does not make another version.
    let spelled = get(&reg, "api/v1/packages/meter/1.0.0+x/attestations");
    assert_eq!(spelled.status(), StatusCode::OK, "{}", spelled.text().unwrap());

    // TUF signs exactly these bytes as the version's attestation target.
    let client = tempfile::tempdir().unwrap();
    let trusted = client.path().join("root.json");
    std::fs::write(&trusted, get(&reg, "tuf/root.json").bytes().unwrap()).unwrap();
    let signed = load_tuf(&reg, &client.path().join("m1"), &trusted);
    assert_eq!(target("meter", "1.0.0"), "attestations/me/te/meter/1.0.0.json");
    signed.check(&target("meter", "1.0.0"), &bytes).unwrap();
    signed.check("index/me/te/meter", &get(&reg, "index/me/te/meter").bytes().unwrap()).unwrap();

    // The same bundle again: accepted, nothing changed (not even the timestamp).
    let timestamp = get(&reg, "tuf/timestamp.json").bytes().unwrap();
    let answer = accepted(post(&reg, PATH, Some(&ci), first.json()));
    assert_eq!((answer.attestations, answer.added), (1, false));
    assert_eq!(get(&reg, PATH).bytes().unwrap().as_ref(), bytes.as_slice());
    assert_eq!(get(&reg, "tuf/timestamp.json").bytes().unwrap(), timestamp, "nothing was re-signed");

    // A second one, without a key hint (checked against the owners' live keys),
    // on a yanked version: appended, and TUF signs the new file, not the old.
    assert_eq!(send(&reg, Method::DELETE, "api/v1/packages/meter/1.0.0/yank", &alice, None).status(), StatusCode::OK);
    let second =
        attestation(&key, "meter", "1.0.0", &packed.sha256, vec![kernel_observation("6.12.0", &[], None)]).unwrap();
    let mut unhinted: serde_json::Value = serde_json::from_str(second.json()).unwrap();
    unhinted["verificationMaterial"]["publicKey"]["hint"] = "".into();
    let answer = accepted(post(&reg, PATH, Some(&alice), unhinted.to_string()));
    assert_eq!((answer.attestations, answer.kernels, answer.added), (2, vec!["6.12.0".to_owned()], true));
    let grown = get(&reg, PATH).bytes().unwrap().to_vec();
    let file = AttestationFile::parse(&grown).unwrap();
    assert_eq!(file.attestations.len(), 2);
    assert_eq!(file.attestations[0], serde_json::from_str::<serde_json::Value>(first.json()).unwrap(), "oldest first");
    assert_eq!(file.attestations[1], unhinted);
    let resigned = load_tuf(&reg, &client.path().join("m2"), &trusted);
    assert!(resigned.timestamp_version > signed.timestamp_version);
    resigned.check(&target("meter", "1.0.0"), &grown).unwrap();
    assert!(resigned.check(&target("meter", "1.0.0"), &bytes).is_err(), "the old file is no longer the signed one");

    let metrics = get(&reg, "metrics").text().unwrap();
    assert!(metrics.contains("ebpkg_registry_attestations_total{outcome=\"added\"}"), "{metrics}");
    assert!(metrics.contains("ebpkg_registry_attestations_total{outcome=\"unchanged\"}"), "{metrics}");
}

#[test]
fn attestations_that_must_be_refused_change_nothing() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let alice = reg.token("alice", &[], &[]).unwrap();
    let bob = reg.token("bob", &[], &[]).unwrap();
    let [alices, bobs, unregistered, revoked] = std::array::from_fn(|_| SigningKey::generate().unwrap());
    register_key_at(reg.url(), &alice, "alice", &alices);
    register_key_at(reg.url(), &alice, "alice", &revoked);
    register_key_at(reg.url(), &bob, "bob", &bobs);
    let hex = revoked.public().id().to_hex();
    assert_eq!(send(&reg, Method::DELETE, &format!("api/v1/me/keys/{hex}"), &alice, None).status(), StatusCode::OK);
    let v1 = pack_with(scratch.path(), "meter", "1.0.0", "", &[]).unwrap();
    let v2 = pack_with(scratch.path(), "meter", "1.1.0", "", &[]).unwrap();
    for (packed, v) in [(&v1, "1.0.0"), (&v2, "1.1.0")] {
        assert_eq!(publish(&reg, &alice, &publish_body(packed, "meter", v).unwrap()).status(), StatusCode::OK);
    }
    let good = attestation(&alices, "meter", "1.0.0", &v1.sha256, two_kernels()).unwrap();
    let by = |key: &SigningKey| attestation(key, "meter", "1.0.0", &v1.sha256, two_kernels()).unwrap();

    // Made for another archive: 1.1.0's, sent as 1.0.0's.
    let other = attestation(&alices, "meter", "1.1.0", &v2.sha256, two_kernels()).unwrap();
    refused(post(&reg, PATH, Some(&alice), other.json()), StatusCode::UNPROCESSABLE_ENTITY, "for another archive");
    // The right archive, but a predicate about another version.
    let lying = {
        let p = serde_json::to_value(ebpkg_spec::attestation::KernelVerification {
            package: ebpkg_spec::attestation::AttestedPackage {
                name: ebpkg_spec::PackageName::new("meter").unwrap(),
                version: semver::Version::new(1, 1, 0),
                archive: ebpkg_spec::attestation::Digests { sha256: v1.sha256 },
            },
            attester: ebpkg_spec::attestation::Attester { tool: "ebpkg test".into() },
            kernels: two_kernels(),
        })
        .unwrap();
        let statement = ebpkg_signing::Statement::new(
            vec![ebpkg_signing::Subject::sha256("meter-1.0.0.tar.gz", &v1.sha256)],
            ebpkg_spec::attestation::PREDICATE_TYPE,
            p,
        );
        ebpkg_signing::attest(&alices, &statement).unwrap()
    };
    refused(post(&reg, PATH, Some(&alice), lying.json()), StatusCode::UNPROCESSABLE_ENTITY, "not meter@1.0.0");
    // Another predicate type.
    let typed = {
        let statement = ebpkg_signing::Statement::new(
            vec![ebpkg_signing::Subject::sha256("meter-1.0.0.tar.gz", &v1.sha256)],
            "https://slsa.dev/provenance/v1",
            serde_json::json!({}),
        );
        ebpkg_signing::attest(&alices, &statement).unwrap()
    };
    refused(post(&reg, PATH, Some(&alice), typed.json()), StatusCode::UNPROCESSABLE_ENTITY, "predicate type");

    // Keys that are not a live key of an owner.
    let text = refused(post(&reg, PATH, Some(&alice), by(&bobs).json()), StatusCode::FORBIDDEN, "belongs to `bob`");
    assert!(text.contains("the attestation of meter@1.0.0") && text.contains("ebpkg owner add"), "{text}");
    refused(post(&reg, PATH, Some(&alice), by(&unregistered).json()), StatusCode::FORBIDDEN, "not registered");
    refused(post(&reg, PATH, Some(&alice), by(&revoked).json()), StatusCode::FORBIDDEN, "revoked");

    // One byte of the predicate changed after signing.
    let mut tampered: serde_json::Value = serde_json::from_str(good.json()).unwrap();
    let mut payload = B64.decode(tampered["dsseEnvelope"]["payload"].as_str().unwrap()).unwrap();
    let at = payload.windows(8).position(|w| w == b"6.1.0-56").unwrap();
    payload[at + 7] = b'7';
    tampered["dsseEnvelope"]["payload"] = B64.encode(&payload).into();
    refused(post(&reg, PATH, Some(&alice), tampered.to_string()), StatusCode::UNPROCESSABLE_ENTITY, "does not verify");

    // What is not an attestation at all.
    let archive_signature = ebpkg_signing::sign(&alices, &v1.bytes).unwrap();
    refused(post(&reg, PATH, Some(&alice), archive_signature.json()), StatusCode::BAD_REQUEST, "no DSSE envelope");
    for body in ["{}", "not json", "[1, 2]", ""] {
        refused(post(&reg, PATH, Some(&alice), body), StatusCode::BAD_REQUEST, "not an attestation");
    }
    refused(
        post(&reg, PATH, Some(&alice), vec![b' '; (1 << 20) + 1]),
        StatusCode::PAYLOAD_TOO_LARGE,
        "more than the 1 MiB",
    );

    // Who may not: a non-owner, a token without the scope or for other
    // packages, no token, a token that is not one.
    let text = refused(post(&reg, PATH, Some(&bob), good.json()), StatusCode::FORBIDDEN, "not an owner");
    assert!(text.contains("ebpkg owner add meter bob"), "{text}");
    let yank_only = reg.token("alice", &[Scope::Yank], &[]).unwrap();
    refused(post(&reg, PATH, Some(&yank_only), good.json()), StatusCode::FORBIDDEN, "publish-update");
    let elsewhere = reg.token("alice", &[Scope::PublishUpdate], &["net-*"]).unwrap();
    refused(post(&reg, PATH, Some(&elsewhere), good.json()), StatusCode::FORBIDDEN, "limited to packages");
    refused(post(&reg, PATH, None, good.json()), StatusCode::UNAUTHORIZED, "API token");
    refused(post(&reg, PATH, Some("ebpkg_nope"), good.json()), StatusCode::UNAUTHORIZED, "not valid");

    // No such version or package.
    let missing = "api/v1/packages/meter/9.9.9/attestations";
    refused(post(&reg, missing, Some(&alice), good.json()), StatusCode::NOT_FOUND, "no meter@9.9.9");
    refused(
        post(&reg, "api/v1/packages/nope/1.0.0/attestations", Some(&alice), good.json()),
        StatusCode::NOT_FOUND,
        "no package `nope`",
    );
    refused(get(&reg, missing), StatusCode::NOT_FOUND, "no meter@9.9.9 in this registry");
    refused(get(&reg, "api/v1/packages/meter/x.y/attestations"), StatusCode::NOT_FOUND, "not a version");

    // Nothing was stored.
    refused(get(&reg, PATH), StatusCode::NOT_FOUND, "has no attestation");
    let rows: i64 = reg
        .block_on(sqlx::query_scalar!(r#"SELECT count(*) AS "n!" FROM attestations"#).fetch_one(reg.pool()))
        .unwrap();
    assert_eq!(rows, 0);
    // And the good one, after all that, is accepted.
    assert!(accepted(post(&reg, PATH, Some(&alice), good.json())).added);
}

/// A rebuild is anyone's word: bob, no owner of meter, attaches one signed
/// with his own key; a kernel verification he signs is refused (only owners
/// attach those), and so is a rebuild signed with a key that is not his.
#[test]
fn anyone_attaches_a_rebuild_with_their_own_key_and_only_owners_kernel_verifications() {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let alice = reg.token("alice", &[], &[]).unwrap();
    let bob = reg.token("bob", &[], &[]).unwrap();
    let [alices, bobs] = std::array::from_fn(|_| SigningKey::generate().unwrap());
    register_key_at(reg.url(), &alice, "alice", &alices);
    register_key_at(reg.url(), &bob, "bob", &bobs);
    let v1 = pack_with(scratch.path(), "meter", "1.0.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &alice, &publish_body(&v1, "meter", "1.0.0").unwrap()).status(), StatusCode::OK);

    let kernel = attestation(&bobs, "meter", "1.0.0", &v1.sha256, two_kernels()).unwrap();
    let text = refused(post(&reg, PATH, Some(&bob), kernel.json()), StatusCode::FORBIDDEN, "not an owner");
    assert!(text.contains("only owners attach kernel verification attestations"), "{text}");
    let alices_rebuild = rebuild_attestation(&alices, "meter", "1.0.0", &v1.sha256).unwrap();
    refused(post(&reg, PATH, Some(&bob), alices_rebuild.json()), StatusCode::FORBIDDEN, "belongs to `alice`");
    refused(get(&reg, PATH), StatusCode::NOT_FOUND, "has no attestation");

    let bobs_rebuild = rebuild_attestation(&bobs, "meter", "1.0.0", &v1.sha256).unwrap();
    let a = accepted(post(&reg, PATH, Some(&bob), bobs_rebuild.json()));
    assert!(a.added && a.kernels.is_empty(), "{a:?}");
    let file = AttestationFile::parse(&get(&reg, PATH).bytes().unwrap()).unwrap();
    assert_eq!(file.attestations.len(), 1);
    let uploader: String = reg
        .block_on(
            sqlx::query_scalar::<_, String>("SELECT u.login FROM attestations a JOIN users u ON u.id = a.uploaded_by")
                .fetch_one(reg.pool()),
        )
        .unwrap();
    assert_eq!(uploader, "bob");
}

#[test]
fn a_version_keeps_at_most_its_limit_of_attestations() {
    let Meter { reg, alice, key, packed, _scratch } = meter_published(TestRegistry::start().unwrap());
    let make = |i: usize| {
        attestation(&key, "meter", "1.0.0", &packed.sha256, vec![kernel_observation(&format!("6.1.{i}"), &[], None)])
            .unwrap()
    };
    let first = make(0);
    assert_eq!(accepted(post(&reg, PATH, Some(&alice), first.json())).attestations, 1);
    for i in 1..MAX_ATTESTATIONS {
        assert_eq!(accepted(post(&reg, PATH, Some(&alice), make(i).json())).attestations, i + 1);
    }
    let full = get(&reg, PATH).bytes().unwrap();
    let text = refused(
        post(&reg, PATH, Some(&alice), make(MAX_ATTESTATIONS).json()),
        StatusCode::CONFLICT,
        "the most a version may have (32)",
    );
    assert!(text.contains("meter@1.0.0 has 32 attestations"), "{text}");
    assert_eq!(get(&reg, PATH).bytes().unwrap(), full, "nothing changed");
    // One it has already is still answered as such.
    let again = accepted(post(&reg, PATH, Some(&alice), first.json()));
    assert_eq!((again.attestations, again.added), (MAX_ATTESTATIONS, false));
}

/// Adds racing on one version are serialized: none is lost from the file, and
/// the TUF metadata signs the last file.
#[test]
fn concurrent_attestations_are_all_kept_and_signed() {
    let k = tuf_keys();
    let reg = tuf_registry(&k);
    init_tuf(&reg, &k);
    let Meter { reg, alice, key, packed, _scratch } = meter_published(reg);
    let bundles: Vec<String> = (0..8)
        .map(|i| {
            let kernels = vec![kernel_observation(&format!("6.{i}.0"), &["ip6_meter"], None)];
            attestation(&key, "meter", "1.0.0", &packed.sha256, kernels).unwrap().json().to_owned()
        })
        .collect();
    let barrier = std::sync::Barrier::new(bundles.len());
    std::thread::scope(|s| {
        for bundle in &bundles {
            let (reg, alice, barrier) = (&reg, &alice, &barrier);
            s.spawn(move || {
                barrier.wait();
                assert!(accepted(post(reg, PATH, Some(alice), bundle.as_bytes())).added);
            });
        }
    });
    let bytes = get(&reg, PATH).bytes().unwrap().to_vec();
    let file = AttestationFile::parse(&bytes).unwrap();
    assert_eq!(file.attestations.len(), bundles.len(), "every attestation is in the file");
    let client = tempfile::tempdir().unwrap();
    let trusted = client.path().join("root.json");
    std::fs::write(&trusted, get(&reg, "tuf/root.json").bytes().unwrap()).unwrap();
    load_tuf(&reg, &client.path().join("m"), &trusted).check(&target("meter", "1.0.0"), &bytes).unwrap();
}

#[test]
fn tuf_created_after_attestations_signs_them_too() {
    let k = tuf_keys();
    let Meter { reg, alice, key, packed, _scratch } = meter_published(tuf_registry(&k));
    let signed = attestation(&key, "meter", "1.0.0", &packed.sha256, two_kernels()).unwrap();
    assert!(accepted(post(&reg, PATH, Some(&alice), signed.json())).added, "no TUF yet: nothing to re-sign");
    assert_eq!(init_tuf(&reg, &k), 2, "the index file and the attestation file");
    let client = tempfile::tempdir().unwrap();
    let trusted = client.path().join("root.json");
    std::fs::write(&trusted, get(&reg, "tuf/root.json").bytes().unwrap()).unwrap();
    let view = load_tuf(&reg, &client.path().join("m"), &trusted);
    view.check(&target("meter", "1.0.0"), &get(&reg, PATH).bytes().unwrap()).unwrap();
}

#[test]
fn a_private_registry_wants_a_token_to_read_attestations() {
    let private = TestRegistry::start_with(Box::new(|c| c.auth_required = true)).unwrap();
    let Meter { reg, alice, key, packed, _scratch } = meter_published(private);
    let reader = reg.token("reader", &[Scope::Yank], &["nothing-*"]).unwrap();
    let signed = attestation(&key, "meter", "1.0.0", &packed.sha256, two_kernels()).unwrap();
    assert!(accepted(post(&reg, PATH, Some(&alice), signed.json())).added);
    assert_eq!(get(&reg, PATH).status(), StatusCode::UNAUTHORIZED);
    let with = http().get(format!("{}{PATH}", reg.url())).header("Authorization", &reader).send().unwrap();
    assert_eq!(with.status(), StatusCode::OK, "any valid token reads");
    assert_eq!(with.headers()[CACHE_CONTROL], "private, max-age=600");
}
