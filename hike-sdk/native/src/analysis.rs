//! A chain as the VM runs it, unfolded: every state the VM can be in before an
//! instruction — the call stack of chain frames, the chain and pc, and the two
//! counters behind its limits (instructions in the current program run, which
//! force a continuation every 32, and tail calls made, at most 33) — and the
//! states each instruction leads to. The counters only grow along a path (every
//! instruction adds to the run; a run only restarts with a tail call), so this
//! graph has no cycles even when the chain loops, and it is finite.
//!
//! From it: the most instructions any run executes (the budget a packet needs
//! for the native program, which counts nothing, to behave as the VM), and
//! which states can still reach the call limit (every state in a loop can: the
//! unfolding runs a loop until the limit). Code for those is emitted per state,
//! so loops are unrolled as the VM would run them and the VM's call-limit
//! aborts fall at known places; every other state at one place (call stack,
//! chain, pc) shares one copy.

use std::collections::{BTreeMap, HashMap};

use hike_bytecode::limits::{MAX_DEPTH, MAX_TAIL_CALLS, RESUME_STEPS};
use hike_bytecode::{Cond, Insn, Op, decode};

use crate::error::{NativeError, Result};

/// States a chain may unfold to; beyond this it stays interpreted.
pub const MAX_EXPANDED_INSNS: usize = 16 * 1024;

/// Decoded chains by id.
pub(crate) type Chains = BTreeMap<u32, Vec<Insn>>;

/// How the native code is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// No path reaches the call limit (so no loop): one copy of each instruction per call stack.
    Compact,
    /// Some path does: states that may still reach it get a copy each (loops
    /// unrolled, the call-limit aborts where the VM has them); the others share
    /// one per place.
    Exact,
}

/// The worst case of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Worst {
    /// Most instructions any run executes (the budget it needs).
    pub steps: u32,
    /// Most program calls plus continuations any run makes (at most the VM's limit).
    pub calls: u32,
    /// States the chain unfolds to.
    pub states: usize,
    pub shape: Shape,
}

/// The VM's state before an instruction.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct State {
    /// Callers' (chain, return pc), outermost first.
    pub frames: Vec<(u32, usize)>,
    pub chain: u32,
    pub pc: usize,
    /// Instructions interpreted in the current program run.
    pub run: u32,
    /// Tail calls made for the packet.
    pub calls: u32,
}

impl State {
    /// The same place with the counters dropped (compact code's key).
    pub fn place(&self) -> State {
        State { run: 0, calls: 0, ..self.clone() }
    }
}

/// Where an instruction leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Next {
    /// The VM aborts before executing it: a continuation past the call limit.
    LimitBefore,
    /// Executed; the states it may lead to (none: it ends the packet or aborts).
    Then(Vec<State>),
}

/// The decoded chains, for stepping through them.
pub(crate) struct Unfolding {
    ops: HashMap<u32, HashMap<usize, Op>>,
}

/// Decodes every instruction of a chain, with its pc.
pub(crate) fn decode_chain(chain: u32, insns: &[Insn]) -> Result<Vec<(usize, Op)>> {
    let mut out = Vec::new();
    let mut pc = 0;
    while pc < insns.len() {
        let op = decode(insns, pc).map_err(|e| NativeError::BadCode { chain, pc, reason: e.to_string() })?;
        let width = op.width();
        out.push((pc, op));
        pc += width;
    }
    Ok(out)
}

impl Unfolding {
    /// Decodes `top` and every chain it may call.
    pub fn new(top: u32, chains: &Chains) -> Result<Unfolding> {
        let mut ops = HashMap::new();
        let mut todo = vec![top];
        while let Some(chain) = todo.pop() {
            if ops.contains_key(&chain) {
                continue;
            }
            let insns = chains.get(&chain).filter(|c| !c.is_empty()).ok_or(NativeError::MissingChain { chain })?;
            let decoded: HashMap<usize, Op> = decode_chain(chain, insns)?.into_iter().collect();
            todo.extend(decoded.values().filter_map(|op| match op {
                Op::CallChain { id, .. } => Some(*id),
                _ => None,
            }));
            ops.insert(chain, decoded);
        }
        Ok(Unfolding { ops })
    }

    pub fn op(&self, s: &State) -> Result<Op> {
        self.ops.get(&s.chain).and_then(|c| c.get(&s.pc)).copied().ok_or_else(|| NativeError::BadCode {
            chain: s.chain,
            pc: s.pc,
            reason: "control reaches past the end or into the middle of an instruction".into(),
        })
    }

