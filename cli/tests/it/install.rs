//! `ebpkg install` end to end against the real kernel: a fixture project (two
//! program packages, a loader package, a chain) from a file:// registry made by
//! the test, packets through the attached loader, upgrades, failures that roll
//! back, a killed install, and uninstall.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;

/// Publishes flow 1.1.0: flow_match compares the source port instead.
fn publish_flow_1_1(sb: &Sandbox) {
    sb.publish_flow_variant("1.1.0", "dport = data + off + 2;", "dport = data + off;");
}

#[test]
fn install_runs_the_chain_upgrades_and_uninstalls_without_leftovers() {
    let (sb, app) = Sandbox::with_app_published("life");
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert!(run.stderr.contains("Registered flow@1.0.0 flow_match as program"), "{}", run.stderr);
    assert!(run.stderr.contains("Attached va to app-1-classify-l3_classifier"), "{}", run.stderr);
    assert!(app.join("ebpkg.lock").exists());
    // The cache it filled from nothing is its user's alone: every directory
    // 0700, every file 0600 (archives, keys, signatures, unpacked packages, the
    // SDK, objects, native chains, IR modules, records, index files).
    assert_private_tree(&sb.cache);

    // The attached loader's program decides as the chain says.
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    let st = sb.status();
    assert_eq!(st[0]["running"], true, "{st}");
    assert_eq!(st[0]["generation"], 1);
    let attachments = &st[0]["loaders"][0]["attachments"][0];
    assert_eq!((attachments["interface"].as_str(), attachments["mode"].as_str()), (Some("va"), Some("xdp")));
    let calls: std::collections::BTreeMap<String, u64> = st[0]["programs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(st[0]["program_calls"].as_array().unwrap())
        .map(|(p, c)| (p["name"].as_str().unwrap().to_owned(), c[1].as_u64().unwrap()))
        .collect();
    assert_eq!(calls["flow_match"], 3, "{calls:?}");
    assert_eq!(calls["hike_drop"], 1, "{calls:?}");
    assert_eq!(calls["hike_pass"], 2, "{calls:?}");

    // The counters of flow, decoded with the layout flow's manifest documents: of the
    // array's 16 slots, the two written (the 14 zero ones are counted, not listed).
    let counters = |args: &[&str]| {
        let run = sb.run(sb.dir.path(), &[&["status", "--json"], args].concat()).ok();
        let st: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        st[0]["maps"].as_array().unwrap().iter().find(|m| m["map"] == "flow_counters").unwrap().clone()
    };
    let shown = counters(&["--maps"]);
    assert_eq!(shown["entries"].as_array().unwrap().len(), 2, "{shown}");
    assert_eq!((shown["total"].as_u64(), shown["zero_entries_hidden"].as_u64()), (Some(16), Some(14)), "{shown}");
    assert_eq!(shown["entries"][0]["key"]["slot"], 0);
    assert_eq!(shown["entries"][0]["value"]["packets"], 2, "{shown}");
    assert_eq!(shown["entries"][1]["value"]["packets"], 1, "{shown}");
    let all = counters(&["--maps", "--zero-entries"]);
    assert_eq!(all["entries"].as_array().unwrap().len(), 16, "{all}");
    assert_eq!(all["zero_entries_hidden"], 0, "{all}");
    let run = sb.run(sb.dir.path(), &["status", "--maps"]).ok();
    assert!(
        run.stdout.contains(
            "  map       flow@1.0.0 flow_counters: 2 non-zero of 16 entries; 14 zero entries hidden (--zero-entries \
             shows them)\n            slot=0 -> packets=2\n            slot=1 -> packets=1\n"
        ),
        "{}",
        run.stdout
    );
    let run = sb.run(sb.dir.path(), &["status", "--maps", "--limit", "1"]).ok();
    assert!(
        run.stdout.contains(
            "flow_counters: 1 non-zero of 16 entries (raise --limit for more); 14 zero entries hidden (--zero-entries \
             shows them)\n            slot=0 -> packets=2\n"
        ),
        "{}",
        run.stdout
    );
    let run = sb.run(sb.dir.path(), &["status", "--maps", "--zero-entries", "--limit", "2"]).ok();
    // "2 of 16", not "2 entries (first 2)": the map holds 16.
    assert!(
        run.stdout.contains("  map       flow@1.0.0 flow_counters: 2 of 16 entries (raise --limit for more)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("            slot=1 -> packets=1"), "{}", run.stdout);
    // One map by name (upgrade_state.rs shows the others left out); a name no map has
    // is refused with the names there are.
    let one = sb.run(sb.dir.path(), &["status", "--map", "flow_counters"]).ok();
    assert!(one.stdout.contains(" flow_counters: 2 non-zero of 16 entries"), "{}", one.stdout);
    let none = sb.run(sb.dir.path(), &["status", "--map", "flow_countres"]).fails(1);
    assert!(
        none.stderr.contains("no deployment has a map `flow_countres` (their maps: flow_counters)"),
        "{}",
        none.stderr
    );

    // Nothing changed: nothing to do.
    let again = sb.run(&app, &["install"]).ok();
    assert!(again.stderr.contains("is up to date"), "{}", again.stderr);
    assert!(again.stderr.contains("Keeping DEVNAME=va from the current deployment"), "{}", again.stderr);

    // Upgrade: the new version loads beside the old one, then the interface switches.
    publish_flow_1_1(&sb);
    let up = sb.run(&app, &["update"]).ok();
    assert!(up.stderr.contains("Locking flow 1.1.0"), "{}", up.stderr);
    let run = sb.run(&app, &["install", "--timings"]).ok();
    // The loader stays: its entries move to the new chain, one map update each.
    assert!(
        run.stderr.contains("Keeping loader instance app-1-classify-l3_classifier (its entries rewritten in place)"),
        "{}",
        run.stderr
    );
    // Each phase, in order, and the total.
    let phases: Vec<&str> =
        run.stdout.lines().filter_map(|l| l.trim_start().rsplit_once("  ")).map(|(p, _)| p.trim()).collect();
    let want = [
        "resolve",
        "fetch",
        "kernel attestations",
        "build",
        "compile chains",
        "verify+register",
        "link+install chains",
    ];
    assert_eq!(&phases[..want.len()], want, "{}", run.stdout);
    for p in ["native", "commit", "total"] {
        assert!(phases.contains(&p), "{p}: {}", run.stdout);
    }
    assert!(run.stderr.contains("Reusing verdict@1.0.0 hike_drop"), "{}", run.stderr);
    let st = sb.status();
    assert_eq!(st[0]["generation"], 2);
    assert_eq!(st[0]["chains"][0]["tier"]["tier"], "native", "{st}");
    assert_eq!(st[0]["running"], true, "{st}");
    // 1.1.0 matches the source port 1234.
    let mut by_sport = udp4(53);
    by_sport[34..36].copy_from_slice(&9999u16.to_be_bytes());
    assert_eq!(verdict(&sb, &by_sport), XDP_DROP);
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_PASS);
    let pins = sb.pins();
    assert!(!pins.iter().any(|p| p.contains("flow@1_0_0")), "old generation left: {pins:?}");
    let rt = hike_runtime::Runtime::open(&sb.root).unwrap();
    let owners: Vec<String> = rt.status().unwrap().chains.into_iter().map(|c| c.owner).collect();
    assert_eq!(owners, ["app#2"], "the old chain is gone");
    drop(rt);

    let run = sb.run(&app, &["uninstall"]).ok();
    assert!(run.stderr.contains("Uninstalled deployment app (generation 2)"), "{}", run.stderr);
    assert!(!sb.root.exists(), "uninstall leaves no pins: {:?}", sb.pins());
    assert_eq!(sb.status(), serde_json::json!([]));
}

#[test]
fn a_program_the_verifier_refuses_rolls_back_and_names_the_line() {
    let (sb, app) = Sandbox::with_app_published("verif");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    let before = sb.pins();

    // Reads the port without checking the packet's end.
    sb.publish_flow_variant(
        "1.2.0",
        "\tif ((void *)(dport + 1) > end)\n\t\treturn hike_result(0);\n",
        "\t(void)end;\n",
    );

    sb.run(&app, &["update", "flow"]).ok();
    let run = sb.run(&app, &["install"]).fails(5);
    assert!(run.stderr.contains("the kernel verifier refused program `flow_match` of flow@1.2.0"), "{}", run.stderr);
    assert!(run.stderr.contains("at src/flow.bpf.c:"), "{}", run.stderr);
    assert!(run.stderr.contains("bpf_ntohs(*dport) == port"), "the failing line is printed: {}", run.stderr);
    assert!(run.stderr.contains("full log: "), "{}", run.stderr);
    assert_eq!(sb.pins(), before, "nothing new is pinned");
    let st = sb.status();
    assert_eq!((st[0]["generation"].as_u64(), st[0]["running"].as_bool()), (Some(1), Some(true)), "{st}");
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP, "the previous deployment still runs");
}

/// A package declaring a newer kernel than this one (`[package.kernel] min`) is
/// refused with what it needs and why, before anything is built or changed.
#[test]
fn a_kernel_older_than_a_package_needs_is_refused_before_any_build() {
    let (sb, app) = Sandbox::with_app_published("kmin");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    let before = sb.pins();
    let dir = sb.package("flow");
    let toml = std::fs::read_to_string(dir.join("ebpkg.toml"))
        .unwrap()
        .replace("version = \"1.0.0\"", "version = \"1.3.0\"")
        .replacen(
            "[[program]]",
            "[package.kernel]\nmin = \"99.0\"\nreason = \"matches with a helper from the future\"\n\n[[program]]",
            1,
        );
    std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();
    // A compile would fail, and say so: the refusal must come first.
    let src = std::fs::read_to_string(dir.join("src/flow.bpf.c")).unwrap();
    std::fs::write(dir.join("src/flow.bpf.c"), format!("{src}\n#error \"this version is never built\"\n")).unwrap();
    sb.publish(&dir);
    sb.run(&app, &["update", "flow"]).ok();
    let run = sb.run(&app, &["install"]).fails(5);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let said = format!(
        "flow@1.3.0 needs Linux ≥ 99.0: matches with a helper from the future; this kernel is {}",
        release.trim()
    );
    assert!(run.stderr.contains(&said), "{}", run.stderr);
    assert!(!run.stderr.contains("never built"), "nothing is built: {}", run.stderr);
    // `ebpkg info` says what each version needs.
    let info = sb.run(&app, &["info", "flow"]).ok();
    assert!(info.stdout.contains("kernel: Linux ≥ 99.0 (matches with a helper from the future)"), "{}", info.stdout);
    assert!(info.stdout.contains("versions: 1.0.0, 1.3.0 (Linux ≥ 99.0)"), "{}", info.stdout);
    assert_eq!(sb.pins(), before, "nothing new is pinned");
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP, "the previous deployment still runs");
}

