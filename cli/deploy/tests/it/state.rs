//! The state directory is root's alone, a journal can only undo its own
//! transaction, a root has one manager, and deployments never take each other
//! over: each refusal leaves the running deployment exactly as it was.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use common::*;
use ebpkg_deploy::journal::{Journal, Step};
use ebpkg_deploy::{DeployError, Deployer, Event};

const XDP_DROP: u32 = 1;

fn none(_: &Event) {}

fn journal_file(state: &Path, name: &str) -> std::path::PathBuf {
    state.join("journal").join(format!("{name}.json"))
}

#[test]
fn planted_journals_are_refused_and_change_nothing() {
    let ns = Netns::new("sp", &[("va", "vb")]);
    let env = Env::new("plant");
    let d = env.deployer_in(&ns.0);
    d.install(&env.plan("1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]), &none).unwrap();
    let pins = env.pins();
    let victim = d.store().record("app").unwrap().unwrap();

    // A forged journal of another deployment that would move the victim's
    // interface and remove its loader on "rollback".
    let mut forged = Journal::install("evil", 2, env.root.clone(), Some(ns.0.clone()), Some(victim.clone()));
    forged.steps.push(Step::Switch {
        interface: "va".into(),
        from: "app-1-tl-test_loader".into(),
        to: "app-1-tl-test_loader".into(),
    });
    let write = |j: &Journal, name: &str| {
        let path = journal_file(env.state.path(), name);
        std::fs::write(&path, serde_json::to_vec(j).unwrap()).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    };
    // 1. Content that does not belong to its file or its deployment.
    write(&forged, "evil");
    // 2. The victim's own name, claiming a generation the record does not have.
    let mut wrong_gen = Journal::install("app", 7, env.root.clone(), Some(ns.0.clone()), Some(victim.clone()));
    wrong_gen.steps.push(Step::LoadLoader { instance: "app-1-tl-test_loader".into() });
    write(&wrong_gen, "app");
    let events = std::cell::RefCell::new(Vec::new());
    d.recover(&|e| events.borrow_mut().push(format!("{e:?}"))).unwrap();
    let events = events.into_inner();
    assert_eq!(
        events.iter().filter(|e| e.contains("RecoveryFailed") && e.contains("moved to")).count(),
        2,
        "{events:?}"
    );
    assert!(d.store().journals().unwrap().is_empty(), "refused journals are moved away");
    assert!(env.state.path().join("journal/rejected").read_dir().unwrap().count() == 2);
    assert_eq!(env.pins(), pins, "nothing in the root changed");
    assert_eq!(verdict_of(&env, "app-1-tl-test_loader"), XDP_DROP);

    // 3. A journal written by another user, and 4. one others could have written:
    // refused before its content is even read.
    let nobody = 65534;
    let p = write(&Journal::uninstall(&victim), "app");
    std::os::unix::fs::chown(&p, Some(nobody), Some(nobody)).unwrap();
    let events = std::cell::RefCell::new(Vec::new());
    let err = d.uninstall("app", &|e| events.borrow_mut().push(format!("{e:?}"))).unwrap_err();
    assert!(matches!(err, DeployError::RejectedJournal { .. }), "{err}");
    assert!(err.to_string().contains("owned by uid 65534"), "{err}");
    let p = write(&Journal::uninstall(&victim), "app");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o666)).unwrap();
    let status = d.status(&none).unwrap();
    assert!(status[0].running, "{:?}", status[0].problems);
    assert!(!p.exists(), "the world-writable journal was moved away");
    assert_eq!(env.pins(), pins, "nothing in the root changed");
    assert_eq!(verdict_of(&env, "app-1-tl-test_loader"), XDP_DROP);
    d.uninstall("app", &none).unwrap();
}

#[test]
fn the_state_directory_is_created_private_and_refused_when_others_can_write_it() {
    // umask is per process: the part under umask 000 runs in a child.
    if std::env::var("EBPKG_TEST_UMASK_CHILD").is_ok() {
        rustix::process::umask(rustix::fs::Mode::empty());
        let dir = std::env::var("EBPKG_TEST_STATE").unwrap();
        ebpkg_deploy::Store::open(Path::new(&dir)).unwrap();
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let state = base.path().join("state");
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "state::the_state_directory_is_created_private_and_refused_when_others_can_write_it",
            "--nocapture",
        ])
        .env("EBPKG_TEST_UMASK_CHILD", "1")
        .env("EBPKG_TEST_STATE", &state)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (sub, mode) in [("", 0o755), ("deployments", 0o755), ("journal", 0o700), ("logs", 0o755)] {
        let m = std::fs::metadata(state.join(sub)).unwrap();
        assert_eq!(m.mode() & 0o777, mode, "{sub} under umask 000");
    }

    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = ebpkg_deploy::Store::open(&state).unwrap_err();
    assert!(err.to_string().contains("group or others can write to it (mode 777)"), "{err}");
    assert!(err.to_string().contains("chmod go-w"), "{err}");
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = ebpkg_deploy::Store::open(&state).unwrap_err();
    assert!(err.to_string().contains("above the state directory"), "{err}");
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    ebpkg_deploy::Store::open(&state).unwrap();
    std::os::unix::fs::chown(state.join("deployments"), Some(65534), None).unwrap();
    let err = ebpkg_deploy::Store::open(&state).unwrap_err();
    assert!(err.to_string().contains("owned by uid 65534"), "{err}");
}

