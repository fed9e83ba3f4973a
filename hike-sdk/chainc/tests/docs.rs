//! Every example of docs/CHAINS.md compiles, without a warning.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

const DOC: &str = include_str!("../../docs/CHAINS.md");

#[test]
fn every_example_in_chains_md_compiles_cleanly() {
    let mut count = 0;
    let mut rest = DOC;
    while let Some(start) = rest.find("```eclat\n") {
        let body = &rest[start + "```eclat\n".len()..];
        let end = body.find("```\n").expect("unterminated example");
        let example = &body[..end];
        match hike_chainc::compile(example, "CHAINS.md", &common::test_env()) {
            Ok(c) => assert!(c.warnings.items.is_empty(), "{}\n{example}", c.warnings.render()),
            Err(d) => panic!("{}\n{example}", d.render()),
        }
        count += 1;
        rest = &body[end..];
    }
    assert!(count >= 7, "CHAINS.md has {count} examples");
}
