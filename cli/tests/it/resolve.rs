//! Resolution through the CLI, against file:// registries the tests publish to:
//! diamonds, conflicts and their explanation, pre-releases, yanked versions,
//! `--locked` drift and lockfile determinism. (No kernel needed.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;

fn project(sb: &Sandbox, deps: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = sb.path("app");
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = "[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\n".to_owned();
    for (d, r) in deps {
        text.push_str(&format!("{d} = \"{r}\"\n"));
    }
    std::fs::write(dir.join("ebpkg.toml"), text).unwrap();
    dir
}

/// Makes line `k` (from 0) of `name`'s index file no index entry: its checksum is no longer hex.
fn damage_checksum(sb: &Sandbox, name: &str, k: usize) {
    let index = sb.path("registry").join("index").join(ebpkg_spec::index_path(name));
    let text = std::fs::read_to_string(&index).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = lines[k].find("\"cksum\":\"").unwrap() + 9;
    lines[k].replace_range(at..at + 2, "ZZ");
    std::fs::write(&index, lines.join("\n") + "\n").unwrap();
}

fn locked_versions(dir: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("ebpkg.lock")).unwrap();
    let mut out = Vec::new();
    let mut name = String::new();
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name = ") {
            name = n.trim_matches('"').to_owned();
        }
        if let Some(v) = line.strip_prefix("version = \"") {
            out.push(format!("{name} {}", v.trim_end_matches('"')));
        }
    }
    out
}

#[test]
fn a_diamond_takes_the_newest_version_both_sides_accept() {
    let sb = Sandbox::new("diamond");
    for v in ["1.2.0", "1.4.0", "1.5.0", "2.0.0"] {
        sb.publish_manifest("c", v, &[]);
    }
    sb.publish_manifest("a", "1.0.0", &[("c", "^1.2")]);
    sb.publish_manifest("b", "1.0.0", &[("c", "~1.4")]);
    let app = project(&sb, &[("a", "^1"), ("b", "^1")]);
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["a 1.0.0", "b 1.0.0", "c 1.4.0"]);
    let tree = sb.run(&app, &["tree"]).ok();
    assert_eq!(tree.stdout, "app 0.1.0\n├── a 1.0.0\n│   └── c 1.4.0\n└── b 1.0.0\n    └── c 1.4.0\n");
}

/// Like `cargo tree`: a package's dependencies are shown once, later occurrences marked `(*)`. A chain
/// of 12 diamonds has 4,096 paths to its bottom; the tree stays a few lines per package.
#[test]
fn tree_shows_each_package_s_dependencies_once() {
    let sb = Sandbox::new("tree-diamonds");
    const LEVELS: usize = 12;
    sb.publish_manifest("bottom", "1.0.0", &[]);
    for level in (0..LEVELS).rev() {
        let below: Vec<String> = match level + 1 {
            LEVELS => vec!["bottom".into()],
            l => vec![format!("l{l}a"), format!("l{l}b")],
        };
        let deps: Vec<(&str, &str)> = below.iter().map(|b| (b.as_str(), "^1")).collect();
        for side in ["a", "b"] {
            sb.publish_manifest(&format!("l{level}{side}"), "1.0.0", &deps);
        }
    }
    let app = project(&sb, &[("l0a", "^1"), ("l0b", "^1")]);
    let tree = sb.run(&app, &["tree"]).ok().stdout;
    let lines = tree.lines().count();
    assert!(lines <= 4 * (2 * LEVELS + 2), "{lines} lines:\n{tree}");
    assert!(tree.starts_with("app 0.1.0\n├── l0a 1.0.0\n│   ├── l1a 1.0.0\n"), "{tree}");
    assert!(tree.ends_with("└── l0b 1.0.0\n    ├── l1a 1.0.0 (*)\n    └── l1b 1.0.0 (*)\n"), "{tree}");
    // A package without dependencies has nothing left out: no mark.
    assert!(tree.contains("bottom 1.0.0\n") && !tree.contains("bottom 1.0.0 (*)"), "{tree}");
    let json: serde_json::Value = serde_json::from_str(&sb.run(&app, &["--json", "tree"]).ok().stdout).unwrap();
    assert_eq!(json["dependencies"][1]["dependencies"][0]["repeated"], true);
    assert!(json["dependencies"][1].get("repeated").is_none());
}

