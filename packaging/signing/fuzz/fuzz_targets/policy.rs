//! Any text given as a trust policy is refused or parsed, never a panic; a
//! parsed policy written back reads as the same policy.
#![no_main]

use ebpkg_signing::TrustPolicy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(policy) = TrustPolicy::parse(text) else { return };
    let written = policy.to_toml_string();
    let again = TrustPolicy::parse(&written);
    assert_eq!(again.ok().as_ref(), Some(&policy), "round trip of {text:?} via {written:?}");
    let _ = policy.decide("any-package", None);
});
