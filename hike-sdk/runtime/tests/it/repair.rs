//! What a process killed in the middle of a runtime operation leaves is settled
//! by the next `open`; counters start at zero for every new id; a root has one
//! owner.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use common::*;
use hike_bytecode::{Hook, asm::assemble};
use hike_runtime::{ChainSpec, ConfigMapSpec, LoaderObject, ProgramObject, Runtime, objects};

/// Not a test of its own: the process `killed_at` kills.
#[test]
#[ignore = "run by killed_at, in a process of its own"]
fn victim() {
    let Ok(what) = std::env::var("HIKE_TEST_VICTIM") else { return };
    let root = std::path::PathBuf::from(std::env::var("HIKE_TEST_ROOT").unwrap());
    let rt = Runtime::init(&root, hike_runtime::InitOptions::default()).unwrap();
    match what.as_str() {
        "register" => {
            register_mini(&rt);
        }
        "unregister" => {
            let id = rt.find_program("mini", "1.0.0", "test_nop", Hook::Xdp).unwrap().unwrap();
            rt.unregister_program(id).unwrap();
        }
        "loader" => {
            rt.load_loader(&LoaderObject {
                instance: "tl",
                package: "tl",
                version: "1.0.0",
                object_name: "testloader.bpf.c",
                elf: objects::testloader(Hook::Xdp),
                program: "test_loader",
                hook: Hook::Xdp,
                config_maps: vec![ConfigMapSpec { name: "test_cfg".into(), chain_offsets: vec![0] }],
            })
            .unwrap();
        }
        _ => {
            let id = rt.find_chain("c", "t").unwrap().unwrap();
            rt.remove_chain(id).unwrap();
        }
    }
}

fn register_mini(rt: &Runtime) -> Vec<hike_runtime::RegisteredProgram> {
    rt.register_object(&ProgramObject {
        package: "mini",
        version: "1.0.0",
        object_name: "mini.bpf.c",
        elf: objects::mini(),
        hook: Hook::Xdp,
    })
    .unwrap()
}

/// Runs `what` in a child killed at its crash point `point`.
fn killed_at(t: &TestRoot, what: &str, point: &str) {
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "repair::victim", "--ignored", "--nocapture", "--test-threads=1"])
        .env("HIKE_TEST_VICTIM", what)
        .env("HIKE_TEST_ROOT", &t.path)
        .env("EBPKG_CRASH_AT", point)
        .env_remove("EBPKG_CRASH_AFTER")
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(9), "{what} killed at {point}");
}

