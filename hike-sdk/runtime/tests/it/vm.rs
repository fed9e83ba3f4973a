//! The eBPF VM's semantics, run in the kernel with BPF_PROG_TEST_RUN.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;
use hike_bytecode::limits::{MAX_DEPTH, MAX_TAIL_CALLS, RESUME_STEPS};
use hike_bytecode::{AbortReason, Hook, asm::assemble};
use hike_runtime::{ChainId, ChainSpec, InitOptions, RegisteredProgram, TestRun};

const XDP_ABORTED: u32 = 0;
const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;
const XDP_TX: u32 = 3;
const XDP_REDIRECT: u32 = 4;

struct Vm {
    t: TestRoot,
    progs: Vec<RegisteredProgram>,
    hook: Hook,
}

impl Vm {
    fn new(tag: &str) -> Vm {
        Vm::with(tag, Hook::Xdp, InitOptions::default())
    }

    fn with(tag: &str, hook: Hook, opts: InitOptions) -> Vm {
        let t = TestRoot::with(tag, opts);
        let progs = t.register_vmtest(hook);
        Vm { t, progs, hook }
    }

    /// Assembles `text` after replacing `@name` by program ids.
    fn asm(&self, text: &str) -> Vec<hike_bytecode::Insn> {
        let mut text = text.to_owned();
        let mut names: Vec<&RegisteredProgram> = self.progs.iter().collect();
        names.sort_by_key(|r| std::cmp::Reverse(r.name.len()));
        for r in names {
            text = text.replace(&format!("@{}", r.name), &r.id.to_string());
        }
        assemble(&text).unwrap()
    }

    fn install(&self, text: &str) -> ChainId {
        self.install_nargs(text, 0)
    }

    fn install_nargs(&self, text: &str, nargs: u8) -> ChainId {
        let insns = self.asm(text);
        self.t
            .rt
            .install_chain(&ChainSpec { name: "test", owner: "vm-test", hook: self.hook, insns: &insns, nargs })
            .unwrap()
    }

    fn run(&self, chain: ChainId) -> TestRun {
        self.t.rt.test_run_chain(self.hook, chain, &ipv6_udp_packet(), 0).unwrap()
    }

    fn run_text(&self, text: &str) -> TestRun {
        let id = self.install(text);
        self.run(id)
    }

    fn aborts(&self, reason: AbortReason) -> u64 {
        self.t.rt.counters().unwrap().aborted(reason)
    }
}

#[test]
fn arithmetic_and_branches() {
    let vm = Vm::new("arith");
    // r0 = 1 + 2 + ... + 10, then a few operations of each kind.
    let r = vm.run_text(
        "r1 = 10
         r0 = 0
         r0 += r1
         r1 -= 1
         if r1 != 0 goto -3
         r2 = r0
         r2 *= 3
         r2 /= 2
         r3 = -7
         r3 s/= 2
         r4 = -7
         r4 s%= 2
         r5 = 1
         r5 <<= 40
         r6 = r5
         r6 s>>= 20
         r7 = 0x1234
         r7 = bswap16 r7
         r8 = 0xffffffffffff ll
         r8 &= 0xff00
         r9 = 5
         if r9 s> -1 goto +1
         r9 = 99
         exit",
    );
    assert_eq!(r.verdict, XDP_PASS);
    assert_eq!(r.regs[0], 55);
    assert_eq!(r.regs[2], 55 * 3 / 2);
    assert_eq!(r.regs[3], (-3i64) as u64);
    assert_eq!(r.regs[4], (-1i64) as u64);
    assert_eq!(r.regs[5], 1 << 40);
    assert_eq!(r.regs[6], 1 << 20);
    assert_eq!(r.regs[7], 0x3412);
    assert_eq!(r.regs[8], 0xff00);
    assert_eq!(r.regs[9], 5);
}

#[test]
fn division_by_zero_is_defined() {
    let vm = Vm::new("div0");
    let r = vm.run_text("r1 = 7\nr2 = 0\nr3 = r1\nr3 /= r2\nr4 = r1\nr4 %= r2\nr5 = r1\nr5 s/= r2\nexit");
    assert_eq!((r.regs[3], r.regs[4], r.regs[5]), (0, 7, 0));
}

