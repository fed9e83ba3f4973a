//! Interoperability with cosign itself, both ways: keys and bundles ebpkg
//! writes are accepted by `cosign`, and cosign's by ebpkg. cosign is built by
//! `ci/setup` (pinned) into /opt/ebpkg-ci/cosign/bin; EBPKG_TEST_COSIGN names
//! another binary. A missing cosign fails the test: it is never skipped.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use ebpkg_signing::testing::Cosign;
use ebpkg_signing::{PublicKey, SignedBundle, SigningKey, sign};

const PASSWORD: &str = "interop passphrase";

fn cosign() -> Cosign {
    Cosign::locate(PASSWORD).unwrap()
}

/// An archive-shaped blob: what a bundle signs is bytes, whatever they hold.
fn archive(dir: &Path) -> Vec<u8> {
    let bytes: Vec<u8> = (0..10_000u32).flat_map(|i| i.to_le_bytes()).collect();
    std::fs::write(dir.join("pkg-1.0.0.tar.gz"), &bytes).expect("write");
    bytes
}

#[test]
fn cosign_verifies_a_bundle_ebpkg_wrote_with_an_ebpkg_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = archive(dir.path());
    let key = SigningKey::generate().expect("key");
    std::fs::write(dir.path().join("pub.pem"), key.public().to_pem()).expect("write");
    let bundle = sign(&key, &bytes).expect("signed");
    std::fs::write(dir.path().join("b.json"), bundle.to_json().expect("json")).expect("write");
    let verify = |blob: &str| {
        cosign()
            .run(dir.path(), &["verify-blob", "--key", "pub.pem", "--bundle", "b.json", "--insecure-ignore-tlog", blob])
    };
    verify("pkg-1.0.0.tar.gz").unwrap();

    // And cosign refuses it for other bytes, so the check above means something.
    std::fs::write(dir.path().join("other.tar.gz"), b"other").expect("write");
    assert!(verify("other.tar.gz").is_err(), "cosign accepted a bundle for other bytes");
}

#[test]
fn cosign_signs_with_an_ebpkg_key_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = archive(dir.path());
    let key = SigningKey::generate().expect("key");
    let pem = key.to_encrypted_pem(PASSWORD.as_bytes()).expect("pem");
    std::fs::write(dir.path().join("ebpkg.key"), pem.as_bytes()).expect("write");
    cosign().sign_blob(dir.path(), "ebpkg.key", "b.json", "pkg-1.0.0.tar.gz").unwrap();
    let bundle = SignedBundle::parse(&std::fs::read(dir.path().join("b.json")).expect("read")).expect("parsed");
    assert_eq!(bundle.key_hint(), Some(key.public().id()));
    bundle.verify(key.public(), &bytes).expect("verifies");
}

#[test]
fn ebpkg_reads_cosign_keys_and_verifies_cosign_bundles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = archive(dir.path());
    cosign().run(dir.path(), &["generate-key-pair"]).unwrap();
    cosign().sign_blob(dir.path(), "cosign.key", "b.json", "pkg-1.0.0.tar.gz").unwrap();
    let public =
        PublicKey::from_pem(&std::fs::read_to_string(dir.path().join("cosign.pub")).expect("read")).expect("pub");
    let private = SigningKey::from_encrypted_pem(
        &std::fs::read_to_string(dir.path().join("cosign.key")).expect("read"),
        PASSWORD.as_bytes(),
    )
    .expect("cosign's key reads");
    assert_eq!(private.public(), &public);

    let bundle = SignedBundle::parse(&std::fs::read(dir.path().join("b.json")).expect("read")).expect("parsed");
    assert_eq!(bundle.key_hint(), Some(public.id()), "ebpkg's key id is cosign's hint");
    bundle.verify(&public, &bytes).expect("cosign's bundle verifies");
    assert!(bundle.verify(&public, b"tampered").is_err());
}
