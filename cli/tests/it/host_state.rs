//! The host state as `ebpkg` leaves it: interrupted `ebpkg test` runs leave no
//! root, `doctor` reports what does not agree with the records and `doctor
//! --fix` repairs it, and one project never replaces another's deployment.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;

/// Starts `ebpkg test` in a copy of first-party package `meter` and waits until
/// its temporary root exists; returns the process and the root.
fn start_test(sb: &Sandbox) -> (std::process::Child, PathBuf) {
    let pkg = sb.path("meter");
    copy_dir(&first_party()[0], &pkg);
    let mut child = sb
        .cmd(&pkg, &["test"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let root = PathBuf::from(format!("{}-test-{}", sb.root.display(), child.id()));
    let deadline = Instant::now() + Duration::from_secs(120);
    while !root.join("vm").exists() {
        assert!(child.try_wait().unwrap().is_none(), "ebpkg test ended before its root appeared");
        assert!(Instant::now() < deadline, "no temporary root {} appeared", root.display());
        std::thread::sleep(Duration::from_millis(2));
    }
    (child, root)
}

fn signal(child: &std::process::Child, sig: rustix::process::Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_raw(child.id() as i32).unwrap(), sig).unwrap();
}

/// The fixture app (flow, verdict, classify from the sandbox's registry)
/// installed on `va`.
fn installed_app(tag: &str) -> (Sandbox, PathBuf) {
    let sb = Sandbox::with_netns(tag);
    for p in ["flow", "verdict", "classify"] {
        let dir = sb.package(p);
        sb.publish(&dir);
    }
    let app = sb.package("app");
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    (sb, app)
}

#[test]
fn an_interrupted_ebpkg_test_removes_its_root_and_a_killed_one_is_cleaned_up_later() {
    require_kernel();
    let sb = Sandbox::new("tint").shared_cache();
    for sig in [rustix::process::Signal::INT, rustix::process::Signal::TERM] {
        let (mut child, root) = start_test(&sb);
        signal(&child, sig);
        let status = child.wait().unwrap();
        assert!(!status.success(), "{sig:?}: {status:?}");
        assert!(!root.exists(), "{sig:?}: {} is removed", root.display());
    }

    // kill -9 cannot be caught: the root stays, doctor says so, and --fix (or the
    // next `ebpkg test`) removes it.
    let (mut child, root) = start_test(&sb);
    signal(&child, rustix::process::Signal::KILL);
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    assert!(root.exists());
    let run = sb.run(sb.dir.path(), &["doctor"]);
    assert!(run.stdout.contains(&format!("{} was left by a process that died", root.display())), "{}", run.stdout);
    sb.run(sb.dir.path(), &["doctor", "--fix"]);
    assert!(!root.exists(), "doctor --fix removed it");
}

#[test]
fn doctor_reports_what_no_deployment_owns_and_fix_removes_it() {
    let (sb, _app) = installed_app("doc");
    let run = sb.run(sb.dir.path(), &["doctor"]);
    assert!(run.stdout.contains("1 deployment(s), consistent with the kernel"), "{}", run.stdout);

    // What a transaction whose journal was refused leaves: a chain no deployment
    // owns; and a record a killed process was writing.
    let rt = hike_runtime::Runtime::open(&sb.root).unwrap();
    let insns = [hike_bytecode::build::mov_imm(0, 0), hike_bytecode::build::exit()];
    let spec = hike_runtime::ChainSpec {
        name: "stray",
        owner: "evil#3",
        hook: hike_bytecode::Hook::Xdp,
        insns: &insns,
        nargs: 0,
    };
    let id = rt.install_chain(&spec).unwrap();
    drop(rt);
    let temp = sb.path("state/deployments/.app.json.tmp-999999999");
    std::fs::write(&temp, b"{").unwrap();

    let run = sb.run(sb.dir.path(), &["doctor"]);
    assert!(run.stdout.contains(&format!("chain stray (id {id}, owner evil#3)")), "{}", run.stdout);
    assert!(run.stdout.contains("belongs to no deployment"), "{}", run.stdout);
    assert!(run.stdout.contains("was being written by a process that died"), "{}", run.stdout);
    assert!(run.stdout.contains("`ebpkg doctor --fix` removes it"), "{}", run.stdout);

    let run = sb.run(sb.dir.path(), &["doctor", "--fix"]);
    assert!(run.stdout.contains("repaired"), "{}", run.stdout);
    assert!(!temp.exists());
    let run = sb.run(sb.dir.path(), &["doctor"]);
    assert!(run.stdout.contains("1 deployment(s), consistent with the kernel"), "{}", run.stdout);
    assert_eq!(sb.status()[0]["running"], true);
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS, "the deployment still runs");
}