#[test]
fn temporary_files_of_a_killed_process_are_removed_by_the_next_command() {
    let env = Env::new("temps");
    let d = env.deployer();
    d.install(&env.plan("1.0.0", &verdict_script(XDP_DROP), &[]), &none).unwrap();
    let state = d.store().dir().to_owned();
    // What a process killed while writing leaves (pid_max is at most 2^22, so
    // 4194305 cannot be running): an empty journal, a record, a generation being
    // assembled; and a file this process is writing, which must stay.
    let journal = state.join("journal/.tmp-4194305-Dus3de");
    let record = state.join("deployments/.tmp-4194306-x8Kq2p");
    let generation = state.join("generations/app/.tmp-4194307-2");
    let legacy = state.join("deployments/.app.json.tmp-4194308");
    let running = state.join(format!("journal/.tmp-{}-abcdef", std::process::id()));
    std::fs::create_dir_all(generation.join("objects")).unwrap();
    for p in [&journal, &record, &legacy, &running, &generation.join("objects/x.o")] {
        std::fs::write(p, b"").unwrap();
    }
    let stale = d.store().stale_temp_files();
    assert_eq!(stale, [legacy.clone(), record.clone(), generation.clone(), journal.clone()]);
    let findings = d.audit().unwrap();
    assert_eq!(findings.iter().filter(|f| f.what.contains("process that died")).count(), 4, "{findings:?}");

    d.status(&none).unwrap();
    for p in [&journal, &record, &legacy, &generation] {
        assert!(!p.exists(), "{} is left", p.display());
    }
    assert!(running.exists(), "a running process's file stays");
    assert!(d.audit().unwrap().is_empty());
    std::fs::remove_file(&running).unwrap();
    d.uninstall("app", &none).unwrap();
}

