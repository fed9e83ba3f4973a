//! Installs, upgrades, failures and uninstalls against the real kernel.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use ebpkg_deploy::{DeployError, InstallOutcome, PlannedObject};
use hike_bytecode::Hook;
use hike_runtime::{Runtime, objects};

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;

fn none(_: &ebpkg_deploy::Event) {}

#[test]
fn install_reinstall_upgrade_and_uninstall_leave_nothing_behind() {
    let env = Env::new("life");
    let d = env.deployer();
    let first = match d.install(&env.plan("1.0.0", &verdict_script(XDP_DROP), &[]), &none).unwrap() {
        InstallOutcome::Installed { record, previous } => {
            assert!(previous.is_none());
            record
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(first.generation, 1);
    assert_eq!(first.loaders[0].instance, "app-1-tl-test_loader");
    assert_eq!(verdict_of(&env, "app-1-tl-test_loader"), XDP_DROP);
    let status = d.status(&none).unwrap();
    assert!(status[0].running, "{:?}", status[0].problems);
    let runs = status[0].chain_runs[0].1;
    assert!(runs >= 1, "the chain ran: {runs}");

    // Same inputs, still running: nothing to do.
    assert!(matches!(
        d.install(&env.plan("1.0.0", &verdict_script(XDP_DROP), &[]), &none).unwrap(),
        InstallOutcome::UpToDate(_)
    ));

    // An upgrade loads the new version beside the old, moves to it, and removes the old.
    let second = match d.install(&env.plan("1.1.0", &verdict_script(XDP_PASS), &[]), &none).unwrap() {
        InstallOutcome::Installed { record, previous } => {
            assert_eq!(previous.unwrap().generation, 1);
            record
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(second.generation, 2);
    // The loader stays: its entry now starts the new chain.
    assert_eq!(second.loaders[0].instance, "app-1-tl-test_loader");
    assert_eq!(verdict_of(&env, "app-1-tl-test_loader"), XDP_PASS);
    let rt = Runtime::open(&env.root).unwrap();
    let st = rt.status().unwrap();
    assert!(st.programs.iter().all(|p| p.version == "1.1.0"), "the old version is unregistered");
    assert_eq!(st.loaders.len(), 1);
    assert!(st.chains.iter().all(|c| c.owner == "app#2"));
    assert!(!env.root.join("progs/progs@1_0_0").exists());
    drop(rt);

    let removed = d.uninstall("app", &none).unwrap();
    assert_eq!(removed.generation, 2);
    assert!(!env.root.exists(), "the last deployment takes the HIKe root with it: {:?}", env.pins());
    assert!(d.status(&none).unwrap().is_empty());
    let err = d.uninstall("app", &none).unwrap_err();
    assert_eq!(err.to_string(), "no deployment named `app` (nothing is deployed)");
}

#[test]
fn a_failed_attach_rolls_back_to_the_running_deployment() {
    let env = Env::new("rb");
    let d = env.deployer();
    d.install(&env.plan("1.0.0", &verdict_script(XDP_DROP), &[]), &none).unwrap();
    let before = env.pins();
    let err =
        d.install(&env.plan("1.1.0", &attached_script(XDP_PASS), &[("DEVNAME", "nosuchdev0")]), &none).unwrap_err();
    assert!(err.to_string().contains("interface `nosuchdev0` does not exist"), "{err}");
    assert!(err.is_kernel_refusal());
    assert_eq!(env.pins(), before, "nothing new is pinned");
    assert_eq!(verdict_of(&env, "app-1-tl-test_loader"), XDP_DROP, "the previous deployment still runs");
    let status = d.status(&none).unwrap();
    assert_eq!(status[0].record.generation, 1);
    assert!(status[0].running);
    assert!(d.store().journals().unwrap().is_empty());
}

#[test]
fn a_verifier_rejection_names_the_source_line_saves_the_log_and_changes_nothing() {
    let env = Env::new("verif");
    let d = env.deployer();
    d.install(&env.plan("1.0.0", &verdict_script(XDP_DROP), &[]), &none).unwrap();
    let before = env.pins();

    let mut plan = env.plan("1.1.0", &verdict_script(XDP_PASS), &[]);
    let bad = env.files.path().join("bad.o");
    std::fs::write(&bad, objects::bad()).unwrap();
    plan.packages[0].objects.push(PlannedObject {
        path: bad,
        object_name: "bpf/test/bad.bpf.c".into(),
        hook: Hook::Xdp,
        programs: vec![],
        loaders: vec![],
        sha256: None,
        origin: None,
        compiler: None,
    });
    plan.packages[0].objects[1].programs = vec!["test_unchecked_read".into()];
    // (Declared, as every program of an object must be.)
    let mut declared = plan.packages[0].manifest.programs[1].clone();
    declared.name = ebpkg_spec::ItemName::new("test_unchecked_read").unwrap();
    plan.packages[0].manifest.programs.push(declared);
    let err = d.install(&plan, &none).unwrap_err();
    let DeployError::Verifier(v) = &err else { panic!("{err}") };
    let text = err.to_string();
    assert!(text.starts_with("the kernel verifier refused program `test_unchecked_read` of progs@1.1.0"), "{text}");
    let src = v.failure.source.as_ref().expect("the failing line");
    assert!(src.file.ends_with("bad.bpf.c"), "{src:?}");
    assert!(text.contains("data[40]"), "the line is printed: {text}");
    let log = v.log_path.as_ref().expect("the log is saved");
    assert!(std::fs::read_to_string(log).unwrap().contains("processed"), "the full log");
    assert!(text.contains(&format!("full log: {}", log.display())));
    assert!(err.is_kernel_refusal());
    assert_eq!(env.pins(), before, "nothing new is pinned");
    assert_eq!(verdict_of(&env, "app-1-tl-test_loader"), XDP_DROP);
}

#[test]
fn parameters_are_checked_before_anything_changes() {
    let env = Env::new("params");
    let d = env.deployer();
    let err = d.install(&env.plan("1.0.0", &attached_script(XDP_DROP), &[]), &none).unwrap_err();
    assert_eq!(
        err.to_string(),
        "chain script chains/main.eclat needs a value for parameter DEVNAME; give it with `--set DEVNAME=<value>` (e.g. --set DEVNAME=eth0)"
    );
    let err = d.install(&env.plan("1.0.0", &verdict_script(XDP_DROP), &[("DEVNAME", "x")]), &none).unwrap_err();
    assert_eq!(err.to_string(), "no chain script takes a parameter `DEVNAME` (they take none)");
    assert!(d.status(&none).unwrap().is_empty());
}

#[test]
fn a_program_missing_from_its_object_is_refused() {
    let env = Env::new("sig");
    let d = env.deployer();
    let mut plan = env.plan("1.0.0", &verdict_script(XDP_DROP), &[]);
    plan.packages[0].objects[0].programs.push("not_there".into());
    let err = d.install(&plan, &none).unwrap_err();
    assert!(
        err.to_string().starts_with("progs@1.0.0: its object src/vmtest.bpf.c (")
            && err.to_string().contains("lacks the program `not_there`, which ebpkg.toml builds from it"),
        "{err}"
    );
    assert!(!env.root.join("progs").read_dir().is_ok_and(|mut d| d.next().is_some()), "{:?}", env.pins());
    // Found before anything was made: no root, no journal.
    assert!(!env.root.exists(), "{:?}", env.pins());
    assert!(d.store().journals().unwrap().is_empty());
    // A loader the scripts use that was not built, likewise.
    let mut plan = env.plan("1.0.0", &verdict_script(XDP_DROP), &[]);
    plan.packages[1].objects.clear();
    assert_eq!(plan.scripts[0].artifact.loader_configs.len(), 1, "the script configures test_loader");
    let err = d.install(&plan, &none).unwrap_err();
    assert!(err.to_string().contains("loader `test_loader` was not built"), "{err}");
    assert!(!env.root.exists(), "{:?}", env.pins());
}

#[test]
fn an_object_holding_what_its_manifest_does_not_declare_is_refused() {
    let env = Env::new("undeclared");
    let d = env.deployer();
    // The test loader's object defines the map `test_cfg`: its manifest no longer declares it.
    let mut plan = env.plan("1.0.0", &verdict_script(XDP_DROP), &[]);
    plan.packages[1].manifest.loaders[0].maps.clear();
    let err = d.install(&plan, &none).unwrap_err().to_string();
    assert!(err.starts_with("tl@1.0.0: its object src/testloader.bpf.c ("), "{err}");
    assert!(err.contains("defines the map `test_cfg`, which no program or loader of ebpkg.toml declares"), "{err}");
    // A program the object defines that the manifest does not declare (test_nop, here).
    let mut plan = env.plan("1.0.0", &verdict_script(XDP_DROP), &[]);
    plan.packages[0].manifest.programs.retain(|p| p.name.as_str() != "test_nop");
    plan.packages[0].objects[0].programs.retain(|p| p != "test_nop");
    let err = d.install(&plan, &none).unwrap_err().to_string();
    assert!(err.contains("defines the program `test_nop`, which ebpkg.toml declares neither"), "{err}");
    // Found before anything was made: no root, no journal.
    assert!(!env.root.exists(), "{:?}", env.pins());
    assert!(d.store().journals().unwrap().is_empty());
}
