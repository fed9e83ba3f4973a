//! What the runtime records about each id, in pinned array maps next to the VM's
//! (`<root>/vm/hike_prog_meta`, `<root>/vm/hike_chain_meta`). Keeping the records in
//! bpffs, beside the objects they describe, makes them live and die with those
//! objects, survive restarts of any process, and change one entry at a time
//! (a map update is atomic), which a file elsewhere could not promise.
//!
//! A record goes `Free` → `Pending` (id taken, kernel object being written) →
//! `Ready`. A `Pending` record found when the runtime opens a root belongs to a
//! process that died half-way; [`crate::Runtime::open`] repairs it.

use hike_bytecode::Hook;

/// Size of a program record.
pub const PROG_META_SIZE: usize = 256;
/// Size of a chain record.
pub const CHAIN_META_SIZE: usize = 192;

const NAME: usize = 64;
const PACKAGE: usize = 64;
const VERSION: usize = 32;

/// Where a record is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    Free = 0,
    Pending = 1,
    Ready = 2,
}

impl RecordState {
    fn from_u32(v: u32) -> RecordState {
        match v {
            1 => RecordState::Pending,
            2 => RecordState::Ready,
            _ => RecordState::Free,
        }
    }
}

/// A registered program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgMeta {
    pub state: RecordState,
    pub hook: Hook,
    pub nargs: u8,
    /// The kernel's id of the loaded program (as `bpftool prog` shows it).
    pub bpf_id: u32,
    pub registered_unix_ns: u64,
    /// The VM's call counter for this id when the id was assigned: counters live
    /// per id in the VM state and outlast the program that had the id before, so
    /// calls are counted from here.
    pub calls_base: u64,
    pub name: String,
    pub package: String,
    pub version: String,
}

/// An installed chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainMeta {
    pub state: RecordState,
    pub hook: Hook,
    pub nargs: u8,
    /// Frames a call to it uses (1 + its deepest chain call).
    pub depth: u8,
    pub len: u32,
    pub installed_unix_ns: u64,
    /// The VM's run counter for this id when the id was assigned (see
    /// [`ProgMeta::calls_base`]).
    pub runs_base: u64,
    pub name: String,
    /// Who installed it (a deployment, a package), free-form.
    pub owner: String,
}

fn put_str(buf: &mut [u8], at: usize, cap: usize, s: &str) {
    let bytes = s.as_bytes();
    let n = bytes.len().min(cap - 1);
    buf[at..at + n].copy_from_slice(&bytes[..n]);
}

fn get_str(buf: &[u8], at: usize, cap: usize) -> String {
    let field = &buf[at..at + cap];
    let end = field.iter().position(|&b| b == 0).unwrap_or(cap);
    String::from_utf8_lossy(&field[..end]).into_owned()
}

fn hook_code(h: Hook) -> u8 {
    match h {
        Hook::Xdp => 0,
        Hook::Tc => 1,
    }
}

fn hook_from(c: u8) -> Hook {
    if c == 1 { Hook::Tc } else { Hook::Xdp }
}

impl ProgMeta {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; PROG_META_SIZE];
        b[0..4].copy_from_slice(&(self.state as u32).to_le_bytes());
        b[4] = hook_code(self.hook);
        b[5] = self.nargs;
        b[8..12].copy_from_slice(&self.bpf_id.to_le_bytes());
        b[16..24].copy_from_slice(&self.registered_unix_ns.to_le_bytes());
        b[24..32].copy_from_slice(&self.calls_base.to_le_bytes());
        put_str(&mut b, 32, NAME, &self.name);
        put_str(&mut b, 32 + NAME, PACKAGE, &self.package);
        put_str(&mut b, 32 + NAME + PACKAGE, VERSION, &self.version);
        b
    }

    /// Decodes a record; a value of the wrong size reads as a free slot.
    pub fn decode(b: &[u8]) -> ProgMeta {
        if b.len() != PROG_META_SIZE {
            return ProgMeta::free();
        }
        ProgMeta {
            state: RecordState::from_u32(crate::abi::u32_at(b, 0)),
            hook: hook_from(b[4]),
            nargs: b[5],
            bpf_id: crate::abi::u32_at(b, 8),
            registered_unix_ns: crate::abi::u64_at(b, 16),
            calls_base: crate::abi::u64_at(b, 24),
            name: get_str(b, 32, NAME),
            package: get_str(b, 32 + NAME, PACKAGE),
            version: get_str(b, 32 + NAME + PACKAGE, VERSION),
        }
    }

    pub fn free() -> ProgMeta {
        ProgMeta {
            state: RecordState::Free,
            hook: Hook::Xdp,
            nargs: 0,
            bpf_id: 0,
            registered_unix_ns: 0,
            calls_base: 0,
            name: String::new(),
            package: String::new(),
            version: String::new(),
        }
    }
}

impl ChainMeta {
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; CHAIN_META_SIZE];
        b[0..4].copy_from_slice(&(self.state as u32).to_le_bytes());
        b[4] = hook_code(self.hook);
        b[5] = self.nargs;
        b[6] = self.depth;
        b[8..12].copy_from_slice(&self.len.to_le_bytes());
        b[16..24].copy_from_slice(&self.installed_unix_ns.to_le_bytes());
        b[24..32].copy_from_slice(&self.runs_base.to_le_bytes());
        put_str(&mut b, 32, NAME, &self.name);
        put_str(&mut b, 32 + NAME, 96, &self.owner);
        b
    }

    pub fn decode(b: &[u8]) -> ChainMeta {
        if b.len() != CHAIN_META_SIZE {
            return ChainMeta::free();
        }
        ChainMeta {
            state: RecordState::from_u32(crate::abi::u32_at(b, 0)),
            hook: hook_from(b[4]),
            nargs: b[5],
            depth: b[6],
            len: crate::abi::u32_at(b, 8),
            installed_unix_ns: crate::abi::u64_at(b, 16),
            runs_base: crate::abi::u64_at(b, 24),
            name: get_str(b, 32, NAME),
            owner: get_str(b, 32 + NAME, 96),
        }
    }

    pub fn free() -> ChainMeta {
        ChainMeta {
            state: RecordState::Free,
            hook: Hook::Xdp,
            nargs: 0,
            depth: 0,
            len: 0,
            installed_unix_ns: 0,
            runs_base: 0,
            name: String::new(),
            owner: String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let p = ProgMeta {
            state: RecordState::Ready,
            hook: Hook::Tc,
            nargs: 3,
            bpf_id: 77,
            registered_unix_ns: 123,
            calls_base: 1251,
            name: "ip6_sd_tbmon".into(),
            package: "meter".into(),
            version: "1.2.0".into(),
        };
        assert_eq!(ProgMeta::decode(&p.encode()), p);
        let c = ChainMeta {
            state: RecordState::Pending,
            hook: Hook::Xdp,
            nargs: 1,
            depth: 2,
            len: 40,
            installed_unix_ns: 9,
            runs_base: 17,
            name: "ddos_tb_2_lev".into(),
            owner: "edge-guard".into(),
        };
        assert_eq!(ChainMeta::decode(&c.encode()), c);
        assert_eq!(ProgMeta::decode(&[1, 2, 3]).state, RecordState::Free);
    }
}
