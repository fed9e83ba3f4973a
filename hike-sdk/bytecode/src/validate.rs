//! The static validator: every chain passes it before it is written to the kernel.
//!
//! The eBPF VM stays memory-safe whatever it runs; the validator is what makes a
//! chain mean what its author intended, and turns mistakes into errors that name
//! the instruction and the rule instead of aborted packets.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::insn::Insn;
use crate::limits::{FRAME_SIZE, MAX_CHAINS, MAX_DEPTH, MAX_INSNS, MAX_PROGS, REG_FP};
use crate::op::{AluOp, Bank, Cond, DecodeError, Op, Operand, decode};

/// The rules a chain must follow; each is a section of docs/BYTECODE.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// At least one instruction, at most `MAX_INSNS`.
    Length,
    /// The instruction decodes: known opcode, registers r0..r10, reserved fields zero.
    Encoding,
    /// r10 is read-only.
    FramePointer,
    /// Jumps land on an instruction of the chain (not outside it, not inside a
    /// 64-bit immediate load).
    JumpTarget,
    /// No instruction can fall through past the last one.
    FallThrough,
    /// Constant shift amounts are below 64.
    Shift,
    /// Stack accesses through r10 with a constant offset stay inside the frame.
    StackBounds,
    /// Program calls name a registered program of the chain's hook with the
    /// argument count of its signature.
    ProgramCall,
    /// Chain calls name an installed chain with its parameter count.
    ChainCall,
    /// Chain calls nest at most `MAX_DEPTH` deep and never recurse.
    CallDepth,
}

impl Rule {
    /// The rule's name, as error messages and BYTECODE.md spell it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Length => "length",
            Rule::Encoding => "encoding",
            Rule::FramePointer => "frame-pointer",
            Rule::JumpTarget => "jump-target",
            Rule::FallThrough => "fall-through",
            Rule::Shift => "shift",
            Rule::StackBounds => "stack-bounds",
            Rule::ProgramCall => "program-call",
            Rule::ChainCall => "chain-call",
            Rule::CallDepth => "call-depth",
        }
    }
}

/// A rejected chain: which instruction, which rule, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    /// Index of the offending instruction (0 for whole-chain rules).
    pub index: usize,
    pub rule: Rule,
    pub message: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "instruction {}: {} [rule {}]", self.index, self.message, self.rule.name())
    }
}

impl std::error::Error for ValidationError {}

/// A registered program, as the validator needs to know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramSig {
    pub name: String,
    pub nargs: u8,
}

/// An installed chain, as the validator needs to know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSig {
    pub name: String,
    pub nargs: u8,
    /// Frames a call to it uses: 1 plus the deepest chain it calls.
    pub depth: usize,
}

/// What the chain will be linked against: the programs of its hook and the chains
/// installed so far.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub programs: HashMap<u32, ProgramSig>,
    pub chains: HashMap<u32, ChainSig>,
}

/// What validation learned about an accepted chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainFacts {
    /// Frames the chain uses when started: 1 plus its deepest chain call.
    pub depth: usize,
    /// Program ids it calls.
    pub programs: HashSet<u32>,
    /// Chain ids it calls.
    pub chains: HashSet<u32>,
}

