//! Any bytes given as a Sigstore bundle are refused or parsed, never a panic;
//! a parsed bundle verifies against a key and bytes or says why not, and only
//! the real signer's signature over the signed bytes could ever verify.
#![no_main]

use std::sync::OnceLock;

use ebpkg_signing::{SignedBundle, SigningKey};
use libfuzzer_sys::fuzz_target;

fn key() -> Option<&'static SigningKey> {
    static KEY: OnceLock<Option<SigningKey>> = OnceLock::new();
    KEY.get_or_init(|| SigningKey::generate().ok()).as_ref()
}

fuzz_target!(|data: &[u8]| {
    let Ok(bundle) = SignedBundle::parse(data) else { return };
    let Some(key) = key() else { return };
    // The fuzzer does not hold this run's private key: nothing it writes verifies.
    assert!(bundle.verify(key.public(), data).is_err());
    let _ = bundle.key_hint();
    assert_eq!(bundle.json().as_bytes(), data, "the bundle is kept byte for byte");
});