#[test]
fn loops_run_to_the_budget_and_abort_past_it() {
    let vm = Vm::with("budget", Hook::Xdp, InitOptions { budget: 300 });
    // 3 instructions per iteration: 99 iterations + 3 fit in 300, 100 do not.
    let fits = vm.run_text("r1 = 99\nr1 -= 1\nif r1 != 0 goto -2\nr0 = 1\nexit");
    assert_eq!((fits.verdict, fits.regs[0]), (XDP_PASS, 1));
    assert_eq!(vm.aborts(AbortReason::Budget), 0);
    let over = vm.run_text("r1 = 200\nr1 -= 1\nif r1 != 0 goto -2\nexit");
    assert_eq!(over.verdict, XDP_ABORTED);
    assert_eq!(vm.aborts(AbortReason::Budget), 1);
    let forever = vm.run_text("goto -1");
    assert_eq!(forever.verdict, XDP_ABORTED, "an endless loop ends at the budget");
    assert_eq!(vm.aborts(AbortReason::Budget), 2);
}

#[test]
fn long_runs_continue_through_the_continuation_until_the_tail_call_limit() {
    let vm = Vm::with("cont", Hook::Xdp, InitOptions { budget: 1_000_000 });
    // 500 iterations of 2 instructions: 1003 instructions, 31 continuations.
    let r = vm.run_text("r1 = 500\nr1 -= 1\nif r1 != 0 goto -2\nr0 = 7\nexit");
    assert_eq!((r.verdict, r.regs[0]), (XDP_PASS, 7));
    // The most a packet can execute without program calls: the loader's run and 33
    // continuations of RESUME_STEPS instructions each.
    let most = (MAX_TAIL_CALLS + 1) * RESUME_STEPS;
    let fits = vm.run_text(&format!("r1 = {}\nr1 -= 1\nif r1 != 0 goto -2\nexit", (most - 2) / 2));
    assert_eq!(fits.verdict, XDP_PASS);
    let spin = vm.run_text("goto -1");
    assert_eq!(spin.verdict, XDP_ABORTED);
    assert_eq!(vm.aborts(AbortReason::CallLimit), 1);
}

#[test]
fn program_calls_with_zero_to_four_arguments() {
    let vm = Vm::new("args");
    let cases = [
        ("call prog @test_args0, 0", 42),
        ("r1 = 41\ncall prog @test_args1, 1", 42),
        ("r1 = 6\nr2 = 7\ncall prog @test_args2, 2", 42),
        ("r1 = 50\nr2 = 5\nr3 = 3\ncall prog @test_args3, 3", 42),
        ("r1 = 1\nr2 = 2\nr3 = 3\nr4 = 4\ncall prog @test_args4, 4", 30),
    ];
    for (body, want) in cases {
        let r = vm.run_text(&format!("{body}\nexit"));
        assert_eq!((r.verdict, r.regs[0]), (XDP_PASS, want), "{body}");
    }
    // Arguments are truncated to the declared type: test_args1 takes a u32.
    let r = vm.run_text("r1 = 0x100000005 ll\ncall prog @test_args1, 1\nexit");
    assert_eq!(r.regs[0], 6);
    // So are results: test_ret_u8 returns a u8.
    let r = vm.run_text("r1 = 0x1234\ncall prog @test_ret_u8, 1\nexit");
    assert_eq!(r.regs[0], 0x34);
    // Registers other than r0 survive a program call.
    let r = vm.run_text("r6 = 66\nr1 = 9\ncall prog @test_args0, 0\nexit");
    assert_eq!((r.regs[6], r.regs[1]), (66, 9));
    let calls = vm.t.rt.counters().unwrap().prog_calls;
    assert_eq!(calls[id_of(&vm.progs, "test_args1") as usize], 2);
}

#[test]
fn chain_to_chain_calls_pass_arguments_and_results() {
    let vm = Vm::new("chaincall");
    let square = vm.install_nargs("r0 = r1\nr0 *= r1\nr6 = 1000\nexit", 1);
    let add = vm.install_nargs("r0 = r1\nr0 += r2\nexit", 2);
    let r = vm.run_text(&format!(
        "r6 = 5
         r1 = 7
         call chain {square}, 1
         r7 = r0
         r1 = r7
         r2 = r6
         call chain {add}, 2
         exit"
    ));
    assert_eq!(r.verdict, XDP_PASS);
    assert_eq!(r.regs[0], 49 + 5, "r6 is restored after the call");
    assert_eq!(r.regs[6], 5);
    let runs = vm.t.rt.counters().unwrap().chain_runs;
    assert_eq!((runs[square.0 as usize], runs[add.0 as usize]), (1, 1));
}

