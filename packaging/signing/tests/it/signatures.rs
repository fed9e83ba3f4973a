//! Keys and bundles without cosign: what ebpkg writes it reads back, and every
//! change to an archive, a bundle or a key is refused with the reason.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebpkg_signing::{Error, PublicKey, SignedBundle, SigningKey, sign};

const ARCHIVE: &[u8] = b"an archive's bytes";

fn key() -> SigningKey {
    SigningKey::generate().expect("a key")
}

#[test]
fn a_bundle_round_trips_through_json_and_verifies() {
    let key = key();
    let bundle = sign(&key, ARCHIVE).expect("signed");
    let json = bundle.to_json().expect("json");
    let value: serde_json::Value = serde_json::from_str(&json).expect("json");
    assert_eq!(value["mediaType"], "application/vnd.dev.sigstore.bundle.v0.3+json");
    assert_eq!(value["verificationMaterial"]["publicKey"]["hint"], key.public().id().to_string());
    assert_eq!(value["messageSignature"]["messageDigest"]["algorithm"], "SHA2_256");
    let read = SignedBundle::parse(json.as_bytes()).expect("parsed");
    assert_eq!(read, bundle);
    assert_eq!(read.key_hint(), Some(key.public().id()));
    read.verify(key.public(), ARCHIVE).expect("verifies");
}

#[test]
fn another_archive_is_refused_naming_both_digests() {
    let key = key();
    let bundle = sign(&key, ARCHIVE).expect("signed");
    let err = bundle.verify(key.public(), b"another archive").expect_err("refused");
    assert!(matches!(err, Error::OtherArchive { .. }), "{err}");
}

#[test]
fn another_key_is_refused() {
    let (signer, other) = (key(), key());
    let bundle = sign(&signer, ARCHIVE).expect("signed");
    let err = bundle.verify(other.public(), ARCHIVE).expect_err("refused");
    assert!(matches!(err, Error::OtherKey { .. }), "{err}");

    // Without the hint, the signature itself is what fails.
    let mut value: serde_json::Value = serde_json::from_str(&bundle.to_json().expect("json")).expect("json");
    value["verificationMaterial"]["publicKey"]["hint"] = "".into();
    let unhinted = SignedBundle::parse(value.to_string().as_bytes()).expect("parsed");
    let err = unhinted.verify(other.public(), ARCHIVE).expect_err("refused");
    assert!(matches!(err, Error::BadSignature { .. }), "{err}");
}

#[test]
fn a_changed_signature_is_refused() {
    let key = key();
    let bundle = sign(&key, ARCHIVE).expect("signed");
    let mut value: serde_json::Value = serde_json::from_str(&bundle.to_json().expect("json")).expect("json");
    let other = sign(&key, b"something else").expect("signed");
    let other: serde_json::Value = serde_json::from_str(&other.to_json().expect("json")).expect("json");
    value["messageSignature"]["signature"] = other["messageSignature"]["signature"].clone();
    let tampered = SignedBundle::parse(value.to_string().as_bytes()).expect("parsed");
    let err = tampered.verify(key.public(), ARCHIVE).expect_err("refused");
    assert!(matches!(err, Error::BadSignature { .. }), "{err}");
}

#[test]
fn malformed_bundles_are_refused_with_the_reason() {
    let key = key();
    let good: serde_json::Value =
        serde_json::from_str(&sign(&key, ARCHIVE).expect("signed").to_json().expect("json")).expect("json");
    type Change = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Change)> = vec![
        ("media type", Box::new(|v| v["mediaType"] = "text/plain".into())),
        ("SHA2_256", Box::new(|v| v["messageSignature"]["messageDigest"]["algorithm"] = "SHA2_512".into())),
        ("not 32", Box::new(|v| v["messageSignature"]["messageDigest"]["digest"] = "AAAA".into())),
        ("no message signature", Box::new(|v| drop(v.as_object_mut().map(|o| o.remove("messageSignature"))))),
        ("not a key id", Box::new(|v| v["verificationMaterial"]["publicKey"]["hint"] = "abc".into())),
        ("empty", Box::new(|v| v["messageSignature"]["signature"] = "".into())),
    ];
    for (reason, change) in cases {
        let mut value = good.clone();
        change(&mut value);
        let err = SignedBundle::parse(value.to_string().as_bytes()).expect_err(reason);
        assert!(err.to_string().contains(reason), "{reason}: {err}");
    }
    assert!(matches!(SignedBundle::parse(b"{"), Err(Error::BundleFormat(_))));
    let huge = vec![b' '; ebpkg_signing::MAX_BUNDLE_BYTES + 1];
    assert!(matches!(SignedBundle::parse(&huge), Err(Error::BundleTooLarge { .. })));
}

#[test]
fn an_encrypted_key_round_trips_and_a_wrong_passphrase_is_refused() {
    let key = key();
    let pem = key.to_encrypted_pem(b"correct horse").expect("pem");
    assert!(pem.contains("ENCRYPTED SIGSTORE PRIVATE KEY"), "{}", pem.as_str());
    let read = SigningKey::from_encrypted_pem(&pem, b"correct horse").expect("read");
    assert_eq!(read.public(), key.public());
    sign(&read, ARCHIVE).expect("signs").verify(key.public(), ARCHIVE).expect("verifies");
    let err = SigningKey::from_encrypted_pem(&pem, b"wrong").expect_err("refused");
    assert!(matches!(err, Error::PrivateKey(_)), "{err}");
}

#[test]
fn a_public_key_round_trips_through_pem_with_its_id() {
    let key = key();
    let pem = key.public().to_pem();
    let read = PublicKey::from_pem(&pem).expect("read");
    assert_eq!(read.id(), key.public().id());
    assert_eq!(read.id().to_string().len(), 44);
    assert!(PublicKey::from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n").is_err());
    assert!(PublicKey::from_pem("hello").is_err());
}
