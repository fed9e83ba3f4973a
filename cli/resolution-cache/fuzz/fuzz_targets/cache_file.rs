//! Any bytes as a resolution cache file read as a miss or as records that stay
//! within the file, never a panic: every record's lines, when read, are inside its text, every
//! version names one of its dependency lists, and decoding each list and reading
//! the entry of each version fails or succeeds without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for index in ebpkg_resolution_cache::read_records(data.to_vec()) {
        for candidate in index.candidates() {
            let _ = index.entry(&candidate.version);
        }
    }
});
