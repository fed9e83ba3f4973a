//! hikectl against a real HIKe root: what it does is what the runtime sees.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use common::*;
use hike_bytecode::Hook;
use hike_bytecode::asm::assemble;
use hike_runtime::{ChainSpec, Clock, Runtime, objects};

#[test]
fn ids_survive_a_process_restart() {
    let t = TestRoot::new("restart");
    let dir = tempdir("restart");
    let obj = dir.join("vmtest.o");
    std::fs::write(&obj, objects::vmtest(Hook::Xdp)).unwrap();
    // Another process registers and exits.
    let out = Command::new(env!("CARGO_BIN_EXE_hikectl"))
        .args(["--root", t.path.to_str().unwrap(), "register", "--package", "p", "--version", "1.0.0"])
        .arg(&obj)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: BTreeMap<String, u32> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[1].to_owned(), f[0].parse().unwrap())
        })
        .collect();
    assert_eq!(printed.len(), 10);
    // This process sees the same ids, and the programs still run.
    let rt = Runtime::open(&t.path).unwrap();
    let status = rt.status().unwrap();
    let seen: BTreeMap<String, u32> = status.programs.iter().map(|p| (p.name.clone(), p.id.0)).collect();
    assert_eq!(seen, printed);
    let insns = assemble(&format!("call prog {}, 0\nexit", printed["test_args0"])).unwrap();
    let c = rt.install_chain(&ChainSpec { name: "c", owner: "t", hook: Hook::Xdp, insns: &insns, nargs: 0 }).unwrap();
    assert_eq!(rt.test_run_chain(Hook::Xdp, c, &ipv6_udp_packet(), 0).unwrap().regs[0], 42);
    // A second registration from another process reuses them.
    let again = Command::new(env!("CARGO_BIN_EXE_hikectl"))
        .args(["--root", t.path.to_str().unwrap(), "register", "--package", "p", "--version", "1.0.0"])
        .arg(&obj)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&again.stdout), String::from_utf8_lossy(&out.stdout));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn hikectl_freezes_and_moves_the_clock() {
    let t = TestRoot::new("clockctl");
    let hikectl = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_hikectl"))
            .args(["--root", t.path.to_str().unwrap(), "clock"])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
        )
    };
    assert_eq!(hikectl(&[]), (true, "clock real (bpf_ktime_get_ns)\n".to_owned()));
    assert_eq!(hikectl(&["freeze", "1000s"]).1, "clock frozen at 1000000000000 ns\n");
    assert_eq!(t.rt.clock().unwrap(), Clock::Frozen(1_000_000_000_000));
    hikectl(&["advance", "11s"]);
    assert_eq!(t.rt.clock().unwrap(), Clock::Frozen(1_011_000_000_000));
    hikectl(&["offset", "-1h"]);
    assert_eq!(t.rt.clock().unwrap(), Clock::Offset(-3_600_000_000_000));
    let (ok, err) = hikectl(&["freeze", "0"]);
    assert!(!ok && err.contains("after 0"), "{err}");
    assert_eq!(t.rt.clock().unwrap(), Clock::Offset(-3_600_000_000_000), "a refused change changes nothing");
    hikectl(&["real"]);
    assert_eq!(t.rt.clock().unwrap(), Clock::Real);
}
