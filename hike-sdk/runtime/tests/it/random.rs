//! Random valid chains over the test programs (bpf/test/vmtest.bpf.c), and what
//! those programs do, for the reference interpreter: the differential tests'
//! generator. A module of its own, not part of `common`, which hikectl's tests
//! include too.

#![allow(dead_code)]

use std::collections::HashMap;

use hike_bytecode::interp::{self, Ending, Memory, ProgramOutcome};
use hike_bytecode::limits::{FRAME_SIZE, SCRATCH_SIZE};
use hike_bytecode::{AluOp, Bank, Cond, Insn, Size, build};
use hike_runtime::RegisteredProgram;
use proptest::prelude::*;

use crate::common::{id_of, ipv6_udp_packet};

/// The semantics of bpf/test/vmtest.bpf.c, for the interpreter.
pub struct VmTestPrograms {
    pub ids: HashMap<u32, String>,
}

impl interp::Programs for VmTestPrograms {
    fn call(&mut self, id: u32, a: [u64; 4], mem: &mut Memory) -> Option<ProgramOutcome> {
        let name = self.ids.get(&id)?;
        let r = match name.as_str() {
            "test_args0" => 42,
            "test_args1" => u64::from((a[0] as u32).wrapping_add(1)),
            "test_args2" => a[0].wrapping_mul(a[1]),
            "test_args3" => a[0].wrapping_sub(a[1]).wrapping_sub(a[2]),
            "test_args4" => a[0]
                .wrapping_add(a[1].wrapping_mul(2))
                .wrapping_add(a[2].wrapping_mul(3))
                .wrapping_add(a[3].wrapping_mul(4)),
            "test_nop" => 0,
            "test_ret_u8" => a[0] & 0xff,
            "test_verdict" => return Some(ProgramOutcome::Verdict(a[0] as u32)),
            "test_scratch_swap" => {
                let off = a[0] as u32 as usize;
                if off > SCRATCH_SIZE as usize - 8 {
                    u64::MAX
                } else {
                    let mut old = [0u8; 8];
                    old.copy_from_slice(&mem.scratch[off..off + 8]);
                    mem.scratch[off..off + 8].copy_from_slice(&a[1].to_le_bytes());
                    u64::from_le_bytes(old)
                }
            }
            _ => return None,
        };
        Some(ProgramOutcome::Result(r))
    }
}

/// One generated step of a chain, lowered to one or more instructions.
#[derive(Debug, Clone)]
pub enum Item {
    Alu(AluOp, u8, Result<u8, i32>),
    Neg(u8),
    End(u8, u8, u32),
    LdImm64(u8, u64),
    /// Set r9 to an address, then load or store through it.
    Mem {
        store: bool,
        size: Size,
        bank: Bank,
        addr: u8,
        reg: u8,
    },
    /// Skip the next `n` items when the condition holds.
    Jump(Cond, u8, Result<u8, i32>, usize),
    Call(usize, [u64; 4]),
    CallChain(u64),
    /// A countdown loop in r8: `n` iterations (long ones reach the call limit).
    Loop(i32),
}

fn reg() -> impl Strategy<Value = u8> {
    0u8..10
}

fn operand() -> impl Strategy<Value = Result<u8, i32>> {
    prop_oneof![reg().prop_map(Ok), any::<i32>().prop_map(Err), (-4i32..64).prop_map(Err)]
}

pub fn item() -> impl Strategy<Value = Item> {
    let alu = (prop::sample::select(AluOp::ALL.to_vec()), reg(), operand()).prop_map(|(op, d, s)| {
        let s = match (op, s) {
            (AluOp::Lsh | AluOp::Rsh | AluOp::Arsh, Err(i)) => Err(i.rem_euclid(64)),
            (_, s) => s,
        };
        Item::Alu(op, d, s)
    });
    prop_oneof![
        6 => alu,
        1 => reg().prop_map(Item::Neg),
        1 => (reg(), 0u8..3, prop::sample::select(vec![16u32, 32, 64])).prop_map(|(r, k, b)| Item::End(r, k, b)),
        1 => (reg(), any::<u64>()).prop_map(|(r, v)| Item::LdImm64(r, v)),
        3 => (any::<bool>(), prop::sample::select(Size::ALL.to_vec()), prop::sample::select(Bank::ALL.to_vec()), any::<u8>(), 0u8..9)
            .prop_map(|(store, size, bank, addr, reg)| Item::Mem { store, size, bank, addr, reg }),
        2 => (prop::sample::select(Cond::ALL.to_vec()), reg(), operand(), 1usize..4).prop_map(|(c, d, s, n)| Item::Jump(c, d, s, n)),
        2 => (0usize..9, any::<[u64; 4]>()).prop_map(|(p, a)| Item::Call(p, a)),
        1 => any::<u64>().prop_map(Item::CallChain),
        1 => prop_oneof![1i32..20, 300i32..700].prop_map(Item::Loop),
    ]
}

