//! Any bytes given as an attestation bundle, or as a registry's attestation file,
//! are refused or parsed, never a panic; nothing the fuzzer writes verifies with
//! this run's key, and a statement read from it is judged against a version
//! (its predicate type, subjects and predicate) without panicking.
#![no_main]

use std::sync::OnceLock;

use ebpkg_signing::{SignedAttestation, SigningKey};
use libfuzzer_sys::fuzz_target;

fn key() -> Option<&'static SigningKey> {
    static KEY: OnceLock<Option<SigningKey>> = OnceLock::new();
    KEY.get_or_init(|| SigningKey::generate().ok()).as_ref()
}

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = ebpkg_spec::attestation::AttestationFile::parse(data) {
        let _ = file.to_bytes();
    }
    let Ok(attestation) = SignedAttestation::parse(data) else { return };
    if let Some(key) = key() {
        assert!(attestation.verify(key.public()).is_err());
    }
    let (Ok(name), version) = (ebpkg_spec::PackageName::new("meter"), semver::Version::new(1, 0, 0)) else { return };
    let _ = attestation.kernel_verification(&name, &version, &ebpkg_spec::types::Sha256Digest([0; 32]));
    assert_eq!(attestation.json().as_bytes(), data, "the bundle is kept byte for byte");
});
