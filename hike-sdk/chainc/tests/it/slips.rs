//! Common slips get one diagnostic each, on the one line (and the words) where
//! they are, with what to write instead: misspelled keywords, `=` for `==`,
//! `else if`, docstrings, `elif` after `else`, tabs after spaces, words the
//! language reserves (SPEC.md §2.3), control characters, bytes that are not
//! UTF-8.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use hike_chainc::{Diagnostic, Diagnostics, compile, compile_bytes};

const NET: &str = "from prog.net import monitor\n";

fn errors(script: &str) -> Diagnostics {
    compile(script, "slip.eclat", &common::test_env()).expect_err("compiled")
}

/// The only diagnostic of `script`: its code, line, column, the text its span
/// covers (on one line), and its help.
fn only(script: &str) -> (Diagnostic, String) {
    let d = errors(script);
    assert_eq!(d.items.len(), 1, "{}", d.render());
    let item = d.items[0].clone();
    let covered = script.get(item.span.clone()).unwrap_or("").to_owned();
    assert!(!covered.contains('\n'), "a span over more than one line: {covered:?}");
    (item, covered)
}

fn check(script: &str, code: &str, line: usize, covered: &str, help: &str) {
    let (d, text) = only(script);
    assert_eq!((d.code.id(), d.line, text.as_str()), (code, line, covered), "{}", errors(script).render());
    let h = d.help.clone().unwrap_or_default();
    assert!(h.contains(help), "help {h:?} lacks {help:?}");
}

#[test]
fn misspelled_keywords_are_named_with_the_keyword_meant() {
    let f = |body: &str| format!("{NET}def f():\n    x = monitor(1)\n{body}");
    check(&f("    whlie x:\n        x -= 1\n"), "E005", 4, "whlie", "did you mean `while`?");
    check(&f("    retrun x\n"), "E005", 4, "retrun", "did you mean `return`?");
    check(&f("    retrun\n"), "E005", 4, "retrun", "did you mean `return`?");
    check(
        &f("    if x:\n        pass\n    esle:\n        x = 2\n    monitor(x)\n"),
        "E005",
        6,
        "esle",
        "did you mean `else`?",
    );
    check(&f("    fro i in range(3):\n        pass\n"), "E005", 4, "fro", "did you mean `for`?");
    check(&f("    for i in range(3):\n        contineu\n"), "E005", 5, "contineu", "did you mean `continue`?");
    check("form prog.net import monitor\ndef f():\n    monitor(1)\n", "E005", 1, "form", "`from`");
    // A name that merely looks like a keyword, used properly, is a name.
    let ok = format!("{NET}def f():\n    form = monitor(1)\n    iff = form + 1\n    return iff\n");
    assert!(compile(&ok, "ok.eclat", &common::test_env()).is_ok());
    // Called like a program, it is an unknown name, with the keyword suggested.
    let (d, text) = only(&f("    retrun(x)\n"));
    assert_eq!((d.code.id(), text.as_str()), ("E101", "retrun"));
    assert!(d.help.unwrap_or_default().contains("did you mean the keyword `return`?"));
}

#[test]
fn assignment_in_a_condition_suggests_a_comparison() {
    let f = |body: &str| format!("{NET}def f():\n    x = monitor(1)\n{body}    monitor(x)\n");
    check(&f("    if x = 1:\n        x = 2\n"), "E005", 4, "=", "did you mean `==`?");
    check(&f("    while x = 1:\n        x = 2\n"), "E005", 4, "=", "did you mean `==`?");
    check(&f("    if x == 2:\n        x = 3\n    elif x = 1:\n        x = 2\n"), "E005", 6, "=", "did you mean `==`?");
}

#[test]
fn else_if_is_elif() {
    let s = format!(
        "{NET}def f():\n    x = monitor(1)\n    if x:\n        x = 2\n    else if x == 3:\n        x = 4\n    monitor(x)\n"
    );
    check(&s, "E005", 6, "else if", "write `elif <condition>:`");
}

#[test]
fn elif_after_else_and_else_without_if() {
    let s = format!(
        "{NET}def f():\n    x = monitor(1)\n    if x:\n        x = 2\n    else:\n        x = 3\n    elif x == 4:\n        x = 5\n    monitor(x)\n"
    );
    check(&s, "E005", 8, "elif", "move this `elif` branch above the `else`");
    let (d, _) = only(&s);
    assert_eq!(d.notes.len(), 1, "points at the `else`");
    assert_eq!(&s[d.notes[0].0.clone()], "else");
    let s = format!("{NET}def f():\n    x = monitor(1)\n    else:\n        x = 3\n    monitor(x)\n");
    check(&s, "E005", 4, "else", "line it up with its `if`");
    // A nested `if … else` does not make the outer `elif` come "after `else`".
    let s = format!(
        "{NET}def f():\n    x = monitor(1)\n    while x:\n        if x:\n            x = 2\n        else:\n            x = 3\n    elif x:\n        x = 4\n"
    );
    let (d, _) = only(&s);
    assert!(d.message.contains("without an `if`"), "{}", d.message);
}

