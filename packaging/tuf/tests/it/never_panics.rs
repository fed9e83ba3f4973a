//! The kept TUF view (`verified.bin`) is read from disk as untrusted bytes: any
//! body reads as a view or as none, never a panic. The fuzz target in `fuzz/`
//! runs the same property unbounded; this runs mutations of a valid body in every
//! test run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ebpkg_tuf::verified::fuzzing::{decode_body, sample_body};
use proptest::prelude::*;

#[test]
fn the_sample_reads() {
    assert!(decode_body(&sample_body()));
    assert!(!decode_body(&sample_body()[1..]));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn mutated_views_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = sample_body();
        for (at, b) in flips {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        decode_body(&bytes);
        decode_body(&bytes[..cut.index(bytes.len() + 1)]);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_body(&bytes);
    }
}
