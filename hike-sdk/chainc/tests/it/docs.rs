//! Every example of docs/CHAINS.md compiles, without a warning — except where
//! the example shows one: a line whose comment ends with `(W004)` must get that
//! warning, and no other line any.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

const DOC: &str = include_str!("../../../docs/CHAINS.md");

#[test]
fn every_example_in_chains_md_compiles_cleanly() {
    let mut count = 0;
    let mut rest = DOC;
    while let Some(start) = rest.find("```eclat\n") {
        let body = &rest[start + "```eclat\n".len()..];
        let end = body.find("```\n").expect("unterminated example");
        let example = &body[..end];
        match hike_chainc::compile(example, "CHAINS.md", &common::test_env()) {
            Ok(c) => {
                let got: Vec<(usize, &str)> = c.warnings.items.iter().map(|d| (d.line, d.code.id())).collect();
                let shown: Vec<(usize, &str)> = example
                    .lines()
                    .enumerate()
                    .filter_map(|(i, l)| {
                        let code = l.trim_end().strip_suffix(')')?.rsplit_once('(')?.1;
                        code.starts_with('W').then_some((i + 1, code))
                    })
                    .collect();
                assert_eq!(got, shown, "{}\n{example}", c.warnings.render());
            }
            Err(d) => panic!("{}\n{example}", d.render()),
        }
        count += 1;
        rest = &body[end..];
    }
    assert!(count >= 7, "CHAINS.md has {count} examples");
}
