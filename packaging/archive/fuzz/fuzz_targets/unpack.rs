//! Any bytes given to `unpack` (with their own digest, so they get past the digest
//! check) give an unpacked package or an error, never a panic; after an error nothing
//! is left beside the destination.
#![no_main]

use ebpkg_archive::{Limits, unpack};
use ebpkg_spec::PackageName;
use ebpkg_spec::types::Sha256Digest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(tmp) = tempfile::tempdir() else { return };
    let dest = tmp.path().join("pkg");
    let Ok(name) = PackageName::new("demo") else { return };
    let version = semver::Version::new(1, 0, 0);
    // Small limits keep each run fast; the checks are the same at any size.
    let limits = Limits { max_total_bytes: 4 << 20, max_file_bytes: 1 << 20, max_entries: 256, ..Limits::default() };
    match unpack(data, &Sha256Digest::of(data), &name, &version, &dest, &limits) {
        Ok(unpacked) => assert_eq!(unpacked.root, dest),
        Err(_) => {
            let left = std::fs::read_dir(tmp.path()).map(|entries| entries.count()).unwrap_or(0);
            assert_eq!(left, 0, "a refused archive left files behind");
        }
    }
});
