//! `ebpkg` against a registry server (the real one, in this process, with its own
//! PostgreSQL database): the same commands give the same output as against a
//! file:// registry, index files are revalidated with 304s, and the verbs only a
//! server has (login, logout, owner) work. (No kernel needed; the ddos chain from
//! a server is in ddos.rs.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use ebpkg_registry::testing::TestRegistry;

fn project(sb: &Sandbox) -> std::path::PathBuf {
    sb.app(&[("a", "^1")])
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
        // The locked version, yanked since, still comes.
        &["fetch", "--locked"],
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
    // All but the attested kernels, which only the server can say.
    let without_kernels = |s: &str| s.lines().filter(|l| !l.starts_with("kernels")).collect::<Vec<_>>().join("\n");
    assert_eq!(without_kernels(&offline.stdout), without_kernels(&first.stdout));
    assert!(
        offline.stdout.contains("kernels: the attestations could not be read (reading attestations needs"),
        "{}",
        offline.stdout
    );
    let missing = sb.run(sb.dir.path(), &["--offline", "info", "d"]).fails(6);
    assert!(missing.stderr.contains("offline mode forbids fetching it"), "{}", missing.stderr);
    // Cleaning the index files leaves nothing to work offline with.
    let cleaned = sb.run(sb.dir.path(), &["cache", "clean", "--only", "indexes"]).ok();
    assert!(cleaned.stderr.contains("Removed 1 file(s)"), "{}", cleaned.stderr);
    sb.run(sb.dir.path(), &["--offline", "info", "c"]).fails(6);
}

/// Without TUF, each index file is asked about once per command (conditionally),
/// and one the server says is unchanged is taken from the resolution cache, its
/// record parsed once; a publish is seen at once.
#[test]
fn a_registry_server_without_tuf_is_revalidated_file_by_file_and_its_records_cached() {
    let server = TestRegistry::start().unwrap();
    let mut sb = Sandbox::new("rrecords");
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    sb.publish_manifest("c", "1.0.0", &[]);
    sb.publish_manifest("d", "1.0.0", &[("c", "^1")]);
    let app = sb.app(&[("d", "1")]);
    let relock = |args: &[&str]| {
        std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
        sb.run(&app, args).ok()
    };
    sb.run(&app, &["lock"]).ok();
    // Cached copies are trusted as files once they settled (2 s), as a directory's.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let warm = relock(&["-vv", "lock"]);
    let mut asked = warm.requests();
    asked.sort();
    // (And config.json, once per command: without TUF nothing says a kept copy is current.)
    let want = ["GET /index/1/c → 304", "GET /index/1/d → 304", "GET /index/config.json → 200"];
    assert_eq!(asked, want, "{}", warm.stderr);
    let records = std::fs::read_dir(sb.cache.join("index"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "resolution"))
        .count();
    assert_eq!(records, 1, "what was parsed is kept");
    let warmer = relock(&["-vv", "lock"]);
    assert_eq!(warmer.requests().len(), 3, "{}", warmer.stderr);
    sb.publish_manifest("c", "1.1.0", &[]);
    relock(&["lock"]);
    assert!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap().contains("version = \"1.1.0\""));
}

#[test]
fn login_logout_and_owners() {
    let server = TestRegistry::start().unwrap();
    server.user("bob").unwrap();
    let mut sb = Sandbox::new("rowner");
    let bad = sb.use_server(server.url(), "ebpkg_wrong");
    assert_eq!(bad.code, 6, "{}", bad.stderr);
    for part in ["refused the token", "401", "not valid", "nothing was saved"] {
        assert!(bad.stderr.contains(part), "`{part}` in {}", bad.stderr);
    }
    let spaced = sb.use_server(server.url(), "ebpkg_a b");
    assert!(spaced.code == 2 && spaced.stderr.contains("spaces"), "{}", spaced.stderr);
    assert!(!sb.path("credentials.toml").exists(), "a refused token is not saved");
    let token = server.token("alice", &[], &[]).unwrap();
    let login = sb.use_server(server.url(), &token).ok();
    assert!(login.stderr.contains("as `alice`"), "{}", login.stderr);
    // Saved for the registry's canonical URL, readable by its owner only.
    let credentials = sb.path("credentials.toml");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&credentials).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let saved: toml::Value = toml::from_str(&std::fs::read_to_string(&credentials).unwrap()).unwrap();
    assert_eq!(saved["registries"][server.url()]["token"].as_str(), Some(token.as_str()));
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
    assert!(out.stderr.contains("Logged out") && !out.stderr.contains("warning"), "{}", out.stderr);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&credentials).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "rewritten private too");
    let text = std::fs::read_to_string(sb.path("credentials.toml")).unwrap();
    assert!(!text.contains("ebpkg_"), "{text}");
    let refused = sb.run(&dir, &["yank", "c@1.0.0"]).fails(6);
    assert!(refused.stderr.contains("ebpkg login"), "{}", refused.stderr);
    // A directory registry has no accounts.
    sb.registry = None;
    let none = sb.run(&dir, &["login", "--token-stdin"]).fails(2);
    assert!(none.stderr.contains("directory registry"), "{}", none.stderr);
}

