//! Deeply nested input is refused with a diagnostic (E006), never a stack
//! overflow: every recursion of the compiler (parser, constant folding, code
//! generation, cost analysis) follows trees whose depth the parser bounds.
//!
//! Each script is compiled on a thread with 2 MiB of stack — what a spawned
//! thread gets by default, a quarter of `ebpkg`'s main thread — so an unbounded
//! recursion aborts the test binary instead of passing by luck. The deepest
//! accepted shapes are compiled too, to show that the bounds leave room.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use hike_chainc::{Compiled, Diagnostics, compile};

const STACK: usize = 2 << 20;
const NET: &str = "from prog.net import monitor\nfrom loaders.basic import ip6_sc\n";
/// The parser's limit (`hike_chainc::parser::MAX_NESTING`).
const LIMIT: usize = hike_chainc::parser::MAX_NESTING as usize;

fn compile_small_stack(script: String) -> Result<Compiled, Diagnostics> {
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || compile(&script, "deep.eclat", &common::test_env()))
        .unwrap()
        .join()
        .expect("the compiler panicked")
}

/// The script is refused with exactly one E006, on `line`.
fn refused_too_deep(script: String, line: usize) -> Diagnostics {
    let err = compile_small_stack(script).expect_err("deep input compiled");
    let codes: Vec<(&str, usize)> = err.items.iter().map(|d| (d.code.id(), d.line)).collect();
    assert_eq!(codes, [("E006", line)], "{}", err.render());
    err
}

#[test]
fn nested_parentheses_are_refused_like_python_does() {
    // 5,000 pairs: 10 KB of brackets.
    let n = 5_000;
    let err = refused_too_deep(format!("{NET}def f():\n    monitor({}1{})\n", "(".repeat(n), ")".repeat(n)), 4);
    let d = &err.items[0];
    assert!(d.message.contains("nests too deeply"), "{}", d.message);
    // Reported at the bracket one level too deep: `monitor(` is the first level.
    assert_eq!(d.column, 5 + "monitor(".len() + LIMIT - 1);
    assert_eq!(d.span.len(), 1, "a one-character span");
}

#[test]
fn nested_dictionaries_in_a_loader_map_are_refused() {
    let n = 5_000;
    refused_too_deep(
        format!("{NET}ip6_sc[ip6_sc_map] = {}{}\ndef f():\n    monitor(1)\n", "{1: ".repeat(n), "}".repeat(n)),
        3,
    );
}

#[test]
fn long_runs_of_unary_operators_are_refused() {
    for op in ["not ", "-", "~", "+", "- "] {
        let script = format!("{NET}def f():\n    x = monitor(1)\n    monitor({}x)\n", op.repeat(100_000));
        refused_too_deep(script, 5);
    }
}

#[test]
fn long_operator_chains_are_refused_too() {
    // `a + a + …` is a tree as deep as it is long, and each later pass recurses
    // over it: the chain counts like nesting.
    for op in ["+", "|", "and", "or", "<", "**", "*"] {
        let script =
            format!("{NET}def f():\n    x = monitor(1)\n    monitor(x{})\n", format!(" {op} x").repeat(100_000));
        refused_too_deep(script, 5);
    }
    // Calls, attributes and subscripts chain the same way.
    refused_too_deep(format!("{NET}def f():\n    monitor(1){}\n", "()".repeat(100_000)), 4);
    refused_too_deep(format!("{NET}def f():\n    packet{}\n", ".a".repeat(100_000)), 4);
    refused_too_deep(format!("{NET}ip6_sc[ip6_sc_map]{} = {{}}\ndef f():\n    monitor(1)\n", "[0]".repeat(100_000)), 3);
    // A constant folded from a long chain, at the top level.
    refused_too_deep(format!("{NET}N = 1{}\ndef f():\n    monitor(N)\n", " + 1".repeat(100_000)), 3);
}

#[test]
fn deeply_indented_blocks_are_refused() {
    // 5,000 levels, one space each.
    let n = 5_000;
    let mut script = format!("{NET}def f():\n    x = monitor(1)\n");
    for i in 0..n {
        script += &format!("    {}if x:\n", " ".repeat(i));
    }
    script += &format!("    {}monitor(x)\n", " ".repeat(n));
    let err = compile_small_stack(script).expect_err("deep input compiled");
    let d = err.items.iter().find(|d| d.code.id() == "E006").expect("E006");
    assert!(d.message.contains("too many levels of indentation"), "{}", d.message);
    assert_eq!(err.items.iter().filter(|d| d.code.id() == "E006").count(), 1, "{}", err.render());
}

#[test]
fn the_deepest_accepted_shapes_compile_on_a_small_stack() {
    let n = LIMIT;
    // Brackets: `monitor(` is one level, the parentheses the rest.
    let parens =
        format!("{NET}def f():\n    x = monitor(1)\n    monitor({}x{})\n", "(".repeat(n - 2), ")".repeat(n - 2));
    // Operator chains, unary runs, and constants folded from them.
    let sum = format!("{NET}def f():\n    x = monitor(1)\n    monitor(x{})\n", " + x".repeat(n - 2));
    let nots = format!("{NET}def f():\n    x = monitor(1)\n    monitor({}x)\n", "not ".repeat(n - 2));
    let negs = format!("{NET}def f():\n    x = monitor(1)\n    monitor({}x)\n", "-".repeat(n - 2));
    let folded = format!("{NET}N = 1{}\ndef f():\n    monitor(N)\n", " + 1".repeat(n - 1));
    let dicts = format!(
        "{NET}ip6_sc[ip6_sc_map] = {{ (0): (f) }}\nX = {}\ndef f():\n    monitor(1)\n",
        "(".repeat(n - 1) + "1" + &")".repeat(n - 1)
    );
    // The deepest blocks, with the deepest expression inside (the variables
    // keep the expression in registers; only its depth matters here).
    let levels = hike_chainc::lexer::MAX_INDENT_LEVELS;
    let mut blocks = format!("{NET}def f():\n    x = monitor(1)\n");
    for k in 1..levels {
        blocks += &format!("{}if x:\n", " ".repeat(4 + k - 1));
    }
    blocks += &format!("{}monitor({}x)\n", " ".repeat(4 + levels - 1), "-".repeat(n - 2));
    for script in [parens, sum, nots, negs, folded, dicts, blocks] {
        let compiled = compile_small_stack(script.clone());
        assert!(compiled.is_ok(), "{}", compiled.unwrap_err().render());
    }
}

#[test]
fn deep_chain_call_graphs_do_not_recurse() {
    // 20,000 chains, each calling the next: too deep for the VM (E306), and for
    // a recursive walk of the call graph.
    let n = 20_000;
    let mut script = format!("{NET}def f0():\n    monitor(0)\n");
    for i in 1..n {
        script += &format!("def f{i}():\n    f{}()\n", i - 1);
    }
    let err = compile_small_stack(script).expect_err("compiled");
    assert!(err.items.iter().any(|d| d.code.id() == "E306"), "{}", err.render());
    // A cycle through all of them is found without recursion too.
    let mut script = format!("{NET}def f0():\n    f{}()\n", n - 1);
    for i in 1..n {
        script += &format!("def f{i}():\n    f{}()\n", i - 1);
    }
    let err = compile_small_stack(script).expect_err("compiled");
    assert_eq!(err.items.iter().map(|d| d.code.id()).collect::<Vec<_>>(), ["E208"], "{}", err.render());
}
