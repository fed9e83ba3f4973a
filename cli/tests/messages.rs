//! What ebpkg says when things go wrong, and that saying it never crashes: one
//! `error:` heading, each cause once, the true origin of a setting, no panic when
//! the reader of its output goes away, and names with look-alike letters explained.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};

use common::*;

#[test]
fn a_diagnostic_has_one_error_heading() {
    let sb = Sandbox::new("heading");
    let dir = sb.path("p");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ebpkg.toml"), "[package]\nname = \"p\"\nversion = \"1.0\"\n").unwrap();
    let run = sb.run(&dir, &["lock"]).fails(1);
    assert!(run.stderr.starts_with("error: version \"1.0\" is not semver\n"), "{}", run.stderr);
    assert!(!run.stderr.contains("error: error"), "{}", run.stderr);
}

#[test]
fn the_clang_error_names_where_the_clang_came_from() {
    let sb = Sandbox::new("clangenv");
    let dir = sb.path("pktcount");
    std::fs::create_dir_all(sb.dir.path()).unwrap();
    sb.run(sb.dir.path(), &["new", "pktcount", "--program"]).ok();
    let out = sb.cmd(&dir, &["build"]).env("EBPKG_CLANG", "/nonexistent/clang").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains("(`/nonexistent/clang`, from $EBPKG_CLANG)"), "{stderr}");
    assert!(!stderr.contains("--clang") && !stderr.contains("command line"), "no such flag: {stderr}");
}

/// Each cause once, and the exit code of what failed: a BTF file that is not
/// there is the environment's (7), said once.
#[test]
fn each_cause_is_said_once_with_the_exit_code_of_what_failed() {
    let sb = Sandbox::new("btfmissing");
    let dir = sb.path("pktcount");
    std::fs::create_dir_all(sb.dir.path()).unwrap();
    sb.run(sb.dir.path(), &["new", "pktcount", "--program"]).ok();
    let run = sb.run(&dir, &["build", "--btf", "/nonexistent/btf"]).fails(7);
    assert_eq!(run.stderr.matches("/nonexistent/btf").count(), 1, "{}", run.stderr);
    assert_eq!(run.stderr.matches("does not exist").count(), 1, "{}", run.stderr);
    // The CLI's context, then the cause, once: a registry URL that is not one is
    // bad input (1).
    let run = sb.run(sb.dir.path(), &["--registry", "gopher://x", "info", "sets"]).fails(1);
    assert!(
        run.stderr.starts_with("error: the default registry `gopher://x`: `gopher://x` uses the scheme `gopher:`"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.matches("gopher").count(), 3, "{}", run.stderr);
}

/// `ebpkg tree 2>&1 | head -1`: every write after the reader left fails with
/// EPIPE, which must not become a panic (exit 101), on success or on error.
#[test]
fn a_reader_that_goes_away_is_not_a_crash() {
    let sb = Sandbox::new("pipe");
    sb.publish_manifest("sets", "1.0.0", &[]);
    sb.publish_manifest("basic", "1.0.0", &[("sets", "^1")]);
    let dir = sb.app(&[("basic", "1")]);
    for (args, code) in [(&["tree"][..], 0), (&["search", ""], 0), (&["info", "nosuchpkg"], 6), (&["lock"], 0)] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let status = sb
            .cmd(&dir, args)
            .stdout(Stdio::from(writer.try_clone().unwrap()))
            .stderr(Stdio::from(writer))
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(code), "ebpkg {args:?}");
    }
}

#[test]
fn look_alike_letters_in_names_are_explained() {
    let sb = Sandbox::new("homoglyph");
    let dir = sb.path("app");
    std::fs::create_dir_all(&dir).unwrap();
    sb.run(&dir, &["init"]).ok();
    let run = sb.run(&dir, &["add", "fl\u{43e}w"]).fails(2);
    assert!(run.stderr.contains("U+043E, which looks like `o` but is not ASCII"), "{}", run.stderr);
    assert!(run.stderr.contains("write `flow`"), "{}", run.stderr);
    let run = Command::new(env!("CARGO_BIN_EXE_ebpkg"))
        .current_dir(sb.dir.path())
        .args(["new", "\u{430}pp"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("write `app`"), "{stderr}");
}

/// A [[program]] renamed in ebpkg.toml but not in its C source: `build` (and so
/// `test` and `install`) says so, as publish did, instead of running or refusing
/// it far from the cause.
#[test]
fn a_manifest_that_does_not_match_its_object_is_refused_by_build_and_test() {
    let sb = Sandbox::new("mismatch");
    sb.run(sb.dir.path(), &["new", "pktcount", "--program"]).ok();
    let dir = sb.path("pktcount");
    sb.run(&dir, &["build"]).ok();
    let manifest = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
    let renamed = manifest.replacen("name = \"pktcount\"\nsource", "name = \"pktcount2\"\nsource", 1);
    assert_ne!(renamed, manifest, "{manifest}");
    std::fs::write(dir.join("ebpkg.toml"), renamed).unwrap();
    for command in ["build", "test"] {
        let run = sb.run(&dir, &[command]).fails(1);
        assert!(
            run.stderr
                .contains("ebpkg.toml declares `pktcount2` but the object does not define it; it defines `pktcount`"),
            "{command}: {}",
            run.stderr
        );
        assert_eq!(run.stderr.matches("error:").count(), 1, "{}", run.stderr);
    }
}

/// A wrong key passphrase is named as such, and before anything is built (it read
/// "Unsupported key type", after the whole build and verification).
#[test]
fn a_wrong_key_passphrase_is_said_before_the_build() {
    let sb = Sandbox::new("passphrase");
    sb.run(sb.dir.path(), &["new", "pktcount", "--program"]).ok();
    let dir = sb.path("pktcount");
    let run = sb.run_with(&dir, &["publish", "--dry-run"], &[("EBPKG_KEY_PASSWORD", "not-the-one")], None).fails(2);
    assert!(
        run.stderr.contains("the passphrase does not open this key (it came from EBPKG_KEY_PASSWORD)"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("Compiled") && !run.stderr.contains("Verifying"), "{}", run.stderr);
    assert_eq!(run.stderr.matches("error:").count(), 1, "{}", run.stderr);
}
