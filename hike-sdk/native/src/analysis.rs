//! What a chain can do at most, over every path through it and the chains it
//! calls: the instructions it executes and the VM's tail calls it makes (program
//! calls and continuations). A native chain whose worst path fits in the budget
//! and the call limit can never be aborted for either, so it needs no counters:
//! the native program checks the budget once, at its start.

use std::collections::{BTreeMap, HashMap};

use hike_bytecode::limits::{MAX_DEPTH, MAX_TAIL_CALLS, RESUME_STEPS};
use hike_bytecode::{Cond, Insn, Op, decode};

use crate::error::{NativeError, Result};

/// Instructions a native chain may expand to, with every chain call inlined.
pub const MAX_EXPANDED_INSNS: usize = 16 * 1024;

/// The worst case of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worst {
    /// Most instructions any run executes (the budget it needs).
    pub steps: u32,
    /// Most program calls plus continuations any run makes.
    pub calls: u32,
    /// Instructions of the chain with its chain calls inlined.
    pub expanded: usize,
}

/// Decoded chains by id.
pub(crate) type Chains = BTreeMap<u32, Vec<Insn>>;

/// Decodes every instruction of a chain, refusing backward jumps.
pub(crate) fn decode_chain(chain: u32, insns: &[Insn]) -> Result<Vec<(usize, Op)>> {
    let mut out = Vec::new();
    let mut pc = 0;
    while pc < insns.len() {
        let op = decode(insns, pc).map_err(|e| NativeError::BadCode { chain, pc, reason: e.to_string() })?;
        if let Op::Jump { off, .. } = op
            && off < 0
        {
            return Err(NativeError::Loop { chain, pc });
        }
        let width = op.width();
        out.push((pc, op));
        pc += width;
    }
    Ok(out)
}

/// The worst case of `top` (which must be loop-free, as must the chains it calls).
pub fn worst(top: u32, chains: &Chains) -> Result<Worst> {
    let mut decoded: HashMap<u32, HashMap<usize, Op>> = HashMap::new();
    let mut expanded = 0usize;
    expand(top, chains, &mut decoded, 0, &mut expanded, top)?;
    let mut memo = HashMap::new();
    let mut frames = Vec::new();
    let (steps, calls) = walk(&decoded, &mut memo, &mut frames, top, 0, 0)?;
    if calls > MAX_TAIL_CALLS {
        return Err(NativeError::CallLimit { chain: top, calls, limit: MAX_TAIL_CALLS });
    }
    Ok(Worst { steps, calls, expanded })
}

/// Decodes `chain` and the chains it calls, counting the inlined size.
fn expand(
    chain: u32,
    chains: &Chains,
    decoded: &mut HashMap<u32, HashMap<usize, Op>>,
    depth: usize,
    expanded: &mut usize,
    top: u32,
) -> Result<()> {
    let insns = chains.get(&chain).filter(|c| !c.is_empty()).ok_or(NativeError::MissingChain { chain })?;
    *expanded += insns.len();
    if *expanded > MAX_EXPANDED_INSNS {
        return Err(NativeError::TooLarge { chain: top, limit: MAX_EXPANDED_INSNS });
    }
    if let std::collections::hash_map::Entry::Vacant(e) = decoded.entry(chain) {
        e.insert(decode_chain(chain, insns)?.into_iter().collect());
    }
    let callees: Vec<u32> = decoded[&chain]
        .values()
        .filter_map(|op| match op {
            Op::CallChain { id, .. } => Some(*id),
            _ => None,
        })
        .collect();
    // Deeper calls abort at run time (`depth`); their code is never reached.
    if depth + 1 < MAX_DEPTH {
        for callee in callees {
            expand(callee, chains, decoded, depth + 1, expanded, top)?;
        }
    }
    Ok(())
}

type Key = (Vec<(u32, usize)>, u32, usize, u32);

/// Worst (steps, calls) from instruction `pc` of `chain` with `run` instructions
/// already interpreted in this program run, to the end of the packet's chain.
fn walk(
    decoded: &HashMap<u32, HashMap<usize, Op>>,
    memo: &mut HashMap<Key, (u32, u32)>,
    frames: &mut Vec<(u32, usize)>,
    chain: u32,
    pc: usize,
    run: u32,
) -> Result<(u32, u32)> {
    let key = (frames.clone(), chain, pc, run);
    if let Some(v) = memo.get(&key) {
        return Ok(*v);
    }
    let ops = &decoded[&chain];
    let op = *ops.get(&pc).ok_or_else(|| NativeError::BadCode {
        chain,
        pc,
        reason: "control reaches past the end or into the middle of an instruction".into(),
    })?;
    // Exactly the VM's order: a continuation when the run is full, then the step.
    let (mut calls, run) = if run == RESUME_STEPS { (1, 1) } else { (0, run + 1) };
    let after = match op {
        Op::Alu { .. } | Op::Neg { .. } | Op::End { .. } | Op::Load { .. } | Op::Store { .. } | Op::LdImm64 { .. } => {
            walk(decoded, memo, frames, chain, pc + op.width(), run)?
        }
        Op::Jump { cond, off, .. } => {
            let target = (pc as i64 + 1 + i64::from(off)) as usize;
            let taken = walk(decoded, memo, frames, chain, target, run)?;
            if cond == Cond::Always {
                taken
            } else {
                let fall = walk(decoded, memo, frames, chain, pc + 1, run)?;
                (taken.0.max(fall.0), taken.1.max(fall.1))
            }
        }
        Op::CallProg { .. } => {
            calls += 1;
            // The program may end the packet; the worst case is that it returns.
            walk(decoded, memo, frames, chain, pc + 1, 0)?
        }
        Op::CallChain { id, .. } => {
            if frames.len() + 1 >= MAX_DEPTH {
                (0, 0)
            } else {
                frames.push((chain, pc + 1));
                let r = walk(decoded, memo, frames, id, 0, run);
                frames.pop();
                r?
            }
        }
        Op::Exit => match frames.pop() {
            None => (0, 0),
            Some((caller, ret)) => {
                let r = walk(decoded, memo, frames, caller, ret, run);
                frames.push((caller, ret));
                r?
            }
        },
    };
    let v = (after.0.saturating_add(1), after.1.saturating_add(calls));
    memo.insert(key, v);
    Ok(v)
}