/// `ebpkg token list|create|revoke`: the user's own tokens, with their limits
/// and last use; a revoked one is refused by the very next request (401).
#[test]
fn tokens_are_listed_created_and_revoked_and_a_revoked_one_is_refused_at_once() {
    let server = TestRegistry::start().unwrap();
    let mut sb = Sandbox::new("rtokens");
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    let dir = sb.dir.path().to_owned();
    let created = sb
        .run(&dir, &["token", "create", "ci", "--scope", "publish-update", "--package", "net*", "--expires", "30"])
        .ok();
    let secret = created.stdout.trim().to_owned();
    assert!(secret.starts_with("ebpkg_") && !created.stderr.contains(&secret), "{}", created.stderr);
    assert!(created.stderr.contains("publish-update; packages net*; expires 20"), "{}", created.stderr);
    // Used once, with the registry's own token variable.
    let env = [("EBPKG_REGISTRY_TOKEN", secret.as_str())];
    let used = sb.run_with(&dir, &["--registry", server.url(), "yank", "nosuch@1.0.0"], &env, None);
    assert!(!used.stderr.contains("401"), "{}", used.stderr);
    let list = sb.run(&dir, &["token", "list"]).ok().stdout;
    let line = list.lines().find(|l| l.contains("\tci\t")).unwrap_or_else(|| panic!("{list}"));
    for part in ["publish-update", "packages net*", "expires 20", "last used 20"] {
        assert!(line.contains(part), "`{part}` in {line}");
    }
    assert!(!list.contains("ebpkg_"), "never a secret: {list}");
    let json: serde_json::Value =
        serde_json::from_str(&sb.run(&dir, &["--json", "token", "list"]).ok().stdout).unwrap();
    assert_eq!(json.as_array().map(Vec::len), Some(2), "{json}");
    // A limited token may not manage tokens (it could widen itself).
    let narrow = sb.run_with(&dir, &["--registry", server.url(), "token", "list"], &env, None);
    assert_eq!(narrow.code, 6, "{}", narrow.stderr);
    assert!(narrow.stderr.contains("needs an unrestricted token"), "{}", narrow.stderr);

    let revoked = sb.run(&dir, &["token", "revoke", "ci"]).ok();
    assert!(revoked.stderr.contains("`ci`") && revoked.stderr.contains("refuses it from now on"), "{}", revoked.stderr);
    let refused = sb.run_with(&dir, &["--registry", server.url(), "yank", "nosuch@1.0.0"], &env, None);
    assert_eq!(refused.code, 6, "{}", refused.stderr);
    assert!(refused.stderr.contains("401") && refused.stderr.contains("was revoked"), "{}", refused.stderr);
    assert!(!sb.run(&dir, &["token", "list"]).ok().stdout.contains("\tci\t"));
    let again = sb.run(&dir, &["token", "revoke", "ci"]).fails(1);
    assert!(again.stderr.contains("no live token with the id or name `ci`"), "{}", again.stderr);
    // By id; names shared by two tokens need one.
    for _ in 0..2 {
        sb.run(&dir, &["token", "create", "twin"]).ok();
    }
    let twins = sb.run(&dir, &["token", "revoke", "twin"]).fails(2);
    assert!(
        twins.stderr.contains("names 2 of your tokens") && twins.stderr.contains("revoke one by an id"),
        "{}",
        twins.stderr
    );
    let list = sb.run(&dir, &["token", "list"]).ok().stdout;
    let id = list.lines().find(|l| l.contains("\ttwin\t")).and_then(|l| l.split('\t').next()).unwrap().to_owned();
    sb.run(&dir, &["token", "revoke", &id]).ok();
    assert_eq!(sb.run(&dir, &["token", "list"]).ok().stdout.matches("\ttwin\t").count(), 1);
}