#[test]
fn doctor_names_the_vm_tables_programs_can_write_in_a_root_made_before_they_were_read_only() {
    require_kernel();
    let sb = Sandbox::with_netns("oldvm").shared_cache();
    for p in ["flow", "verdict", "classify"] {
        sb.publish(&sb.package(p));
    }
    let app = sb.package("app");
    hike_runtime::Runtime::init(&sb.root, hike_runtime::InitOptions::default()).unwrap();
    let run = sb.run(sb.dir.path(), &["doctor"]);
    assert!(!run.stdout.contains("can write hike_"), "a root made now has none: {}", run.stdout);
    hike_runtime::Runtime::destroy(&sb.root).unwrap();

    hike_runtime::testing::pin_writable_chain_table(&sb.root).unwrap();
    hike_runtime::Runtime::init(&sb.root, hike_runtime::InitOptions::default()).unwrap();
    let run = sb.run(sb.dir.path(), &["doctor"]);
    let says = format!("programs of any package deployed in {} can write hike_chains", sb.root.display());
    let fix = "uninstall every deployment in it, then install them again";
    assert!(run.stdout.contains(&says), "{}", run.stdout);
    assert!(run.stdout.contains(fix), "{}", run.stdout);
    // Installing into it says so, once, with the fix; so does `status`.
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert_eq!(run.stderr.matches(&says).count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(fix), "{}", run.stderr);
    let run = sb.run(&app, &["status"]).ok();
    assert!(run.stderr.contains(&says) && run.stderr.contains(fix), "{}", run.stderr);
    sb.run(&app, &["uninstall"]).ok();
}

#[test]
fn a_project_of_the_same_name_elsewhere_does_not_replace_the_deployment() {
    let (sb, app) = installed_app("ident");
    let pins = sb.pins();

    let twin = sb.path("elsewhere/app");
    copy_dir(&app, &twin);
    let run = sb.run(&twin, &["install", "--set", "DEVNAME=va"]).fails(2);
    let app_dir = std::fs::canonicalize(&app).unwrap();
    assert!(
        run.stderr.contains(&format!("deployment `app` belongs to the project at {}", app_dir.display())),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--name app-2"), "{}", run.stderr);

    // Under its own name it still may not take the interface the other uses.
    let run = sb.run(&twin, &["install", "--name", "app-2", "--set", "DEVNAME=va"]).fails(2);
    assert!(run.stderr.contains("interface va (xdp) is used by deployment `app`"), "{}", run.stderr);
    assert_eq!(sb.pins(), pins, "the refusals changed nothing");
    assert_eq!(sb.status()[0]["generation"], 1);
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    sb.run(&app, &["uninstall"]).ok();
    assert!(!Path::new(&sb.root).exists());
}

#[test]
fn a_hike_root_another_user_could_change_is_refused_and_a_new_one_lets_no_one_in() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // Made by ebpkg: mode 0700, owned by the user running it.
    let (sb, app) = installed_app("rootsafe");
    let meta = std::fs::metadata(&sb.root).unwrap();
    assert_eq!((meta.permissions().mode() & 0o7777, meta.uid()), (0o700, 0), "{}", sb.root.display());
    sb.run(&app, &["uninstall"]).ok();

    // Another user made the root first (bpffs is often mode 1777): refused, with
    // the reason and the fix in one line, and nothing installed.
    std::fs::create_dir(&sb.root).unwrap();
    std::os::unix::fs::chown(&sb.root, Some(65534), Some(65534)).unwrap();
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).fails(7);
    assert!(run.stderr.contains("is not safe to use") && run.stderr.contains("owned by uid 65534"), "{}", run.stderr);
    assert!(run.stderr.contains("rm -r"), "{}", run.stderr);
    assert!(sb.pins().is_empty(), "{:?}", sb.pins());

    // Ours, but a directory in it others can write to: refused too. (The failed
    // install may have removed the empty directory it refused.)
    let _ = std::fs::create_dir(&sb.root);
    std::os::unix::fs::chown(&sb.root, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&sb.root, std::fs::Permissions::from_mode(0o700)).unwrap();
    let inside = sb.root.join("planted");
    std::fs::create_dir(&inside).unwrap();
    std::fs::set_permissions(&inside, std::fs::Permissions::from_mode(0o777)).unwrap();
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).fails(7);
    assert!(run.stderr.contains("planted") && run.stderr.contains("mode 777"), "{}", run.stderr);
    std::fs::remove_dir(&inside).unwrap();
    sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
}

