//! Attestations (in-toto Statement v1, DSSE, Sigstore bundle v0.3): what ebpkg
//! signs verifies, and every change to it is refused; and the same bundles
//! against cosign itself, both ways (cosign is built by `ci/setup`; a missing
//! one fails the test).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use base64::Engine;
use ebpkg_signing::testing::Cosign;
use ebpkg_signing::{SignedAttestation, SigningKey, Statement, Subject, attest};
use ebpkg_spec::types::Sha256Digest;

const PASSWORD: &str = "attestation passphrase";
const TYPE: &str = "https://ebpkg.dev/attestation/kernel-verification/v1";

fn statement(archive: &[u8]) -> Statement {
    Statement::new(
        vec![
            Subject::sha256("pkg-1.0.0.tar.gz", &Sha256Digest::of(archive)),
            Subject::sha256("pkg@1.0.0/src_x.bpf.c.xdp.o", &Sha256Digest([3; 32])),
        ],
        TYPE,
        serde_json::json!({ "kernels": [{ "kernel": { "release": "6.1.0-56-amd64" } }] }),
    )
}

/// The bundle's JSON with the DSSE payload passed through `change`.
fn with_payload(json: &str, change: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut bundle: serde_json::Value = serde_json::from_str(json).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut payload = b64.decode(bundle["dsseEnvelope"]["payload"].as_str().unwrap()).unwrap();
    change(&mut payload);
    bundle["dsseEnvelope"]["payload"] = b64.encode(&payload).into();
    bundle.to_string()
}

#[test]
fn an_attestation_verifies_with_its_key_and_names_its_subjects() {
    let key = SigningKey::generate().unwrap();
    let archive = b"archive bytes".to_vec();
    let signed = attest(&key, &statement(&archive)).unwrap();
    let read = SignedAttestation::parse(signed.json().as_bytes()).unwrap();
    read.verify(key.public()).unwrap();
    assert_eq!(read.key_hint(), Some(key.public().id()));
    assert_eq!(read.statement(), &statement(&archive));
    assert!(read.statement().names(&Sha256Digest::of(&archive)));
    assert!(!read.statement().names(&Sha256Digest::of(b"another archive")));

    let other = SigningKey::generate().unwrap();
    let e = read.verify(other.public()).unwrap_err().to_string();
    assert!(e.contains("names key"), "{e}");
}

#[test]
fn one_changed_byte_of_the_statement_is_refused() {
    let key = SigningKey::generate().unwrap();
    let signed = attest(&key, &statement(b"archive")).unwrap();
    // The predicate's release, 6.1.0-56 → 6.1.0-57: still a Statement, still JSON.
    let changed = with_payload(signed.json(), |p| {
        let at = p.windows(4).position(|w| w == b"0-56").unwrap();
        p[at + 3] = b'7';
    });
    let read = SignedAttestation::parse(changed.as_bytes()).unwrap();
    let e = read.verify(key.public()).unwrap_err().to_string();
    assert!(e.contains("does not verify"), "{e}");
}

#[test]
fn what_is_not_a_one_signature_in_toto_envelope_is_refused() {
    let key = SigningKey::generate().unwrap();
    let signed = attest(&key, &statement(b"archive")).unwrap();
    let mut two: serde_json::Value = serde_json::from_str(signed.json()).unwrap();
    let first = two["dsseEnvelope"]["signatures"][0].clone();
    two["dsseEnvelope"]["signatures"].as_array_mut().unwrap().push(first);
    let e = SignedAttestation::parse(two.to_string().as_bytes()).unwrap_err().to_string();
    assert!(e.contains("2 signatures"), "{e}");

    let mut typed: serde_json::Value = serde_json::from_str(signed.json()).unwrap();
    typed["dsseEnvelope"]["payloadType"] = "text/plain".into();
    let e = SignedAttestation::parse(typed.to_string().as_bytes()).unwrap_err().to_string();
    assert!(e.contains("not an in-toto Statement"), "{e}");

    let v02 = with_payload(signed.json(), |p| {
        let at = p.windows(12).position(|w| w == b"Statement/v1").unwrap();
        p[at + 11] = b'2';
    });
    let e = SignedAttestation::parse(v02.as_bytes()).unwrap_err().to_string();
    assert!(e.contains("Statement/v2"), "{e}");

    // An archive's signature is not an attestation.
    let archive = ebpkg_signing::sign(&key, b"archive").unwrap();
    let e = SignedAttestation::parse(archive.json().as_bytes()).unwrap_err().to_string();
    assert!(e.contains("no DSSE envelope"), "{e}");
}