#[test]
fn docstrings_are_pointed_at_once() {
    let s = format!("{NET}def f():\n    \"\"\"What f does,\n    over two lines.\"\"\"\n    monitor(1)\n");
    check(&s, "E003", 3, "\"\"\"", "write comments with `#`");
    let s = format!("{NET}'''A module docstring.'''\ndef f():\n    monitor(1)\n");
    check(&s, "E003", 2, "'''", "write comments with `#`");
}

#[test]
fn a_tab_after_spaces_is_inconsistent_indentation() {
    // Eight spaces and one tab are the same width only when a tab is 8 wide.
    let s = format!("{NET}def f():\n    x = monitor(1)\n    if x:\n        x = 2\n\tmonitor(x)\n");
    check(&s, "E004", 6, "\t", "spaces only");
    let s = format!("{NET}def f():\n    x = monitor(1)\n    if x:\n\tx = 2\n    monitor(x)\n");
    check(&s, "E004", 5, "\t", "spaces only");
    // Tabs throughout are consistent.
    let s = format!("{NET}def f():\n\tx = monitor(1)\n\tif x:\n\t\tx = 2\n\tmonitor(x)\n");
    assert!(compile(&s, "tabs.eclat", &common::test_env()).is_ok());
}

#[test]
fn reserved_words_say_what_to_write() {
    let f = |body: &str| format!("{NET}def f():\n    x = monitor(1)\n{body}");
    check(&f("    x = true\n"), "E007", 4, "true", "write `True`");
    check(&f("    x = none\n"), "E007", 4, "none", "write `None`");
    check(&f("    if x == false:\n        x = 1\n"), "E007", 4, "false", "write `False`");
    check(&f("    class X:\n        pass\n"), "E007", 4, "class", "define them with `def`");
    check(&f("    lambda = 1\n"), "E007", 4, "lambda", "`def`");
    check(&f("    if x is 1:\n        pass\n"), "E007", 4, "is", "`==`");
    check(&format!("{NET}def none():\n    monitor(1)\n"), "E007", 2, "none", "write `None`");
}

/// Every word SPEC.md §2.3 lists is refused as a name by the compiler, so that
/// the two agree: what a package may not be called is what a script may not
/// call anything.
#[test]
fn the_spec_s_keywords_are_the_compiler_s() {
    let spec = include_str!("../../../../manifest-spec/SPEC.md");
    let section = spec.split("### 2.3 Chain-language keywords").nth(1).expect("§2.3");
    let list = section.split('`').nth(1).expect("a `…` list of words");
    let words: Vec<&str> = list.split_whitespace().collect();
    assert!(words.len() >= 36, "{words:?}");
    for w in words {
        for script in [
            format!("{NET}def f():\n    {w} = monitor(1)\n    return {w}\n"),
            format!("{NET}def {w}():\n    monitor(1)\n"),
        ] {
            let d = compile(&script, "kw.eclat", &common::test_env());
            let Err(d) = d else { panic!("`{w}` is accepted as a name:\n{script}") };
            assert!(d.errors().any(|e| ["E005", "E007", "E106"].contains(&e.code.id())), "{w}: {}", d.render());
        }
    }
}

#[test]
fn control_characters_never_reach_the_terminal_raw() {
    // A NUL byte in code and in a string, an escape sequence in a string.
    let s = format!("{NET}def f():\n    x = monitor(1)\0\n    monitor(x)\n");
    let d = errors(&s);
    assert_eq!(d.items[0].message, "unexpected control character U+0000 (`\\0`)");
    let s = format!(
        "{NET}from loaders.basic import ip6_sc\nip6_sc.attach(\"\x1b[31meth0\", 'xdp')\ndef f():\n    monitor(\"\0\")\n"
    );
    let d = errors(&s);
    let shown = format!("{}\n{d}", d.render());
    assert!(!shown.contains('\0') && !shown.contains('\x1b'), "{shown:?}");
    assert!(shown.contains("U+001B"), "{shown}");
}

#[test]
fn bytes_that_are_not_utf8_are_placed() {
    let mut bytes = format!("{NET}def f():\n    x = monitor(1) # caf").into_bytes();
    bytes.extend([0xe9, b'\n']);
    bytes.extend(b"    return x\n");
    let d = compile_bytes(&bytes, "latin1.eclat", &common::test_env()).expect_err("compiled");
    assert_eq!(d.items.len(), 1, "{}", d.render());
    let e = &d.items[0];
    assert_eq!((e.code.id(), e.line, e.column), ("E001", 3, 25), "{}", d.render());
    assert!(e.message.contains("0xe9") && e.message.contains(&format!("offset {}", NET.len() + 33)), "{}", e.message);
    assert!(d.render().contains("latin1.eclat:3:25"), "{}", d.render());
    // UTF-8 passes through.
    assert!(
        compile_bytes(format!("{NET}def f():\n    monitor(1) # café\n").as_bytes(), "u.eclat", &common::test_env())
            .is_ok()
    );
}

#[test]
fn a_missing_colon_is_shown_on_its_own_line() {
    let s = format!("{NET}def f()\n    monitor(1)\n");
    let d = errors(&s);
    let shown = d.render();
    assert!(shown.contains("slip.eclat:2:8"), "{shown}");
    assert!(!shown.contains("3 │"), "the next line is not part of it:\n{shown}");
}
