//! Decoded instructions: what each raw instruction means. Decoding is strict (every
//! field the operation does not use must be zero), so a chain that decodes has one
//! meaning, the one docs/BYTECODE.md gives it.

use crate::insn::{Insn, code::*};
use crate::limits::{MAX_CALL_ARGS, NREGS};

/// 64-bit arithmetic and logic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AluOp {
    Add,
    Sub,
    Mul,
    /// Unsigned division; x / 0 = 0.
    Div,
    /// Signed division; x / 0 = 0, i64::MIN / -1 = i64::MIN.
    SDiv,
    /// Unsigned remainder; x % 0 = x.
    Mod,
    /// Signed remainder (sign of the dividend); x % 0 = x.
    SMod,
    Or,
    And,
    Xor,
    /// Shift left by the operand modulo 64.
    Lsh,
    /// Logical shift right by the operand modulo 64.
    Rsh,
    /// Arithmetic shift right by the operand modulo 64.
    Arsh,
    Mov,
}

impl AluOp {
    /// Every operation.
    pub const ALL: [AluOp; 14] = [
        AluOp::Add,
        AluOp::Sub,
        AluOp::Mul,
        AluOp::Div,
        AluOp::SDiv,
        AluOp::Mod,
        AluOp::SMod,
        AluOp::Or,
        AluOp::And,
        AluOp::Xor,
        AluOp::Lsh,
        AluOp::Rsh,
        AluOp::Arsh,
        AluOp::Mov,
    ];

    /// The operation bits of the opcode.
    pub fn code(self) -> u8 {
        match self {
            AluOp::Add => ADD,
            AluOp::Sub => SUB,
            AluOp::Mul => MUL,
            AluOp::Div | AluOp::SDiv => DIV,
            AluOp::Mod | AluOp::SMod => MOD,
            AluOp::Or => OR,
            AluOp::And => AND,
            AluOp::Xor => XOR,
            AluOp::Lsh => LSH,
            AluOp::Rsh => RSH,
            AluOp::Arsh => ARSH,
            AluOp::Mov => MOV,
        }
    }

    /// The `off` field: 1 selects the signed division and remainder.
    pub fn off(self) -> i16 {
        i16::from(matches!(self, AluOp::SDiv | AluOp::SMod))
    }

    /// Applies the operation with the VM's semantics.
    pub fn apply(self, d: u64, s: u64) -> u64 {
        match self {
            AluOp::Add => d.wrapping_add(s),
            AluOp::Sub => d.wrapping_sub(s),
            AluOp::Mul => d.wrapping_mul(s),
            AluOp::Div => d.checked_div(s).unwrap_or(0),
            AluOp::SDiv => {
                if s == 0 {
                    0
                } else {
                    (d as i64).wrapping_div(s as i64) as u64
                }
            }
            AluOp::Mod => d.checked_rem(s).unwrap_or(d),
            AluOp::SMod => {
                if s == 0 {
                    d
                } else {
                    (d as i64).wrapping_rem(s as i64) as u64
                }
            }
            AluOp::Or => d | s,
            AluOp::And => d & s,
            AluOp::Xor => d ^ s,
            AluOp::Lsh => d << (s & 63),
            AluOp::Rsh => d >> (s & 63),
            AluOp::Arsh => ((d as i64) >> (s & 63)) as u64,
            AluOp::Mov => s,
        }
    }

    /// The assembly operator (`+=`, `s/=`, …).
    pub fn symbol(self) -> &'static str {
        match self {
            AluOp::Add => "+=",
            AluOp::Sub => "-=",
            AluOp::Mul => "*=",
            AluOp::Div => "/=",
            AluOp::SDiv => "s/=",
            AluOp::Mod => "%=",
            AluOp::SMod => "s%=",
            AluOp::Or => "|=",
            AluOp::And => "&=",
            AluOp::Xor => "^=",
            AluOp::Lsh => "<<=",
            AluOp::Rsh => ">>=",
            AluOp::Arsh => "s>>=",
            AluOp::Mov => "=",
        }
    }
}

