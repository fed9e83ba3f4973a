//! Any bytes as the body of a kept TUF view (`verified.bin`, past its checksum)
//! read as a view or as none, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ebpkg_tuf::verified::fuzzing::decode_body(data);
});
