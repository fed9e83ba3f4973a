//! Any bytes given to the registry's publish-body parser give the metadata and
//! the archive or a framing error, never a panic; whatever decodes encodes back
//! to the same bytes' meaning, and an archive over the limit is always refused.
#![no_main]

use ebpkg_spec::registry_api::{FramingError, decode_publish, encode_publish};
use libfuzzer_sys::fuzz_target;

const LIMIT: u64 = 4096;

fuzz_target!(|data: &[u8]| {
    match decode_publish(data, LIMIT) {
        Ok((metadata, archive)) => {
            assert!(archive.len() as u64 <= LIMIT);
            let again = encode_publish(&metadata, archive);
            let (m2, a2) = decode_publish(&again, LIMIT).expect("an encoded body decodes");
            assert_eq!((m2, a2), (metadata, archive));
        }
        Err(FramingError::TooLarge { len, max, .. }) => assert!(len > max),
        Err(_) => {}
    }
});