/// Every pin (file) under `root`, and every directory that is not empty.
fn tree(root: &std::path::Path) -> Vec<String> {
    fn walk(base: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                walk(base, &e.path(), out);
            } else {
                out.push(e.path().strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

#[test]
fn what_a_killed_operation_left_is_settled_by_the_next_open() {
    let t = TestRoot::new("repair");
    let clean = tree(&t.path);
    for point in ["register-dir", "register-loaded", "register-pending", "register-pinned"] {
        killed_at(&t, "register", point);
        let rt = Runtime::open(&t.path).unwrap();
        assert!(rt.status().unwrap().programs.is_empty(), "{point}: nothing registered");
        assert_eq!(tree(&t.path), clean, "{point}: no pin left");
    }
    killed_at(&t, "register", "register-in-array");
    let rt = Runtime::open(&t.path).unwrap();
    let names: Vec<String> = rt.status().unwrap().programs.iter().map(|p| p.name.clone()).collect();
    assert_eq!(names, ["test_nop"], "the program in its array was kept, the rest of the object was not");
    drop(rt);

    for point in ["unregister-out-of-array", "unregister-unpinned"] {
        killed_at(&t, "unregister", point);
        let rt = Runtime::open(&t.path).unwrap();
        assert!(rt.status().unwrap().programs.is_empty(), "{point}: unregistering is finished");
        assert_eq!(tree(&t.path), clean, "{point}: {:?}", tree(&t.path));
        // Again just test_nop, as the registration killed in the array left it.
        let regs = register_mini(&rt);
        let verdict = regs.iter().find(|r| r.name == "test_verdict").unwrap();
        rt.unregister_program(verdict.id).unwrap();
    }

    for point in ["loader-dir", "loader-loaded", "loader-pinned"] {
        killed_at(&t, "loader", point);
        let rt = Runtime::open(&t.path).unwrap();
        assert!(rt.status().unwrap().loaders.is_empty(), "{point}: a half-made loader is removed");
        assert!(!t.path.join("loaders/tl").exists(), "{point}");
    }

    let insns = assemble("r0 = 0\nexit").unwrap();
    let spec = ChainSpec { name: "c", owner: "t", hook: Hook::Xdp, insns: &insns, nargs: 0 };
    Runtime::open(&t.path).unwrap().install_chain(&spec).unwrap();
    killed_at(&t, "remove-chain", "chain-cleared");
    let rt = Runtime::open(&t.path).unwrap();
    assert!(rt.status().unwrap().chains.is_empty(), "removing the chain is finished");
}

#[test]
fn a_half_created_root_is_removed_and_created_again() {
    let t = TestRoot::new("halfinit");
    Runtime::destroy(&t.path).unwrap();
    for point in ["init-loaded", "init-pinned", "init-records", "init-configuring"] {
        killed_at(&t, "register", point);
        let err = Runtime::open(&t.path).err();
        assert!(err.is_some(), "{point}: not a root");
        let rt = Runtime::init(&t.path, hike_runtime::InitOptions::default()).unwrap();
        assert!(rt.status().unwrap().programs.is_empty(), "{point}");
        drop(rt);
        Runtime::destroy(&t.path).unwrap();
    }
}

#[test]
fn a_new_program_or_chain_counts_from_zero() {
    let t = TestRoot::new("counts");
    let regs = t.register_vmtest(Hook::Xdp);
    let nop = regs.iter().find(|r| r.name == "test_nop").unwrap().id;
    let insns = assemble(&format!("call prog {nop}, 0\nr0 = 2\nexit")).unwrap();
    let spec = ChainSpec { name: "c", owner: "t", hook: Hook::Xdp, insns: &insns, nargs: 0 };
    let chain = t.rt.install_chain(&spec).unwrap();
    t.rt.test_run_chain(Hook::Xdp, chain, &ipv6_udp_packet(), 5).unwrap();
    let s = t.rt.status().unwrap();
    assert_eq!(s.chains[0].runs, 5);
    assert_eq!(s.programs.iter().find(|p| p.id == nop).unwrap().calls, 5);

    t.rt.remove_chain(chain).unwrap();
    for r in &regs {
        t.rt.unregister_program(r.id).unwrap();
    }
    let again = t.register_vmtest(Hook::Xdp);
    assert!(again.iter().any(|r| r.id == nop), "the id is reused");
    let chain2 = t.rt.install_chain(&spec).unwrap();
    assert_eq!(chain2, chain, "the id is reused");
    let s = t.rt.status().unwrap();
    assert_eq!(s.chains[0].runs, 0, "a new chain shows no runs of the old one");
    assert!(s.programs.iter().all(|p| p.calls == 0), "{:?}", s.programs);
    t.rt.test_run_chain(Hook::Xdp, chain2, &ipv6_udp_packet(), 2).unwrap();
    assert_eq!(t.rt.status().unwrap().chains[0].runs, 2);
}

#[test]
fn a_root_has_one_owner() {
    let t = TestRoot::new("owner");
    assert_eq!(t.rt.owner().unwrap(), None);
    assert_eq!(t.rt.claim("ebpkg:/var/lib/a").unwrap(), Ok(()));
    assert_eq!(t.rt.claim("ebpkg:/var/lib/a").unwrap(), Ok(()));
    assert_eq!(t.rt.claim("ebpkg:/var/lib/b").unwrap(), Err("ebpkg:/var/lib/a".to_owned()));
    assert_eq!(Runtime::open(&t.path).unwrap().owner().unwrap().as_deref(), Some("ebpkg:/var/lib/a"));
}
