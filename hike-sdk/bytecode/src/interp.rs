//! The reference interpreter: the bytecode's semantics in plain Rust, step for step
//! what the eBPF VM in `include/hike/vm.h` does, including the accounting the
//! kernel imposes (the executed-instruction budget, one tail call per program call
//! and per continuation, at most 33 of them). Differential tests run random chains
//! on both and compare every register, byte and counter.

use std::collections::HashMap;

use crate::insn::Insn;
use crate::limits::*;
use crate::op::{Bank, Op, Operand, apply_end, decode};

/// Why the VM aborted a packet; the discriminants are the kernel's counter indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AbortReason {
    Budget = 1,
    BadInsn = 2,
    BadPc = 3,
    BadMem = 4,
    NoProg = 5,
    CallLimit = 6,
    Depth = 7,
    NoChain = 8,
    NoState = 9,
}

impl AbortReason {
    /// Every reason, in counter order.
    pub const ALL: [AbortReason; 9] = [
        AbortReason::Budget,
        AbortReason::BadInsn,
        AbortReason::BadPc,
        AbortReason::BadMem,
        AbortReason::NoProg,
        AbortReason::CallLimit,
        AbortReason::Depth,
        AbortReason::NoChain,
        AbortReason::NoState,
    ];

    /// The reason for counter index `i`.
    pub fn from_index(i: usize) -> Option<Self> {
        AbortReason::ALL.into_iter().find(|r| *r as usize == i)
    }

    /// A short name, as `status` prints it.
    pub fn name(self) -> &'static str {
        match self {
            AbortReason::Budget => "budget",
            AbortReason::BadInsn => "bad-insn",
            AbortReason::BadPc => "bad-pc",
            AbortReason::BadMem => "bad-mem",
            AbortReason::NoProg => "no-prog",
            AbortReason::CallLimit => "call-limit",
            AbortReason::Depth => "depth",
            AbortReason::NoChain => "no-chain",
            AbortReason::NoState => "no-state",
        }
    }
}

/// How a packet's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The chain the loader started returned: the packet passes.
    Returned,
    /// A program ended the packet with this verdict (XDP_DROP, …).
    Verdict(u32),
    /// The VM aborted the packet.
    Aborted(AbortReason),
}

/// What a program did when called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramOutcome {
    /// It handed this result back to the chain (r0).
    Result(u64),
    /// It ended the packet with this verdict.
    Verdict(u32),
}

/// The memory a chain and its programs see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub packet: Vec<u8>,
    pub scratch: [u8; SCRATCH_SIZE as usize],
    /// One frame per call depth.
    pub stack: [[u8; FRAME_SIZE as usize]; MAX_DEPTH],
}

impl Memory {
    /// Memory for `packet` with zeroed scratch and stack.
    pub fn new(packet: Vec<u8>) -> Self {
        Memory { packet, scratch: [0; SCRATCH_SIZE as usize], stack: [[0; FRAME_SIZE as usize]; MAX_DEPTH] }
    }
}

/// The programs a chain can call. `call` returns `None` when no program has `id`.
pub trait Programs {
    fn call(&mut self, id: u32, args: [u64; 4], memory: &mut Memory) -> Option<ProgramOutcome>;
}

impl<F: FnMut(u32, [u64; 4], &mut Memory) -> Option<ProgramOutcome>> Programs for F {
    fn call(&mut self, id: u32, args: [u64; 4], memory: &mut Memory) -> Option<ProgramOutcome> {
        self(id, args, memory)
    }
}

/// The result of running a packet through a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub ending: Ending,
    /// Registers when the run ended.
    pub regs: [u64; NREGS],
    pub memory: Memory,
    /// Instructions executed.
    pub executed: u32,
    /// Tail calls made: program calls and continuations.
    pub tail_calls: u32,
    /// Calls per program id, as the kernel counts them (also for failed calls).
    pub prog_calls: HashMap<u32, u64>,
    /// Runs per chain id.
    pub chain_runs: HashMap<u32, u64>,
}

struct Frame {
    chain: u32,
    ret_pc: usize,
    saved: [u64; 9],
}