/// Jump conditions; `Always` is the unconditional `goto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cond {
    Always,
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Set,
    SGt,
    SGe,
    SLt,
    SLe,
}

impl Cond {
    /// Every condition but `Always`.
    pub const ALL: [Cond; 11] = [
        Cond::Eq,
        Cond::Ne,
        Cond::Gt,
        Cond::Ge,
        Cond::Lt,
        Cond::Le,
        Cond::Set,
        Cond::SGt,
        Cond::SGe,
        Cond::SLt,
        Cond::SLe,
    ];

    /// The operation bits of the opcode.
    pub fn code(self) -> u8 {
        match self {
            Cond::Always => JA,
            Cond::Eq => JEQ,
            Cond::Ne => JNE,
            Cond::Gt => JGT,
            Cond::Ge => JGE,
            Cond::Lt => JLT,
            Cond::Le => JLE,
            Cond::Set => JSET,
            Cond::SGt => JSGT,
            Cond::SGe => JSGE,
            Cond::SLt => JSLT,
            Cond::SLe => JSLE,
        }
    }

    /// Whether the jump is taken.
    pub fn holds(self, d: u64, s: u64) -> bool {
        let (sd, ss) = (d as i64, s as i64);
        match self {
            Cond::Always => true,
            Cond::Eq => d == s,
            Cond::Ne => d != s,
            Cond::Gt => d > s,
            Cond::Ge => d >= s,
            Cond::Lt => d < s,
            Cond::Le => d <= s,
            Cond::Set => d & s != 0,
            Cond::SGt => sd > ss,
            Cond::SGe => sd >= ss,
            Cond::SLt => sd < ss,
            Cond::SLe => sd <= ss,
        }
    }

    /// The assembly operator.
    pub fn symbol(self) -> &'static str {
        match self {
            Cond::Always => "",
            Cond::Eq => "==",
            Cond::Ne => "!=",
            Cond::Gt => ">",
            Cond::Ge => ">=",
            Cond::Lt => "<",
            Cond::Le => "<=",
            Cond::Set => "&",
            Cond::SGt => "s>",
            Cond::SGe => "s>=",
            Cond::SLt => "s<",
            Cond::SLe => "s<=",
        }
    }
}

/// Width of a load or store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Size {
    B,
    H,
    W,
    DW,
}

impl Size {
    /// Every width.
    pub const ALL: [Size; 4] = [Size::B, Size::H, Size::W, Size::DW];

    /// Bytes.
    pub fn bytes(self) -> u64 {
        match self {
            Size::B => 1,
            Size::H => 2,
            Size::W => 4,
            Size::DW => 8,
        }
    }

    /// The size bits of the opcode.
    pub fn code(self) -> u8 {
        match self {
            Size::B => B,
            Size::H => H,
            Size::W => W,
            Size::DW => DW,
        }
    }

    /// The C type name used in assembly (`u8` … `u64`).
    pub fn c_type(self) -> &'static str {
        match self {
            Size::B => "u8",
            Size::H => "u16",
            Size::W => "u32",
            Size::DW => "u64",
        }
    }
}

/// The memory a load or store addresses (its `imm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Bank {
    /// The current chain frame's stack, addressed from r10.
    Stack = 0,
    /// The packet.
    Packet = 1,
    /// The per-CPU scratch area shared by the programs of one packet.
    Scratch = 2,
}

impl Bank {
    /// Every bank.
    pub const ALL: [Bank; 3] = [Bank::Stack, Bank::Packet, Bank::Scratch];

    /// The name used in assembly.
    pub fn name(self) -> &'static str {
        match self {
            Bank::Stack => "stack",
            Bank::Packet => "packet",
            Bank::Scratch => "scratch",
        }
    }
}

/// Byte-order operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endian {
    /// From little-endian to host order: keeps the low bits (the host is little-endian).
    ToLe,
    /// From big-endian (network order) to host order: swaps the low bits.
    ToBe,
    /// Swaps the low bits unconditionally.
    Swap,
}

/// An operand: a register or a sign-extended 32-bit immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operand {
    Reg(u8),
    Imm(i32),
}

