//! Every example in SPEC.md is valid: a newcomer can copy any of them.
//!
//! Fenced blocks whose first line is `# ebpkg.toml` are parsed as manifests,
//! `# ebpkg.lock` as lockfiles, and ```jsonl blocks as index files.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly on purpose

use ebpkg_spec::{IndexEntry, Lockfile, Manifest};

const SPEC: &str = include_str!("../../SPEC.md");

fn blocks(lang: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = SPEC;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```\n").expect("unterminated code block in SPEC.md");
        out.push(body[..end].to_owned());
        rest = &body[end..];
    }
    out
}

#[test]
fn manifest_and_lockfile_examples_parse() {
    let (mut manifests, mut locks) = (0, 0);
    for block in blocks("toml") {
        if block.starts_with("# ebpkg.toml") {
            Manifest::parse(&block, "SPEC.md example").unwrap_or_else(|e| panic!("{e}\n{block}"));
            manifests += 1;
        } else if block.starts_with("# ebpkg.lock") {
            let lock = Lockfile::parse(&block, "SPEC.md example").unwrap_or_else(|e| panic!("{e}\n{block}"));
            // Examples are shown in canonical form, apart from the comment line.
            let canonical = lock.to_toml_string();
            assert_eq!(block.lines().skip(1).collect::<Vec<_>>(), canonical.lines().skip(1).collect::<Vec<_>>());
            locks += 1;
        }
    }
    assert!(manifests >= 3, "SPEC.md shows at least three manifests, found {manifests}");
    assert!(locks >= 1, "SPEC.md shows a lockfile");
}

#[test]
fn index_examples_parse() {
    let mut lines = 0;
    for block in blocks("jsonl") {
        for line in block.lines() {
            let entry = IndexEntry::parse_line(line).unwrap_or_else(|e| panic!("{e}\n{line}")).expect("schema v1");
            assert_eq!(entry.to_line(), line, "examples are shown as ebpkg writes them");
            lines += 1;
        }
    }
    assert!(lines >= 2, "SPEC.md shows index lines, found {lines}");
}

/// The index lines of §6.2 are what `IndexEntry::from_manifest` makes of the
/// manifests of §4.10, so the example shows every field a registry writes.
#[test]
fn index_examples_are_the_manifest_examples() {
    let manifests: Vec<Manifest> = blocks("toml")
        .iter()
        .filter(|b| b.starts_with("# ebpkg.toml"))
        .map(|b| Manifest::parse(b, "SPEC.md example").unwrap())
        .collect();
    let lines: Vec<String> =
        blocks("jsonl").iter().flat_map(|b| b.lines().map(str::to_owned).collect::<Vec<_>>()).collect();
    for line in &lines {
        let entry = IndexEntry::parse_line(line).unwrap().unwrap();
        let manifest = manifests
            .iter()
            .find(|m| m.package.name == entry.name && m.package.version == entry.vers)
            .unwrap_or_else(|| panic!("no manifest example for the index line of {}", entry.name));
        let mut expected = IndexEntry::from_manifest(manifest, entry.cksum);
        expected.yanked = entry.yanked;
        assert_eq!(entry.to_line(), expected.to_line());
    }
}

/// §4.7 lists the VM's maps an object may hold undeclared: the ones of the one
/// table (`hike_bytecode::vm_maps`) that the SDK's headers define.
#[test]
fn the_vm_maps_the_spec_lists_are_the_tables() {
    let start = SPEC.find("HIKe VM's maps aside (").expect("§4.7 lists the VM's maps") + "HIKe VM's maps aside (".len();
    let len = SPEC[start..].find(':').expect("the list ends");
    let listed: Vec<String> =
        SPEC[start..start + len].split(',').map(|n| n.trim().trim_matches('`').to_owned()).collect();
    let table: Vec<String> = hike_bytecode::vm_maps::in_headers().map(str::to_owned).collect();
    assert_eq!(listed, table);
}
