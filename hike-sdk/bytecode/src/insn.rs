//! The raw instruction: eBPF's 8-byte format, `code | dst:4 src:4 | off:16 | imm:32`,
//! little-endian, exactly as `struct hike_insn` lays it out in memory.

use std::fmt;

/// Opcode bits, as in `include/hike/defs.h` (and, where they coincide, eBPF).
pub mod code {
    pub const CLASS_MASK: u8 = 0x07;
    pub const LD: u8 = 0x00;
    pub const LDX: u8 = 0x01;
    pub const STX: u8 = 0x03;
    pub const ALU: u8 = 0x04;
    pub const JMP: u8 = 0x05;
    pub const ALU64: u8 = 0x07;

    pub const SRC_MASK: u8 = 0x08;
    pub const K: u8 = 0x00;
    pub const X: u8 = 0x08;

    pub const OP_MASK: u8 = 0xf0;
    pub const ADD: u8 = 0x00;
    pub const SUB: u8 = 0x10;
    pub const MUL: u8 = 0x20;
    pub const DIV: u8 = 0x30;
    pub const OR: u8 = 0x40;
    pub const AND: u8 = 0x50;
    pub const LSH: u8 = 0x60;
    pub const RSH: u8 = 0x70;
    pub const NEG: u8 = 0x80;
    pub const MOD: u8 = 0x90;
    pub const XOR: u8 = 0xa0;
    pub const MOV: u8 = 0xb0;
    pub const ARSH: u8 = 0xc0;
    pub const END: u8 = 0xd0;
    pub const TO_LE: u8 = 0x00;
    pub const TO_BE: u8 = 0x08;

    pub const JA: u8 = 0x00;
    pub const JEQ: u8 = 0x10;
    pub const JGT: u8 = 0x20;
    pub const JGE: u8 = 0x30;
    pub const JSET: u8 = 0x40;
    pub const JNE: u8 = 0x50;
    pub const JSGT: u8 = 0x60;
    pub const JSGE: u8 = 0x70;
    pub const CALL: u8 = 0x80;
    pub const EXIT: u8 = 0x90;
    pub const JLT: u8 = 0xa0;
    pub const JLE: u8 = 0xb0;
    pub const JSLT: u8 = 0xc0;
    pub const JSLE: u8 = 0xd0;

    pub const SIZE_MASK: u8 = 0x18;
    pub const W: u8 = 0x00;
    pub const H: u8 = 0x08;
    pub const B: u8 = 0x10;
    pub const DW: u8 = 0x18;
    pub const MODE_MASK: u8 = 0xe0;
    pub const MEM: u8 = 0x60;
    pub const IMM: u8 = 0x00;

    /// `src_reg` of a call: what `imm` names.
    pub const CALL_PROG: u8 = 0;
    pub const CALL_CHAIN: u8 = 1;
}

/// One raw instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Insn {
    pub code: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

impl Insn {
    /// Size of an encoded instruction.
    pub const SIZE: usize = 8;

    /// An instruction from its fields. `dst` and `src` keep only their low 4 bits,
    /// as the encoding does.
    pub const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Self {
        Insn { code, dst: dst & 0xf, src: src & 0xf, off, imm }
    }

    /// The 8 bytes of the instruction, as the VM reads them.
    pub fn encode(&self) -> [u8; 8] {
        let mut out = [0u8; 8];
        out[0] = self.code;
        out[1] = (self.dst & 0xf) | (self.src << 4);
        out[2..4].copy_from_slice(&self.off.to_le_bytes());
        out[4..8].copy_from_slice(&self.imm.to_le_bytes());
        out
    }

    /// The instruction encoded in `bytes`.
    pub fn decode(bytes: [u8; 8]) -> Self {
        Insn {
            code: bytes[0],
            dst: bytes[1] & 0xf,
            src: bytes[1] >> 4,
            off: i16::from_le_bytes([bytes[2], bytes[3]]),
            imm: i32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        }
    }

    /// Instructions encoded back to back in `bytes`; `None` when the length is not
    /// a multiple of 8.
    pub fn decode_all(bytes: &[u8]) -> Option<Vec<Insn>> {
        if !bytes.len().is_multiple_of(Insn::SIZE) {
            return None;
        }
        Some(
            bytes
                .chunks_exact(Insn::SIZE)
                .map(|c| Insn::decode([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        )
    }

    /// `instructions` encoded back to back.
    pub fn encode_all(insns: &[Insn]) -> Vec<u8> {
        insns.iter().flat_map(Insn::encode).collect()
    }

    /// The instruction class (`code & 7`).
    pub fn class(&self) -> u8 {
        self.code & code::CLASS_MASK
    }
}

impl fmt::Display for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02x} {:x}{:x} {:04x} {:08x}", self.code, self.src, self.dst, self.off as u16, self.imm as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_matches_struct_bpf_insn() {
        // r1 = *(u16 *)(packet + r2 + 12): ldxh with bank 1
        let insn = Insn::new(0x69, 1, 2, 12, 1);
        assert_eq!(insn.encode(), [0x69, 0x21, 12, 0, 1, 0, 0, 0]);
        assert_eq!(Insn::decode(insn.encode()), insn);
        let neg = Insn::new(0xb7, 3, 0, -1, -2);
        assert_eq!(neg.encode(), [0xb7, 0x03, 0xff, 0xff, 0xfe, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn decode_all_needs_whole_instructions() {
        assert!(Insn::decode_all(&[0; 7]).is_none());
        assert_eq!(Insn::decode_all(&[0; 16]).map(|v| v.len()), Some(2));
    }
}