/// Runs chain `start` over `memory` as a loader would: fresh registers (r10 =
/// FRAME_SIZE), zeroed stack frame and scratch after the packet-info area, and
/// `budget` instructions.
pub fn run(
    chains: &HashMap<u32, Vec<Insn>>,
    programs: &mut dyn Programs,
    start: u32,
    mut memory: Memory,
    budget: u32,
) -> Run {
    let mut regs = [0u64; NREGS];
    regs[usize::from(REG_FP)] = FRAME_SIZE;
    memory.stack[0] = [0; FRAME_SIZE as usize];
    memory.scratch[PKT_INFO_SIZE as usize..].fill(0);
    let mut vm = Vm {
        chains,
        regs,
        memory,
        frames: Vec::new(),
        budget,
        executed: 0,
        tail_calls: 0,
        prog_calls: HashMap::new(),
        chain_runs: HashMap::new(),
    };
    *vm.chain_runs.entry(start).or_default() += 1;
    let ending = vm.execute(programs, start);
    Run {
        ending,
        regs: vm.regs,
        memory: vm.memory,
        executed: vm.executed,
        tail_calls: vm.tail_calls,
        prog_calls: vm.prog_calls,
        chain_runs: vm.chain_runs,
    }
}

struct Vm<'a> {
    chains: &'a HashMap<u32, Vec<Insn>>,
    regs: [u64; NREGS],
    memory: Memory,
    frames: Vec<Frame>,
    budget: u32,
    executed: u32,
    tail_calls: u32,
    prog_calls: HashMap<u32, u64>,
    chain_runs: HashMap<u32, u64>,
}

