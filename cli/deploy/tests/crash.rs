//! `kill -9` at every point of an install or uninstall, then the next run
//! recovers: before the commit the previous deployment runs and nothing new is
//! pinned; after it, the new one runs and the previous one is gone.
//!
//! The killed process is this test binary run again (`child_install`) with
//! `EBPKG_CRASH_AT`, which makes the deployer SIGKILL itself at that point.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;

use common::*;
use ebpkg_deploy::{CRASH_POINTS, Deployer, InstallOutcome};

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;

fn none(_: &ebpkg_deploy::Event) {}

/// Two namespaces' worth of veth, here one namespace holding both ends.
struct Veth {
    ns: String,
}

impl Veth {
    fn new(tag: &str) -> Veth {
        let ns = format!("ebd{tag}{}", std::process::id());
        let ip = |args: &[&str]| {
            let out = Command::new("ip").args(args).output().expect("ip (iproute2)");
            assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        };
        let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        ip(&["netns", "add", &ns]);
        ip(&["-n", &ns, "link", "add", "va", "type", "veth", "peer", "name", "vb"]);
        ip(&["-n", &ns, "link", "set", "va", "up"]);
        ip(&["-n", &ns, "link", "set", "vb", "up"]);
        Veth { ns }
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}

/// Not a test of its own: the process the crash tests kill.
#[test]
fn child_install() {
    let Ok(what) = std::env::var("EBPKG_TEST_CHILD") else { return };
    let root = PathBuf::from(std::env::var("EBPKG_TEST_ROOT").unwrap());
    let state = PathBuf::from(std::env::var("EBPKG_TEST_STATE").unwrap());
    let ns = std::env::var("EBPKG_TEST_NETNS").unwrap();
    let d = Deployer::new(&state, &root, Some(ns)).unwrap();
    match what.as_str() {
        "install" => {
            let env = Env::new("child");
            d.install(&env.plan("1.1.0", &attached_script(XDP_PASS), &[("DEVNAME", "va")]), &none).unwrap();
        }
        _ => {
            d.uninstall("app", &none).unwrap();
        }
    }
}

fn run_child(env: &Env, veth: &Veth, what: &str, point: &str) {
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_install", "--nocapture", "--test-threads=1"])
        .env("EBPKG_TEST_CHILD", what)
        .env("EBPKG_TEST_ROOT", &env.root)
        .env("EBPKG_TEST_STATE", env.state.path())
        .env("EBPKG_TEST_NETNS", &veth.ns)
        .env("EBPKG_CRASH_AT", point)
        .status()
        .unwrap();
    assert_eq!(status.signal(), Some(9), "the child was killed at {point}: {status:?}");
}

#[test]
fn an_install_killed_at_any_point_is_finished_or_undone_by_the_next_run() {
    let veth = Veth::new("k");
    let install_points: Vec<&str> = CRASH_POINTS.iter().copied().filter(|p| *p != "uninstalling").collect();
    for point in install_points {
        let env = Env::new("crash");
        let d = Deployer::new(env.state.path(), &env.root, Some(veth.ns.clone())).unwrap();
        let first = d.install(&env.plan("1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]), &none).unwrap();
        assert!(matches!(first, InstallOutcome::Installed { .. }));
        let before = env.pins();

        run_child(&env, &veth, "install", point);
        assert_eq!(d.store().journals().unwrap().len(), 1, "{point}: the journal survives the kill");

        let recovered = std::cell::RefCell::new(Vec::new());
        d.recover(&|e| recovered.borrow_mut().push(format!("{e:?}"))).unwrap();
        assert_eq!(recovered.borrow().len(), 1, "{point}: {:?}", recovered.borrow());
        assert!(d.store().journals().unwrap().is_empty());
        let status = d.status(&none).unwrap();
        assert!(status[0].running, "{point}: {:?}", status[0].problems);
        let committed = matches!(point, "committed" | "cleaned");
        if committed {
            assert_eq!(status[0].record.generation, 2, "{point}");
            assert_eq!(verdict_of(&env, "app-2-tl-test_loader"), XDP_PASS, "{point}");
            assert!(!env.root.join("loaders/app-1-tl-test_loader").exists(), "{point}");
            assert!(!env.root.join("progs/progs@1_0_0").exists(), "{point}");
        } else {
            assert_eq!(status[0].record.generation, 1, "{point}");
            assert_eq!(env.pins(), before, "{point}: nothing new is left pinned");
            assert_eq!(verdict_of(&env, "app-1-tl-test_loader"), XDP_DROP, "{point}");
        }
        let att = &status[0].record.loaders[0].attachments;
        assert_eq!((att[0].interface.as_str(), att[0].mode.as_str()), ("va", "xdp"), "{point}");

        // And the next install after a recovery works normally.
        d.install(&env.plan("1.2.0", &attached_script(XDP_PASS), &[("DEVNAME", "va")]), &none).unwrap();
        d.uninstall("app", &none).unwrap();
        assert!(!env.root.exists(), "{point}: {:?}", env.pins());
    }
}

#[test]
fn an_uninstall_killed_half_way_is_finished_by_the_next_run() {
    let veth = Veth::new("u");
    let env = Env::new("crashu");
    let d = Deployer::new(env.state.path(), &env.root, Some(veth.ns.clone())).unwrap();
    d.install(&env.plan("1.0.0", &attached_script(XDP_DROP), &[("DEVNAME", "va")]), &none).unwrap();
    run_child(&env, &veth, "uninstall", "uninstalling");
    d.recover(&none).unwrap();
    assert!(d.status(&none).unwrap().is_empty());
    assert!(!env.root.exists(), "{:?}", env.pins());
}