#[test]
fn cosign_verifies_an_ebpkg_attestation_and_refuses_it_for_other_bytes_or_types() {
    let dir = tempfile::tempdir().unwrap();
    let archive: Vec<u8> = (0..5_000u32).flat_map(|i| i.to_le_bytes()).collect();
    std::fs::write(dir.path().join("pkg-1.0.0.tar.gz"), &archive).unwrap();
    std::fs::write(dir.path().join("other.tar.gz"), b"other").unwrap();
    let key = SigningKey::generate().unwrap();
    std::fs::write(dir.path().join("pub.pem"), key.public().to_pem()).unwrap();
    let signed = attest(&key, &statement(&archive)).unwrap();
    std::fs::write(dir.path().join("a.json"), signed.json()).unwrap();
    let cosign = Cosign::locate(PASSWORD).unwrap();
    cosign.verify_blob_attestation(dir.path(), "pub.pem", "a.json", TYPE, "pkg-1.0.0.tar.gz").unwrap();
    assert!(
        cosign.verify_blob_attestation(dir.path(), "pub.pem", "a.json", TYPE, "other.tar.gz").is_err(),
        "cosign accepted the attestation for bytes it does not name"
    );
    assert!(
        cosign
            .verify_blob_attestation(
                dir.path(),
                "pub.pem",
                "a.json",
                "https://example.com/other/v1",
                "pkg-1.0.0.tar.gz"
            )
            .is_err(),
        "cosign accepted the attestation as another predicate type"
    );
    let changed = with_payload(signed.json(), |p| {
        let at = p.windows(4).position(|w| w == b"0-56").unwrap();
        p[at + 3] = b'7';
    });
    std::fs::write(dir.path().join("changed.json"), changed).unwrap();
    assert!(
        cosign.verify_blob_attestation(dir.path(), "pub.pem", "changed.json", TYPE, "pkg-1.0.0.tar.gz").is_err(),
        "cosign accepted an attestation whose statement changed"
    );
}

#[test]
fn ebpkg_verifies_an_attestation_cosign_made() {
    let dir = tempfile::tempdir().unwrap();
    let archive = b"the archive cosign attests".to_vec();
    std::fs::write(dir.path().join("pkg-1.0.0.tar.gz"), &archive).unwrap();
    std::fs::write(dir.path().join("predicate.json"), r#"{"kernels":[]}"#).unwrap();
    let key = SigningKey::generate().unwrap();
    let pem = key.to_encrypted_pem(PASSWORD.as_bytes()).unwrap();
    std::fs::write(dir.path().join("ebpkg.key"), pem.as_bytes()).unwrap();
    let cosign = Cosign::locate(PASSWORD).unwrap();
    cosign.attest_blob(dir.path(), "ebpkg.key", "predicate.json", TYPE, "a.json", "pkg-1.0.0.tar.gz").unwrap();
    let read = SignedAttestation::parse(&std::fs::read(dir.path().join("a.json")).unwrap()).unwrap();
    read.verify(key.public()).unwrap();
    assert_eq!(read.statement().predicate_type, TYPE);
    assert!(read.statement().names(&Sha256Digest::of(&archive)));
    assert_eq!(read.statement().predicate, serde_json::json!({ "kernels": [] }));
}