/// `publish --dry-run` against a server asks it, and says its refusal in the
/// words of the publish: here a signing key nobody registered.
#[test]
fn a_dry_run_asks_the_server_and_refuses_as_the_publish_does() {
    let server = TestRegistry::start_with(Box::new(|c| c.allow_unsigned = false)).unwrap();
    let mut sb = Sandbox::new("rdryrun");
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    let dir = sb.path("gen/dry");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ebpkg.toml"), "[package]\nname = \"dry\"\nversion = \"1.0.0\"\n").unwrap();
    let allowed = sb.run(&dir, &["publish", "--dry-run", "--no-verify"]).ok();
    assert!(
        allowed.stderr.contains("`alice` may publish dry@1.0.0 (a new package: its first owner)"),
        "{}",
        allowed.stderr
    );
    sb.run(&dir, &["key", "generate", "--name", "other"]).ok();
    let said = |run: &Run| run.stderr.split_once("403 Forbidden: ").map(|(_, s)| s.to_owned()).unwrap_or_default();
    let dry = sb.run(&dir, &["publish", "--dry-run", "--no-verify", "--key", "other"]);
    assert!(said(&dry).contains("not registered with this registry"), "{}", dry.stderr);
    assert!(!dry.stderr.contains("Resolving"), "asked before resolving: {}", dry.stderr);
    let real = sb.run(&dir, &["publish", "--no-verify", "--key", "other"]);
    assert_eq!((dry.code, said(&dry)), (real.code, said(&real)), "{}", real.stderr);

    // Unsigned where signatures are required: refused as the publish refuses it...
    let dry = sb.run(&dir, &["publish", "--dry-run", "--no-verify", "--no-sign"]);
    let real = sb.run(&dir, &["publish", "--no-verify", "--no-sign"]);
    assert_ne!(dry.code, 0, "{}", dry.stderr);
    assert_eq!(dry.code, real.code, "{}\n{}", dry.stderr, real.stderr);
    assert!(dry.stderr.contains("is not signed") && real.stderr.contains("is not signed"), "{}", dry.stderr);
    // ...unless the archive is written out to be signed elsewhere: asked, the key said unchecked.
    let out = sb.path("gen/dry.tar.gz");
    let elsewhere =
        sb.run(&dir, &["publish", "--dry-run", "--no-verify", "--no-sign", "--out", out.to_str().unwrap()]).ok();
    assert!(
        elsewhere.stderr.contains("Not checked") && elsewhere.stderr.contains("may publish"),
        "{}",
        elsewhere.stderr
    );
    // With no way to ask (offline, or no token), the dry run packs and says the server was not asked.
    let offline =
        sb.run(&dir, &["--offline", "publish", "--dry-run", "--no-verify", "--out", out.to_str().unwrap()]).ok();
    assert!(offline.stderr.contains("Not asked") && offline.stderr.contains("(--offline)"), "{}", offline.stderr);
    sb.run(&dir, &["logout"]).ok();
    let tokenless = sb.run(&dir, &["publish", "--dry-run", "--no-verify", "--out", out.to_str().unwrap()]).ok();
    assert!(tokenless.stderr.contains("Not asked") && tokenless.stderr.contains("no token"), "{}", tokenless.stderr);
}

/// Publishes a manifest-only package with `args` before `publish`, and `env`:
/// unsigned (the test registry allows it), since several users publish from
/// one sandbox here and a key belongs to one user.
fn publish_with(sb: &Sandbox, name: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = sb.path(&format!("gen/{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ebpkg.toml"), format!("[package]\nname = \"{name}\"\nversion = \"1.0.0\"\n")).unwrap();
    let args: Vec<&str> = args.iter().copied().chain(["publish", "--no-verify", "--no-sign"]).collect();
    sb.run_with(&dir, &args, env, None)
}