#[test]
fn a_conflict_is_explained_step_by_step_with_a_fix() {
    let sb = Sandbox::new("conflict");
    sb.publish_manifest("meter", "1.2.0", &[]);
    sb.publish_manifest("meter", "2.0.0", &[]);
    sb.publish_manifest("ddos", "1.4.0", &[("meter", "^1")]);
    let app = project(&sb, &[("meter", "^2"), ("ddos", "^1.4")]);
    let run = sb.run(&app, &["lock"]).fails(3);
    assert!(run.stderr.contains("cannot find versions for the dependencies of app"), "{}", run.stderr);
    assert!(run.stderr.contains("ddos 1.4.0 depends on meter ^1"), "{}", run.stderr);
    assert!(run.stderr.contains("app depends on meter ^2"), "{}", run.stderr);
    assert!(run.stderr.contains("help:"), "{}", run.stderr);
    assert!(!app.join("ebpkg.lock").exists(), "nothing is written");
}

#[test]
fn pre_releases_only_when_asked_for() {
    let sb = Sandbox::new("pre");
    sb.publish_manifest("c", "1.5.0", &[]);
    sb.publish_manifest("c", "1.6.0-rc.1", &[]);
    let app = project(&sb, &[("c", "^1")]);
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.5.0"]);
    let app = project(&sb, &[("c", ">=1.6.0-rc.1")]);
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.6.0-rc.1"]);
}

