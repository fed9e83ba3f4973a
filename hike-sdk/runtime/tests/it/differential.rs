//! Differential test: random valid chains give the same verdict, registers, packet
//! and scratch in the kernel's eBPF VM and in the reference interpreter.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::random;

use std::collections::HashMap;

use common::*;
use hike_bytecode::interp::{self, Memory};
use hike_bytecode::{AluOp, Hook, build};
use hike_runtime::{ChainSpec, InitOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use random::*;

#[test]
fn kernel_vm_and_reference_interpreter_agree() {
    let t = TestRoot::with("diff", InitOptions { budget: 4096 });
    let progs = t.register_vmtest(Hook::Xdp);
    let ids: HashMap<u32, String> = progs.iter().map(|r| (r.id.0, r.name.clone())).collect();
    // A helper chain for chain calls: r0 = r1 * 3 + r6 (r6 is zero in a callee).
    let helper_insns =
        vec![build::mov_reg(0, 1), build::alu_imm(AluOp::Mul, 0, 3), build::alu_reg(AluOp::Add, 0, 6), build::exit()];
    let helper = t
        .rt
        .install_chain(&ChainSpec { name: "helper", owner: "diff", hook: Hook::Xdp, insns: &helper_insns, nargs: 1 })
        .unwrap();
    let packet = ipv6_udp_packet();
    // The loader's parser writes the packet info into scratch; learn it from the kernel.
    let probe = t
        .rt
        .install_chain(&ChainSpec { name: "probe", owner: "diff", hook: Hook::Xdp, insns: &[build::exit()], nargs: 0 })
        .unwrap();
    let info = t.rt.test_run_chain(Hook::Xdp, probe, &packet, 0).unwrap().scratch;

    let mut runner = TestRunner::new(Config { cases: 160, failure_persistence: None, ..Config::default() });
    let strategy = prop::collection::vec(item(), 1..40);
    runner
        .run(&strategy, |items| {
            let insns = lower(&items, &progs, helper.0);
            let chain = t
                .rt
                .install_chain(&ChainSpec { name: "random", owner: "diff", hook: Hook::Xdp, insns: &insns, nargs: 0 })
                .map_err(|e| TestCaseError::fail(format!("generated chain was refused: {e}")))?;
            let kernel = t.rt.test_run_chain(Hook::Xdp, chain, &packet, 0).unwrap();
            t.rt.remove_chain(chain).unwrap();

            let mut chains = HashMap::new();
            chains.insert(chain.0, insns.clone());
            chains.insert(helper.0, helper_insns.clone());
            let mut memory = Memory::new(packet.clone());
            memory.scratch.copy_from_slice(&info);
            let mut host = VmTestPrograms { ids: ids.clone() };
            let reference = interp::run(&chains, &mut host, chain.0, memory, 4096);

            let listing = hike_bytecode::asm::disassemble(&insns)
                .into_iter()
                .map(|(i, t)| format!("{i:3}: {t}"))
                .collect::<Vec<_>>()
                .join("\n");
            prop_assert_eq!(
                kernel.verdict,
                verdict_of(reference.ending),
                "verdict ({:?})\n{}",
                reference.ending,
                listing
            );
            prop_assert_eq!(
                &kernel.regs[..10],
                &reference.regs[..10],
                "registers ({:?})\n{}",
                reference.ending,
                listing
            );
            prop_assert_eq!(&kernel.packet[..], &reference.memory.packet[..], "packet\n{}", listing);
            prop_assert_eq!(&kernel.scratch[..], &reference.memory.scratch[..], "scratch\n{}", listing);
            Ok(())
        })
        .unwrap();
}