#[test]
fn a_root_has_one_state_directory_and_deployments_never_take_each_other_over() {
    let ns = Netns::new("si", &[("va", "vb"), ("vc", "vd")]);
    let env = Env::new("ident");
    let d = env.deployer_in(&ns.0);
    let mut plan = env.plan("1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]);
    plan.project_dir = Some("/srv/beta".into());
    d.install(&plan, &none).unwrap();
    let pins = env.pins();

    // Another state directory on the same root.
    let other_state = tempfile::tempdir().unwrap();
    let other = Deployer::new(other_state.path(), &env.root, Some(ns.0.clone())).unwrap();
    let err = other.install(&env.plan("1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "vc")]), &none).unwrap_err();
    assert!(matches!(err, DeployError::RootTaken { .. }), "{err}");
    assert!(err.to_string().contains(&env.state.path().canonicalize().unwrap().display().to_string()), "{err}");

    // A project of the same name in another directory.
    plan.project_dir = Some("/tmp/x/beta".into());
    let err = d.install(&plan, &none).unwrap_err();
    assert!(matches!(err, DeployError::NameTaken { .. }), "{err}");
    assert!(err.to_string().contains("/srv/beta") && err.to_string().contains("--name app-2"), "{err}");

    // Another deployment on the same interface.
    let mut second = plan_in(env.files.path(), "second", "1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]);
    second.project_dir = Some("/srv/second".into());
    let err = d.install(&second, &none).unwrap_err();
    assert!(matches!(err, DeployError::InterfaceTaken { .. }), "{err}");
    assert!(err.to_string().contains("deployment `app`") && err.to_string().contains("/srv/beta"), "{err}");
    assert_eq!(env.pins(), pins, "the refusals changed nothing");
    assert_eq!(verdict_of(&env, "app-1-tl-test_loader"), XDP_DROP);
    assert_eq!(d.store().record("app").unwrap().unwrap().generation, 1);

    // Without --netns, the deployment keeps its namespace.
    let keep = Deployer::new(env.state.path(), &env.root, None).unwrap();
    let mut upgrade = env.plan("1.1.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]);
    upgrade.project_dir = Some("/srv/beta".into());
    keep.install(&upgrade, &none).unwrap();
    assert_eq!(d.store().record("app").unwrap().unwrap().netns.as_deref(), Some(ns.0.as_str()));
    let status = keep.status(&none).unwrap();
    assert!(status[0].running, "{:?}", status[0].problems);
    d.uninstall("app", &none).unwrap();
    assert!(!env.root.exists());
}

#[test]
fn a_deleted_interface_is_reported_and_reinstalling_attaches_again() {
    let ns = Netns::new("sl", &[("va", "vb")]);
    let env = Env::new("defunct");
    let d = env.deployer_in(&ns.0);
    let plan = env.plan("1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]);
    d.install(&plan, &none).unwrap();
    let ip = |args: &[&str]| assert!(Command::new("ip").args(args).status().unwrap().success());
    ip(&["-n", &ns.0, "link", "del", "va"]);
    ip(&["-n", &ns.0, "link", "add", "va", "type", "veth", "peer", "name", "vb"]);
    let status = d.status(&none).unwrap();
    assert!(!status[0].running);
    assert!(status[0].problems.iter().any(|p| p.contains("defunct")), "{:?}", status[0].problems);
    let outcome = d.install(&plan, &none).unwrap();
    assert!(matches!(outcome, ebpkg_deploy::InstallOutcome::Installed { .. }), "not 'up to date'");
    let status = d.status(&none).unwrap();
    assert!(status[0].running, "{:?}", status[0].problems);
    d.uninstall("app", &none).unwrap();
}

#[test]
fn a_failed_first_install_leaves_no_root() {
    let env = Env::new("firstfail");
    let d = env.deployer();
    // No such interface: the attach fails after the root was created.
    let err = d.install(&env.plan("1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "nosuchif0")]), &none);
    assert!(err.is_err());
    assert!(!env.root.exists(), "{:?}", env.pins());
    assert!(d.store().journals().unwrap().is_empty());
}

#[test]
fn status_says_which_figures_are_shared() {
    let ns = Netns::new("ss", &[("va", "vb"), ("vc", "vd")]);
    let env = Env::new("shared");
    let d = env.deployer_in(&ns.0);
    d.install(&env.plan("1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]), &none).unwrap();
    let mut other = plan_in(env.files.path(), "other", "1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "vc")]);
    other.project_dir = Some("/srv/other".into());
    d.install(&other, &none).unwrap();
    let mut third = plan_in(env.files.path(), "third", "2.0.0", &verdict_script(XDP_DROP), &[]);
    third.project_dir = Some("/srv/third".into());
    d.install(&third, &none).unwrap();
    let status = d.status(&none).unwrap();
    let of = |n: &str| status.iter().find(|s| s.record.name == n).unwrap();
    assert_eq!(of("app").shared_with, ["other"], "progs@1.0.0 is registered once for both");
    assert_eq!(of("other").shared_with, ["app"]);
    assert!(of("third").shared_with.is_empty(), "progs@2.0.0 is its own");
    for n in ["app", "other", "third"] {
        d.uninstall(n, &none).unwrap();
    }
}

#[test]
fn what_a_refused_journal_left_is_reported_and_never_reused() {
    let ns = Netns::new("sr", &[("va", "vb")]);
    let env = Env::new("leftover");
    let d = env.deployer_in(&ns.0);
    d.install(&env.plan("1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]), &none).unwrap();
    // What generation 2's transaction made before its journal was refused: a
    // chain owned by app#2 and loader instance app-2-tl-test_loader.
    let rt = hike_runtime::Runtime::open(&env.root).unwrap();
    let insns = [hike_bytecode::build::mov_imm(0, 2), hike_bytecode::build::exit()];
    rt.install_chain(&hike_runtime::ChainSpec {
        name: "main",
        owner: "app#2",
        hook: hike_bytecode::Hook::Xdp,
        insns: &insns,
        nargs: 0,
    })
    .unwrap();
    rt.load_loader(&hike_runtime::LoaderObject {
        instance: "app-2-tl-test_loader",
        package: "tl",
        version: "1.0.0",
        object_name: "testloader.bpf.c",
        elf: hike_runtime::objects::testloader(hike_bytecode::Hook::Xdp),
        program: "test_loader",
        hook: hike_bytecode::Hook::Xdp,
        config_maps: vec![hike_runtime::ConfigMapSpec { name: "test_cfg".into(), chain_offsets: vec![0] }],
    })
    .unwrap();
    drop(rt);
    let findings = d.audit().unwrap();
    let what: Vec<&str> = findings.iter().map(|f| f.what.as_str()).collect();
    assert_eq!(findings.len(), 2, "{what:?}");
    assert!(what.iter().any(|w| w.contains("loader instance app-2-tl-test_loader") && w.contains("no deployment")));
    assert!(what.iter().any(|w| w.contains("chain main") && w.contains("owner app#2")));

    // The upgrade takes generation 3: nothing of the leftovers is mistaken for its own.
    d.install(&env.plan("1.1.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]), &none).unwrap();
    let record = d.store().record("app").unwrap().unwrap();
    assert_eq!(record.generation, 3);
    // (Generation 1's loader, kept: its entry moved to generation 3's chain.)
    assert_eq!(record.loaders[0].instance, "app-1-tl-test_loader");
    assert_eq!(verdict_of(&env, &record.loaders[0].instance), XDP_DROP);
    assert_eq!(d.audit().unwrap().len(), 2, "the leftovers are still reported");
    let repaired = d.repair(&none).unwrap();
    assert_eq!(repaired.done.len(), 2, "{:?}", repaired.failed);
    assert!(d.audit().unwrap().is_empty());
    assert!(d.status(&none).unwrap()[0].running);
    d.uninstall("app", &none).unwrap();
    assert!(!env.root.exists(), "{:?}", env.pins());
}
