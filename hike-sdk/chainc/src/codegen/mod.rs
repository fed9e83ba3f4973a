//! Code generation for one chain (`def`): statements and expressions to bytecode.
//!
//! Registers: r0 is the result of calls and of the chain; r1–r4 carry arguments;
//! variables live in r6–r9, then in stack slots; expression temporaries come from
//! r5, r4 … r1, r0. The VM keeps r1–r9 across calls, so only temporaries in r0
//! and in the argument registers a call overwrites are saved around it.
//!
//! Arithmetic wraps at 64 bits. `/`, `//`, `%`, `>>` and the ordering comparisons
//! are unsigned unless an operand has a signed type (a variable or result declared
//! s8–s64). Constants are folded with exactly the VM's semantics.

mod builtins;
mod calls;
mod cond;
mod emit;
mod expr;
mod finish;
mod loops;
mod regs;
mod stmt;
mod vars;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use hike_bytecode::limits::{MAX_CALL_ARGS, MAX_INSNS};
use hike_bytecode::{AluOp, Bank, Cond, Insn, Size, build, decode};

use crate::artifact::{CompiledChain, LineEntry, Relocation, Target};
use crate::ast::*;
use crate::consteval::{fold_const, range_count};
use crate::diag::{Code, Sink, Span, did_you_mean};
use crate::env::ProgramSig;
use crate::lexer::STATEMENT_KEYWORDS;
use crate::parser::is_constant_name;
use crate::types::{EndsPacket, IntType};

/// Module-level names a chain can use.
pub struct Scope<'a> {
    /// Imported programs by the name the script uses.
    pub programs: &'a HashMap<String, (ProgramSig, Target)>,
    /// Chains of the script: name → parameter count.
    pub chains: &'a HashMap<String, usize>,
    /// Top-level constants.
    pub consts: &'a HashMap<String, u64>,
    /// Imported loaders (not callable; named for better errors).
    pub loaders: &'a BTreeSet<String>,
    /// Names whose import failed (already reported).
    pub broken: &'a BTreeSet<String>,
}

/// What compiling a chain produced besides its code.
pub struct ChainUse {
    pub programs: BTreeSet<String>,
    /// Chains it calls, each with the place of its first call.
    pub chains: BTreeMap<String, Span>,
    /// Its own constants (UPPERCASE names assigned in it).
    pub consts: HashMap<String, u64>,
}

const VAR_REGS: [u8; 4] = [6, 7, 8, 9];
const TEMP_REGS: [u8; 6] = [5, 4, 3, 2, 1, 0];
const STACK_SLOTS: u8 = 8;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Home {
    Reg(u8),
    Slot(u8),
}

struct Var {
    ty: IntType,
    home: Home,
    declared: Span,
    reads: usize,
}

/// A value being computed.
#[derive(Clone, Copy, Debug)]
enum Val {
    Const(u64),
    /// In a register; `temp` when it is ours to change and free.
    Reg {
        reg: u8,
        temp: bool,
        signed: bool,
    },
}

impl Val {
    fn signed(self) -> bool {
        matches!(self, Val::Reg { signed: true, .. })
    }
}

type Label = usize;

struct LoopCtx {
    brk: Label,
    cont: Label,
}

struct Gen<'a, 'b, 's> {
    scope: &'a Scope<'a>,
    sink: &'b mut Sink<'s>,
    code: Vec<Insn>,
    /// Absolute jump target of each instruction (jumps only), by label.
    jumps: HashMap<usize, Label>,
    spans: Vec<Span>,
    relocs: Vec<(usize, Target)>,
    labels: Vec<Option<usize>>,
    vars: HashMap<String, Var>,
    consts: HashMap<String, (u64, Span)>,
    next_var_reg: usize,
    slots_used: u8,
    free_slots: Vec<u8>,
    temps: Vec<u8>,
    loops: Vec<LoopCtx>,
    span: Span,
    used: ChainUse,
    failed: bool,
    /// Out of registers or stack: reported once, the rest of the chain skipped.
    fatal: bool,
}