/// A decoded instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Alu { op: AluOp, dst: u8, src: Operand },
    Neg { dst: u8 },
    End { kind: Endian, dst: u8, bits: u32 },
    LdImm64 { dst: u8, imm: u64 },
    Load { size: Size, bank: Bank, dst: u8, base: u8, off: i16 },
    Store { size: Size, bank: Bank, base: u8, off: i16, src: u8 },
    Jump { cond: Cond, dst: u8, src: Operand, off: i16 },
    CallProg { id: u32, nargs: u8 },
    CallChain { id: u32, nargs: u8 },
    Exit,
}

impl Op {
    /// Slots the instruction occupies (2 for a 64-bit immediate load).
    pub fn width(&self) -> usize {
        if matches!(self, Op::LdImm64 { .. }) { 2 } else { 1 }
    }

    /// The register the instruction writes, if any.
    pub fn writes(&self) -> Option<u8> {
        match *self {
            Op::Alu { dst, .. } | Op::Neg { dst } | Op::End { dst, .. } | Op::LdImm64 { dst, .. } => Some(dst),
            Op::Load { dst, .. } => Some(dst),
            Op::CallProg { .. } | Op::CallChain { .. } => Some(0),
            _ => None,
        }
    }
}

/// Why an instruction does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("unknown opcode 0x{0:02x}")]
    UnknownOpcode(u8),
    #[error("register r{0} does not exist (registers are r0..r10)")]
    BadRegister(u8),
    #[error("field `{field}` must be 0 for this instruction, found {value}")]
    NonZero { field: &'static str, value: i64 },
    #[error("byte-swap width {0} is not 16, 32 or 64")]
    BadEndWidth(i32),
    #[error("memory bank {0} does not exist (0 stack, 1 packet, 2 scratch)")]
    BadBank(i32),
    #[error("64-bit immediate load is missing its second slot")]
    TruncatedLdImm64,
    #[error("second slot of a 64-bit immediate load must be zero apart from imm")]
    BadLdImm64Tail,
    #[error("call kind {0} does not exist (0 program, 1 chain)")]
    BadCallKind(u8),
    #[error("call passes {0} arguments; at most {MAX_CALL_ARGS} fit in r1..r4")]
    TooManyArgs(i16),
    #[error("division mode {0} does not exist (0 unsigned, 1 signed)")]
    BadDivMode(i16),
}

fn reg(r: u8) -> Result<u8, DecodeError> {
    if usize::from(r) < NREGS { Ok(r) } else { Err(DecodeError::BadRegister(r)) }
}

fn zero(field: &'static str, value: i64) -> Result<(), DecodeError> {
    if value == 0 { Ok(()) } else { Err(DecodeError::NonZero { field, value }) }
}

