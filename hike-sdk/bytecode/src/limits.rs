//! The VM's limits. They mirror `include/hike/defs.h`; hike-runtime's tests compare
//! them with the BTF of a compiled object, so the two cannot drift apart.

/// Registers r0..r10.
pub const NREGS: usize = 11;
/// r10, the read-only frame pointer.
pub const REG_FP: u8 = 10;
/// Instructions per chain.
pub const MAX_INSNS: usize = 256;
/// Chain ids are `1..MAX_CHAINS` (0 is never allocated).
pub const MAX_CHAINS: u32 = 1024;
/// Program ids are `1..MAX_PROGS` (0 is the VM continuation).
pub const MAX_PROGS: u32 = 1024;
/// Chain frames: the chain the loader started plus nested chain calls.
pub const MAX_DEPTH: usize = 8;
/// Stack bytes per chain frame; r10 holds this value.
pub const FRAME_SIZE: u64 = 64;
/// Bytes of the per-CPU scratch bank.
pub const SCRATCH_SIZE: u64 = 64;
/// Bytes at the start of the scratch bank that the loader's parser fills.
pub const PKT_INFO_SIZE: u64 = 16;
/// Highest packet offset a load or store may address.
pub const PKT_MAX_OFF: u64 = 0x3fff;
/// Tail calls per packet (program calls plus continuations): the kernel's limit.
pub const MAX_TAIL_CALLS: u32 = 33;
/// Instructions one program run interprets before it hands over to the
/// continuation program with a tail call.
pub const RESUME_STEPS: u32 = 32;
/// Executed-instruction budget per packet unless configured otherwise.
pub const DEFAULT_BUDGET: u32 = 2048;
/// Arguments a call passes (r1..r4).
pub const MAX_CALL_ARGS: u8 = 4;
/// The ABI version of the pinned maps.
pub const ABI_VERSION: u32 = 2;
/// `HIKE` in little-endian, the first word of the configuration map.
pub const MAGIC: u32 = 0x454b_4948;