#[test]
fn chain_calls_nest_to_the_depth_limit() {
    let vm = Vm::new("depth");
    // MAX_DEPTH frames: the top chain and MAX_DEPTH - 1 nested calls.
    let mut inner = vm.install("r0 = 1\nexit");
    for _ in 0..MAX_DEPTH - 2 {
        inner = vm.install(&format!("call chain {inner}, 0\nr0 += 1\nexit"));
    }
    let r = vm.run_text(&format!("call chain {inner}, 0\nr0 += 1\nexit"));
    assert_eq!((r.verdict, r.regs[0]), (XDP_PASS, MAX_DEPTH as u64));
    // One more level is refused before it reaches the kernel.
    let too_deep = vm.asm(&format!("call chain {inner}, 0\nexit"));
    let top =
        vm.t.rt
            .install_chain(&ChainSpec { name: "top", owner: "t", hook: Hook::Xdp, insns: &too_deep, nargs: 0 })
            .unwrap();
    let over = vm.asm(&format!("call chain {top}, 0\nexit"));
    let err =
        vm.t.rt
            .install_chain(&ChainSpec { name: "over", owner: "t", hook: Hook::Xdp, insns: &over, nargs: 0 })
            .unwrap_err();
    assert!(err.to_string().contains("[rule call-depth]"), "{err}");
}

#[test]
fn every_verdict_ends_the_packet() {
    let vm = Vm::new("verdicts");
    for v in [XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT] {
        // The instruction after the call must not run: it would change r0.
        let r = vm.run_text(&format!("r0 = 77\nr1 = {v}\ncall prog @test_verdict, 1\nr0 = 99\nexit"));
        assert_eq!(r.verdict, v);
        assert_eq!(r.regs[0], 77, "verdict {v}: the chain did not continue");
    }
}

#[test]
fn packet_reads_and_writes_in_both_byte_orders() {
    let vm = Vm::new("packet");
    let r = vm.run_text(
        "r1 = 0
         r0 = *(u16 *)(packet + r1 + 12)
         r0 = be16 r0
         r2 = *(u16 *)(packet + r1 + 12)
         r3 = 0x1234
         r4 = r3
         r4 = be16 r4
         *(u16 *)(packet + r1 + 54) = r4
         *(u16 *)(packet + r1 + 56) = r3
         r5 = *(u32 *)(packet + r1 + 22)
         r5 = be32 r5
         exit",
    );
    assert_eq!(r.verdict, XDP_PASS);
    assert_eq!(r.regs[0], 0x86dd, "be16 gives host order");
    assert_eq!(r.regs[2], 0xdd86, "without it, the bytes as they lie");
    assert_eq!(&r.packet[54..58], &[0x12, 0x34, 0x34, 0x12]);
    assert_eq!(r.regs[5], 0xfd00_0000);
    // Out of the packet: aborted, counted.
    let out = vm.run_text("r1 = 60\nr0 = *(u64 *)(packet + r1 + 8)\nexit");
    assert_eq!(out.verdict, XDP_ABORTED);
    assert_eq!(vm.aborts(AbortReason::BadMem), 1);
}

