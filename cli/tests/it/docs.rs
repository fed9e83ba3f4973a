//! Shell completions and manual pages come from the same definitions as `--help`:
//! every command `ebpkg --help` lists has a page and is completed in every shell.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn ebpkg(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ebpkg")).args(args).output().unwrap();
    assert!(out.status.success(), "ebpkg {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The commands `ebpkg --help` lists (and, for those with subcommands, theirs).
fn commands() -> Vec<Vec<String>> {
    fn listed(help: &str) -> Vec<String> {
        help.split("Commands:\n")
            .nth(1)
            .unwrap_or_default()
            .lines()
            .take_while(|l| l.starts_with("  ") || l.is_empty())
            .filter(|l| !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .filter(|c| c != "help")
            .collect()
    }
    let mut out = Vec::new();
    for c in listed(&ebpkg(&["--help"])) {
        for sub in listed(&ebpkg(&[&c, "--help"])) {
            out.push(vec![c.clone(), sub]);
        }
        out.push(vec![c]);
    }
    out
}

#[test]
fn every_command_has_a_manual_page() {
    let commands = commands();
    assert!(commands.len() > 20, "{commands:?}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    ebpkg(&["man", "--out-dir", out.to_str().unwrap()]);
    for c in &commands {
        let page = out.join(format!("ebpkg-{}.1", c.join("-")));
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        assert!(text.lines().any(|l| l.starts_with(".TH ")), "{}: has a title header", page.display());
        // roff escapes every hyphen, including those inside a command's own name.
        let roff_name = format!("ebpkg-{}", c.join("-")).replace('-', "\\-");
        assert!(text.contains(&roff_name), "{}: names its command", page.display());
    }
    let root = ebpkg(&["man"]);
    assert!(root.contains(".TH ebpkg 1"), "{root}");
    assert!(root.contains("ebpkg\\-install(1)"), "the root page names the commands' pages: {root}");
}

#[test]
fn every_command_is_completed_in_every_shell() {
    let commands = commands();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = ebpkg(&["completions", shell]);
        for c in &commands {
            let last = c.last().unwrap();
            assert!(script.contains(last.as_str()), "{shell} completes `{}`", c.join(" "));
        }
        // A flag of a subcommand, too.
        assert!(script.contains("no-verify"), "{shell}");
    }
    // A flag with a fixed set of values completes them, not file names.
    let fish = ebpkg(&["completions", "fish"]);
    // (Each value with its description, one per line, until the next `complete`.)
    let from = fish.split("-l chain-mode").nth(1).unwrap_or_default();
    let line = from.split("\ncomplete ").next().unwrap_or_default();
    for value in ["auto\\t", "native\\t", "interpreted\\t"] {
        assert!(line.contains(value), "{value:?} in {line}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_ebpkg")).args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
