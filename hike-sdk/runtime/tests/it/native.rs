//! Native chains against the VM: random valid chains (the differential tests'
//! generator) run interpreted and then native on several packets must give the
//! same verdict, registers, packet, scratch and counters; a packet with too
//! little budget falls back to the VM; removing the chain removes its native
//! program.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;
use crate::random;

use std::collections::BTreeMap;

use common::*;
use hike_bytecode::{AbortReason, AluOp, Hook, Insn, build};
use hike_runtime::native_testing::TestNative;
use hike_runtime::{ChainSpec, Counters, InitOptions, RegisteredProgram, Runtime};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use random::*;

/// The test programs' module and each program's (module, name).
fn native_for(progs: &[RegisteredProgram]) -> (TestNative, BTreeMap<u32, (usize, String)>) {
    let mut native = TestNative::new(Hook::Xdp).expect("clang with llvm-link and opt of its version");
    let m = native.add_module("test/vmtest.bpf.c", "hike-test", "0.0.0").unwrap();
    (native, progs.iter().map(|p| (p.id.0, (m, p.name.clone()))).collect())
}

fn packets() -> Vec<Vec<u8>> {
    let v6 = ipv6_udp_packet();
    let mut v4 = vec![0u8; 60];
    v4[12] = 0x08;
    v4[14] = 0x45;
    v4[23] = 17;
    let short = v6[..20].to_vec();
    vec![v6, v4, short]
}

/// What a run changed in the counters: (id, increase) of program calls and of
/// chain runs, and the increase of each abort reason.
type Delta = (Vec<(usize, u64)>, Vec<(usize, u64)>, Vec<u64>);

fn delta(before: &Counters, after: &Counters) -> Delta {
    let diff = |a: &[u64], b: &[u64]| -> Vec<(usize, u64)> {
        b.iter().zip(a).enumerate().filter(|(_, (b, a))| b != a).map(|(i, (b, a))| (i, b - a)).collect()
    };
    let aborts = after.aborts.iter().zip(&before.aborts).map(|(a, b)| a - b).collect();
    (diff(&before.prog_calls, &after.prog_calls), diff(&before.chain_runs, &after.chain_runs), aborts)
}