/// Validates `insns` for linking against `env`.
pub fn validate(insns: &[Insn], env: &Env) -> Result<ChainFacts, ValidationError> {
    let err = |index: usize, rule: Rule, message: String| Err(ValidationError { index, rule, message });
    if insns.is_empty() {
        return err(0, Rule::Length, "a chain needs at least one instruction (`exit`)".into());
    }
    if insns.len() > MAX_INSNS {
        return err(
            MAX_INSNS,
            Rule::Length,
            format!("chain has {} instructions; the VM holds at most {MAX_INSNS}", insns.len()),
        );
    }

    // Decode everything first: jump targets need to know which slots start instructions.
    let mut ops: Vec<Option<Op>> = vec![None; insns.len()];
    let mut pc = 0;
    while pc < insns.len() {
        let op = decode(insns, pc).map_err(|e| ValidationError {
            index: pc,
            rule: Rule::Encoding,
            message: match e {
                DecodeError::UnknownOpcode(_) => format!("{e} in `{}`", insns[pc]),
                _ => e.to_string(),
            },
        })?;
        ops[pc] = Some(op);
        pc += op.width();
    }

    let mut facts = ChainFacts { depth: 1, programs: HashSet::new(), chains: HashSet::new() };
    for (pc, op) in ops.iter().enumerate() {
        let Some(op) = *op else { continue };
        if op.writes() == Some(REG_FP) {
            return err(pc, Rule::FramePointer, "writes r10, the read-only frame pointer".into());
        }
        match op {
            Op::Alu { op: AluOp::Lsh | AluOp::Rsh | AluOp::Arsh, src: Operand::Imm(n), .. }
                if !(0..64).contains(&n) =>
            {
                return err(pc, Rule::Shift, format!("shifts by {n}; constant shifts must be 0..63"));
            }
            Op::Jump { off, .. } => {
                let target = pc as i64 + 1 + i64::from(off);
                if target < 0 || target >= insns.len() as i64 {
                    return err(
                        pc,
                        Rule::JumpTarget,
                        format!("jumps to {target}, outside the chain (0..={})", insns.len() - 1),
                    );
                }
                if ops[target as usize].is_none() {
                    return err(
                        pc,
                        Rule::JumpTarget,
                        format!("jumps to {target}, the second half of a 64-bit immediate load"),
                    );
                }
            }
            Op::Load { bank: Bank::Stack, base: REG_FP, off, size, .. }
            | Op::Store { bank: Bank::Stack, base: REG_FP, off, size, .. } => {
                let addr = FRAME_SIZE as i64 + i64::from(off);
                if addr < 0 || addr + size.bytes() as i64 > FRAME_SIZE as i64 {
                    return err(
                        pc,
                        Rule::StackBounds,
                        format!(
                            "accesses r10{off:+} ({} bytes), outside the {FRAME_SIZE}-byte frame (r10-{FRAME_SIZE}..r10-{})",
                            size.bytes(),
                            size.bytes()
                        ),
                    );
                }
            }
            Op::CallProg { id, nargs } => {
                if id == 0 || id >= MAX_PROGS {
                    return err(pc, Rule::ProgramCall, format!("calls program id {id}, outside 1..{MAX_PROGS}"));
                }
                match env.programs.get(&id) {
                    None => return err(pc, Rule::ProgramCall, format!("calls program {id}, which is not registered")),
                    Some(sig) if sig.nargs != nargs => {
                        return err(
                            pc,
                            Rule::ProgramCall,
                            format!(
                                "calls program {id} ({}) with {nargs} argument(s); its signature takes {}",
                                sig.name, sig.nargs
                            ),
                        );
                    }
                    Some(_) => {
                        facts.programs.insert(id);
                    }
                }
            }
            Op::CallChain { id, nargs } => {
                if id == 0 || id >= MAX_CHAINS {
                    return err(pc, Rule::ChainCall, format!("calls chain id {id}, outside 1..{MAX_CHAINS}"));
                }
                match env.chains.get(&id) {
                    None => return err(pc, Rule::ChainCall, format!("calls chain {id}, which is not installed")),
                    Some(sig) if sig.nargs != nargs => {
                        return err(
                            pc,
                            Rule::ChainCall,
                            format!("calls chain {id} ({}) with {nargs} argument(s); it takes {}", sig.name, sig.nargs),
                        );
                    }
                    Some(sig) => {
                        if 1 + sig.depth > MAX_DEPTH {
                            return err(
                                pc,
                                Rule::CallDepth,
                                format!(
                                    "calls chain {id} ({}), which nests {} frames deep; with this chain that is {}, over the VM's {MAX_DEPTH}",
                                    sig.name,
                                    sig.depth,
                                    sig.depth + 1
                                ),
                            );
                        }
                        facts.depth = facts.depth.max(1 + sig.depth);
                        facts.chains.insert(id);
                    }
                }
            }
            _ => {}
        }
    }

    // The last instruction must not continue to a next one.
    let last = (0..insns.len()).rev().find(|&i| ops[i].is_some()).unwrap_or(0);
    match ops[last] {
        Some(Op::Exit) | Some(Op::Jump { cond: Cond::Always, .. }) => {}
        _ => {
            return err(
                last,
                Rule::FallThrough,
                "the last instruction can continue past the end of the chain; end with `exit` or `goto`".into(),
            );
        }
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::*;
    use crate::op::Size;

    fn env() -> Env {
        let mut env = Env::default();
        env.programs.insert(3, ProgramSig { name: "monitor".into(), nargs: 1 });
        env.chains.insert(5, ChainSig { name: "inner".into(), nargs: 0, depth: 1 });
        env.chains.insert(6, ChainSig { name: "deep".into(), nargs: 0, depth: MAX_DEPTH });
        env
    }

    fn rejects(insns: &[Insn], rule: Rule, index: usize, text: &str) {
        let e = validate(insns, &env()).unwrap_err();
        assert_eq!((e.rule, e.index), (rule, index), "{e}");
        assert!(e.to_string().contains(text), "{e}");
    }

    #[test]
    fn accepts_a_chain_and_reports_its_facts() {
        let chain =
            [mov_imm(1, 2), call_prog(3, 1), call_chain(5, 0), jmp_imm(Cond::Eq, 0, 0, 1), mov_imm(0, 1), exit()];
        let facts = validate(&chain, &env()).unwrap();
        assert_eq!(facts.depth, 2);
        assert!(facts.programs.contains(&3) && facts.chains.contains(&5));
    }

    #[test]
    fn each_rule_rejects() {
        rejects(&[], Rule::Length, 0, "at least one instruction");
        rejects(&vec![exit(); MAX_INSNS + 1], Rule::Length, MAX_INSNS, "at most 256");
        rejects(&[Insn::new(0xff, 0, 0, 0, 0), exit()], Rule::Encoding, 0, "unknown opcode 0xff");
        rejects(&[mov_imm(11, 0), exit()], Rule::Encoding, 0, "register r11 does not exist");
        rejects(&[mov_imm(10, 0), exit()], Rule::FramePointer, 0, "writes r10");
        rejects(&[load(Size::B, Bank::Packet, 10, 1, 0), exit()], Rule::FramePointer, 0, "writes r10");
        rejects(&[ja(5), exit()], Rule::JumpTarget, 0, "jumps to 6, outside the chain");
        rejects(&[ja(-2), exit()], Rule::JumpTarget, 0, "jumps to -1");
        let [a, b] = ld_imm64(1, 7);
        rejects(&[ja(1), a, b, exit()], Rule::JumpTarget, 0, "second half of a 64-bit immediate load");
        rejects(&[mov_imm(0, 0)], Rule::FallThrough, 0, "end with `exit` or `goto`");
        rejects(&[exit(), jmp_imm(Cond::Eq, 0, 0, -2)], Rule::FallThrough, 1, "continue past the end");
        rejects(&[alu_imm(AluOp::Lsh, 1, 64), exit()], Rule::Shift, 0, "shifts by 64");
        rejects(&[store(Size::DW, Bank::Stack, 10, -4, 1), exit()], Rule::StackBounds, 0, "outside the 64-byte frame");
        rejects(&[load(Size::B, Bank::Stack, 1, 10, -65), exit()], Rule::StackBounds, 0, "r10-65");
        rejects(&[load(Size::B, Bank::Stack, 1, 10, 0), exit()], Rule::StackBounds, 0, "r10+0");
        rejects(&[call_prog(4, 0), exit()], Rule::ProgramCall, 0, "program 4, which is not registered");
        rejects(
            &[call_prog(3, 2), exit()],
            Rule::ProgramCall,
            0,
            "(monitor) with 2 argument(s); its signature takes 1",
        );
        rejects(&[call_prog(0, 0), exit()], Rule::ProgramCall, 0, "outside 1..1024");
        rejects(&[call_chain(9, 0), exit()], Rule::ChainCall, 0, "chain 9, which is not installed");
        rejects(&[call_chain(5, 1), exit()], Rule::ChainCall, 0, "it takes 0");
        rejects(&[call_chain(6, 0), exit()], Rule::CallDepth, 0, "over the VM's 8");
    }

    #[test]
    fn stack_edges_are_inside() {
        assert!(
            validate(
                &[store(Size::DW, Bank::Stack, 10, -64, 1), load(Size::DW, Bank::Stack, 1, 10, -8), exit()],
                &env()
            )
            .is_ok()
        );
    }
}