#[test]
fn scratch_is_shared_by_the_programs_of_one_packet() {
    let vm = Vm::new("scratch");
    let r = vm.run_text(
        "r1 = 24
         r2 = 7
         call prog @test_scratch_swap, 2
         r6 = r0
         r1 = 24
         r2 = 9
         call prog @test_scratch_swap, 2
         r7 = r0
         r1 = 0
         r8 = *(u64 *)(scratch + r1 + 24)
         exit",
    );
    assert_eq!(r.regs[6], 0, "the user part of scratch starts zeroed");
    assert_eq!(r.regs[7], 7, "the second program saw what the first wrote");
    assert_eq!(r.regs[8], 9, "the chain sees it too");
    // The loader's parser filled the packet info at the start of scratch.
    let info = vm.run_text("r1 = 0\nr2 = *(u16 *)(scratch + r1 + 2)\nr3 = *(u16 *)(scratch + r1 + 4)\nr4 = *(u8 *)(scratch + r1 + 8)\nexit");
    assert_eq!((info.regs[2], info.regs[3], info.regs[4]), (14, 54, 17), "l3 offset, l4 offset, UDP");
    let l4 = vm.run_text("call prog @test_l4_off, 0\nexit");
    assert_eq!(l4.regs[0], 54, "programs read the same packet info");
    let fresh = vm.run_text("r1 = 0\nr0 = *(u64 *)(scratch + r1 + 24)\nexit");
    assert_eq!(fresh.regs[0], 0, "every packet starts with zeroed scratch");
}

#[test]
fn stack_frames_are_private_and_zeroed() {
    let vm = Vm::new("stack");
    let callee = vm.install("r0 = *(u64 *)(stack + r10 - 8)\nr1 = 5\n*(u64 *)(stack + r10 - 8) = r1\nexit");
    let r = vm.run_text(&format!(
        "r1 = 42
         *(u64 *)(stack + r10 - 8) = r1
         call chain {callee}, 0
         r6 = r0
         r7 = *(u64 *)(stack + r10 - 8)
         exit"
    ));
    assert_eq!((r.regs[6], r.regs[7]), (0, 42), "the callee's frame is fresh and the caller's is intact");
}

#[test]
fn tail_call_limit_bounds_program_calls() {
    let vm = Vm::new("calllimit");
    let calls = |n: u32| (0..n).map(|_| "call prog @test_nop, 0\n").collect::<String>() + "exit";
    let ok = vm.run_text(&calls(MAX_TAIL_CALLS));
    assert_eq!(ok.verdict, XDP_PASS);
    let over = vm.run_text(&calls(MAX_TAIL_CALLS + 1));
    assert_eq!(over.verdict, XDP_ABORTED);
    assert_eq!(vm.aborts(AbortReason::CallLimit), 1);
}

#[test]
fn direct_and_indirect_dispatch_reach_the_same_programs() {
    // Ids below 32 are dispatched with direct jumps, the others indirectly: fill
    // ids up to 40 and call one program of each kind.
    let vm = Vm::new("dispatch");
    for v in 1..=3 {
        vm.t.rt
            .register_object(&hike_runtime::ProgramObject {
                package: "filler",
                version: &format!("{v}.0.0"),
                object_name: "vmtest.bpf.c",
                elf: hike_runtime::objects::vmtest(Hook::Xdp),
                hook: Hook::Xdp,
            })
            .unwrap();
    }
    let high = vm.t.register_vmtest_as("high", "1.0.0");
    let high_args1 = id_of(&high, "test_args1");
    assert!(high_args1 >= 32, "{high_args1}");
    let r = vm.run_text(&format!("r1 = 1\ncall prog {high_args1}, 1\nr1 = r0\ncall prog @test_args1, 1\nexit"));
    assert_eq!(r.regs[0], 3);
}