/// Compiles one chain: its code (`None`, with diagnostics, when it has errors)
/// and what it uses (recorded even then, so imports it uses are not "unused").
pub fn compile_def(def: &Def, scope: &Scope<'_>, sink: &mut Sink<'_>) -> (Option<CompiledChain>, ChainUse) {
    let mut g = Gen {
        scope,
        sink,
        code: Vec::new(),
        jumps: HashMap::new(),
        spans: Vec::new(),
        relocs: Vec::new(),
        labels: Vec::new(),
        vars: HashMap::new(),
        consts: HashMap::new(),
        next_var_reg: 0,
        slots_used: 0,
        free_slots: Vec::new(),
        temps: TEMP_REGS.to_vec(),
        loops: Vec::new(),
        span: def.span.clone(),
        used: ChainUse { programs: BTreeSet::new(), chains: BTreeMap::new(), consts: HashMap::new() },
        failed: false,
        fatal: false,
    };
    if def.params.len() > usize::from(MAX_CALL_ARGS) {
        g.sink
            .report(
                Code::TooManyParams,
                def.name.span.clone(),
                format!("chain `{}` has {} parameters; chains take at most 4", def.name.text, def.params.len()),
            )
            .help("pass more data through the scratch bank (`scratch.write_u64`)");
        return (None, g.used);
    }
    // Parameters arrive in r1..r4; give them homes like any variable.
    for (i, p) in def.params.iter().enumerate() {
        g.span = p.name.span.clone();
        if g.check_assignable(&p.name) {
            let ty = p.ty.as_ref().map_or(IntType::U64, |(t, _)| *t);
            if let Some(home) = g.declare(&p.name, ty) {
                let src = Val::Reg { reg: i as u8 + 1, temp: false, signed: ty.signed() };
                g.store(home, ty, src);
            }
        }
    }
    let ends = g.block(&def.body);
    if !ends {
        g.span = def.span.end.saturating_sub(1)..def.span.end;
        g.emit(build::mov_imm(0, 0));
        g.emit(build::exit());
    }
    g.used.consts = g.consts.iter().map(|(n, (v, _))| (n.clone(), *v)).collect();
    if g.failed || g.sink.has_errors() {
        return (None, g.used);
    }
    g.unused_variables();
    let chain = g.finish(&def.name);
    (chain, g.used)
}

impl Gen<'_, '_, '_> {
    /// Resolves labels, removes unreachable code and jumps to the next
    /// instruction, threads jumps to jumps, and builds the line table.
    fn finish(&mut self, name: &Name) -> Option<CompiledChain> {
        // A label placed after the last instruction needs something to land on.
        if self.labels.contains(&Some(self.code.len())) {
            self.emit(build::mov_imm(0, 0));
            self.emit(build::exit());
        }
        let n = self.code.len();
        // Absolute targets.
        let mut target: Vec<Option<usize>> = vec![None; n];
        for (&at, &l) in &self.jumps {
            target[at] = self.labels[l];
        }
        let finish::Finished { insns, new_index, kept } = finish::finish(&self.code, target);
        let lines = (0..n)
            .filter(|&i| kept[i])
            .map(|i| {
                let (line, column) = self.sink.line_col(self.spans[i].start);
                LineEntry { insn: new_index[i], line: line as u32, column: column as u32 }
            })
            .collect();
        let relocations = self
            .relocs
            .iter()
            .filter(|(i, _)| kept[*i])
            .map(|(i, t)| Relocation { insn: new_index[*i], target: t.clone() })
            .collect();
        if insns.len() > MAX_INSNS {
            self.sink
                .report(
                    Code::ChainTooLong,
                    name.span.clone(),
                    format!(
                        "chain `{}` compiles to {} instructions; the VM holds at most {MAX_INSNS} per chain",
                        name.text,
                        insns.len()
                    ),
                )
                .help("split it into chains that call each other");
            return None;
        }
        debug_assert!((0..insns.len()).all(|i| decode(&insns, i).is_ok() || i > 0 && finish::is_wide(&insns[i - 1])));
        Some(CompiledChain { name: name.text.clone(), nargs: 0, insns, relocations, lines })
    }
}