#[test]
fn a_corrupted_archive_and_a_checksum_drift_are_refused_before_anything_changes() {
    let (sb, app) = Sandbox::with_app_published("corrupt");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    let before = sb.pins();

    // A registry whose archive was altered after publication (its index still has
    // the published checksum); the cache does not have it yet.
    publish_flow_1_1(&sb);
    sb.run(&app, &["update", "flow"]).ok();
    let lock = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap();
    let sum = lock.split("name = \"flow\"").nth(1).unwrap().split("checksum = \"").nth(1).unwrap()[..64].to_owned();
    let archive = sb.path(&format!("registry/archives/{}/{sum}.tar.gz", &sum[..2]));
    let mut bytes = std::fs::read(&archive).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0xff;
    std::fs::write(&archive, bytes).unwrap();
    let run = sb.run(&app, &["install"]).fails(6);
    assert!(run.stderr.contains("flow") && run.stderr.contains(&sum), "{}", run.stderr);
    assert_eq!(sb.pins(), before);
    assert_eq!(sb.status()[0]["generation"], 1);

    // What an attacker with write access to the registry can leave in the archive's
    // place: refused at once, without reading it, and nothing changes.
    type Plant = fn(&std::path::Path);
    let plants: [(Plant, &str); 3] = [
        (|p| std::os::unix::fs::symlink("/dev/zero", p).unwrap(), "is a character device, not a regular file"),
        (|p| assert!(std::process::Command::new("mkfifo").arg(p).status().unwrap().success()), "is a named pipe"),
        (|p| std::fs::File::create(p).unwrap().set_len(50 << 30).unwrap(), "53687091200 bytes, more than"),
    ];
    for (plant, expect) in plants {
        std::fs::remove_file(&archive).unwrap();
        plant(&archive);
        let started = std::time::Instant::now();
        let run = sb.run(&app, &["install"]).fails(6);
        assert!(run.stderr.contains(expect) && run.stderr.contains("is damaged"), "{}", run.stderr);
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "refused, not read");
        assert_eq!(sb.pins(), before);
    }

    // A lockfile whose checksum no longer matches the registry's.
    let lock = std::fs::read_to_string(app.join("ebpkg.lock")).unwrap().replace(&sum, &"ab".repeat(32));
    std::fs::write(app.join("ebpkg.lock"), lock).unwrap();
    let run = sb.run(&app, &["install"]).fails(6);
    assert!(run.stderr.contains(&"ab".repeat(32)), "{}", run.stderr);
    assert_eq!(sb.pins(), before);
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
}

