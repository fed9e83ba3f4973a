//! `kill -9` at every step boundary of an install on a fresh root, an upgrade, a
//! rollback and an uninstall — the deployer's steps and every runtime step inside them — and
//! then: the next command succeeds, the other deployments on the host still
//! forward, and once the operation is completed the kernel holds exactly what a
//! clean run leaves (pins, and the programs, maps and links reachable from
//! them), with no kernel object leaked (every object made during the test is
//! reachable from a pin or freed).
//!
//! The killed process is this test binary run again (`crash::child`) with
//! `EBPKG_CRASH_AFTER=N`, which makes it SIGKILL itself at the N-th crash point
//! (`ebpkg_crashpoint`). N runs from 1 until the child finishes unkilled.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use common::*;
use ebpkg_deploy::{Deployer, Event};
use hike_runtime::{Runtime, ScratchPath};

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;

fn none(_: &Event) {}

/// Not a test of its own: the process the crash test kills.
#[test]
#[ignore = "run by the crash tests, in a process of its own"]
fn child() {
    let Ok(what) = std::env::var("EBPKG_TEST_CHILD") else { return };
    let var = |n: &str| std::env::var(n).unwrap();
    // Chains go native inside the transaction, so its tier-up steps are killed too.
    let d = Deployer::new(
        Path::new(&var("EBPKG_TEST_STATE")),
        Path::new(&var("EBPKG_TEST_ROOT")),
        Some(var("EBPKG_TEST_NETNS")),
    )
    .unwrap()
    .with_native_compiler(std::sync::Arc::new(MiniCompiler));
    match what.as_str() {
        "uninstall" => {
            d.uninstall("app", &none).unwrap();
        }
        "rollback" => {
            d.restore("app", None, false, &none).unwrap();
        }
        version => {
            let plan = plan_in(
                Path::new(&var("EBPKG_TEST_FILES")),
                "app",
                version,
                &attached_script(XDP_PASS),
                &[("DEVNAME", "va")],
            );
            d.install(&plan, &none).unwrap();
        }
    }
}

struct Child<'a> {
    what: &'a str,
    root: &'a Path,
    state: &'a Path,
    files: &'a Path,
    ns: &'a str,
}

/// Runs the child, killed at crash point `n` (None: not killed); returns whether
/// it was killed, and the points it passed.
fn run_child(c: &Child<'_>, n: Option<usize>, log: &Path) -> (bool, Vec<String>) {
    let _ = std::fs::remove_file(log);
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "crash::child", "--ignored", "--nocapture", "--test-threads=1"])
        .env("EBPKG_TEST_CHILD", c.what)
        .env("EBPKG_TEST_ROOT", c.root)
        .env("EBPKG_TEST_STATE", c.state)
        .env("EBPKG_TEST_FILES", c.files)
        .env("EBPKG_TEST_NETNS", c.ns)
        .env("EBPKG_CRASH_LOG", log)
        .env_remove("EBPKG_CRASH_AT");
    match n {
        Some(n) => cmd.env("EBPKG_CRASH_AFTER", n.to_string()),
        None => cmd.env_remove("EBPKG_CRASH_AFTER"),
    };
    let out = cmd.output().unwrap();
    let points: Vec<String> = std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(_, p)| p.to_owned()))
        .collect();
    if out.status.signal() == Some(9) {
        return (true, points);
    }
    assert!(
        out.status.success(),
        "child {} failed: {}\n{}",
        c.what,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (false, points)
}

#[derive(Clone, Copy, Debug)]
enum Scenario {
    /// Install on a root that does not exist yet.
    FreshInstall,
    /// Replace generation 1 (progs@1.0.0) with progs@1.1.0 on a root shared with
    /// another deployment using progs@1.0.0.
    Upgrade,
    /// Remove the app from that shared root.
    Uninstall,
    /// On that root, after the upgrade: install generation 1 again from its saved copy.
    Rollback,
}

// One test per operation, each with a host of its own (namespace, roots, state
// directories, bystanders), so that the four run in parallel. Each reaches at
// least the given number of crash points (39, 29, 24 and 6 when this was written;
// together more than 80, as when they were one test).

#[test]
fn a_crash_at_every_step_of_a_fresh_install_is_repaired_by_the_next_command() {
    crash_at_every_step(Scenario::FreshInstall, 33);
}

