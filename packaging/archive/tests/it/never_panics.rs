#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Whatever bytes `unpack` is given, it returns a result (never panics) and, when it
//! refuses them, leaves nothing behind.

use crate::common;

use std::sync::OnceLock;

use common::*;
use ebpkg_archive::{Limits, pack};
use proptest::prelude::*;
use tempfile::TempDir;

/// The uncompressed tar stream of a valid package, to mutate.
fn valid_tar() -> &'static [u8] {
    static TAR: OnceLock<Vec<u8>> = OnceLock::new();
    TAR.get_or_init(|| {
        let src = TempDir::new().unwrap();
        demo_package(src.path());
        gunzip(&pack(src.path()).unwrap().bytes)
    })
}

/// Small limits, so that mutated sizes reach them quickly.
fn limits() -> Limits {
    Limits { max_total_bytes: 1 << 20, max_file_bytes: 256 << 10, max_entries: 64, ..Limits::default() }
}

fn check(bytes: &[u8]) {
    let site = Site::new();
    match site.unpack(bytes, "demo", "1.0.0", &limits()) {
        Ok(unpacked) => {
            assert_eq!(unpacked.root, site.dest);
            assert!(site.dest.join("ebpkg.toml").is_file());
        }
        Err(_) => site.assert_clean(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        check(&bytes);
    }

    #[test]
    fn random_bytes_after_a_gzip_header(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let mut data = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
        data.extend(bytes);
        check(&data);
    }

    /// Valid archives with a few bytes of the tar stream changed, then gzipped: this
    /// gets past gunzip and exercises the tar and path checks.
    #[test]
    fn mutated_tar_streams(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let mut tar = valid_tar().to_vec();
        for (at, byte) in edits {
            let i = at.index(tar.len());
            tar[i] = byte;
        }
        if let Some(cut) = cut {
            tar.truncate(cut.index(tar.len()));
        }
        check(&gzip(&tar));
    }

    /// Valid archives with compressed bytes changed.
    #[test]
    fn mutated_gzip_streams(edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let src = valid_tar();
        let mut bytes = gzip(src);
        for (at, byte) in edits {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        check(&bytes);
    }
}