#[test]
fn an_install_killed_with_sigkill_is_repaired_by_the_next_run() {
    use std::os::unix::process::ExitStatusExt;
    let (sb, app) = Sandbox::with_app_published("kill");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    let before = sb.pins();
    publish_flow_1_1(&sb);
    sb.run(&app, &["update"]).ok();
    // Before and after the kept loader's entries are rewritten, and after the commit.
    for (point, committed) in [("configuring", false), ("loaders", false), ("committed", true)] {
        let out = sb.cmd(&app, &["install"]).env("EBPKG_CRASH_AT", point).output().unwrap();
        assert_eq!(out.status.signal(), Some(9), "killed at {point}: {}", String::from_utf8_lossy(&out.stderr));
        let run = sb.run(sb.dir.path(), &["status"]).ok();
        assert!(run.stderr.contains("Recovered app:"), "{}", run.stderr);
        let st = sb.status();
        assert_eq!(st[0]["running"], true, "{st}");
        if committed {
            assert_eq!(st[0]["generation"], 2, "the rolled-back generation number is used again: {st}");
            assert_eq!(verdict(&sb, &udp4(9999)), XDP_PASS);
        } else {
            assert_eq!(st[0]["generation"], 1, "{st}");
            assert_eq!(sb.pins(), before, "rolled back to exactly the previous pins");
            assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
        }
    }
    sb.run(&app, &["uninstall"]).ok();
    assert!(!sb.root.exists());
}

