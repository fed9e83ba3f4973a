//! Any bytes given to the object reader (its ELF symbols and its BTF) give the
//! object's items or an error, never a panic; items read are the ones read again.
#![no_main]

use ebpkg_spec::object_items::ObjectItems;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(items) = ObjectItems::read(data) {
        assert_eq!(ObjectItems::read(data).ok(), Some(items));
    }
});