#[test]
fn tokens_by_precedence_for_a_named_registry() {
    let server = TestRegistry::start().unwrap();
    let [carol, alice, bob] = ["carol", "alice", "bob"].map(|u| server.token(u, &[], &[]).unwrap());
    let sb = Sandbox::new("rtoken");
    std::fs::write(
        sb.path("config.toml"),
        format!("[registries.corp]\nurl = \"{}\"\ntoken = \"{carol}\"\n", server.url().trim_end_matches('/')),
    )
    .unwrap();
    let dir = sb.dir.path().to_owned();
    let corp = ["--registry", "corp"];
    let owners = |pkg: &str| sb.run(&dir, &["--registry", "corp", "owner", "list", pkg]).ok().stdout;

    // The config file's token, for the registry named by --registry.
    publish_with(&sb, "p1", &corp, &[]).ok();
    assert_eq!(owners("p1"), "carol\n");
    // `ebpkg login`'s wins over it.
    let login = sb.run_with(&dir, &["--registry", "corp", "login", "--token-stdin"], &[], Some(&alice)).ok();
    assert!(login.stderr.contains("as `alice`"), "{}", login.stderr);
    publish_with(&sb, "p2", &corp, &[]).ok();
    assert_eq!(owners("p2"), "alice\n");
    // EBPKG_REGISTRY_TOKEN wins over both.
    publish_with(&sb, "p3", &corp, &[("EBPKG_REGISTRY_TOKEN", &bob)]).ok();
    assert_eq!(owners("p3"), "bob\n");
    // Logging out leaves the config file's, and says so.
    let out = sb.run(&dir, &["--registry", "corp", "logout"]).ok();
    assert!(out.stderr.contains("[registries.corp] token in") && out.stderr.contains("still gives"), "{}", out.stderr);
    publish_with(&sb, "p4", &corp, &[]).ok();
    assert_eq!(owners("p4"), "carol\n");

    // Logging in with a config directory that does not exist yet creates it private.
    let fresh = sb.path("fresh/ebpkg/config.toml");
    let env = [("EBPKG_CONFIG", fresh.to_str().unwrap())];
    sb.run_with(&dir, &["--registry", server.url(), "login"], &env, Some(&format!("{alice}\n"))).ok();
    let mode =
        |p: &std::path::Path| std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions());
    assert_eq!(mode(&sb.path("fresh/ebpkg")) & 0o777, 0o700);
    assert_eq!(mode(&sb.path("fresh/ebpkg/credentials.toml")) & 0o777, 0o600);
}

#[test]
fn refusals_over_http_say_what_to_do() {
    let server = TestRegistry::start().unwrap();
    let mut sb = Sandbox::new("rerr");
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    let first = publish_with(&sb, "c", &[], &[]).ok();
    assert!(first.stderr.contains("Published c@1.0.0"), "{}", first.stderr);
    let dir = sb.path("gen/c");

    let again = publish_with(&sb, "c", &[], &[]).fails(6);
    for part in ["publishing c@1.0.0", "PUT ", "409 Conflict", "bump the version"] {
        assert!(again.stderr.contains(part), "`{part}` in {}", again.stderr);
    }
    assert_eq!(again.stderr.matches("bump the version").count(), 1, "{}", again.stderr);

    // Without a token a publish stops before resolving and verifying anything.
    let anonymous = [("EBPKG_CONFIG", "/nonexistent/ebpkg/config.toml")];
    let no_token = sb.run_with(&dir, &["publish", "--no-verify"], &anonymous, None).fails(6);
    assert!(no_token.stderr.contains("needs an API token"), "{}", no_token.stderr);
    assert!(!no_token.stderr.contains("Resolving"), "{}", no_token.stderr);

    let bob = server.token("bob", &[], &[]).unwrap();
    let denied = sb.run_with(&dir, &["yank", "c@1.0.0"], &[("EBPKG_REGISTRY_TOKEN", &bob)], None).fails(6);
    for part in ["yanking c@1.0.0", "DELETE ", "403 Forbidden", "not an owner", "ebpkg owner add"] {
        assert!(denied.stderr.contains(part), "`{part}` in {}", denied.stderr);
    }

    for args in
        [&["--offline", "search", "c"][..], &["--offline", "yank", "c@1.0.0"], &["--frozen", "owner", "list", "c"]]
    {
        let refused = sb.run(&dir, args).fails(6);
        assert!(refused.stderr.contains("offline mode") && refused.stderr.contains(server.url()), "{}", refused.stderr);
    }
    let nested = format!("{}nested/", server.url());
    let wrong = sb.run(&dir, &["--registry", &nested, "search", "c"]).fails(6);
    assert!(wrong.stderr.contains("is not an ebpkg registry server"), "{}", wrong.stderr);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let gone = format!("http://127.0.0.1:{port}/");
    let down = sb.run(&dir, &["--registry", &gone, "info", "c"]).fails(6);
    assert!(down.stderr.contains("failed 3 times") && down.stderr.contains(&gone), "{}", down.stderr);
    assert_eq!(down.stderr.matches("error:").count(), 1, "{}", down.stderr);
}