/// Decodes the instruction at `pc` of `insns` (which must be in range).
pub fn decode(insns: &[Insn], pc: usize) -> Result<Op, DecodeError> {
    let insn = insns[pc];
    let c = insn.code;
    let (dst, src) = (insn.dst, insn.src);
    match c & CLASS_MASK {
        ALU64 => {
            let op = c & OP_MASK;
            let operand = || -> Result<Operand, DecodeError> {
                if c & SRC_MASK == X {
                    zero("imm", insn.imm.into())?;
                    Ok(Operand::Reg(reg(src)?))
                } else {
                    zero("src", src.into())?;
                    Ok(Operand::Imm(insn.imm))
                }
            };
            let alu = match op {
                ADD => AluOp::Add,
                SUB => AluOp::Sub,
                MUL => AluOp::Mul,
                DIV | MOD => match insn.off {
                    0 if op == DIV => AluOp::Div,
                    1 if op == DIV => AluOp::SDiv,
                    0 => AluOp::Mod,
                    1 => AluOp::SMod,
                    other => return Err(DecodeError::BadDivMode(other)),
                },
                OR => AluOp::Or,
                AND => AluOp::And,
                XOR => AluOp::Xor,
                LSH => AluOp::Lsh,
                RSH => AluOp::Rsh,
                ARSH => AluOp::Arsh,
                MOV => AluOp::Mov,
                NEG => {
                    if c & SRC_MASK != K {
                        return Err(DecodeError::UnknownOpcode(c));
                    }
                    zero("src", src.into())?;
                    zero("off", insn.off.into())?;
                    zero("imm", insn.imm.into())?;
                    return Ok(Op::Neg { dst: reg(dst)? });
                }
                END => {
                    if c & SRC_MASK != K {
                        return Err(DecodeError::UnknownOpcode(c));
                    }
                    return end(insn, Endian::Swap);
                }
                _ => return Err(DecodeError::UnknownOpcode(c)),
            };
            if !matches!(alu, AluOp::Div | AluOp::SDiv | AluOp::Mod | AluOp::SMod) {
                zero("off", insn.off.into())?;
            }
            Ok(Op::Alu { op: alu, dst: reg(dst)?, src: operand()? })
        }
        ALU => {
            if c & OP_MASK != END {
                return Err(DecodeError::UnknownOpcode(c));
            }
            end(insn, if c & SRC_MASK == TO_BE { Endian::ToBe } else { Endian::ToLe })
        }
        LD => {
            if c != LD | IMM | DW {
                return Err(DecodeError::UnknownOpcode(c));
            }
            zero("src", src.into())?;
            zero("off", insn.off.into())?;
            let next = insns.get(pc + 1).ok_or(DecodeError::TruncatedLdImm64)?;
            if next.code != 0 || next.dst != 0 || next.src != 0 || next.off != 0 {
                return Err(DecodeError::BadLdImm64Tail);
            }
            let imm = u64::from(insn.imm as u32) | (u64::from(next.imm as u32) << 32);
            Ok(Op::LdImm64 { dst: reg(dst)?, imm })
        }
        LDX | STX => {
            if c & MODE_MASK != MEM {
                return Err(DecodeError::UnknownOpcode(c));
            }
            let size = match c & SIZE_MASK {
                B => Size::B,
                H => Size::H,
                W => Size::W,
                _ => Size::DW,
            };
            let bank = match insn.imm {
                0 => Bank::Stack,
                1 => Bank::Packet,
                2 => Bank::Scratch,
                other => return Err(DecodeError::BadBank(other)),
            };
            if c & CLASS_MASK == LDX {
                Ok(Op::Load { size, bank, dst: reg(dst)?, base: reg(src)?, off: insn.off })
            } else {
                Ok(Op::Store { size, bank, base: reg(dst)?, off: insn.off, src: reg(src)? })
            }
        }
        JMP => {
            let op = c & OP_MASK;
            match op {
                CALL => {
                    if c & SRC_MASK != K {
                        return Err(DecodeError::UnknownOpcode(c));
                    }
                    zero("dst", dst.into())?;
                    if !(0..=i16::from(MAX_CALL_ARGS)).contains(&insn.off) {
                        return Err(DecodeError::TooManyArgs(insn.off));
                    }
                    let nargs = insn.off as u8;
                    let id = insn.imm as u32;
                    match src {
                        CALL_PROG => Ok(Op::CallProg { id, nargs }),
                        CALL_CHAIN => Ok(Op::CallChain { id, nargs }),
                        other => Err(DecodeError::BadCallKind(other)),
                    }
                }
                EXIT => {
                    if c & SRC_MASK != K {
                        return Err(DecodeError::UnknownOpcode(c));
                    }
                    zero("dst", dst.into())?;
                    zero("src", src.into())?;
                    zero("off", insn.off.into())?;
                    zero("imm", insn.imm.into())?;
                    Ok(Op::Exit)
                }
                JA => {
                    if c & SRC_MASK != K {
                        return Err(DecodeError::UnknownOpcode(c));
                    }
                    zero("dst", dst.into())?;
                    zero("src", src.into())?;
                    zero("imm", insn.imm.into())?;
                    Ok(Op::Jump { cond: Cond::Always, dst: 0, src: Operand::Imm(0), off: insn.off })
                }
                _ => {
                    let cond = match op {
                        JEQ => Cond::Eq,
                        JNE => Cond::Ne,
                        JGT => Cond::Gt,
                        JGE => Cond::Ge,
                        JLT => Cond::Lt,
                        JLE => Cond::Le,
                        JSET => Cond::Set,
                        JSGT => Cond::SGt,
                        JSGE => Cond::SGe,
                        JSLT => Cond::SLt,
                        JSLE => Cond::SLe,
                        _ => return Err(DecodeError::UnknownOpcode(c)),
                    };
                    let src = if c & SRC_MASK == X {
                        zero("imm", insn.imm.into())?;
                        Operand::Reg(reg(src)?)
                    } else {
                        zero("src", src.into())?;
                        Operand::Imm(insn.imm)
                    };
                    Ok(Op::Jump { cond, dst: reg(dst)?, src, off: insn.off })
                }
            }
        }
        _ => Err(DecodeError::UnknownOpcode(c)),
    }
}