/// The program ids `bpf_id`'s VM dispatches with a constant-key tail call, read
/// from the instructions the kernel holds after verification: `r3 = <id>` right
/// before `call bpf_tail_call`. The verifier records a constant key at such a
/// site and the JIT emits a direct jump for it; every other id reaches the one
/// indirect tail call. Id 0 (the continuation) is left out: the VM always reaches
/// it with a constant key.
fn direct_ids_in_kernel(bpf_id: u32) -> Vec<i32> {
    let opts = libbpf_rs::query::ProgInfoQueryOptions::default().include_xlated_prog_insns(true);
    let info = libbpf_rs::query::ProgInfoIter::with_query_opts(opts).find(|p| p.id == bpf_id).unwrap();
    // struct bpf_insn: code, dst_reg:4 | src_reg:4, off (2 bytes), imm (4 bytes, little-endian).
    let insns: Vec<(u8, u8, i32)> = info
        .xlated_prog_insns
        .chunks_exact(8)
        .map(|b| (b[0], b[1] & 0xf, i32::from_le_bytes([b[4], b[5], b[6], b[7]])))
        .collect();
    let mut ids: Vec<i32> = insns
        .windows(2)
        .filter(|w| w[0].0 == 0xb7 && w[0].1 == 3 && w[1].0 == 0x85 && w[1].2 == 12 && w[0].2 != 0)
        .map(|w| w[0].2)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

#[test]
fn a_vm_built_with_fewer_direct_ids_dispatches_the_rest_indirectly() {
    // The programs of bpf/test/vmtest.bpf.c built with HIKE_DIRECT_PROGS=16 take ids
    // 1..10; default builds fill ids up to 50. Calls made from the 16-build's VM
    // reach an id below 16 (direct), one from 16 to 31 (direct in a default build,
    // indirect in this one) and one from 32 up (indirect in both).
    let t = TestRoot::new("direct16");
    let register = |package: &str, version: &str, elf: &'static [u8]| {
        t.rt.register_object(&hike_runtime::ProgramObject {
            package,
            version,
            object_name: "vmtest.bpf.c",
            elf,
            hook: Hook::Xdp,
        })
        .unwrap()
    };
    let d16 = register("direct16", "1.0.0", hike_runtime::objects::vmtest_direct16());
    let filler1 = register("filler", "1.0.0", hike_runtime::objects::vmtest(Hook::Xdp));
    let filler2 = register("filler", "2.0.0", hike_runtime::objects::vmtest(Hook::Xdp));
    register("filler", "3.0.0", hike_runtime::objects::vmtest(Hook::Xdp));
    let high = register("high", "1.0.0", hike_runtime::objects::vmtest(Hook::Xdp));
    let (low, mid, high) = (id_of(&d16, "test_args1"), id_of(&filler2, "test_args1"), id_of(&high, "test_args1"));
    assert!(low < 16 && (16..32).contains(&mid) && high >= 32, "{low} {mid} {high}");

    // What the kernel loaded: the 16-build has direct sites for ids 1..15 only, the
    // default build for 1..31.
    let status = t.rt.status().unwrap();
    let bpf_id = |id: u32| status.programs.iter().find(|p| p.id.0 == id).unwrap().bpf_id;
    assert_eq!(direct_ids_in_kernel(bpf_id(low)), (1..16).collect::<Vec<_>>(), "HIKE_DIRECT_PROGS=16");
    let default = id_of(&filler1, "test_args1");
    assert_eq!(direct_ids_in_kernel(bpf_id(default)), (1..32).collect::<Vec<_>>(), "the default, 32");

    // And every id is reached, by whichever path: each call adds 1, and the
    // counters say which program ran.
    let insns = assemble(&format!(
        "r1 = 1
         call prog {low}, 1
         r1 = r0
         call prog {low}, 1
         r1 = r0
         call prog {mid}, 1
         r1 = r0
         call prog {low}, 1
         r1 = r0
         call prog {high}, 1
         exit"
    ))
    .unwrap();
    let chain =
        t.rt.install_chain(&ChainSpec { name: "d16", owner: "vm-test", hook: Hook::Xdp, insns: &insns, nargs: 0 })
            .unwrap();
    let r = t.rt.test_run_chain(Hook::Xdp, chain, &ipv6_udp_packet(), 0).unwrap();
    assert_eq!((r.verdict, r.regs[0]), (XDP_PASS, 6));
    let calls: Vec<u64> = [low, mid, high]
        .iter()
        .map(|id| t.rt.status().unwrap().programs.iter().find(|p| p.id.0 == *id).unwrap().calls)
        .collect();
    assert_eq!(calls, [3, 1, 1]);
}

#[test]
fn tc_chains_run_on_skbs() {
    let vm = Vm::with("tc", Hook::Tc, InitOptions::default());
    let r = vm.run_text("r1 = 1\nr2 = 2\nr3 = 3\nr4 = 4\ncall prog @test_args4, 4\nexit");
    assert_eq!((r.verdict, r.regs[0]), (0, 30), "TC_ACT_OK when the chain returns");
    let drop = vm.run_text("r1 = 2\ncall prog @test_verdict, 1\nexit");
    assert_eq!(drop.verdict, 2, "TC_ACT_SHOT from the program");
    let abort = vm.run_text("goto -1");
    assert_eq!(abort.verdict, 2, "aborted packets are shot");
}
