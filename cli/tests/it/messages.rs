//! What ebpkg says when things go wrong, and that saying it never crashes: one
//! `error:` heading, each cause once, the true origin of a setting, no panic when
//! the reader of its output goes away, and names with look-alike letters explained.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::process::{Command, Stdio};

use common::*;
use ebpkg_registry::testing::TestRegistry;
use ebpkg_registry_testing::Nginx;

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

/// `ebpkg add` on a host whose trust policy trusts no key yet: the error leads
/// with the trust policy (which versions, whose key, the `ebpkg trust add` line to
/// run), and does not blame the registry, whose index and listing agree.
#[test]
fn a_refused_add_leads_with_the_trust_policy() {
    let sb = Sandbox::new("refusedadd");
    sb.publish_manifest("sets", "1.0.0", &[]);
    sb.publish_manifest("basic", "1.0.0", &[("sets", "^1")]);
    // A fresh host: no trust policy (the publisher's recorded its own key).
    std::fs::remove_file(sb.path("trust.toml")).unwrap();
    let dir = sb.path("app");
    std::fs::create_dir_all(&dir).unwrap();
    sb.run(&dir, &["init"]).ok();
    let manifest = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
    let run = sb.run(&dir, &["add", "basic"]).fails(10);
    let (url, key) = (sb.registry_url(), sb.key_id());
    let error = &run.stderr[run.stderr.find("error: ").unwrap()..];
    assert_eq!(
        error,
        format!(
            "error: the trust policy refuses every version of `basic` the registry has:\n  \
             basic@1.0.0 from {url}: it is signed by key {key}, and the trust policy trusts no key for basic\n  \
             sets@1.0.0 from {url}: it is signed by key {key}, and the trust policy trusts no key for sets\n\
             help: Check with the publisher that the key is theirs, then `ebpkg trust add basic {key}` (or install \
             once with --trust-new-keys to trust it on first use)\n\
             help: Check with the publisher that the key is theirs, then `ebpkg trust add sets {key}` (or install \
             once with --trust-new-keys to trust it on first use)\n"
        )
    );
    assert_eq!(std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap(), manifest, "a refused add changes nothing");
    // The line it gives is the way out.
    sb.run(&dir, &["trust", "add", "basic", &key]).ok();
    sb.run(&dir, &["trust", "add", "sets", &key]).ok();
    sb.run(&dir, &["add", "basic"]).ok();

    // A version signed by a key the policy does not trust for the package, asked for
    // exactly: the policy first, then what resolving found without it.
    let run = sb.run(&dir, &["key", "generate", "--name", "other", "--json"]).ok();
    let other: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let other = other["id"].as_str().unwrap().to_owned();
    let newer = sb.path("gen/sets-1.1.0");
    std::fs::create_dir_all(&newer).unwrap();
    std::fs::write(newer.join("ebpkg.toml"), "[package]\nname = \"sets\"\nversion = \"1.1.0\"\n").unwrap();
    let other_key = sb.path("keys/other.key");
    sb.run(&newer, &["publish", "--no-verify", "--key", other_key.to_str().unwrap()]).ok();
    std::fs::write(sb.path("trust.toml"), format!("[keys]\n\"*\" = [\"{key}\"]\n")).unwrap();
    let run = sb.run(&dir, &["add", "sets@=1.1.0"]).fails(10);
    let error = &run.stderr[run.stderr.find("error: ").unwrap()..];
    let lead = format!(
        "error: the trust policy refuses versions that the dependencies of app need (fetching them would fail):\n  \
         sets@1.1.0 from {url}: it is signed by key {other}, but the trust policy trusts only {key} for sets\n\
         Without them, cannot find versions for the dependencies of app:\n"
    );
    assert!(error.starts_with(&lead), "{error}");
    assert!(
        error.contains(&format!(
            "help: If the publisher rotated keys, confirm it with them, then `ebpkg trust add sets {other}`"
        )),
        "{error}"
    );

    // A refused version, and without it a dependency the registry does not have: the
    // policy first, and the missing package is the registry's, not "refused".
    sb.publish_manifest("gone", "1.0.0", &[]);
    sb.publish_manifest("lone", "1.0.0", &[("gone", "^1")]);
    let newer = sb.path("gen/lone-1.1.0");
    std::fs::create_dir_all(&newer).unwrap();
    std::fs::write(newer.join("ebpkg.toml"), "[package]\nname = \"lone\"\nversion = \"1.1.0\"\n").unwrap();
    sb.run(&newer, &["publish", "--no-verify", "--key", other_key.to_str().unwrap()]).ok();
    std::fs::write(sb.path("trust.toml"), format!("[keys]\n\"*\" = [\"{key}\"]\n")).unwrap();
    fn remove_named(dir: &std::path::Path, name: &str) -> usize {
        let mut removed = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                removed += remove_named(&path, name);
            } else if path.file_name().is_some_and(|f| f == name) {
                std::fs::remove_file(&path).unwrap();
                removed += 1;
            }
        }
        removed
    }
    assert_eq!(remove_named(&sb.path("registry/index"), "gone"), 1, "gone's index file");
    let run = sb.run(&dir, &["add", "lone"]).fails(10);
    let error = &run.stderr[run.stderr.find("error: ").unwrap()..];
    let lead = format!(
        "error: the trust policy refuses versions that the dependencies of app need (fetching them would fail):\n  \
         lone@1.1.0 from {url}: it is signed by key {other}, but the trust policy trusts only {key} for lone\n\
         Without them, cannot find versions for the dependencies of app:\n  \
         1. Because app depends on lone ^1.0.0 and lone 1.0.0 depends on gone ^1 (no version of gone is published)"
    );
    assert!(error.starts_with(&lead), "{error}");
    assert!(error.ends_with("help: no package named `gone` is published in the default registry\n"), "{error}");
    assert!(!error.contains("every version of `gone`"), "{error}");
}

/// Its index and its listing truly disagree (a proxy in front of the registry
/// answers 404 for one index file while the search still lists the package): then,
/// and only then, the registry is blamed.
#[test]
fn an_index_file_the_registry_lists_but_does_not_serve_is_blamed_on_the_registry() {
    let server = TestRegistry::start().unwrap();
    let mut sb = Sandbox::new("disagree");
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    sb.publish_manifest("basic", "1.0.0", &[]);
    let port = ebpkg_registry_testing::free_port().unwrap();
    let _proxy = Nginx::start(&format!(
        "server {{ listen 127.0.0.1:{port}; \
         location = /index/ba/si/basic {{ return 404; }} \
         location / {{ proxy_pass http://{}; }} }}",
        server.addr()
    ))
    .unwrap();
    let dir = sb.path("elsewhere");
    std::fs::create_dir_all(&dir).unwrap();
    sb.run(&dir, &["init"]).ok();
    let proxied = format!("http://127.0.0.1:{port}/");
    let disagree = "the registry lists `basic` but serves no index file for it: its index and its listing disagree \
                    (a redirect or a proxy in the way?); tell the registry's operator\n";
    // Asked for by `add` (which reads the index first), and by a resolution.
    let run = sb.run(&dir, &["--registry", &proxied, "add", "basic"]).fails(6);
    assert_eq!(run.stderr, format!("error: package `basic` is not in {proxied}: {disagree}"));
    let app = sb.app(&[("basic", "^1")]);
    let run = sb.run(&app, &["--registry", &proxied, "lock"]).fails(3);
    let error = &run.stderr[run.stderr.find("error: ").unwrap()..];
    assert_eq!(error, format!("error: app depends on `basic`, which is not in the default registry; {disagree}"));
}
