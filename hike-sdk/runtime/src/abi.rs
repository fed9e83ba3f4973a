//! Byte layouts shared with the eBPF side (`include/hike/defs.h`). Offsets are
//! computed from the limits the way the C compiler lays the structs out; a kernel
//! test checks every one against the BTF of a compiled object.

use hike_bytecode::Insn;
use hike_bytecode::limits::{FRAME_SIZE, MAX_CHAINS, MAX_DEPTH, MAX_INSNS, MAX_PROGS, SCRATCH_SIZE};

/// `HIKE_NREGS`: registers in the state (r0..r10 used, 16 so indexes are masked, not checked).
pub const STATE_NREGS: usize = 16;
/// `HIKE_ABORT_MAX`: abort counters.
pub const ABORT_MAX: usize = 16;

/// `struct hike_state` offsets.
pub mod state {
    use super::*;
    pub const REGS: usize = 0;
    pub const PC: usize = REGS + STATE_NREGS * 8;
    pub const CHAIN: usize = PC + 4;
    pub const BUDGET: usize = CHAIN + 4;
    pub const DEPTH: usize = BUDGET + 4;
    pub const CALLS: usize = DEPTH + 2;
    pub const FRAMES: usize = CALLS + 2;
    pub const FRAME_SIZE_BYTES: usize = 4 + 4 + 9 * 8;
    pub const STACK: usize = FRAMES + MAX_DEPTH * FRAME_SIZE_BYTES;
    pub const SCRATCH: usize = STACK + MAX_DEPTH * FRAME_SIZE as usize;
    pub const PROG_CALLS: usize = SCRATCH + SCRATCH_SIZE as usize;
    pub const CHAIN_RUNS: usize = PROG_CALLS + MAX_PROGS as usize * 8;
    pub const ABORTS: usize = CHAIN_RUNS + MAX_CHAINS as usize * 8;
    pub const SIZE: usize = ABORTS + ABORT_MAX * 8;
}

/// `struct hike_chain` layout: `u32 len; u16 nargs; u16 flags; insns[MAX_INSNS]`.
pub mod chain {
    use super::*;
    pub const LEN: usize = 0;
    pub const NARGS: usize = 4;
    pub const INSNS: usize = 8;
    pub const SIZE: usize = INSNS + MAX_INSNS * Insn::SIZE;
}

/// `struct hike_config` layout.
pub mod config {
    pub const MAGIC: usize = 0;
    pub const ABI_VERSION: usize = 4;
    pub const BUDGET: usize = 8;
    pub const FLAGS: usize = 12;
    pub const SIZE: usize = 16;
}

/// The value of a chain slot in the `hike_chains` map.
pub fn encode_chain(insns: &[Insn], nargs: u8) -> Vec<u8> {
    let mut v = vec![0u8; chain::SIZE];
    v[chain::LEN..chain::LEN + 4].copy_from_slice(&(insns.len() as u32).to_le_bytes());
    v[chain::NARGS..chain::NARGS + 2].copy_from_slice(&u16::from(nargs).to_le_bytes());
    for (i, insn) in insns.iter().take(MAX_INSNS).enumerate() {
        let at = chain::INSNS + i * Insn::SIZE;
        v[at..at + Insn::SIZE].copy_from_slice(&insn.encode());
    }
    v
}

/// The instructions and parameter count stored in a chain slot; `None` for an
/// empty slot or a value of the wrong size.
pub fn decode_chain(value: &[u8]) -> Option<(Vec<Insn>, u8)> {
    if value.len() != chain::SIZE {
        return None;
    }
    let len = u32_at(value, chain::LEN) as usize;
    if len == 0 || len > MAX_INSNS {
        return None;
    }
    let nargs = u16::from_le_bytes([value[chain::NARGS], value[chain::NARGS + 1]]) as u8;
    Insn::decode_all(&value[chain::INSNS..chain::INSNS + len * Insn::SIZE]).map(|insns| (insns, nargs))
}

/// Little-endian `u32` at `at` (callers pass offsets inside `bytes`).
pub fn u32_at(bytes: &[u8], at: usize) -> u32 {
    bytes.get(at..at + 4).map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Little-endian `u64` at `at`.
pub fn u64_at(bytes: &[u8], at: usize) -> u64 {
    bytes.get(at..at + 8).map_or(0, |b| {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        u64::from_le_bytes(a)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hike_bytecode::build;

    #[test]
    fn state_size_matches_the_c_struct() {
        // sizeof(struct hike_state) as the verifier reports it for the compiled VM.
        assert_eq!(state::SIZE, 17872);
        assert_eq!(chain::SIZE, 2056);
    }

    #[test]
    fn chains_round_trip() {
        let insns = vec![build::mov_imm(0, 7), build::exit()];
        let v = encode_chain(&insns, 2);
        assert_eq!(decode_chain(&v), Some((insns, 2)));
        assert_eq!(decode_chain(&vec![0; chain::SIZE]), None);
    }
}
