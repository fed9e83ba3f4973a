//! Every example in SPEC.md is valid: a newcomer can copy any of them.
//!
//! Fenced blocks whose first line is `# ebpkg.toml` are parsed as manifests,
//! `# ebpkg.lock` as lockfiles, and ```jsonl blocks as index files.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly on purpose

use ebpkg_spec::{IndexEntry, Lockfile, Manifest};

const SPEC: &str = include_str!("../SPEC.md");

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
