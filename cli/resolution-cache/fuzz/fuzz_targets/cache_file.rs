//! Any bytes as a resolution cache file read as a miss or as records that stay
//! within the file, never a panic: every record's lines, when read, are inside its text, every
//! version names one of its dependency lists, and decoding each list and reading
//! the entry of each version fails or succeeds without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // With the checksums made to hold: damaged contents must reach the decoding.
    let mut bytes = data.to_vec();
    ebpkg_resolution_cache::reseal(&mut bytes);
    for index in ebpkg_resolution_cache::read_records(bytes) {
        for candidate in index.candidates() {
            let _ = index.entry(&candidate.version);
        }
    }
});
