//! Any bytes given as a package's index file give usable entries and problems,
//! never a panic: the entries are all about that package, no version twice, and a
//! writer's strict reading succeeds exactly when nothing was skipped. Resolution's
//! partial reading agrees: a version it keeps either fails in full when chosen or
//! is exactly an entry of the full reading, and a file the full reading takes
//! whole, it takes whole too.
#![no_main]

use ebpkg_spec::index::{IndexEntry, parse_index_file, parse_versions};
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

    let mut problems = Vec::new();
    let light = parse_versions("net-tools", data, &mut problems);
    for l in &light {
        if let Ok(entry) = IndexEntry::parse_chosen(l.line, l.line_no, &l.vers) {
            assert!(parsed.entries.contains(&entry), "{} read in part but not in full", l.vers);
            assert_eq!(entry.yanked, l.yanked);
            assert_eq!(l.deps().ok(), Some(entry.deps));
        }
    }
    if parsed.problems.is_empty() {
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(light.len(), parsed.entries.len());
    }

    let clean = parsed.problems.is_empty();
    assert_eq!(parsed.strict().is_ok(), clean);
});
