//! Any line given to the index parser gives an entry, a skip or an error, never a
//! panic; an entry writes a line that parses back to it.
#![no_main]

use ebpkg_spec::IndexEntry;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &str| {
    if let Ok(Some(entry)) = IndexEntry::parse_line(data) {
        let line = entry.to_line();
        assert_eq!(IndexEntry::parse_line(&line).ok().flatten().as_ref(), Some(&entry));
    }
});