#[test]
fn yanked_versions_stay_locked_but_are_not_chosen_again() {
    let sb = Sandbox::new("yank");
    sb.publish_manifest("c", "1.4.0", &[]);
    sb.publish_manifest("c", "1.5.0", &[]);
    let app = project(&sb, &[("c", "^1")]);
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.5.0"]);
    let run = sb.run(&app, &["yank", "c@1.5.0"]).ok();
    assert!(run.stderr.contains("Yanked c@1.5.0"), "{}", run.stderr);
    sb.run(&app, &["lock", "--locked"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.5.0"], "a locked yanked version keeps working");
    // ... with a warning whenever it is fetched.
    let fetched = sb.run(&app, &["fetch"]).ok();
    assert!(
        fetched.stderr.contains("c@1.5.0 is yanked") && fetched.stderr.contains("ebpkg update c"),
        "{}",
        fetched.stderr
    );
    // A requirement only a yanked version matches says so.
    let only = sb.run(&app, &["add", "c@=1.5.0"]).fails(3);
    assert!(only.stderr.contains("(published: 1.4.0, 1.5.0 (yanked)); 1.5.0 matches but is yanked"), "{}", only.stderr);
    sb.run(&app, &["update"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.4.0"], "a new resolution avoids it");
    sb.run(&app, &["yank", "--undo", "c@1.5.0"]).ok();
    sb.run(&app, &["update", "c"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.5.0"]);
}

#[test]
fn a_project_remembers_its_registry_in_a_new_shell() {
    let sb = Sandbox::new("remember");
    sb.publish_manifest("c", "1.0.0", &[]);
    let dir = sb.path("guard");
    std::fs::create_dir_all(&dir).unwrap();
    // Made with the registry in the environment ...
    let init = sb.run(&dir, &["init"]).ok();
    assert!(init.stderr.contains("Remembered"), "{}", init.stderr);
    let remembered = std::fs::read_to_string(dir.join(".ebpkg/config.toml")).unwrap();
    assert!(remembered.contains(&format!("default = \"{}\"", sb.registry_url())), "{remembered}");
    common::assert_schema_valid("project-config.toml.schema.json", &dir.join(".ebpkg/config.toml"));
    sb.run(&dir, &["add", "c"]).ok();
    // ... and used in a shell without it: online, offline, from a subdirectory.
    let bare = |args: &[&str], cwd: &std::path::Path| {
        let out = sb.cmd(cwd, args).env_remove("EBPKG_REGISTRY").output().unwrap();
        let run = Run::from(out);
        run.ok()
    };
    bare(&["lock"], &dir);
    assert_eq!(locked_versions(&dir), ["c 1.0.0"]);
    common::assert_schema_valid("ebpkg.lock.schema.json", &dir.join("ebpkg.lock"));
    common::assert_schema_valid("ebpkg.toml.schema.json", &dir.join("ebpkg.toml"));
    // The trust policy as ebpkg rewrites it.
    sb.run(&dir, &["trust", "unattested-kernels", "refuse"]).ok();
    common::assert_schema_valid("trust.toml.schema.json", &sb.path("trust.toml"));
    sb.run(&dir, &["trust", "unattested-kernels", "note"]).ok();
    let tree = bare(&["--offline", "tree"], &dir);
    assert!(tree.stdout.contains("c 1.0.0"), "{}", tree.stdout);
    bare(&["tree"], &dir.join("chains"));
    // Writable by others: refused, it chooses where packages come from.
    use std::os::unix::fs::PermissionsExt;
    let file = dir.join(".ebpkg/config.toml");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
    let refused = Run::from(sb.cmd(&dir, &["tree"]).output().unwrap()).fails(1);
    assert!(
        refused.stderr.contains("writable by no one else") && refused.stderr.contains("chmod go-w"),
        "{}",
        refused.stderr
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    // Above a project's root, a configuration configures nothing (a `/tmp/.ebpkg`
    // must not reach every project under /tmp).
    let other = sb.path("elsewhere/app");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("ebpkg.toml"), "[package]\nname = \"app\"\nversion = \"0.1.0\"\n").unwrap();
    std::fs::create_dir_all(sb.path(".ebpkg")).unwrap();
    std::fs::write(sb.path(".ebpkg/config.toml"), "[registry]\ndefault = \"file:///evil-registry/\"\n").unwrap();
    let out = sb.cmd(&other, &["lock"]).env_remove("EBPKG_REGISTRY").output().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("evil-registry"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A token in it is refused: the file is committed with the project.
    std::fs::write(dir.join(".ebpkg/config.toml"), format!("{remembered}token = \"secret\"\n")).unwrap();
    let refused = Run::from(sb.cmd(&dir, &["tree"]).output().unwrap()).fails(1);
    assert!(refused.stderr.contains("holds no token"), "{}", refused.stderr);
}

#[test]
fn update_names_a_newer_version_the_requirement_does_not_allow() {
    let sb = Sandbox::new("newer");
    for v in ["1.0.0", "1.1.0", "2.0.0", "3.0.0-rc.1"] {
        sb.publish_manifest("c", v, &[]);
    }
    let app = project(&sb, &[("c", "^1")]);
    let run = sb.run(&app, &["update"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.1.0"]);
    assert!(
        run.stderr.contains("Available c 2.0.0, which ebpkg.toml's `^1` does not allow (locked: 1.1.0)")
            && run.stderr.contains("ebpkg add c@2.0.0"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("3.0.0-rc.1"), "pre-releases only for a pre-release: {}", run.stderr);
    sb.run(&app, &["add", "c@2"]).ok();
    let run = sb.run(&app, &["update"]).ok();
    assert!(!run.stderr.contains("Available"), "{}", run.stderr);
}

/// Resolution reads only part of each index line; a chosen version whose line is
/// damaged elsewhere (its checksum here) is left out as if skipped from the start.
#[test]
fn a_chosen_version_whose_line_is_damaged_is_left_out_and_resolved_again() {
    let sb = Sandbox::new("damaged-line");
    sb.publish_manifest("c", "1.4.0", &[]);
    sb.publish_manifest("c", "1.5.0", &[]);
    sb.publish_manifest("b", "1.0.0", &[("c", "^1")]);
    damage_checksum(&sb, "c", 1);
    let app = project(&sb, &[("b", "^1")]);
    let run = sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["b 1.0.0", "c 1.4.0"]);
    assert!(run.stderr.contains("c@1.5.0 cannot be used: line 2: not an index entry"), "{}", run.stderr);
    assert!(run.stderr.contains("resolving again without it"), "{}", run.stderr);
    // With only the damaged version acceptable, the conflict says why there is none.
    let app = project(&sb, &[("c", "=1.5.0")]);
    let run = sb.run(&app, &["lock"]).fails(3);
    assert!(run.stderr.contains("c@1.5.0 cannot be used"), "{}", run.stderr);
    // Its only version damaged, a package has an index file all the same: the registry's
    // index and listing agree, and are not said to disagree.
    sb.publish_manifest("d", "1.0.0", &[]);
    damage_checksum(&sb, "d", 0);
    let app = project(&sb, &[("d", "^1")]);
    let run = sb.run(&app, &["lock"]).fails(3);
    assert!(run.stderr.contains("d@1.0.0 cannot be used"), "{}", run.stderr);
    assert!(!run.stderr.contains("serves no index file"), "{}", run.stderr);
}

/// A damaged line is left out before anything else of the same resolution is held
/// against the lock: resolved without it, a version whose pin no longer holds may
/// not be chosen at all.
#[test]
fn a_damaged_line_is_left_out_before_a_pin_that_no_longer_holds_is_an_error() {
    let sb = Sandbox::new("damaged-then-drift");
    sb.publish_manifest("x", "1.0.0", &[]);
    sb.publish_manifest("c", "1.4.0", &[]);
    sb.publish_manifest("c", "1.5.0", &[("x", "^1")]);
    let app = project(&sb, &[("c", "^1")]);
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.5.0", "x 1.0.0"]);
    // x's locked checksum no longer matches its index line...
    let lock = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap();
    let at = lock.find("name = \"x\"").unwrap();
    let sum = at + lock[at..].find("checksum = \"").unwrap() + 12;
    let flipped = if &lock[sum..sum + 1] == "0" { "1" } else { "0" };
    std::fs::write(app.join("ebpkg.lock"), format!("{}{flipped}{}", &lock[..sum], &lock[sum + 1..])).unwrap();
    // ...and c 1.5.0, the only version that needs x, has a damaged line.
    damage_checksum(&sb, "c", 1);
    let run = sb.run(&app, &["lock"]).ok();
    assert!(run.stderr.contains("resolving again without it"), "{}", run.stderr);
    assert_eq!(locked_versions(&app), ["c 1.4.0"]);
}

#[test]
fn locked_fails_on_drift_and_the_lock_is_written_only_when_it_changes() {
    let sb = Sandbox::new("drift");
    sb.publish_manifest("c", "1.0.0", &[]);
    sb.publish_manifest("d", "2.1.0", &[]);
    let app = project(&sb, &[("c", "^1")]);
    sb.run(&app, &["lock"]).ok();
    let first = std::fs::read(app.join("ebpkg.lock")).unwrap();
    let mtime = std::fs::metadata(app.join("ebpkg.lock")).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let run = sb.run(&app, &["lock"]).ok();
    assert!(run.stderr.contains("is up to date"), "{}", run.stderr);
    assert_eq!(std::fs::read(app.join("ebpkg.lock")).unwrap(), first);
    assert_eq!(std::fs::metadata(app.join("ebpkg.lock")).unwrap().modified().unwrap(), mtime, "not rewritten");

    let app = project(&sb, &[("c", "^1"), ("d", "^2")]);
    let run = sb.run(&app, &["lock", "--locked"]).fails(4);
    assert!(run.stderr.contains("is out of date"), "{}", run.stderr);
    assert!(run.stderr.contains("+ d 2.1.0"), "{}", run.stderr);
    assert_eq!(std::fs::read(app.join("ebpkg.lock")).unwrap(), first, "--locked writes nothing");
    sb.run(&app, &["lock"]).ok();
    sb.run(&app, &["lock", "--locked"]).ok();

    // Another directory resolving the same manifest writes the same bytes.
    let other = sb.path("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(app.join("ebpkg.toml"), other.join("ebpkg.toml")).unwrap();
    sb.run(&other, &["lock"]).ok();
    assert_eq!(std::fs::read(other.join("ebpkg.lock")).unwrap(), std::fs::read(app.join("ebpkg.lock")).unwrap());
}

#[test]
fn an_unknown_package_suggests_a_close_name() {
    let sb = Sandbox::new("unknown");
    sb.publish_manifest("meter", "1.0.0", &[]);
    let app = project(&sb, &[("metr", "^1")]);
    let run = sb.run(&app, &["lock"]).fails(3);
    assert!(run.stderr.contains("app depends on `metr`, which is not in the default registry"), "{}", run.stderr);
    assert!(run.stderr.contains("did you mean `meter`?"), "{}", run.stderr);
}

/// Drops the `[[package]]` of `name` from the lockfile text, leaving its mention in
/// its dependents' lists: the hand edit the field test made.
fn drop_locked_package(dir: &std::path::Path, name: &str) -> String {
    let text = std::fs::read_to_string(dir.join("ebpkg.lock")).unwrap();
    let mut blocks: Vec<&str> = text.split("\n[[package]]\n").collect();
    blocks.retain(|b| !b.starts_with(&format!("name = \"{name}\"\n")));
    let damaged = blocks.join("\n[[package]]\n");
    std::fs::write(dir.join("ebpkg.lock"), &damaged).unwrap();
    damaged
}

/// An inconsistent lockfile is repaired by `lock`, `update` and `tree`, keeping the
/// versions it still pins, and refused only under --locked.
#[test]
fn a_damaged_lockfile_is_repaired_keeping_what_it_still_pins() {
    let sb = Sandbox::new("repairlock");
    sb.publish_manifest("sets", "1.0.0", &[]);
    sb.publish_manifest("basic", "1.0.0", &[("sets", "^1")]);
    sb.publish_manifest("other", "1.0.0", &[]);
    let app = project(&sb, &[("basic", "^1"), ("other", "^1")]);
    sb.run(&app, &["lock"]).ok();
    let good = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap();
    // Newer versions appear; the repair must keep what the lock still pins.
    sb.publish_manifest("other", "1.1.0", &[]);
    sb.publish_manifest("sets", "1.1.0", &[]);

    for command in [&["lock"][..], &["update", "other"], &["tree"]] {
        let damaged = drop_locked_package(&app, "sets");
        let run = sb.run(&app, &["lock", "--locked"]).fails(4);
        assert!(run.stderr.contains("is damaged") && run.stderr.contains("\"sets 1.0.0\""), "{}", run.stderr);
        assert_eq!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap(), damaged, "--locked writes nothing");
        let run = sb.run(&app, command).ok();
        assert!(
            run.stderr.contains("is damaged, so the dependencies are resolved again"),
            "{command:?}: {}",
            run.stderr
        );
        let versions = locked_versions(&app);
        assert!(versions.contains(&"basic 1.0.0".to_owned()), "{versions:?}");
        let other = if command[0] == "update" { "other 1.1.0" } else { "other 1.0.0" };
        assert!(versions.contains(&other.to_owned()), "{command:?}: {versions:?}");
        assert!(versions.iter().any(|v| v.starts_with("sets 1.")), "{versions:?}");
        sb.run(&app, &["lock", "--locked"]).ok();
        std::fs::write(app.join("ebpkg.lock"), &good).unwrap();
    }
    // Not even TOML: resolved from scratch.
    std::fs::write(app.join("ebpkg.lock"), "[[package\n").unwrap();
    let run = sb.run(&app, &["lock"]).ok();
    assert!(run.stderr.contains("is damaged"), "{}", run.stderr);
    sb.run(&app, &["lock", "--locked"]).ok();
}

/// With a complete lock and the archives in the cache, --offline and --frozen need
/// no registry at all.
#[test]
fn a_locked_cached_project_needs_no_registry_offline() {
    let sb = Sandbox::new("offline");
    sb.publish_manifest("sets", "1.0.0", &[]);
    sb.publish_manifest("basic", "1.0.0", &[("sets", "^1")]);
    let app = project(&sb, &[("basic", "^1")]);
    sb.run(&app, &["fetch"]).ok();
    let lock = std::fs::read(app.join("ebpkg.lock")).unwrap();
    std::fs::rename(sb.path("registry"), sb.path("registry-away")).unwrap();
    let tree = sb.run(&app, &["--offline", "tree"]).ok();
    assert_eq!(tree.stdout, "app 0.1.0\n└── basic 1.0.0\n    └── sets 1.0.0\n");
    sb.run(&app, &["--frozen", "fetch"]).ok();
    sb.run(&app, &["--frozen", "lock"]).ok();
    assert_eq!(std::fs::read(app.join("ebpkg.lock")).unwrap(), lock);
    // A manifest the lock does not satisfy needs the registry, and says so.
    let app2 = project(&sb, &[("basic", "^1"), ("sets", "^2")]);
    let run = sb.run(&app2, &["--offline", "lock"]).fails(6);
    assert!(run.stderr.contains("registry"), "{}", run.stderr);
}

/// The index file of `name` in the sandbox's registry.
fn index_file(sb: &Sandbox, name: &str) -> std::path::PathBuf {
    let mut pending = vec![sb.path("registry/index")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|n| n == name) {
                return path;
            }
        }
    }
    panic!("no index file for {name}");
}

fn resolution_caches(sb: &Sandbox) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(sb.cache.join("index")) else { return Vec::new() };
    entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "resolution")).collect()
}

/// A resolution cache file without its hash seed and table, which each writer chooses anew:
/// its records as written (where they lie included, while the table keeps its size).
fn cache_records(bytes: &[u8]) -> Vec<u8> {
    let number = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let slots_at = 12 + number(8) + 4;
    let first = slots_at + 4 + 8 + 4 * number(slots_at);
    [&bytes[..slots_at + 4], &bytes[first..]].concat()
}

/// Index files written within the last two seconds are never taken from the
/// resolution cache (a write in the same timestamp tick could go unseen).
fn let_index_files_settle() {
    std::thread::sleep(std::time::Duration::from_millis(2100));
}

/// What `kill -9` leaves while ebpkg.lock or a resolution cache is being replaced: the
/// temporary file, named for its writer's pid. The next command that writes there removes
/// it, and leaves a running writer's alone.
#[test]
fn temporaries_left_by_killed_commands_are_removed_by_the_next_write() {
    let sb = Sandbox::new("killedtmp");
    sb.publish_manifest("c", "1.0.0", &[]);
    let app = project(&sb, &[("c", "^1")]);
    let index = sb.cache.join("index");
    std::fs::create_dir_all(&index).unwrap();
    // pid_max is at most 2^22: these writers cannot be running. This test's process is.
    let killed = [app.join(".tmp-4194305-Dus3de"), index.join(".tmp-4194306-x8Kq2p")];
    let running = app.join(format!(".tmp-{}-abcdef", std::process::id()));
    for p in killed.iter().chain([&running]) {
        std::fs::write(p, b"half a lockfile").unwrap();
    }
    // (Settled, so that the resolution cache is written too.)
    let_index_files_settle();
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.0.0"]);
    let left: Vec<_> = killed.iter().filter(|p| p.exists()).collect();
    assert!(left.is_empty(), "left: {left:?}");
    assert!(running.exists(), "a running writer's temporary file was removed");
    assert_eq!(resolution_caches(&sb).len(), 1);
}

#[test]
fn a_resolution_cache_is_used_only_while_the_index_file_is_unchanged() {
    let sb = Sandbox::new("rcache");
    sb.publish_manifest("c", "1.0.0", &[]);
    sb.publish_manifest("c", "1.1.0", &[]);
    let app = project(&sb, &[("c", "^1")]);
    let_index_files_settle();
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.1.0"]);
    let caches = resolution_caches(&sb);
    assert_eq!(caches.len(), 1, "one cache for the one registry");
    let cache = std::fs::read(&caches[0]).unwrap();
    assert!(cache.windows(7).any(|w| w == b"\"1.1.0\""), "the cache holds the index file's text");
    // Warm: the same lockfile, its checksum from what the cache pinned of 1.1.0.
    let cold = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap();
    assert!(cold.contains("checksum = "), "{cold}");
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    sb.run(&app, &["lock"]).ok();
    assert_eq!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap(), cold);
    assert_eq!(std::fs::read(&caches[0]).unwrap(), cache, "nothing new learned: not rewritten");

    // Yank 1.1.0 by rewriting its line in place, keeping the file's size: a
    // cache keyed by size or name alone would go on offering it.
    let file = index_file(&sb, "c");
    let text = std::fs::read_to_string(&file).unwrap();
    let (first, second) = text.split_once('\n').unwrap();
    assert!(second.contains("\"yanked\":false"), "{second}");
    let yanked = format!("{first}\n{}", second.replace("\"yanked\":false", "\"yanked\":true "));
    assert_eq!(yanked.len(), text.len());
    std::fs::write(&file, &yanked).unwrap();
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.0.0"], "the change was seen at once");
    // And once it settled, the cache takes the new text.
    let_index_files_settle();
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.0.0"]);
    assert_ne!(std::fs::read(&caches[0]).unwrap(), cache, "the cache was rewritten with the new text");

    // A damaged cache is not used, and is replaced.
    std::fs::write(&caches[0], b"EBPKGRES\xff\xff\xff\xffgarbage").unwrap();
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.0.0"]);
    assert!(std::fs::read(&caches[0]).unwrap().len() > 100, "rewritten whole");
}

#[test]
fn a_damaged_dependency_list_in_the_cache_is_read_from_the_index_file_again_and_dropped() {
    let sb = Sandbox::new("rcachelist");
    sb.publish_manifest("b", "1.0.0", &[]);
    sb.publish_manifest("a", "1.0.0", &[("b", "^1")]);
    let app = project(&sb, &[("a", "^1")]);
    let_index_files_settle();
    sb.run(&app, &["lock"]).ok();
    let cold = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap();
    let caches = resolution_caches(&sb);
    assert_eq!(caches.len(), 1);
    // a's stored list: `b` in its own registry (0), requirement `^1`, made `^!`.
    let stored = b"\x01\x00\x00\x00b\x00\x02\x00\x00\x00^1";
    let good = std::fs::read(&caches[0]).unwrap();
    let at = good.windows(stored.len()).position(|w| w == stored).expect("a's list in the cache");
    let mut cache = good.clone();
    cache[at + stored.len() - 1] = b'!';
    // As a disk would damage it: the record's checksum no longer holds, and it is a miss
    // (read from its index file, and written again).
    std::fs::write(&caches[0], &cache).unwrap();
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    let run = sb.run(&app, &["lock"]).ok();
    assert_eq!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap(), cold, "the same resolution");
    assert!(!run.stderr.contains("damaged"), "{}", run.stderr);
    let rewritten = std::fs::read(&caches[0]).unwrap();
    assert_eq!(cache_records(&rewritten), cache_records(&good), "a's record written again from its index file");
    // With the checksum made to hold (as a writer's bug would leave it), the record still
    // loads and the list does not decode: read from the index file, with a warning.
    ebpkg_resolution_cache::reseal(&mut cache);
    std::fs::write(&caches[0], &cache).unwrap();
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    let run = sb.run(&app, &["lock"]).ok();
    assert_eq!(std::fs::read_to_string(app.join("ebpkg.lock")).unwrap(), cold, "the same resolution");
    assert!(run.stderr.contains("record of `a`") && run.stderr.contains("reading its index file"), "{}", run.stderr);
    let repaired = std::fs::read(&caches[0]).unwrap();
    assert!(repaired.windows(stored.len()).any(|w| w == stored), "a's record written again from its index file");
    // Repaired: the next lock reads it from the cache without a word.
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    let run = sb.run(&app, &["lock"]).ok();
    assert!(!run.stderr.contains("damaged"), "{}", run.stderr);
    assert_eq!(std::fs::read(&caches[0]).unwrap(), repaired);
}

/// A registry with TUF metadata is cached under the hashes its signed metadata
/// lists: at once (a hash needs no settling), a publish (re-signed) is seen by the
/// next resolution, and an index file changed without being re-signed is never
/// used — the record of the signed file is, and without one the file is refused.
#[test]
fn a_registry_with_tuf_is_cached_under_its_signed_hashes() {
    let sb = Sandbox::new("rcache-tuf");
    sb.publish_manifest("c", "1.0.0", &[]);
    let (_, _, online_key) = sb.tuf_init();
    let app = project(&sb, &[("c", "^1")]);
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.0.0"]);
    assert_eq!(resolution_caches(&sb).len(), 1, "cached at once");

    let dir = sb.path("gen/c-1.1.0");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ebpkg.toml"), "[package]\nname = \"c\"\nversion = \"1.1.0\"\n").unwrap();
    let key = online_key.to_str().unwrap();
    sb.run_with(&dir, &["publish", "--no-verify"], &[("EBPKG_TUF_ONLINE_KEY", key)], None).ok();
    sb.run(&app, &["update"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.1.0"], "the re-signed file is seen at once");

    // A version added to the file by hand, not signed.
    let file = sb.path("registry/index").join(ebpkg_spec::index_path("c"));
    let text = std::fs::read_to_string(&file).unwrap();
    let last = text.lines().last().unwrap().replace("\"1.1.0\"", "\"1.2.0\"");
    std::fs::write(&file, format!("{text}{last}\n")).unwrap();
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    sb.run(&app, &["lock"]).ok();
    assert_eq!(locked_versions(&app), ["c 1.1.0"], "the signed file's record, not the file");
    // What reads the file itself refuses it (`update` reads the direct
    // dependencies' files for newer versions), and so does a resolution without
    // the record.
    let mismatch = "does not match the registry's signed metadata";
    assert!(sb.run(&app, &["update"]).fails(10).stderr.contains(mismatch));
    for cache in resolution_caches(&sb) {
        std::fs::remove_file(cache).unwrap();
    }
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    let refused = sb.run(&app, &["lock"]).fails(10);
    assert!(refused.stderr.contains(mismatch), "{}", refused.stderr);
}
