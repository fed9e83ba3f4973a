//! Builders for each instruction form, so code that emits bytecode reads like
//! assembly. Above both the encoding (`insn`) and the operations (`op`), which
//! name each other only through this.

use crate::insn::{Insn, code::*};
use crate::op::{AluOp, Bank, Cond, Size};

/// `dst op= imm`.
pub fn alu_imm(op: AluOp, dst: u8, imm: i32) -> Insn {
    Insn::new(ALU64 | K | op.code(), dst, 0, op.off(), imm)
}
/// `dst op= src`.
pub fn alu_reg(op: AluOp, dst: u8, src: u8) -> Insn {
    Insn::new(ALU64 | X | op.code(), dst, src, op.off(), 0)
}
/// `dst = imm`.
pub fn mov_imm(dst: u8, imm: i32) -> Insn {
    alu_imm(AluOp::Mov, dst, imm)
}
/// `dst = src`.
pub fn mov_reg(dst: u8, src: u8) -> Insn {
    alu_reg(AluOp::Mov, dst, src)
}
/// `dst = -dst`.
pub fn neg(dst: u8) -> Insn {
    Insn::new(ALU64 | K | NEG, dst, 0, 0, 0)
}
/// `dst = imm` for any 64-bit value: two slots.
pub fn ld_imm64(dst: u8, imm: u64) -> [Insn; 2] {
    [Insn::new(LD | IMM | DW, dst, 0, 0, imm as u32 as i32), Insn::new(0, 0, 0, 0, (imm >> 32) as u32 as i32)]
}
/// Converts the low `bits` bits of `dst` from big-endian (a packet field) to host order.
pub fn be(dst: u8, bits: i32) -> Insn {
    Insn::new(ALU | TO_BE | END, dst, 0, 0, bits)
}
/// Keeps the low `bits` bits of `dst` (little-endian to host order on this host).
pub fn le(dst: u8, bits: i32) -> Insn {
    Insn::new(ALU | TO_LE | END, dst, 0, 0, bits)
}
/// Unconditionally byte-swaps the low `bits` bits of `dst`.
pub fn bswap(dst: u8, bits: i32) -> Insn {
    Insn::new(ALU64 | END, dst, 0, 0, bits)
}
/// `dst = *(size *)(bank + src + off)`.
pub fn load(size: Size, bank: Bank, dst: u8, src: u8, off: i16) -> Insn {
    Insn::new(LDX | MEM | size.code(), dst, src, off, bank as i32)
}
/// `*(size *)(bank + dst + off) = src`.
pub fn store(size: Size, bank: Bank, dst: u8, off: i16, src: u8) -> Insn {
    Insn::new(STX | MEM | size.code(), dst, src, off, bank as i32)
}
/// `goto +off`.
pub fn ja(off: i16) -> Insn {
    Insn::new(JMP | JA, 0, 0, off, 0)
}
/// `if dst cond imm goto +off`.
pub fn jmp_imm(cond: Cond, dst: u8, imm: i32, off: i16) -> Insn {
    Insn::new(JMP | K | cond.code(), dst, 0, off, imm)
}
/// `if dst cond src goto +off`.
pub fn jmp_reg(cond: Cond, dst: u8, src: u8, off: i16) -> Insn {
    Insn::new(JMP | X | cond.code(), dst, src, off, 0)
}
/// Calls program `id` with `nargs` arguments in r1..r4.
pub fn call_prog(id: u32, nargs: u8) -> Insn {
    Insn::new(JMP | CALL, 0, CALL_PROG, i16::from(nargs), id as i32)
}
/// Calls chain `id` with `nargs` arguments in r1..r4.
pub fn call_chain(id: u32, nargs: u8) -> Insn {
    Insn::new(JMP | CALL, 0, CALL_CHAIN, i16::from(nargs), id as i32)
}
/// Returns r0 to the caller, or ends the chain.
pub fn exit() -> Insn {
    Insn::new(JMP | EXIT, 0, 0, 0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{Endian, Op, Operand, decode};

    #[test]
    fn builders_decode_to_what_they_say() {
        let cases: Vec<(Vec<Insn>, Op)> = vec![
            (vec![mov_imm(1, -5)], Op::Alu { op: AluOp::Mov, dst: 1, src: Operand::Imm(-5) }),
            (vec![alu_reg(AluOp::SDiv, 2, 3)], Op::Alu { op: AluOp::SDiv, dst: 2, src: Operand::Reg(3) }),
            (vec![neg(4)], Op::Neg { dst: 4 }),
            (ld_imm64(5, 0x1122_3344_5566_7788).to_vec(), Op::LdImm64 { dst: 5, imm: 0x1122_3344_5566_7788 }),
            (vec![be(1, 16)], Op::End { kind: Endian::ToBe, dst: 1, bits: 16 }),
            (
                vec![load(Size::H, Bank::Packet, 1, 2, 12)],
                Op::Load { size: Size::H, bank: Bank::Packet, dst: 1, base: 2, off: 12 },
            ),
            (
                vec![store(Size::DW, Bank::Stack, 10, -8, 1)],
                Op::Store { size: Size::DW, bank: Bank::Stack, base: 10, off: -8, src: 1 },
            ),
            (vec![jmp_imm(Cond::SLt, 1, -1, 3)], Op::Jump { cond: Cond::SLt, dst: 1, src: Operand::Imm(-1), off: 3 }),
            (vec![call_prog(7, 2)], Op::CallProg { id: 7, nargs: 2 }),
            (vec![call_chain(3, 0)], Op::CallChain { id: 3, nargs: 0 }),
            (vec![exit()], Op::Exit),
        ];
        for (insns, want) in cases {
            assert_eq!(decode(&insns, 0), Ok(want));
        }
    }
}
