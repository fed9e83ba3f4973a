//! Any bytes given as a package's index file give usable entries and problems,
//! never a panic: the entries are all about that package, no version twice, and a
//! writer's strict reading succeeds exactly when nothing was skipped.
#![no_main]

use ebpkg_spec::index::parse_index_file;
use ebpkg_spec::names::normalize;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = parse_index_file("net-tools", data);
    let mut versions: Vec<_> = parsed.entries.iter().map(|e| e.vers.clone()).collect();
    assert!(parsed.entries.iter().all(|e| normalize(e.name.as_str()) == normalize("net-tools")));
    versions.sort();
    let n = versions.len();
    versions.dedup();
    assert_eq!(versions.len(), n, "a version listed twice was kept");
    let clean = parsed.problems.is_empty();
    assert_eq!(parsed.strict().is_ok(), clean);
});
