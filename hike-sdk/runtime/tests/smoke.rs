#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;
use common::*;
use hike_bytecode::{Hook, asm::assemble};
use hike_runtime::ChainSpec;

#[test]
fn smoke() {
    let t = TestRoot::new("smoke");
    let progs = t.register_vmtest(Hook::Xdp);
    println!("{progs:#?}");
    let a4 = id_of(&progs, "test_args4");
    let insns = assemble(&format!("r1 = 1\nr2 = 2\nr3 = 3\nr4 = 4\ncall prog {a4}, 4\nexit")).unwrap();
    let id =
        t.rt.install_chain(&ChainSpec { name: "c", owner: "t", hook: Hook::Xdp, insns: &insns, nargs: 0 }).unwrap();
    let run = t.rt.test_run_chain(Hook::Xdp, id, &ipv6_udp_packet(), 0).unwrap();
    println!("{run:?}");
    println!("{:#?}", t.rt.status().unwrap());
    assert_eq!(run.regs[0], 30);
}