#[test]
fn frozen_installs_need_an_up_to_date_lock() {
    let (sb, app) = Sandbox::with_app_published("frozen");
    let run = sb.run(&app, &["install", "--frozen", "--set", "DEVNAME=va"]).fails(4);
    assert!(run.stderr.contains("ebpkg.lock does not exist"), "{}", run.stderr);
    sb.run(&app, &["lock"]).ok();
    sb.run(&app, &["fetch"]).ok();
    // Locked and cached: the registry is not needed at all.
    std::fs::rename(sb.path("registry"), sb.path("registry-away")).unwrap();
    let run = sb.run(&app, &["install", "--frozen", "--set", "DEVNAME=va"]).ok();
    assert!(!run.stderr.contains("Resolving"), "{}", run.stderr);
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
    std::fs::rename(sb.path("registry-away"), sb.path("registry")).unwrap();

    // A failed install leaves ebpkg.lock as it was, even when it resolved a change.
    let lock = std::fs::read(app.join("ebpkg.lock")).unwrap();
    publish_flow_1_1(&sb);
    let manifest = std::fs::read_to_string(app.join("ebpkg.toml")).unwrap();
    std::fs::write(app.join("ebpkg.toml"), manifest.replace("flow = \"^1.0\"", "flow = \"^1.1\"")).unwrap();
    let run = sb.run(&app, &["install", "--set", "NOSUCH=1"]).fails(2);
    assert!(run.stderr.contains("NOSUCH"), "{}", run.stderr);
    assert_eq!(std::fs::read(app.join("ebpkg.lock")).unwrap(), lock);
    let run = sb.run(&app, &["install"]).ok();
    assert!(run.stderr.contains("Locking flow 1.1.0"), "{}", run.stderr);
    assert_ne!(std::fs::read(app.join("ebpkg.lock")).unwrap(), lock);
    sb.run(&app, &["uninstall"]).ok();
}

