//! The instance's clock: `hike_ktime_ns()` in programs follows what the runtime
//! sets (frozen, shifted, real).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

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