    /// The states after the instruction at `s`, exactly in the VM's order of
    /// checks: a continuation when the run is full, the step, then the
    /// instruction's own checks (the call limit at a program call, the depth at a
    /// chain call).
    pub fn next(&self, s: &State) -> Result<Next> {
        let op = self.op(s)?;
        let (run, calls) = if s.run == RESUME_STEPS {
            if s.calls >= MAX_TAIL_CALLS {
                return Ok(Next::LimitBefore);
            }
            (1, s.calls + 1)
        } else {
            (s.run + 1, s.calls)
        };
        let at = |pc: usize| State { frames: s.frames.clone(), chain: s.chain, pc, run, calls };
        Ok(Next::Then(match op {
            Op::Alu { .. }
            | Op::Neg { .. }
            | Op::End { .. }
            | Op::Load { .. }
            | Op::Store { .. }
            | Op::LdImm64 { .. } => {
                vec![at(s.pc + op.width())]
            }
            Op::Jump { cond, off, .. } => {
                let target = at((s.pc as i64 + 1 + i64::from(off)) as usize);
                if cond == Cond::Always { vec![target] } else { vec![target, at(s.pc + 1)] }
            }
            Op::CallProg { .. } if calls >= MAX_TAIL_CALLS => Vec::new(),
            Op::CallProg { .. } => vec![State { run: 0, calls: calls + 1, ..at(s.pc + 1) }],
            Op::CallChain { .. } if s.frames.len() + 1 >= MAX_DEPTH => Vec::new(),
            Op::CallChain { id, .. } => {
                let mut frames = s.frames.clone();
                frames.push((s.chain, s.pc + 1));
                vec![State { frames, chain: id, pc: 0, run, calls }]
            }
            Op::Exit => {
                let mut frames = s.frames.clone();
                match frames.pop() {
                    None => Vec::new(),
                    Some((caller, ret)) => vec![State { frames, chain: caller, pc: ret, run, calls }],
                }
            }
        }))
    }
}

/// The entry state of chain `top`.
pub(crate) fn entry(top: u32) -> State {
    State { frames: Vec::new(), chain: top, pc: 0, run: 0, calls: 0 }
}

/// What is known of each state: the most instructions and calls from it to the
/// end of the packet's chain, and whether a path from it reaches the call limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ahead {
    pub steps: u32,
    pub calls: u32,
    pub limit: bool,
}

/// A chain unfolded, with what lies ahead of each state.
pub(crate) struct Unfolded {
    pub unfolding: Unfolding,
    pub ahead: HashMap<State, Ahead>,
    pub worst: Worst,
}

impl Unfolded {
    /// The key a state's code is emitted under: from a state whose paths cannot
    /// reach the call limit (so, in no loop) the counters change nothing, and
    /// every such state at one place shares one copy of the code.
    pub fn key(&self, s: &State) -> State {
        if self.ahead.get(s).is_some_and(|a| a.limit) { s.clone() } else { s.place() }
    }
}

/// The worst case of `top` and the chains it calls.
pub fn worst(top: u32, chains: &Chains) -> Result<Worst> {
    Ok(unfold(top, chains)?.worst)
}

/// Unfolds `top` and the chains it calls.
pub(crate) fn unfold(top: u32, chains: &Chains) -> Result<Unfolded> {
    let unfolding = Unfolding::new(top, chains)?;
    // Children before parents, without recursion (paths run to about a thousand states).
    let mut ahead: HashMap<State, Ahead> = HashMap::new();
    let mut stack = vec![(entry(top), false)];
    while let Some((s, expanded)) = stack.pop() {
        if ahead.contains_key(&s) {
            continue;
        }
        let next = unfolding.next(&s)?;
        if !expanded {
            stack.push((s, true));
            if let Next::Then(succ) = next {
                stack.extend(succ.into_iter().filter(|n| !ahead.contains_key(n)).map(|n| (n, false)));
            }
            if ahead.len() + stack.len() > 8 * MAX_EXPANDED_INSNS {
                return Err(NativeError::TooLarge { chain: top, limit: MAX_EXPANDED_INSNS });
            }
            continue;
        }
        let value = match next {
            // Aborted before the instruction: nothing executed, the limit reached.
            Next::LimitBefore => Ahead { steps: 0, calls: s.calls, limit: true },
            Next::Then(succ) => {
                let mut calls = if s.run == RESUME_STEPS { s.calls + 1 } else { s.calls };
                let mut limit = false;
                match unfolding.op(&s)? {
                    Op::CallProg { .. } if calls >= MAX_TAIL_CALLS => limit = true,
                    Op::CallProg { .. } => calls += 1,
                    _ => {}
                }
                let mut steps = 0;
                for n in &succ {
                    let a = ahead[n];
                    steps = steps.max(a.steps);
                    calls = calls.max(a.calls);
                    limit |= a.limit;
                }
                Ahead { steps: steps + 1, calls, limit }
            }
        };
        ahead.insert(s, value);
    }
    let first = ahead[&entry(top)];
    let shape = if first.limit { Shape::Exact } else { Shape::Compact };
    let mut unfolded =
        Unfolded { unfolding, ahead, worst: Worst { steps: first.steps, calls: first.calls, states: 0, shape } };
    let keys: std::collections::HashSet<State> = unfolded.ahead.keys().map(|s| unfolded.key(s)).collect();
    unfolded.worst.states = keys.len();
    if keys.len() > MAX_EXPANDED_INSNS {
        return Err(NativeError::TooLarge { chain: top, limit: MAX_EXPANDED_INSNS });
    }
    Ok(unfolded)
}