#[test]
fn a_chain_that_cannot_go_native_runs_interpreted_and_native_mode_refuses_it() {
    let sb = Sandbox::with_netns("natv");
    for p in ["flow", "classify"] {
        let dir = sb.package(p);
        sb.publish(&dir);
    }
    // hike_pass keeps a count in a global variable (.bss): a native program
    // would have its own copy, so the chain cannot be compiled natively.
    let dir = sb.package("verdict");
    let src = std::fs::read_to_string(dir.join("src/verdict.bpf.c"))
        .unwrap()
        .replace("HIKE_PROGRAM(hike_pass)\n{\n", "__u64 passed;\n\nHIKE_PROGRAM(hike_pass)\n{\n\tpassed++;\n");
    std::fs::write(dir.join("src/verdict.bpf.c"), src).unwrap();
    sb.publish(&dir);
    let app = sb.package("app");

    let run = sb.run(&app, &["install", "--set", "DEVNAME=va", "--chain-mode", "native"]).fails(7);
    assert!(
        run.stderr.contains("chain `guard` cannot run natively, and --chain-mode native asks for it"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("global variables (.bss)"), "{}", run.stderr);
    assert!(!sb.root.exists() || sb.status() == serde_json::json!([]), "the install was undone");

    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert!(run.stderr.contains("Interpreted chain guard"), "{}", run.stderr);
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS, "the interpreted chain runs");
    let st = sb.status();
    assert_eq!(st[0]["chains"][0]["tier"]["tier"], "interpreted", "{st}");
    assert!(st[0]["chains"][0]["tier"]["reason"].as_str().unwrap().contains(".bss"), "{st}");
    let text = sb.run(sb.dir.path(), &["status"]).ok();
    assert!(text.stdout.contains("guard (chains/guard.eclat), 1 run(s), interpreted: "), "{}", text.stdout);
    sb.run(&app, &["uninstall"]).ok();
}

/// How many times each `field` value appears in the log lines saying `event`
/// whose value contains `within`.
fn logged_per<'a>(log: &'a str, event: &str, field: &str, within: &str) -> std::collections::BTreeMap<&'a str, usize> {
    let mut out = std::collections::BTreeMap::new();
    for line in log.lines().filter(|l| l.contains(event)) {
        let value = line.split(field).nth(1).unwrap_or(line).trim();
        if value.contains(within) {
            *out.entry(value).or_default() += 1;
        }
    }
    out
}

/// One command finds the toolchain once (its package builds and its native chains
/// share a builder), reads the kernel's BTF only for packages built against the
/// kernel's own types (none here, so never), and reads each archive once.
#[test]
fn an_install_finds_the_toolchain_once_reads_no_btf_and_each_archive_once() {
    let (sb, app) = Sandbox::with_app_published("once");
    let run = sb.run_with(&app, &["install", "--set", "DEVNAME=va"], &[("EBPKG_LOG", "ebpkg_build=debug")], None).ok();
    assert!(run.stderr.contains("Compiled"), "the cache was empty, so clang ran: {}", run.stderr);
    assert_eq!(run.stderr.matches("looking for the toolchain").count(), 1, "{}", run.stderr);
    assert_eq!(run.stderr.matches("reading the running kernel's BTF").count(), 0, "{}", run.stderr);
    assert_eq!(sb.status()[0]["chains"][0]["tier"]["tier"], "native");
    sb.run(&app, &["uninstall"]).ok();

    // From the cache, each package's archive is read once (through ebpkg_fs, which
    // logs every open): checked against the lock, its signature verified and its
    // tree compared from those bytes, not read again for each.
    let log = ("EBPKG_LOG", "ebpkg_fs=trace,hike_runtime::signature=trace");
    let run = sb.run_with(&app, &["install", "--set", "DEVNAME=va"], &[log], None).ok();
    let reads = logged_per(&run.stderr, "opening to read", "path=", "/cache/archives/");
    assert_eq!(reads.len(), 3, "flow, verdict and classify: {reads:?}\n{}", run.stderr);
    assert!(reads.values().all(|n| *n == 1), "each archive read once: {reads:?}");
    // And each object's programs are parsed once (checked before anything changes,
    // then registered from what that check read).
    let parsed = logged_per(&run.stderr, "reading the HIKe programs of an object", "object=", "");
    assert!(!parsed.is_empty() && parsed.values().all(|n| *n == 1), "{parsed:?}\n{}", run.stderr);
    sb.run(&app, &["uninstall"]).ok();
}

