//! `ebpkg` against a registry server (the real one, in this process, with its own
//! PostgreSQL database): the same commands give the same output as against a
//! file:// registry, index files are revalidated with 304s, and the verbs only a
//! server has (login, logout, owner) work. (No kernel needed; the ddos chain from
//! a server is in ddos.rs.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ebpkg_registry::testing::TestRegistry;

fn project(sb: &Sandbox) -> std::path::PathBuf {
    let dir = sb.path("app");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("ebpkg.toml"),
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\na = \"^1\"\n",
    )
    .unwrap();
    dir
}

/// A session of commands, each one's exit code, stdout and stderr, with the
/// registry's URL and the sandbox's paths replaced so two sessions compare.
fn session(sb: &Sandbox) -> Vec<String> {
    for v in ["1.4.0", "1.5.0"] {
        sb.publish_manifest("c", v, &[]);
    }
    sb.publish_manifest("a", "1.0.0", &[("c", "^1")]);
    let app = project(sb);
    let steps: &[&[&str]] = &[
        &["lock"],
        &["tree"],
        &["info", "c"],
        &["info", "c@~1.4"],
        &["search", "c"],
        &["search", ""],
        &["--json", "search", "a"],
        &["yank", "c@1.5.0"],
        &["lock", "--locked"],
        &["update"],
        &["tree"],
        &["yank", "--undo", "c@1.5.0"],
        &["update", "c"],
        &["info", "nosuch"],
        &["yank", "c@9.9.9"],
    ];
    let url = sb.registry_url();
    steps
        .iter()
        .map(|args| {
            let run = sb.run(&app, args);
            let text = format!("$ ebpkg {}\n[{}]\n{}{}", args.join(" "), run.code, run.stdout, run.stderr);
            text.replace(&url, "REGISTRY/")
                .replace(url.trim_end_matches('/'), "REGISTRY")
                .replace(&sb.dir.path().display().to_string(), "SANDBOX")
        })
        .collect()
}

#[test]
fn every_command_says_the_same_against_a_server_as_against_a_directory() {
    let file = Sandbox::new("rfile");
    let on_file = session(&file);

    let server = TestRegistry::start().unwrap();
    let mut http = Sandbox::new("rhttp");
    http.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    let on_server = session(&http);
    for (f, h) in on_file.iter().zip(&on_server) {
        // Errors about a missing version come from the registry: a server says it
        // with its status, which is the one expected difference.
        if f.starts_with("$ ebpkg yank c@9.9.9") {
            assert!(h.contains("[6]") && h.contains("404") && h.contains("no version 9.9.9"), "{h}");
            continue;
        }
        assert_eq!(f, h);
    }
}

#[test]
fn index_files_are_revalidated_and_usable_offline() {
    let server = TestRegistry::start().unwrap();
    let mut sb = Sandbox::new("rcache");
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    sb.publish_manifest("c", "1.0.0", &[]);
    let first = sb.run(sb.dir.path(), &["-vv", "info", "c"]).ok();
    assert!(!first.stderr.contains("not modified (304)"), "{}", first.stderr);
    let second = sb.run(sb.dir.path(), &["-vv", "info", "c"]).ok();
    assert!(second.stderr.contains("not modified (304)"), "{}", second.stderr);
    assert_eq!(first.stdout, second.stdout);
    let offline = sb.run(sb.dir.path(), &["--offline", "info", "c"]).ok();
    assert_eq!(offline.stdout, first.stdout);
    let missing = sb.run(sb.dir.path(), &["--offline", "info", "d"]).fails(6);
    assert!(missing.stderr.contains("offline mode forbids fetching it"), "{}", missing.stderr);
}

#[test]
fn login_logout_and_owners() {
    let server = TestRegistry::start().unwrap();
    server.user("bob").unwrap();
    let mut sb = Sandbox::new("rowner");
    let bad = sb.use_server(server.url(), "ebpkg_wrong");
    assert_eq!(bad.code, 6, "{}", bad.stderr);
    assert!(bad.stderr.contains("401") && bad.stderr.contains("not valid"), "{}", bad.stderr);
    assert!(!sb.path("credentials.toml").exists(), "a refused token is not saved");
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    sb.publish_manifest("c", "1.0.0", &[]);
    let dir = sb.dir.path().to_owned();
    assert_eq!(sb.run(&dir, &["owner", "list", "c"]).ok().stdout, "alice\n");
    let added = sb.run(&dir, &["owner", "add", "c", "bob"]).ok();
    assert!(added.stderr.contains("bob added to the owners of `c`"), "{}", added.stderr);
    assert_eq!(sb.run(&dir, &["owner", "list", "c"]).ok().stdout, "alice\nbob\n");
    let nobody = sb.run(&dir, &["owner", "add", "c", "nobody"]).fails(6);
    assert!(nobody.stderr.contains("no user `nobody`"), "{}", nobody.stderr);
    sb.run(&dir, &["owner", "remove", "c", "bob"]).ok();

    let out = sb.run(&dir, &["logout"]).ok();
    assert!(out.stderr.contains("Logged out"), "{}", out.stderr);
    let text = std::fs::read_to_string(sb.path("credentials.toml")).unwrap();
    assert!(!text.contains("ebpkg_"), "{text}");
    let refused = sb.run(&dir, &["yank", "c@1.0.0"]).fails(6);
    assert!(refused.stderr.contains("ebpkg login"), "{}", refused.stderr);
    // A directory registry has no accounts.
    sb.registry = None;
    let none = sb.run(&dir, &["login", "--token-stdin"]).fails(2);
    assert!(none.stderr.contains("directory registry"), "{}", none.stderr);
}