impl<'a> Vm<'a> {
    fn chain(&self, id: u32) -> Option<&'a [Insn]> {
        self.chains.get(&id).map(Vec::as_slice).filter(|c| !c.is_empty())
    }

    fn execute(&mut self, programs: &mut dyn Programs, start: u32) -> Ending {
        use AbortReason::*;
        let Some(mut chain) = self.chain(start) else { return Ending::Aborted(NoChain) };
        let mut chain_id = start;
        let mut pc = 0usize;
        let mut steps = 0u32;
        loop {
            if steps == RESUME_STEPS {
                // The running program is out of steps: a tail call to the continuation.
                if self.tail_calls >= MAX_TAIL_CALLS {
                    return Ending::Aborted(CallLimit);
                }
                self.tail_calls += 1;
                steps = 0;
            }
            steps += 1;
            if pc >= chain.len() {
                return Ending::Aborted(BadPc);
            }
            if self.budget == 0 {
                return Ending::Aborted(Budget);
            }
            self.budget -= 1;
            self.executed += 1;
            let Ok(op) = decode(chain, pc) else { return Ending::Aborted(BadInsn) };
            let next = pc + op.width();
            pc += 1;
            match op {
                Op::Alu { op, dst, src } => {
                    let s = self.operand(src);
                    let d = &mut self.regs[usize::from(dst)];
                    *d = op.apply(*d, s);
                }
                Op::Neg { dst } => {
                    let d = &mut self.regs[usize::from(dst)];
                    *d = d.wrapping_neg();
                }
                Op::End { kind, dst, bits } => {
                    let d = &mut self.regs[usize::from(dst)];
                    *d = apply_end(kind, bits, *d);
                }
                Op::LdImm64 { dst, imm } => {
                    self.regs[usize::from(dst)] = imm;
                    pc = next;
                }
                Op::Jump { cond, dst, src, off } => {
                    if cond.holds(self.regs[usize::from(dst)], self.operand(src)) {
                        pc = (pc as i64 + i64::from(off)) as usize;
                    }
                }
                Op::Load { size, bank, dst, base, off } => {
                    let addr = self.regs[usize::from(base)].wrapping_add(off as i64 as u64);
                    let Some(bytes) = self.mem(bank, addr, size.bytes()) else { return Ending::Aborted(BadMem) };
                    let mut buf = [0u8; 8];
                    buf[..bytes.len()].copy_from_slice(bytes);
                    self.regs[usize::from(dst)] = u64::from_le_bytes(buf);
                }
                Op::Store { size, bank, base, off, src } => {
                    let addr = self.regs[usize::from(base)].wrapping_add(off as i64 as u64);
                    let value = self.regs[usize::from(src)].to_le_bytes();
                    let n = size.bytes() as usize;
                    let Some(bytes) = self.mem(bank, addr, size.bytes()) else { return Ending::Aborted(BadMem) };
                    bytes.copy_from_slice(&value[..n]);
                }
                Op::CallProg { id, .. } => {
                    if self.tail_calls >= MAX_TAIL_CALLS {
                        return Ending::Aborted(CallLimit);
                    }
                    self.tail_calls += 1;
                    *self.prog_calls.entry(id & (MAX_PROGS - 1)).or_default() += 1;
                    let args = [self.regs[1], self.regs[2], self.regs[3], self.regs[4]];
                    match programs.call(id, args, &mut self.memory) {
                        None => return Ending::Aborted(NoProg),
                        Some(ProgramOutcome::Verdict(v)) => return Ending::Verdict(v),
                        Some(ProgramOutcome::Result(r)) => {
                            self.regs[0] = r;
                            // The callee is a new program run with its own steps.
                            steps = 0;
                        }
                    }
                }
                Op::CallChain { id, .. } => {
                    if self.frames.len() >= MAX_DEPTH - 1 {
                        return Ending::Aborted(Depth);
                    }
                    let Some(callee) = self.chain(id) else { return Ending::Aborted(NoChain) };
                    let mut saved = [0u64; 9];
                    saved.copy_from_slice(&self.regs[1..10]);
                    self.frames.push(Frame { chain: chain_id, ret_pc: pc, saved });
                    self.regs[6..10].fill(0);
                    self.memory.stack[self.frames.len()] = [0; FRAME_SIZE as usize];
                    *self.chain_runs.entry(id & (MAX_CHAINS - 1)).or_default() += 1;
                    chain = callee;
                    chain_id = id;
                    pc = 0;
                }
                Op::Exit => {
                    let Some(frame) = self.frames.pop() else { return Ending::Returned };
                    let Some(caller) = self.chain(frame.chain) else { return Ending::Aborted(NoChain) };
                    self.regs[1..10].copy_from_slice(&frame.saved);
                    chain = caller;
                    chain_id = frame.chain;
                    pc = frame.ret_pc;
                }
            }
        }
    }

    fn operand(&self, src: Operand) -> u64 {
        match src {
            Operand::Reg(r) => self.regs[usize::from(r)],
            Operand::Imm(i) => i64::from(i) as u64,
        }
    }

    fn mem(&mut self, bank: Bank, addr: u64, size: u64) -> Option<&mut [u8]> {
        let (area, limit): (&mut [u8], u64) = match bank {
            Bank::Packet => {
                if addr > PKT_MAX_OFF {
                    return None;
                }
                let len = self.memory.packet.len() as u64;
                (&mut self.memory.packet[..], len)
            }
            Bank::Stack => (&mut self.memory.stack[self.frames.len()][..], FRAME_SIZE),
            Bank::Scratch => (&mut self.memory.scratch[..], SCRATCH_SIZE),
        };
        if size > limit || addr > limit - size {
            return None;
        }
        let start = addr as usize;
        area.get_mut(start..start + size as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::*;
    use crate::op::{AluOp, Cond, Size};

    fn chains(list: &[(u32, Vec<Insn>)]) -> HashMap<u32, Vec<Insn>> {
        list.iter().cloned().collect()
    }

    fn no_programs(_: u32, _: [u64; 4], _: &mut Memory) -> Option<ProgramOutcome> {
        None
    }

    #[test]
    fn arithmetic_and_branches() {
        // r0 = sum of 1..=10 with a loop
        let c = vec![
            mov_imm(1, 10),
            mov_imm(0, 0),
            alu_reg(AluOp::Add, 0, 1),
            alu_imm(AluOp::Sub, 1, 1),
            jmp_imm(Cond::Ne, 1, 0, -3),
            exit(),
        ];
        let run = run(&chains(&[(1, c)]), &mut no_programs, 1, Memory::new(vec![]), 1000);
        assert_eq!(run.ending, Ending::Returned);
        assert_eq!(run.regs[0], 55);
        assert_eq!(run.executed, 2 + 3 * 10 + 1);
    }

    #[test]
    fn budget_aborts_and_continuations_count_as_tail_calls() {
        let spin = vec![ja(-1)];
        let r = run(&chains(&[(1, spin.clone())]), &mut no_programs, 1, Memory::new(vec![]), 100);
        assert_eq!(r.ending, Ending::Aborted(AbortReason::Budget));
        assert_eq!(r.executed, 100);
        assert_eq!(r.tail_calls, 100 / RESUME_STEPS, "a continuation after every RESUME_STEPS steps");
        let r = run(&chains(&[(1, spin)]), &mut no_programs, 1, Memory::new(vec![]), 1_000_000);
        assert_eq!(r.ending, Ending::Aborted(AbortReason::CallLimit));
        assert_eq!(r.executed, RESUME_STEPS * (MAX_TAIL_CALLS + 1));
    }

    #[test]
    fn programs_get_arguments_and_return_results() {
        let c = vec![mov_imm(1, 1), mov_imm(2, 2), mov_imm(3, 3), mov_imm(4, 4), call_prog(7, 4), exit()];
        let mut progs = |id: u32, a: [u64; 4], _: &mut Memory| {
            (id == 7).then_some(ProgramOutcome::Result(a[0] + 2 * a[1] + 3 * a[2] + 4 * a[3]))
        };
        let r = run(&chains(&[(1, c)]), &mut progs, 1, Memory::new(vec![]), 100);
        assert_eq!((r.ending, r.regs[0], r.prog_calls[&7]), (Ending::Returned, 30, 1));
    }

    #[test]
    fn chain_calls_save_registers_and_nest() {
        let inner = vec![alu_imm(AluOp::Mul, 1, 3), mov_reg(0, 1), mov_imm(6, 99), exit()];
        let outer = vec![mov_imm(6, 5), mov_imm(1, 7), call_chain(2, 1), alu_reg(AluOp::Add, 0, 6), exit()];
        let r = run(&chains(&[(1, outer), (2, inner)]), &mut no_programs, 1, Memory::new(vec![]), 100);
        assert_eq!(r.ending, Ending::Returned);
        assert_eq!(r.regs[0], 21 + 5, "r6 restored after the call");
        assert_eq!(r.regs[1], 7, "r1 restored after the call");
        assert_eq!(r.chain_runs[&2], 1);
    }

    #[test]
    fn packet_access_in_both_byte_orders() {
        let c = vec![
            mov_imm(2, 12),
            load(Size::H, Bank::Packet, 0, 2, 0),
            be(0, 16),
            mov_imm(3, 0x0800),
            store(Size::H, Bank::Packet, 2, 2, 3),
            exit(),
        ];
        let mut pkt = vec![0u8; 16];
        pkt[12] = 0x86;
        pkt[13] = 0xdd;
        let r = run(&chains(&[(1, c)]), &mut no_programs, 1, Memory::new(pkt), 100);
        assert_eq!(r.regs[0], 0x86dd);
        assert_eq!(&r.memory.packet[14..16], &[0x00, 0x08], "stored little-endian");
    }

    #[test]
    fn out_of_bounds_memory_aborts() {
        let c = vec![load(Size::W, Bank::Packet, 0, 1, 13), exit()];
        let r = run(&chains(&[(1, c)]), &mut no_programs, 1, Memory::new(vec![0; 16]), 100);
        assert_eq!(r.ending, Ending::Aborted(AbortReason::BadMem));
        let c = vec![mov_imm(1, 60), store(Size::DW, Bank::Scratch, 1, 0, 1), exit()];
        let r = run(&chains(&[(1, c)]), &mut no_programs, 1, Memory::new(vec![]), 100);
        assert_eq!(r.ending, Ending::Aborted(AbortReason::BadMem));
    }
}