#[test]
fn an_install_from_the_build_cache_runs_no_compiler() {
    let (sb, app) = Sandbox::with_app_published("nocc");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    sb.run(&app, &["uninstall"]).ok();

    // No clang to be had: every object (the packages' and the native chain's) must
    // come from the cache the first install filled.
    let run = sb.run_with(&app, &["install", "--set", "DEVNAME=va"], &[("EBPKG_CLANG", "/nonexistent/clang")], None);
    let run = run.ok();
    assert!(!run.stderr.contains("Compiled"), "{}", run.stderr);
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    let st = sb.status();
    assert_eq!(st[0]["chains"][0]["tier"]["tier"], "native", "the native object came from the cache too: {st}");

    // A package with something to compile says what is missing.
    sb.run(&app, &["uninstall"]).ok();
    publish_flow_1_1(&sb);
    sb.run(&app, &["update"]).ok();
    let run = sb.run_with(&app, &["install"], &[("EBPKG_CLANG", "/nonexistent/clang")], None);
    assert_ne!(run.code, 0);
    assert!(run.stderr.contains("cannot find clang") && run.stderr.contains("/nonexistent/clang"), "{}", run.stderr);
}

/// The cache files of `kind` (`o` for package objects, `native.o`,
/// `native.meta`, `ll`), by path.
/// Every directory under `root` (and `root`) is mode 0700, every file 0600.
fn assert_private_tree(root: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut todo = vec![root.to_owned()];
    let (mut dirs, mut files) = (0, 0);
    while let Some(dir) = todo.pop() {
        let mode = std::fs::symlink_metadata(&dir).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700, "{}", dir.display());
        dirs += 1;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                todo.push(path);
            } else {
                assert_eq!(meta.permissions().mode() & 0o7777, 0o600, "{}", path.display());
                files += 1;
            }
        }
    }
    assert!(dirs > 10 && files > 20, "{dirs} directories, {files} files: the install filled it");
}