pub const PROGRAMS: [&str; 9] = [
    "test_args0",
    "test_args1",
    "test_args2",
    "test_args3",
    "test_args4",
    "test_nop",
    "test_ret_u8",
    "test_scratch_swap",
    "test_verdict",
];

pub fn nargs(name: &str) -> u8 {
    match name {
        "test_args0" | "test_nop" => 0,
        "test_args1" | "test_ret_u8" | "test_verdict" => 1,
        "test_args2" | "test_scratch_swap" => 2,
        "test_args3" => 3,
        _ => 4,
    }
}

/// Lowers items to instructions. Jumps only go forward, so every chain ends.
pub fn lower(items: &[Item], progs: &[RegisteredProgram], helper_chain: u32) -> Vec<Insn> {
    let mut blocks: Vec<Vec<Insn>> = Vec::new();
    for item in items {
        let mut b = Vec::new();
        match *item {
            Item::Alu(op, d, s) => b.push(match s {
                Ok(r) => build::alu_reg(op, d, r),
                Err(i) => build::alu_imm(op, d, i),
            }),
            Item::Neg(d) => b.push(build::neg(d)),
            Item::End(r, k, bits) => b.push(match k {
                0 => build::be(r, bits as i32),
                1 => build::le(r, bits as i32),
                _ => build::bswap(r, bits as i32),
            }),
            Item::LdImm64(r, v) => b.extend(build::ld_imm64(r, v)),
            Item::Mem { store, size, bank, addr, reg } => {
                // Mostly in bounds, sometimes just past: both must agree either way.
                let limit = match bank {
                    Bank::Packet => ipv6_udp_packet().len() as u64,
                    Bank::Stack => FRAME_SIZE,
                    Bank::Scratch => SCRATCH_SIZE,
                };
                let span = limit + 4 - size.bytes();
                let a = u64::from(addr) % span;
                let access = |base: u8, off: i16| {
                    if store {
                        build::store(size, bank, base, off, reg)
                    } else {
                        build::load(size, bank, reg, base, off)
                    }
                };
                if bank == Bank::Stack && a + size.bytes() <= FRAME_SIZE {
                    // Stack addresses inside the frame go through r10, as compiled chains do.
                    b.push(access(10, a as i16 - FRAME_SIZE as i16));
                } else {
                    b.push(build::mov_imm(9, a as i32));
                    b.push(access(9, 0));
                }
            }
            Item::Jump(..) => b.push(build::exit()),
            Item::Call(p, args) => {
                let name = PROGRAMS[p];
                let n = nargs(name);
                for (i, a) in args.iter().take(usize::from(n)).enumerate() {
                    let v = match name {
                        "test_verdict" => a % 5,
                        "test_scratch_swap" if i == 0 => a % 64,
                        _ => *a,
                    };
                    b.extend(build::ld_imm64(i as u8 + 1, v));
                }
                b.push(build::call_prog(id_of(progs, name), n));
            }
            Item::CallChain(a) => {
                b.extend(build::ld_imm64(1, a));
                b.push(build::call_chain(helper_chain, 1));
            }
            Item::Loop(n) => {
                b.push(build::mov_imm(8, n));
                b.push(build::alu_imm(AluOp::Sub, 8, 1));
                b.push(build::jmp_imm(Cond::Ne, 8, 0, -2));
            }
        }
        blocks.push(b);
    }
    // Now place the jumps, whose offsets depend on the blocks they skip.
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if let Item::Jump(cond, d, s, n) = *item {
            let skip: usize = blocks[i + 1..(i + 1 + n).min(blocks.len())].iter().map(Vec::len).sum();
            out.push(match s {
                Ok(r) => build::jmp_reg(cond, d, r, skip as i16),
                Err(imm) => build::jmp_imm(cond, d, imm, skip as i16),
            });
        } else {
            out.extend(&blocks[i]);
        }
    }
    out.push(build::exit());
    out
}

pub fn verdict_of(ending: Ending) -> u32 {
    match ending {
        Ending::Returned => 2,
        Ending::Verdict(v) => v,
        Ending::Aborted(_) => 0,
    }
}