#[test]
fn a_crash_at_every_step_of_an_upgrade_is_repaired_by_the_next_command() {
    crash_at_every_step(Scenario::Upgrade, 25);
}

#[test]
fn a_crash_at_every_step_of_a_rollback_is_repaired_by_the_next_command() {
    crash_at_every_step(Scenario::Rollback, 20);
}

#[test]
fn a_crash_at_every_step_of_an_uninstall_is_repaired_by_the_next_command() {
    crash_at_every_step(Scenario::Uninstall, 5);
}

/// Every crash point of `scenario` (at least `min_points`), each killed once;
/// between the kernel work (`kernel::shared`), the leak checks (which wait for
/// the other tests of this process to be between steps).
fn crash_at_every_step(scenario: Scenario, min_points: usize) {
    require_kernel();
    let kernel_work = kernel::shared();
    // va/vb: the app; vc/vd: a bystander in another root and state directory;
    // vx/vy: a bystander sharing the app's root and state directory.
    let veth = Netns::new(&format!("crash{}", scenario as u8), &[("va", "vb"), ("vc", "vd"), ("vx", "vy")]);
    let files = tempfile::tempdir().unwrap();
    let logdir = tempfile::tempdir().unwrap();
    let log = logdir.path().join("points");
    let state = tempfile::tempdir().unwrap();
    let other_state = tempfile::tempdir().unwrap();
    let bpffs = Path::new("/sys/fs/bpf");
    let guards =
        ["ebpkg-crash-shared", "ebpkg-crash-fresh", "ebpkg-crash-other"].map(|r| ScratchPath::unique(bpffs, r));
    let [shared_root, fresh_root, other_root] = guards.each_ref().map(|g| g.path().to_owned());
    let ns = Some(veth.0.clone());
    let baseline = kernel::baseline();

    // Bystanders: one in another root and state directory, one sharing the app's
    // root, state directory and program version.
    let other = Deployer::new(other_state.path(), &other_root, ns.clone()).unwrap();
    other
        .install(&plan_in(files.path(), "other", "0.9.0", &attached_script(XDP_DROP), &[("DEVNAME", "vc")]), &none)
        .unwrap();
    let shared = Deployer::new(state.path(), &shared_root, ns.clone())
        .unwrap()
        .with_native_compiler(std::sync::Arc::new(MiniCompiler));
    shared
        .install(&plan_in(files.path(), "shared", "1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "vx")]), &none)
        .unwrap();
    let fresh = Deployer::new(state.path(), &fresh_root, ns.clone())
        .unwrap()
        .with_native_compiler(std::sync::Arc::new(MiniCompiler));
    let bystanders_forward = |when: &str| {
        assert_eq!(verdict_in(&other_root, "other-1-tl-test_loader"), XDP_DROP, "{when}: the other root's deployment");
        assert_eq!(
            verdict_in(&shared_root, "shared-1-tl-test_loader"),
            XDP_DROP,
            "{when}: the shared root's deployment"
        );
        for (d, name) in [(&other, "other"), (&shared, "shared")] {
            let s = d.status(&none).unwrap();
            let s = s.iter().find(|s| s.record.name == name).unwrap();
            assert!(s.running, "{when}: {name} runs: {:?}", s.problems);
        }
    };
    let app_v1 = |d: &Deployer| {
        d.install(&plan_in(files.path(), "app", "1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]), &none)
            .unwrap();
    };

    let (root, d, what) = match scenario {
        Scenario::FreshInstall => (&fresh_root, &fresh, "1.1.0"),
        Scenario::Upgrade => (&shared_root, &shared, "1.1.0"),
        Scenario::Uninstall => (&shared_root, &shared, "uninstall"),
        Scenario::Rollback => (&shared_root, &shared, "rollback"),
    };
    let child = Child { what, root, state: state.path(), files: files.path(), ns: &veth.0 };
    let prepare = || {
        if !matches!(scenario, Scenario::FreshInstall) {
            app_v1(d);
        }
        if matches!(scenario, Scenario::Rollback) {
            let plan = plan_in(files.path(), "app", "1.1.0", &attached_script(XDP_PASS), &[("DEVNAME", "va")]);
            d.install(&plan, &none).unwrap();
        }
    };
    let complete = || match scenario {
        Scenario::Rollback => {
            if d.store().record("app").unwrap().unwrap().restores.is_none() {
                d.restore("app", None, false, &none).unwrap();
            }
            let record = d.store().record("app").unwrap().unwrap();
            assert_eq!(record.restores, Some(1), "generation 1 runs again");
            assert_eq!(verdict_in(root, &record.loaders[0].instance), XDP_DROP);
        }
        Scenario::Uninstall => {
            if d.store().record("app").unwrap().is_some() {
                d.uninstall("app", &none).unwrap();
            }
        }
        _ => {
            let plan = plan_in(files.path(), "app", "1.1.0", &attached_script(XDP_PASS), &[("DEVNAME", "va")]);
            d.install(&plan, &none).unwrap();
            // An upgrade keeps generation 1's loader, its entry moved to the new chain.
            let record = d.store().record("app").unwrap().unwrap();
            assert_eq!(record.loaders[0].instance, "app-1-tl-test_loader");
            assert_eq!(verdict_in(root, &record.loaders[0].instance), XDP_PASS);
        }
    };
    let reset = || {
        if d.store().record("app").unwrap().is_some() {
            d.uninstall("app", &none).unwrap();
        }
    };

    // The clean run: what every crashed run must end as, and how many points.
    // The objects a leak could be are those of the deployments before and after
    // the operation, by name.
    prepare();
    let mut names: BTreeSet<String> = kernel::shape(root).into_keys().collect();
    let (killed, points) = run_child(&child, None, &log);
    assert!(!killed);
    assert!(points.len() >= min_points, "{scenario:?}: the crash points are reached: {points:?}");
    if !matches!(scenario, Scenario::Uninstall) {
        assert!(points.iter().any(|p| p == "native-installed"), "{scenario:?}: the chain went native: {points:?}");
    }
    let want_pins = pins_under(root);
    let want_shape = kernel::shape(root);
    names.extend(want_shape.keys().cloned());
    names.extend(kernel::shape(&other_root).keys().cloned());
    reset();
    drop(kernel_work);

    for n in 1..=points.len() {
        let at = format!("{scenario:?}, killed at point {n} ({})", points[n - 1]);
        let kernel_work = kernel::shared();
        prepare();
        let (killed, _) = run_child(&child, Some(n), &log);
        assert!(killed, "{at}: the child was killed");

        // The next command succeeds and repairs everything, and no one else
        // noticed.
        let events = std::cell::RefCell::new(Vec::new());
        let status = d.status(&|e| events.borrow_mut().push(format!("{e:?}"))).unwrap();
        assert!(!events.borrow().iter().any(|e| e.contains("RecoveryFailed")), "{at}: {:?}", events.borrow());
        assert!(d.store().journals().unwrap().is_empty(), "{at}: the journal is settled");
        for s in &status {
            assert!(s.running, "{at}: {} runs after recovery: {:?}", s.record.name, s.problems);
        }
        bystanders_forward(&at);

        // Completing the operation ends where the clean run ended.
        complete();
        assert_eq!(pins_under(root), want_pins, "{at}: the pins equal a clean run's");
        assert_eq!(kernel::shape(root), want_shape, "{at}: the kernel objects equal a clean run's");
        drop(kernel_work);
        let leaked = kernel::leaks(&baseline, &names, &[&shared_root, &fresh_root, &other_root]);
        assert!(leaked.is_empty(), "{at}: leaked kernel objects: {leaked:?}");
        let _kernel_work = kernel::shared();
        bystanders_forward(&at);
        reset();
    }

    let kernel_work = kernel::shared();
    shared.uninstall("shared", &none).unwrap();
    other.uninstall("other", &none).unwrap();
    for r in [&shared_root, &fresh_root, &other_root] {
        assert!(!r.exists(), "{} is removed with its last deployment: {:?}", r.display(), pins_under(r));
    }
    drop(kernel_work);
    let leaked = kernel::leaks(&baseline, &names, &[]);
    assert!(leaked.is_empty(), "leaked kernel objects after everything was uninstalled: {leaked:?}");
}

/// Runs a packet through a loader instance in `root`.
fn verdict_in(root: &Path, instance: &str) -> u32 {
    let rt = Runtime::open(root).unwrap();
    rt.test_run_loader(instance, &packet(), 0).unwrap().verdict
}
