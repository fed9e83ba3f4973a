//! The instance's clock: `hike_ktime_ns()` in programs follows what the runtime
//! sets (frozen, shifted, real).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use hike_bytecode::{Hook, asm::assemble};
use hike_runtime::{ChainSpec, Clock, ProgramObject, objects};

#[test]
fn programs_see_the_clock_the_runtime_sets() {
    let t = TestRoot::new("clock");
    assert_eq!(t.rt.clock().unwrap(), Clock::Real);
    let regs =
        t.rt.register_object(&ProgramObject {
            package: "clock",
            version: "1.0.0",
            object_name: "clocktest.bpf.c",
            elf: objects::clocktest(),
            hook: Hook::Xdp,
        })
        .unwrap();
    let now = id_of(&regs, "test_now");
    let insns = assemble(&format!("call prog {now}, 0\nexit")).unwrap();
    let chain =
        t.rt.install_chain(&ChainSpec { name: "now", owner: "t", hook: Hook::Xdp, insns: &insns, nargs: 0 }).unwrap();
    let read = || t.rt.test_run_chain(Hook::Xdp, chain, &ipv6_udp_packet(), 0).unwrap().regs[0];

    let real = read();
    assert!(real > 0);
    assert!(read() >= real, "real time goes forward");

    t.rt.set_clock(Clock::Frozen(5_000_000_000)).unwrap();
    assert_eq!(t.rt.clock().unwrap(), Clock::Frozen(5_000_000_000));
    assert_eq!(read(), 5_000_000_000);
    assert_eq!(read(), 5_000_000_000, "a frozen clock does not move");

    let day = 86_400_000_000_000i64;
    t.rt.set_clock(Clock::Offset(day)).unwrap();
    let shifted = read();
    assert!(shifted >= real + day as u64, "{shifted} vs {real}");

    t.rt.set_clock(Clock::Real).unwrap();
    let back = read();
    assert!(back < shifted && back >= real);
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