#[test]
fn native_chains_agree_with_the_vm() {
    let t = TestRoot::with("native", InitOptions { budget: 4096 });
    let progs = t.register_vmtest(Hook::Xdp);
    let (native, symbols) = native_for(&progs);
    let helper_insns =
        vec![build::mov_reg(0, 1), build::alu_imm(AluOp::Mul, 0, 3), build::alu_reg(AluOp::Add, 0, 6), build::exit()];
    let helper = t
        .rt
        .install_chain(&ChainSpec { name: "helper", owner: "native", hook: Hook::Xdp, insns: &helper_insns, nargs: 1 })
        .unwrap();
    let packets = packets();
    let mut runner = TestRunner::new(Config { cases: 40, failure_persistence: None, ..Config::default() });
    runner
        .run(&prop::collection::vec(item(), 1..40), |items| {
            let insns = lower(&items, &progs, helper.0);
            let chain = t
                .rt
                .install_chain(&ChainSpec { name: "random", owner: "native", hook: Hook::Xdp, insns: &insns, nargs: 0 })
                .map_err(|e| TestCaseError::fail(format!("generated chain was refused: {e}")))?;
            let listing = hike_bytecode::asm::disassemble(&insns)
                .into_iter()
                .map(|(i, t)| format!("{i:3}: {t}"))
                .collect::<Vec<_>>()
                .join("\n");
            let run_all = || {
                packets
                    .iter()
                    .map(|p| {
                        let before = t.rt.counters().unwrap();
                        let run = t.rt.test_run_chain(Hook::Xdp, chain, p, 0).unwrap();
                        let after = t.rt.counters().unwrap();
                        let native = pc_after(&t.rt, run.cpu) == 0;
                        (
                            native,
                            (run.verdict, run.regs[..10].to_vec(), run.packet, run.scratch, delta(&before, &after)),
                        )
                    })
                    .collect::<Vec<_>>()
            };
            let interpreted = run_all();
            let chains: BTreeMap<u32, Vec<Insn>> =
                [(chain.0, insns.clone()), (helper.0, helper_insns.clone())].into_iter().collect();
            if let Err(e) = native.install(&t.rt, chain, &chains, &symbols) {
                // Sequential long loops unfold past the limit: such a chain
                // stays interpreted, which is what this says.
                prop_assert!(e.contains("stays interpreted"), "{}\n{}", e, listing);
                t.rt.remove_chain(chain).unwrap();
                return Ok(());
            }
            prop_assert!(t.rt.native_of(chain).unwrap().is_some());
            let compiled = run_all();
            t.rt.remove_chain(chain).unwrap();
            for (i, ((vm_ran_native, vm), (native_ran, nat))) in interpreted.iter().zip(&compiled).enumerate() {
                prop_assert!(!vm_ran_native && *native_ran, "packet {}: the wrong tier ran", i);
                prop_assert_eq!(vm, nat, "packet {}\n{}", i, listing);
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn too_little_budget_falls_back_to_the_vm_and_removal_clears_the_slot() {
    // 16 instructions of budget; the chain needs 21 on its only path.
    let t = TestRoot::with("native-budget", InitOptions { budget: 16 });
    let progs = t.register_vmtest(Hook::Xdp);
    let (native, symbols) = native_for(&progs);
    let mut insns = vec![build::mov_imm(1, 5), build::call_prog(id_of(&progs, "test_args1"), 1)];
    insns.extend((0..18).map(|_| build::alu_imm(AluOp::Add, 0, 1)));
    insns.push(build::exit());
    let chain =
        t.rt.install_chain(&ChainSpec { name: "long", owner: "native", hook: Hook::Xdp, insns: &insns, nargs: 0 })
            .unwrap();
    let chains: BTreeMap<u32, Vec<Insn>> = [(chain.0, insns.clone())].into_iter().collect();
    let packet = ipv6_udp_packet();
    let vm = t.rt.test_run_chain(Hook::Xdp, chain, &packet, 0).unwrap();
    native.install(&t.rt, chain, &chains, &symbols).unwrap();
    assert!(t.rt.native_of(chain).unwrap().is_some(), "a native program in the slot");
    let before = t.rt.counters().unwrap();
    let nat = t.rt.test_run_chain(Hook::Xdp, chain, &packet, 0).unwrap();
    let after = t.rt.counters().unwrap();
    assert_ne!(pc_after(&t.rt, nat.cpu), 0, "the VM ran the packet with too little budget");
    assert_eq!((nat.verdict, &nat.regs[..10]), (vm.verdict, &vm.regs[..10]));
    assert_eq!(after.aborted(AbortReason::Budget) - before.aborted(AbortReason::Budget), 1, "aborted for its budget");

    // With the budget it needs, the native program runs it to the end.
    t.rt.set_budget(4096).unwrap();
    let full = t.rt.test_run_chain(Hook::Xdp, chain, &packet, 0).unwrap();
    assert_eq!((full.verdict, full.regs[0]), (2, 6 + 18));
    assert_eq!(pc_after(&t.rt, full.cpu), 0, "the native program ran it");
    t.rt.remove_chain(chain).unwrap();
    let again = t
        .rt
        .install_chain(&ChainSpec { name: "next", owner: "native", hook: Hook::Xdp, insns: &[build::exit()], nargs: 0 })
        .unwrap();
    assert_eq!(again, chain, "the id is reused");
    assert_eq!(t.rt.native_of(again).unwrap(), None, "and its slot is empty");
}

/// The VM's pc after a run on `cpu`: the VM moves it with every instruction
/// (so it is at least 1 after any interpreted run), a native program never
/// touches it (the loader sets it to 0). How a test knows which one ran.
fn pc_after(rt: &Runtime, cpu: usize) -> u32 {
    let states = rt.raw_states().unwrap();
    hike_runtime::abi::u32_at(&states[cpu], hike_runtime::abi::state::PC)
}

#[test]
fn loops_run_natively_and_stop_where_the_vm_does() {
    let t = TestRoot::new("native-loops");
    let progs = t.register_vmtest(Hook::Xdp);
    let (native, symbols) = native_for(&progs);
    let args1 = id_of(&progs, "test_args1");
    let packet = ipv6_udp_packet();
    // Countdowns: 10 iterations calling a program end; 600 call-free ones reach
    // the VM's tail-call limit through its continuations, 40 calling a program
    // through the calls themselves.
    for (n, calls, aborts) in [(10, true, false), (600, false, true), (40, true, true)] {
        let mut insns = vec![build::mov_imm(6, n), build::mov_imm(1, 0)];
        if calls {
            insns.push(build::call_prog(args1, 1));
            insns.push(build::mov_reg(1, 0));
        }
        insns.push(build::alu_imm(AluOp::Sub, 6, 1));
        let back = -(insns.len() as i16 - 2) - 1;
        insns.push(build::jmp_imm(hike_bytecode::Cond::Ne, 6, 0, back));
        insns.push(build::exit());
        let chain =
            t.rt.install_chain(&ChainSpec { name: "loop", owner: "native", hook: Hook::Xdp, insns: &insns, nargs: 0 })
                .unwrap();
        let before = t.rt.counters().unwrap();
        let vm = t.rt.test_run_chain(Hook::Xdp, chain, &packet, 0).unwrap();
        let mid = t.rt.counters().unwrap();
        let chains: BTreeMap<u32, Vec<Insn>> = [(chain.0, insns.clone())].into_iter().collect();
        native.install(&t.rt, chain, &chains, &symbols).unwrap();
        let nat = t.rt.test_run_chain(Hook::Xdp, chain, &packet, 0).unwrap();
        let after = t.rt.counters().unwrap();
        assert_eq!(pc_after(&t.rt, nat.cpu), 0, "n = {n}: the native program ran it");
        assert_eq!((vm.verdict, &vm.regs[..10]), (nat.verdict, &nat.regs[..10]), "n = {n}");
        assert_eq!(delta(&before, &mid), delta(&mid, &after), "n = {n}: the same calls, runs and aborts");
        let limit = hike_bytecode::AbortReason::CallLimit as usize;
        assert_eq!(after.aborts[limit] - mid.aborts[limit], u64::from(aborts), "n = {n}");
        t.rt.remove_chain(chain).unwrap();
    }
}

#[test]
fn tiering_up_and_down_under_traffic_drops_no_packet() {
    use std::sync::Arc;

    let t = Arc::new(TestRoot::new("native-live"));
    let progs = t.register_vmtest(Hook::Xdp);
    let (native, symbols) = native_for(&progs);
    let verdict = id_of(&progs, "test_verdict");
    t.load_test_loader("live", Hook::Xdp);
    // Chains told apart by their verdicts (DROP, TX), each also native.
    let body = |v: i32| vec![build::mov_imm(1, v), build::mov_imm(6, 7), build::call_prog(verdict, 1), build::exit()];
    fn spec(insns: &[Insn]) -> ChainSpec<'_> {
        ChainSpec { name: "c", owner: "native", hook: Hook::Xdp, insns, nargs: 0 }
    }
    let first = body(1);
    let mut current = t.rt.install_chain(&spec(&first)).unwrap();
    t.point_test_loader("live", current);

    let traffic = Traffic::start(&t, "live");
    for i in 0..12 {
        // Up: the chain's native program into its slot; down again; then a new
        // chain (the other verdict) in the loader's entry, which goes native too.
        let insns = t.rt.chain_insns(current).unwrap().unwrap().0;
        let chains: BTreeMap<u32, Vec<Insn>> = [(current.0, insns)].into_iter().collect();
        native.install(&t.rt, current, &chains, &symbols).unwrap();
        if i % 3 == 0 {
            t.rt.remove_native(current).unwrap();
        }
        let next = body(if i % 2 == 0 { 3 } else { 1 });
        current = t.rt.replace_chain(current, &spec(&next)).unwrap();
    }
    let seen = traffic.stop();
    assert!(seen.keys().all(|v| *v == 1 || *v == 3), "only the chains' verdicts: {seen:?}");
    assert!(seen.values().sum::<u64>() > 0, "{seen:?}");
    let counters = t.rt.counters().unwrap();
    assert!(counters.aborts.iter().all(|n| *n == 0), "no packet aborted: {:?}", counters.aborts);
}

#[test]
fn chains_past_the_direct_ids_are_dispatched_indirectly() {
    let t = TestRoot::new("native-ids");
    let progs = t.register_vmtest(Hook::Xdp);
    let (native, symbols) = native_for(&progs);
    let insns = vec![build::mov_imm(1, 41), build::call_prog(id_of(&progs, "test_args1"), 1), build::exit()];
    let spec = ChainSpec { name: "c", owner: "native", hook: Hook::Xdp, insns: &insns, nargs: 0 };
    // Ids 1..=31 get constant-key tail calls from the loader; 32 and up an indirect one.
    let ids: Vec<_> = (0..33).map(|_| t.rt.install_chain(&spec).unwrap()).collect();
    let packet = ipv6_udp_packet();
    for id in [ids[0], ids[30], ids[31], ids[32]] {
        let chains: BTreeMap<u32, Vec<Insn>> = [(id.0, insns.clone())].into_iter().collect();
        native.install(&t.rt, id, &chains, &symbols).unwrap();
        let run = t.rt.test_run_chain(Hook::Xdp, id, &packet, 0).unwrap();
        assert_eq!((run.verdict, run.regs[0]), (2, 42), "chain {id}");
        assert_eq!(pc_after(&t.rt, run.cpu), 0, "chain {id} ran natively");
    }
    assert!(ids[32].0 >= 32);
}

#[test]
fn tc_chains_go_native_too() {
    let t = TestRoot::new("native-tc");
    let progs = t.register_vmtest(Hook::Tc);
    let mut native = TestNative::new(Hook::Tc).expect("clang with llvm-link and opt of its version");
    let m = native.add_module("test/vmtest.bpf.c", "hike-test", "0.0.0").unwrap();
    let symbols: BTreeMap<u32, (usize, String)> = progs.iter().map(|p| (p.id.0, (m, p.name.clone()))).collect();
    // r0 = 6 * 7, stored into the packet's first byte, then verdict 2 (TC_ACT_SHOT).
    let insns = vec![
        build::mov_imm(1, 6),
        build::mov_imm(2, 7),
        build::call_prog(id_of(&progs, "test_args2"), 2),
        build::mov_imm(9, 0),
        build::store(hike_bytecode::Size::B, hike_bytecode::Bank::Packet, 9, 0, 0),
        build::mov_imm(1, 2),
        build::call_prog(id_of(&progs, "test_verdict"), 1),
        build::exit(),
    ];
    let chain =
        t.rt.install_chain(&ChainSpec { name: "tc", owner: "native", hook: Hook::Tc, insns: &insns, nargs: 0 })
            .unwrap();
    let packet = ipv6_udp_packet();
    let vm = t.rt.test_run_chain(Hook::Tc, chain, &packet, 0).unwrap();
    let chains: BTreeMap<u32, Vec<Insn>> = [(chain.0, insns.clone())].into_iter().collect();
    native.install(&t.rt, chain, &chains, &symbols).unwrap();
    let nat = t.rt.test_run_chain(Hook::Tc, chain, &packet, 0).unwrap();
    assert_eq!(pc_after(&t.rt, nat.cpu), 0, "the native program ran it");
    assert_eq!((nat.verdict, nat.packet[0], nat.regs[0]), (2, 42, 42));
    assert_eq!((vm.verdict, &vm.packet, &vm.regs[..10]), (nat.verdict, &nat.packet, &nat.regs[..10]));
}