fn end(insn: Insn, kind: Endian) -> Result<Op, DecodeError> {
    zero("src", insn.src.into())?;
    zero("off", insn.off.into())?;
    match insn.imm {
        16 | 32 | 64 => Ok(Op::End { kind, dst: reg(insn.dst)?, bits: insn.imm as u32 }),
        other => Err(DecodeError::BadEndWidth(other)),
    }
}

/// Applies a byte-order operation to `d`.
pub fn apply_end(kind: Endian, bits: u32, d: u64) -> u64 {
    match (kind, bits) {
        (Endian::ToLe, 16) => d & 0xffff,
        (Endian::ToLe, 32) => d & 0xffff_ffff,
        (Endian::ToLe, _) => d,
        (_, 16) => u64::from((d as u16).swap_bytes()),
        (_, 32) => u64::from((d as u32).swap_bytes()),
        (_, _) => d.swap_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_fields_must_be_zero() {
        assert_eq!(decode(&[Insn::new(0x07, 1, 2, 0, 5)], 0), Err(DecodeError::NonZero { field: "src", value: 2 }));
        assert_eq!(decode(&[Insn::new(0x95, 0, 0, 0, 1)], 0), Err(DecodeError::NonZero { field: "imm", value: 1 }));
        assert_eq!(decode(&[Insn::new(0xb7, 11, 0, 0, 0)], 0), Err(DecodeError::BadRegister(11)));
        assert_eq!(decode(&[Insn::new(0x18, 1, 0, 0, 0)], 0), Err(DecodeError::TruncatedLdImm64));
        assert_eq!(decode(&[Insn::new(0x61, 1, 2, 0, 3)], 0), Err(DecodeError::BadBank(3)));
        assert_eq!(decode(&[Insn::new(0x85, 0, 2, 0, 1)], 0), Err(DecodeError::BadCallKind(2)));
        assert_eq!(decode(&[Insn::new(0x85, 0, 0, 5, 1)], 0), Err(DecodeError::TooManyArgs(5)));
        assert_eq!(decode(&[Insn::new(0xff, 0, 0, 0, 0)], 0), Err(DecodeError::UnknownOpcode(0xff)));
    }

    #[test]
    fn alu_semantics_follow_ebpf() {
        assert_eq!(AluOp::Div.apply(7, 0), 0);
        assert_eq!(AluOp::Mod.apply(7, 0), 7);
        assert_eq!(AluOp::SDiv.apply(-7i64 as u64, 2), -3i64 as u64);
        assert_eq!(AluOp::SMod.apply(-7i64 as u64, 2), -1i64 as u64);
        assert_eq!(AluOp::SDiv.apply(i64::MIN as u64, -1i64 as u64), i64::MIN as u64);
        assert_eq!(AluOp::Lsh.apply(1, 65), 2);
        assert_eq!(AluOp::Arsh.apply(-8i64 as u64, 1), -4i64 as u64);
        assert_eq!(apply_end(Endian::ToBe, 16, 0x1234), 0x3412);
        assert_eq!(apply_end(Endian::ToLe, 16, 0xffff_1234), 0x1234);
    }
}