/// The cache's line of `ebpkg doctor --json` (the one that names it "cache").
fn doctor_cache(sb: &Sandbox, args: &[&str]) -> Vec<serde_json::Value> {
    let mut all = vec!["doctor", "--json"];
    all.extend_from_slice(args);
    let run = sb.run(sb.dir.path(), &all);
    let checks: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    checks
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["name"] == "cache"
                || (c["name"] == "repaired" && c["found"].as_str().unwrap().contains(&*sb.cache.to_string_lossy()))
        })
        .cloned()
        .collect()
}

/// What ebpkg builds, links and unpacks into the cache reaches the kernel, so a
/// cache another user could write is refused like such a state directory: when
/// someone else owns it (root with a cache of the user sudo kept HOME for), when
/// others can write to it (mode 1777), and when someone else made one of its
/// directories first (`objects/`), or a file in it (`vmlinux.h`). `doctor`
/// reports each; `--fix` makes our own directories go-w, removes what others made
/// in the cache and never takes over the root of another user's. A user other than root is
/// refused root's cache the same way.
#[test]
fn a_cache_another_user_could_write_is_refused_and_doctor_reports_it() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let sb = Sandbox::new("cachesafe");
    for p in ["flow", "verdict", "classify"] {
        sb.publish(&sb.package(p));
    }
    let app = sb.package("app");
    let lock = |sb: &Sandbox| sb.run(&app, &["lock"]);
    lock(&sb).ok();
    // Made by ebpkg: mode 0700, ours.
    let meta = std::fs::metadata(&sb.cache).unwrap();
    assert_eq!((meta.permissions().mode() & 0o7777, meta.uid()), (0o700, 0));
    let ok = doctor_cache(&sb, &[]);
    assert_eq!(ok[0]["status"], "ok", "{ok:?}");

    // Another user's cache.
    std::os::unix::fs::chown(&sb.cache, Some(65534), Some(65534)).unwrap();
    let run = lock(&sb).fails(7);
    assert!(run.stderr.contains("cannot be trusted") && run.stderr.contains("owned by uid 65534"), "{}", run.stderr);
    assert!(run.stderr.contains("rm -r"), "{}", run.stderr);
    let found = doctor_cache(&sb, &["--fix"]);
    assert_eq!(found[0]["status"], "fail", "{found:?}");
    assert!(found[0]["found"].as_str().unwrap().contains("owned by uid 65534"), "{found:?}");
    assert_eq!(std::fs::metadata(&sb.cache).unwrap().uid(), 65534, "--fix never takes another user's directory");
    std::os::unix::fs::chown(&sb.cache, Some(0), Some(0)).unwrap();

    // Ours, but anyone can write to it.
    std::fs::set_permissions(&sb.cache, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let run = lock(&sb).fails(7);
    assert!(run.stderr.contains("mode 1777") && run.stderr.contains("chmod go-w"), "{}", run.stderr);
    let found = doctor_cache(&sb, &[]);
    assert!(found[0]["fix"].as_str().unwrap().contains("ebpkg doctor --fix"), "{found:?}");
    let fixed = doctor_cache(&sb, &["--fix"]);
    assert_eq!(fixed[0]["name"], "repaired", "{fixed:?}");
    assert_eq!(fixed.last().unwrap()["status"], "ok", "{fixed:?}");
    assert_eq!(std::fs::metadata(&sb.cache).unwrap().permissions().mode() & 0o7777, 0o1755);
    lock(&sb).ok();

    // A directory of the layout someone else made first.
    let objects = sb.cache.join("objects");
    let _ = std::fs::remove_dir_all(&objects);
    std::fs::create_dir(&objects).unwrap();
    std::os::unix::fs::chown(&objects, Some(65534), Some(65534)).unwrap();
    let run = sb.run(&app, &["build"]).fails(7);
    assert!(run.stderr.contains("objects") && run.stderr.contains("owned by uid 65534"), "{}", run.stderr);
    std::fs::remove_dir(&objects).unwrap();
    lock(&sb).ok();

    // Planted while the cache was open to everyone, then the cache made go-w by
    // hand: a file someone else owns is refused, at any level the layout has,
    // and `doctor --fix` removes it (and, sweeping the whole tree, what was
    // planted below the levels checked on every command).
    let vmlinux = sb.cache.join("vmlinux").join("ab".repeat(32));
    std::fs::create_dir_all(vmlinux.join("deeper/still/more")).unwrap();
    let header = vmlinux.join("vmlinux.h");
    let deep = vmlinux.join("deeper/still/more/planted.h");
    for planted in [&header, &deep] {
        std::fs::write(planted, "struct planted;").unwrap();
        std::os::unix::fs::chown(planted, Some(65534), Some(65534)).unwrap();
    }
    let run = lock(&sb).fails(7);
    assert!(run.stderr.contains("vmlinux.h") && run.stderr.contains("owned by uid 65534"), "{}", run.stderr);
    let found = doctor_cache(&sb, &[]);
    assert!(found[0]["fix"].as_str().unwrap().contains("ebpkg doctor --fix"), "{found:?}");
    std::fs::set_permissions(sb.cache.join("vmlinux"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let fixed = doctor_cache(&sb, &["--fix"]);
    assert_eq!(fixed.last().unwrap()["status"], "ok", "{fixed:?}");
    assert!(!header.exists() && !deep.exists(), "{fixed:?}");
    assert!(fixed.iter().any(|c| c["found"].as_str().unwrap().contains("uid 65534 made it")), "{fixed:?}");
    // One the caller owns that others can write is removed too: its bytes may be theirs.
    std::fs::write(&header, "struct planted;").unwrap();
    std::fs::set_permissions(&header, std::fs::Permissions::from_mode(0o666)).unwrap();
    let run = lock(&sb).fails(7);
    assert!(run.stderr.contains("vmlinux.h") && run.stderr.contains("mode 666"), "{}", run.stderr);
    let fixed = doctor_cache(&sb, &["--fix"]);
    assert_eq!(fixed.last().unwrap()["status"], "ok", "{fixed:?}");
    assert!(!header.exists(), "{fixed:?}");
    lock(&sb).ok();

    // Not root: root's cache is refused to anyone else.
    std::fs::set_permissions(sb.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = Run::from(
        std::os::unix::process::CommandExt::uid(&mut sb.cmd(&app, &["lock"]), 65534)
            .env("HOME", "/nonexistent")
            .output()
            .unwrap(),
    );
    assert_eq!(run.code, 7, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("owned by uid 0, but ebpkg runs as uid 65534"), "{}", run.stderr);
}