fn cache_files(sb: &Sandbox, kind: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(sb.cache.join("objects")).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            let (stem, ext) = name.split_once('.').unwrap();
            if stem.len() == 64 && ext == kind {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `(package object, sha256, origin, compiler)` of every object `status --json` shows.
fn loaded_objects(st: &serde_json::Value) -> Vec<(String, String, String, String)> {
    let mut out = Vec::new();
    for p in st[0]["packages"].as_array().unwrap() {
        // (A package without objects, like the app itself, has none listed.)
        for o in p["objects"].as_array().into_iter().flatten() {
            let s = |k: &str| o[k].as_str().unwrap_or_default().to_owned();
            out.push((
                format!("{} {}", p["name"].as_str().unwrap(), s("object")),
                s("sha256"),
                s("origin"),
                s("compiler"),
            ));
        }
    }
    out
}

/// Every cached artifact that can reach the kernel — a package's object, a
/// native chain's object, its description and an IR module — replaced by
/// something valid of the same kind (as a user who could write the cache would)
/// is detected against the digest recorded when it was cached, said, and
/// rebuilt: what runs is the genuine object, as `status` shows by its digest.
#[test]
fn swapped_cache_artifacts_are_detected_rebuilt_and_never_loaded() {
    use ebpkg_spec::types::Sha256Digest;
    let (sb, app) = Sandbox::with_app_published("swap");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    let st = sb.status();
    let genuine = loaded_objects(&st);
    assert!(!genuine.is_empty(), "{st}");
    for (object, sha, origin, compiler) in &genuine {
        assert_eq!(sha.len(), 64, "{object}: {st}");
        assert_eq!(origin, "built-here", "{object}: {st}");
        assert!(compiler.contains("clang"), "{object}: {st}");
    }
    let native_insns = st[0]["chains"][0]["tier"]["insns"].clone();
    assert_eq!(st[0]["chains"][0]["tier"]["tier"], "native", "{st}");
    // The text output says the same, and the chain's tier.
    let text = sb.run(sb.dir.path(), &["status"]).ok().stdout;
    let (flow_object, flow_sha, _, _) = genuine.iter().find(|o| o.0.starts_with("flow ")).unwrap();
    let object_name = flow_object.split_once(' ').unwrap().1;
    assert!(
        text.contains(&format!("  object    flow@1.0.0 {object_name} (xdp): sha256 {flow_sha}, built here, by ")),
        "{text}"
    );
    assert!(text.contains(", native (program "), "{text}");
    let native_sha = st[0]["chains"][0]["tier"]["sha256"].as_str().unwrap().to_owned();
    assert!(text.contains(&format!(" verified, sha256 {native_sha})")), "{text}");
    sb.run(&app, &["uninstall"]).ok();

    let reinstall = |what: &str, warning: &str| {
        let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
        assert!(run.stderr.contains("does not match the digest recorded"), "{what}: {}", run.stderr);
        assert!(run.stderr.contains(warning), "{what}: {}", run.stderr);
        assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP, "{what}");
        assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS, "{what}");
        let st = sb.status();
        assert_eq!(st[0]["chains"][0]["tier"]["tier"], "native", "{what}: {st}");
        assert_eq!(st[0]["chains"][0]["tier"]["insns"], native_insns, "{what}: the genuine native program: {st}");
        assert_eq!(st[0]["chains"][0]["tier"]["sha256"], native_sha.as_str(), "{what}: {st}");
        let loaded: Vec<_> = loaded_objects(&st).into_iter().map(|(o, sha, _, _)| (o, sha)).collect();
        let want: Vec<_> = genuine.iter().map(|(o, sha, _, _)| (o.clone(), sha.clone())).collect();
        assert_eq!(loaded, want, "{what}: the genuine objects were loaded");
        sb.run(&app, &["uninstall"]).ok();
        run
    };

    // A package object: flow's, replaced by verdict's (valid BPF, other programs).
    let objects = cache_files(&sb, "o");
    let by_sha = |sha: &str| {
        objects.iter().find(|p| Sha256Digest::of(&std::fs::read(p).unwrap()).to_hex() == sha).unwrap().clone()
    };
    let flow = by_sha(flow_sha);
    let other = objects.iter().find(|p| **p != flow).unwrap();
    std::fs::copy(other, &flow).unwrap();
    let run = reinstall("a package object", "it is built again");
    assert!(run.stderr.contains("Compiled src/flow.bpf.c (xdp) of flow@1.0.0"), "{}", run.stderr);

    // The native chain's object: replaced by a package object.
    let native = cache_files(&sb, "native.o");
    assert_eq!(native.len(), 1, "{native:?}");
    std::fs::copy(other, &native[0]).unwrap();
    reinstall("a native object", "the native chain is built again");

    // Its description, claiming another entry and no steps.
    let meta = cache_files(&sb, "native.meta");
    assert_eq!(meta.len(), 1, "{meta:?}");
    std::fs::write(&meta[0], "hike_native_chain_1\n0\n").unwrap();
    reinstall("a native description", "the native chain is built again");

    // An IR module (reached when the native object must be linked again): one
    // module swapped for another.
    let modules = cache_files(&sb, "ll");
    assert!(modules.len() >= 2, "{modules:?}");
    std::fs::copy(&modules[1], &modules[0]).unwrap();
    std::fs::remove_file(&native[0]).unwrap();
    reinstall("an IR module", "the module is compiled again");
}
