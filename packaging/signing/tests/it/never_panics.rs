//! The parsers of untrusted input — Sigstore bundles (from registries and
//! `--bundle`) and trust policies (`trust.toml`, a project's
//! `ebpkg-trust.toml`) — refuse or accept any input, never panic, and keep
//! their promises on what they accept. The fuzz targets in `fuzz/` run the same
//! properties unbounded; these run the seeds and their mutations in every test
//! run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use ebpkg_signing::{SignedAttestation, SignedBundle, SigningKey, TrustPolicy};
use proptest::prelude::*;

const BUNDLE_SEED: &str = include_str!("../../fuzz/seeds/bundle/key-signed.json");
const POLICY_SEED: &str = include_str!("../../fuzz/seeds/policy/full.toml");
const ATTESTATION_SEED: &str = include_str!("../../fuzz/seeds/attestation/kernel-verification.json");

fn key() -> &'static SigningKey {
    static KEY: OnceLock<SigningKey> = OnceLock::new();
    KEY.get_or_init(|| SigningKey::generate().unwrap())
}

fn check_bundle(bytes: &[u8]) {
    if let Ok(bundle) = SignedBundle::parse(bytes) {
        assert_eq!(bundle.json().as_bytes(), bytes, "kept byte for byte");
        assert!(bundle.verify(key().public(), bytes).is_err(), "nothing signed by this run's key");
    }
}

/// An attestation as a registry serves it, and the file it comes in.
fn check_attestation(bytes: &[u8]) {
    if let Ok(file) = ebpkg_spec::attestation::AttestationFile::parse(bytes) {
        assert_eq!(ebpkg_spec::attestation::AttestationFile::parse(&file.to_bytes()).ok(), Some(file));
    }
    if let Ok(a) = SignedAttestation::parse(bytes) {
        assert_eq!(a.json().as_bytes(), bytes, "kept byte for byte");
        assert!(a.verify(key().public()).is_err(), "nothing signed by this run's key");
        let name = ebpkg_spec::PackageName::new("meter").unwrap();
        let digest = ebpkg_spec::types::Sha256Digest([9; 32]);
        assert!(a.kernel_verification(&name, &semver::Version::new(1, 0, 0), &digest).is_err(), "not this archive");
    }
}

fn check_policy(text: &str) {
    if let Ok(policy) = TrustPolicy::parse(text) {
        let written = policy.to_toml_string();
        assert_eq!(TrustPolicy::parse(&written).ok(), Some(policy), "round trip via {written:?}");
    }
}

#[test]
fn the_seeds_parse() {
    SignedBundle::parse(BUNDLE_SEED.as_bytes()).unwrap();
    let policy = TrustPolicy::parse(POLICY_SEED).unwrap();
    assert_eq!(policy.keys().len(), 2);
    assert_eq!(policy.unattested(), ebpkg_signing::Unattested::Refuse);
    let seed = SignedAttestation::parse(ATTESTATION_SEED.as_bytes()).unwrap();
    let name = ebpkg_spec::PackageName::new("meter").unwrap();
    let archive = seed.statement().subject[0].sha256_digest().unwrap();
    let stated = seed.kernel_verification(&name, &semver::Version::new(1, 0, 0), &archive).unwrap();
    assert!(!stated.kernels[0].items.is_empty());
    check_policy(POLICY_SEED);
}

#[test]
fn oversized_bundles_are_refused_before_parsing() {
    let huge = format!("{}{}", BUNDLE_SEED.trim_end(), " ".repeat(ebpkg_signing::MAX_BUNDLE_BYTES));
    assert!(SignedBundle::parse(huge.as_bytes()).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn mutated_bundles_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = BUNDLE_SEED.as_bytes().to_vec();
        for (at, b) in flips {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        check_bundle(&bytes);
        check_bundle(&bytes[..cut.index(bytes.len() + 1)]);
    }

    #[test]
    fn mutated_attestations_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = ATTESTATION_SEED.as_bytes().to_vec();
        for (at, b) in flips {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        check_attestation(&bytes);
        check_attestation(&bytes[..cut.index(bytes.len() + 1)]);
        let file = format!("{{\"attestations\":[{}]}}", String::from_utf8_lossy(&bytes));
        check_attestation(file.as_bytes());
    }

    #[test]
    fn arbitrary_bytes_are_not_bundles(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        check_bundle(&bytes);
    }

    #[test]
    fn mutated_policies_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), proptest::char::any()), 0..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut chars: Vec<char> = POLICY_SEED.chars().collect();
        for (at, c) in flips {
            let i = at.index(chars.len());
            chars[i] = c;
        }
        let text: String = chars.iter().collect();
        check_policy(&text);
        let cut_at = cut.index(chars.len() + 1);
        check_policy(&chars[..cut_at].iter().collect::<String>());
    }

    #[test]
    fn policies_from_pieces_round_trip(
        globs in proptest::collection::vec("[a-z*_-]{1,12}", 0..4),
        unsigned in proptest::collection::vec("[a-z*_-]{1,12}", 0..3),
    ) {
        let seed_key = "9fQHuW1mZ9mGmvBvOxgY0Zp8Yt2iS3l4t1dQ9b0hJ6g=";
        let mut text = String::from("[keys]\n");
        for g in &globs {
            text.push_str(&format!("{g:?} = [{seed_key:?}]\n"));
        }
        text.push_str("[unsigned]\nallow = [");
        text.push_str(&unsigned.iter().map(|u| format!("{u:?}")).collect::<Vec<_>>().join(", "));
        text.push_str("]\n");
        check_policy(&text);
    }
}
