//! HIKe VM bytecode as data: the instruction format ([`Insn`]), what each
//! instruction means ([`op`]), the static validator every chain passes before it
//! reaches the kernel ([`validate()`]), a reference interpreter with the eBPF VM's
//! exact semantics ([`interp`]), and an assembler/disassembler ([`asm`]).
//!
//! docs/BYTECODE.md is the normative description; this crate is pure Rust and
//! knows nothing about the kernel.

pub mod asm;
pub mod build;
pub mod hook;
pub mod ids;
pub mod insn;
pub mod interp;
pub mod limits;
pub mod op;
pub mod types;
pub mod validate;
pub mod vm_maps;

pub use hook::Hook;
pub use ids::{ChainId, ProgId};
pub use insn::Insn;
pub use interp::{AbortReason, Ending, Memory, ProgramOutcome, Programs, Run};
pub use op::{AluOp, Bank, Cond, Endian, Op, Operand, Size, decode};
pub use types::{AttachMode, EndsPacket, FieldType, IntType};
pub use validate::{ChainFacts, ChainSig, Env, ProgramSig, Rule, ValidationError, validate};