#[test]
fn a_mirror_of_a_server_installs_frozen_without_it() {
    let server = TestRegistry::start().unwrap();
    let mut sb = Sandbox::new("rmirror");
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    sb.publish_manifest("c", "1.4.0", &[]);
    sb.publish_manifest("a", "1.0.0", &[("c", "^1")]);
    let app = project(&sb);
    sb.run(&app, &["lock"]).ok();
    let mirror = sb.path("mirror");
    sb.run(&app, &["mirror", mirror.to_str().unwrap()]).ok();
    let origin = server.url().to_owned();
    drop(server);
    // A cache of its own: everything comes from the mirror.
    sb.cache = sb.path("cache-2");
    let url = format!("file://{}/", mirror.display());
    let fetched = sb.run_with(&app, &["--frozen", "fetch"], &[("EBPKG_MIRROR", &url)], None).ok();
    assert!(fetched.stderr.contains("Ready 2 packages in the cache"), "{}", fetched.stderr);
    // Said as it happened: from the mirror, standing in for the registry.
    assert!(fetched.stderr.contains(&format!("Fetched c@1.4.0 from {url} (mirror of {origin})")), "{}", fetched.stderr);
}

#[test]
fn publisher_keys_sign_publishes_and_revocation_reaches_installs() {
    let server = TestRegistry::start_with(Box::new(|c| c.allow_unsigned = false)).unwrap();
    let mut sb = Sandbox::new("rkeys");
    // Logs in and runs `ebpkg owner key add default`.
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    let id = sb.key_id();
    let dir = sb.dir.path().to_owned();
    let listed = sb.run(&dir, &["owner", "key", "list"]).ok();
    assert!(listed.stdout.starts_with(&format!("{id}\talice\tadded ")), "{}", listed.stdout);
    assert!(listed.stdout.trim_end().ends_with("active"), "{}", listed.stdout);
    let public = sb.path("keys/default.pub");
    let refused = sb.run(&dir, &["owner", "key", "add", public.to_str().unwrap()]).fails(2);
    assert!(refused.stderr.contains("needs its private key"), "{}", refused.stderr);

    sb.publish_manifest("c", "1.0.0", &[]);
    // config.json says so: refused before anything is uploaded.
    let unsigned = publish_with(&sb, "d", &[], &[]).fails(10);
    assert!(unsigned.stderr.contains("requires signed packages"), "{}", unsigned.stderr);
    assert!(!unsigned.stderr.contains("Uploading"), "{}", unsigned.stderr);
    let info = sb.run(&dir, &["info", "c", "--json"]).ok();
    assert!(info.stdout.contains(&id), "the index line names the key: {}", info.stdout);

    sb.publish_manifest("e", "1.0.0", &[]);
    let app = sb.app(&[("c", "1"), ("e", "1")]);
    sb.run(&app, &["fetch"]).ok();
    let lock = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap();
    assert!(lock.contains(&format!("signer = \"{id}\"")), "{lock}");
    // Offline, revocation cannot be checked: said once for the command, naming how many.
    let offline = sb.run(&app, &["--offline", "fetch"]).ok();
    assert_eq!(offline.stderr.matches("whether those keys were revoked").count(), 1, "{}", offline.stderr);
    assert!(offline.stderr.contains("the signatures of 2 packages ("), "{}", offline.stderr);

    // Revoked on the server: the next fetch (cache or not) refuses it.
    let removed = sb.run(&dir, &["owner", "key", "remove", &id]).ok();
    assert!(removed.stderr.contains("Revoked"), "{}", removed.stderr);
    sb.run(&dir, &["cache", "clean"]).ok();
    let after = sb.run(&app, &["fetch"]).fails(10);
    assert!(after.stderr.contains("revoked"), "{}", after.stderr);
}
