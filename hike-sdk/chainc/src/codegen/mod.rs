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

mod finish;

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
    fn fail(&mut self) {
        self.failed = true;
    }

    // ---- emitting -----------------------------------------------------------

    fn emit(&mut self, insn: Insn) -> usize {
        self.code.push(insn);
        self.spans.push(self.span.clone());
        self.code.len() - 1
    }

    fn emit_all(&mut self, insns: &[Insn]) {
        for i in insns {
            self.emit(*i);
        }
    }

    fn label(&mut self) -> Label {
        self.labels.push(None);
        self.labels.len() - 1
    }

    fn place(&mut self, l: Label) {
        self.labels[l] = Some(self.code.len());
    }

    fn jump(&mut self, l: Label) {
        let at = self.emit(build::ja(0));
        self.jumps.insert(at, l);
    }

    fn jump_if(&mut self, cond: Cond, dst: u8, src: Val, l: Label) {
        let at = match src {
            Val::Const(c) => match i32::try_from(c as i64) {
                Ok(imm) => self.emit(build::jmp_imm(cond, dst, imm, 0)),
                Err(_) => {
                    let r = self.materialize(src);
                    let at = self.emit(build::jmp_reg(cond, dst, r, 0));
                    self.free_reg(r, true);
                    at
                }
            },
            Val::Reg { reg, .. } => self.emit(build::jmp_reg(cond, dst, reg, 0)),
        };
        self.jumps.insert(at, l);
    }

    // ---- registers ----------------------------------------------------------

    fn alloc_temp(&mut self) -> Option<u8> {
        match self.temps.first().copied() {
            Some(r) => {
                self.temps.remove(0);
                Some(r)
            }
            None => {
                if !self.fatal {
                    self.sink
                        .report(
                            Code::TooManyVariables,
                            self.span.clone(),
                            "this expression is too complex for the VM's registers",
                        )
                        .help("split it into steps with intermediate variables");
                }
                self.fatal = true;
                self.fail();
                None
            }
        }
    }

    /// Takes a specific temporary register (r0 for a call's result).
    fn take_temp(&mut self, r: u8) -> bool {
        if let Some(i) = self.temps.iter().position(|t| *t == r) {
            self.temps.remove(i);
            true
        } else {
            false
        }
    }

    fn free_reg(&mut self, r: u8, temp: bool) {
        if temp && !self.temps.contains(&r) {
            // Keep the pool in preference order.
            let pos = TEMP_REGS.iter().position(|t| *t == r).unwrap_or(0);
            let at = self.temps.iter().position(|t| TEMP_REGS.iter().position(|x| x == t).unwrap_or(0) > pos);
            self.temps.insert(at.unwrap_or(self.temps.len()), r);
        }
    }

    fn free(&mut self, v: Val) {
        if let Val::Reg { reg, temp: true, .. } = v {
            self.free_reg(reg, true);
        }
    }

    fn alloc_slot(&mut self) -> Option<u8> {
        if let Some(s) = self.free_slots.pop() {
            return Some(s);
        }
        if self.slots_used >= STACK_SLOTS {
            if !self.fatal {
                self.sink
                    .report(
                        Code::TooManyVariables,
                        self.span.clone(),
                        "this chain needs more than the 64 bytes of stack a chain frame has",
                    )
                    .help("use fewer variables, or split the chain into chains that call each other");
            }
            self.fatal = true;
            self.fail();
            return None;
        }
        self.slots_used += 1;
        Some(self.slots_used - 1)
    }

    fn slot_off(slot: u8) -> i16 {
        -8 * (i16::from(slot) + 1)
    }

    /// Loads a 64-bit constant into `r`.
    fn load_const(&mut self, r: u8, c: u64) {
        match i32::try_from(c as i64) {
            Ok(imm) => {
                self.emit(build::mov_imm(r, imm));
            }
            Err(_) => self.emit_all(&build::ld_imm64(r, c)),
        }
    }

    /// The value in some register (a temp when it had to be materialized).
    fn materialize(&mut self, v: Val) -> u8 {
        match v {
            Val::Reg { reg, .. } => reg,
            Val::Const(c) => {
                let Some(r) = self.alloc_temp() else { return 0 };
                self.load_const(r, c);
                r
            }
        }
    }

    /// The value in a temp we may change.
    fn owned_temp(&mut self, v: Val) -> Val {
        match v {
            Val::Reg { temp: true, .. } => v,
            Val::Reg { reg, signed, .. } => {
                let Some(t) = self.alloc_temp() else { return v };
                self.emit(build::mov_reg(t, reg));
                Val::Reg { reg: t, temp: true, signed }
            }
            Val::Const(c) => {
                let Some(t) = self.alloc_temp() else { return v };
                self.load_const(t, c);
                Val::Reg { reg: t, temp: true, signed: false }
            }
        }
    }

    // ---- variables ----------------------------------------------------------

    fn check_assignable(&mut self, name: &Name) -> bool {
        let reason = if IntType::from_name(&name.text).is_some() {
            Some("is a type")
        } else if crate::compile::BUILT_INS.contains(&name.text.as_str()) {
            Some("is a built-in")
        } else if self.scope.programs.contains_key(&name.text) {
            Some("is an imported program")
        } else if self.scope.chains.contains_key(&name.text) {
            Some("is a chain")
        } else if self.scope.loaders.contains(&name.text) {
            Some("is an imported loader")
        } else {
            None
        };
        if let Some(r) = reason {
            self.sink
                .report(Code::Reserved, name.span.clone(), format!("`{}` {r} and cannot be assigned", name.text))
                .help("choose another variable name");
            self.fail();
            return false;
        }
        true
    }

    fn declare(&mut self, name: &Name, ty: IntType) -> Option<Home> {
        let home = if self.next_var_reg < VAR_REGS.len() {
            self.next_var_reg += 1;
            Home::Reg(VAR_REGS[self.next_var_reg - 1])
        } else {
            Home::Slot(self.alloc_slot()?)
        };
        self.vars.insert(name.text.clone(), Var { ty, home, declared: name.span.clone(), reads: 0 });
        Some(home)
    }

    /// Stores `v` into a variable's home, converted to its type.
    fn store(&mut self, home: Home, ty: IntType, v: Val) {
        let v = match v {
            Val::Const(c) => Val::Const(ty.convert(c)),
            other => other,
        };
        match (home, v) {
            (Home::Reg(h), Val::Const(c)) => self.load_const(h, c),
            (Home::Reg(h), Val::Reg { reg, .. }) => {
                if reg != h {
                    self.emit(build::mov_reg(h, reg));
                }
                self.convert_in_place(h, ty);
            }
            (Home::Slot(s), v) => {
                let t = self.owned_temp(v);
                let Val::Reg { reg, .. } = t else { return };
                if !matches!(v, Val::Const(_)) {
                    self.convert_in_place(reg, ty);
                }
                self.emit(build::store(Size::DW, Bank::Stack, 10, Self::slot_off(s), reg));
                self.free(t);
            }
        }
        self.free(v);
    }

    /// Truncates (and sign-extends) register `r` to `ty`.
    fn convert_in_place(&mut self, r: u8, ty: IntType) {
        match ty {
            IntType::U64 | IntType::S64 => {}
            IntType::U8 => {
                self.emit(build::alu_imm(AluOp::And, r, 0xff));
            }
            IntType::U16 => {
                self.emit(build::le(r, 16));
            }
            IntType::U32 => {
                self.emit(build::le(r, 32));
            }
            signed => {
                let shift = 64 - signed.bits() as i32;
                self.emit(build::alu_imm(AluOp::Lsh, r, shift));
                self.emit(build::alu_imm(AluOp::Arsh, r, shift));
            }
        }
    }

    fn read_var(&mut self, name: &str) -> Option<Val> {
        let var = self.vars.get_mut(name)?;
        var.reads += 1;
        let signed = var.ty.signed();
        let home = var.home;
        Some(match home {
            Home::Reg(r) => Val::Reg { reg: r, temp: false, signed },
            Home::Slot(s) => {
                let t = self.alloc_temp()?;
                self.emit(build::load(Size::DW, Bank::Stack, t, 10, Self::slot_off(s)));
                Val::Reg { reg: t, temp: true, signed }
            }
        })
    }

    fn unused_variables(&mut self) {
        let mut unused: Vec<(String, Span)> = self
            .vars
            .iter()
            .filter(|(n, v)| v.reads == 0 && !n.starts_with('_'))
            .map(|(n, v)| (n.clone(), v.declared.clone()))
            .collect();
        unused.sort_by_key(|(_, s)| s.start);
        for (n, s) in unused {
            self.sink
                .report(Code::UnusedVariable, s, format!("variable `{n}` is assigned but never read"))
                .help(format!("remove it, or name it `_{n}` to keep it"));
        }
    }

    // ---- statements ---------------------------------------------------------

    /// Compiles a block; returns true when control never leaves its end (it
    /// returns, breaks or continues on every path).
    ///
    /// A call to a program declared `ends-packet = "always"` makes what follows
    /// unreachable for warnings, but not for code: if a program returned after
    /// all, the chain must still be well-formed, so it gets its jumps and `exit`.
    fn block(&mut self, stmts: &[Stmt]) -> bool {
        let mut ended = false;
        let mut verdict = false;
        let mut warned = false;
        for s in stmts {
            // eCLAT scripts write `hike_drop()` then `return 0`: the return after a
            // program that always ends the packet is an idiom, not a mistake.
            let idiom = verdict && !ended && matches!(s, Stmt::Return { .. });
            if (ended || verdict) && !idiom && !warned {
                let span = s.span().start..stmts.last().map_or(s.span().end, |l| l.span().end);
                self.sink
                    .report(Code::Unreachable, span, "this code never runs")
                    .help("the statement before it always ends the chain, the packet or the loop iteration");
                warned = true;
            }
            if ended {
                break;
            }
            verdict = verdict || matches!(s, Stmt::Expr(e) if self.ends_packet(e));
            ended = self.statement(s);
            if self.fatal {
                break;
            }
        }
        ended
    }

    fn statement(&mut self, s: &Stmt) -> bool {
        self.span = s.span();
        match s {
            Stmt::Pass(_) => false,
            Stmt::Expr(e) => {
                if let Some(v) = self.expr(e) {
                    self.free(v);
                }
                false
            }
            Stmt::Assign { target, ty, value, .. } => {
                self.assign(target, ty.as_ref(), value);
                false
            }
            Stmt::AugAssign { target, op, value, span } => {
                let combined = Expr {
                    kind: ExprKind::Binary(
                        *op,
                        Box::new(Expr { kind: ExprKind::Name(target.text.clone()), span: target.span.clone() }),
                        Box::new(value.clone()),
                    ),
                    span: span.clone(),
                };
                self.assign(target, None, &combined);
                false
            }
            Stmt::Return { value, .. } => {
                let v = match value {
                    Some(e) => self.expr(e),
                    None => Some(Val::Const(0)),
                };
                if let Some(v) = v {
                    match v {
                        Val::Const(c) => self.load_const(0, c),
                        Val::Reg { reg, .. } if reg != 0 => {
                            self.emit(build::mov_reg(0, reg));
                        }
                        _ => {}
                    }
                    self.free(v);
                }
                self.emit(build::exit());
                true
            }
            Stmt::Break(span) | Stmt::Continue(span) => {
                let is_break = matches!(s, Stmt::Break(_));
                match self.loops.last() {
                    Some(l) => {
                        let target = if is_break { l.brk } else { l.cont };
                        self.jump(target);
                    }
                    None => {
                        let what = if is_break { "break" } else { "continue" };
                        self.sink.report(Code::Misplaced, span.clone(), format!("`{what}` outside a loop"));
                        self.fail();
                    }
                }
                true
            }
            Stmt::If { branches, orelse, .. } => self.if_stmt(branches, orelse.as_deref()),
            Stmt::While { cond, body, span } => {
                self.while_stmt(cond, body, span);
                false
            }
            Stmt::For { var, range, range_span, body, span } => {
                self.for_stmt(var, range, range_span, body, span);
                false
            }
        }
    }

    /// Whether evaluating `e` as a statement always ends the packet (a call to a
    /// program declared `ends-packet = "always"`).
    fn ends_packet(&self, e: &Expr) -> bool {
        if let ExprKind::Call { callee, .. } = &e.kind
            && let ExprKind::Name(n) = &callee.kind
            && let Some((sig, _)) = self.scope.programs.get(n)
        {
            return sig.ends_packet == EndsPacket::Always;
        }
        false
    }

    fn assign(&mut self, target: &Name, ty: Option<&(IntType, Span)>, value: &Expr) {
        if is_constant_name(&target.text) {
            if ty.is_some() {
                self.sink
                    .report(Code::Syntax, target.span.clone(), "UPPERCASE names are constants and take no type")
                    .help("remove the type");
                self.fail();
                return;
            }
            if let Some((_, first)) = self.consts.get(&target.text) {
                let (line, _) = self.sink.line_col(first.start);
                self.sink
                    .report(Code::ConstantReassigned, target.span.clone(), format!("constant `{}` is assigned again", target.text))
                    .help(format!("it was set on line {line}; UPPERCASE names are constants: use a lowercase variable to change it"));
                self.fail();
                return;
            }
            if self.scope.consts.contains_key(&target.text) {
                self.sink
                    .report(
                        Code::ConstantReassigned,
                        target.span.clone(),
                        format!("constant `{}` is already defined at the top of the script", target.text),
                    )
                    .help("use another name");
                self.fail();
                return;
            }
            match self.const_expr(value) {
                Some(c) => {
                    self.consts.insert(target.text.clone(), (c, target.span.clone()));
                }
                None => {
                    self.sink
                        .report(
                            Code::NotConstant,
                            value.span.clone(),
                            format!("constant `{}` must be given a value known when compiling", target.text),
                        )
                        .help("UPPERCASE names are constants; use a lowercase name for a variable");
                    self.fail();
                }
            }
            return;
        }
        if !self.check_assignable(target) {
            return;
        }
        let existing = self.vars.get(&target.text).map(|v| (v.ty, v.declared.clone()));
        let var_ty = match (existing.as_ref(), ty) {
            (Some((old, first)), Some((new, span))) if old != new => {
                let (line, _) = self.sink.line_col(first.start);
                self.sink
                    .report(
                        Code::Duplicate,
                        span.clone(),
                        format!("`{}` was declared {old} on line {line}; it cannot become {new}", target.text),
                    )
                    .help("use another variable for the other type");
                self.fail();
                return;
            }
            (Some((old, _)), _) => Some(*old),
            (None, Some((t, _))) => Some(*t),
            (None, None) => None,
        };
        let Some(v) = self.expr(value) else {
            // Declared anyway, so that one mistake does not make every later use
            // an "unknown variable" too.
            if !self.vars.contains_key(&target.text) {
                self.declare(target, var_ty.unwrap_or(IntType::U64));
            }
            return;
        };
        // A new variable without a type takes its value's signedness: a signed
        // program result stays signed.
        let var_ty = var_ty.unwrap_or(if v.signed() { IntType::S64 } else { IntType::U64 });
        if let Val::Const(c) = v
            && !self.fits(c, var_ty, value)
        {
            if !self.vars.contains_key(&target.text) {
                self.declare(target, var_ty);
            }
            return;
        }
        let home = match self.vars.get(&target.text) {
            Some(var) => var.home,
            None => {
                let Some(h) = self.declare(target, var_ty) else {
                    self.free(v);
                    return;
                };
                h
            }
        };
        self.store(home, var_ty, v);
    }

    /// Checks a constant against a type, reporting when it does not fit.
    fn fits(&mut self, c: u64, ty: IntType, at: &Expr) -> bool {
        let ok = if ty.signed() {
            let (lo, hi) = ty.range();
            (lo..=hi).contains(&i128::from(c as i64))
        } else {
            u128::from(c) <= ty.range().1 as u128
        };
        if !ok {
            let (lo, hi) = ty.range();
            let shown = if ty.signed() { (c as i64).to_string() } else { c.to_string() };
            self.sink
                .report(Code::OutOfRange, at.span.clone(), format!("{shown} does not fit in {ty} ({lo}..={hi})"))
                .help(format!("use a value in {lo}..={hi}, or a wider type"));
            self.fail();
        }
        ok
    }

    fn if_stmt(&mut self, branches: &[(Expr, Vec<Stmt>)], orelse: Option<&[Stmt]>) -> bool {
        let end = self.label();
        let mut all_end = true;
        for (i, (cond, body)) in branches.iter().enumerate() {
            self.span = cond.span.clone();
            // A constant condition picks its branch when compiling.
            if let Some(c) = self.const_expr(cond) {
                if c != 0 {
                    let ends = self.block(body);
                    self.place(end);
                    return all_end && ends;
                }
                continue;
            }
            let next = self.label();
            self.branch(cond, false, next);
            let ends = self.block(body);
            all_end &= ends;
            let last = i == branches.len() - 1 && orelse.is_none();
            if !ends && !last {
                self.jump(end);
            }
            self.place(next);
        }
        let else_ends = match orelse {
            Some(b) => self.block(b),
            None => false,
        };
        self.place(end);
        all_end && else_ends
    }

    fn while_stmt(&mut self, cond: &Expr, body: &[Stmt], span: &Span) {
        let constant = self.const_expr(cond);
        if constant == Some(0) {
            return;
        }
        if constant.is_some() && !leaves(body, 0) {
            self.sink
                .report(
                    Code::EndlessLoop,
                    span.clone(),
                    "this loop never ends: every packet would run out of its instruction budget and be dropped",
                )
                .help("add a `break` or `return`, or give the loop a condition that becomes false");
            self.fail();
            return;
        }
        let (head, end) = (self.label(), self.label());
        self.place(head);
        if constant.is_none() {
            self.span = cond.span.clone();
            self.branch(cond, false, end);
        }
        self.loops.push(LoopCtx { brk: end, cont: head });
        self.block(body);
        self.loops.pop();
        self.span = span.clone();
        self.jump(head);
        self.place(end);
    }

    fn for_stmt(&mut self, var: &Name, range: &[Expr], range_span: &Span, body: &[Stmt], span: &Span) {
        if range.is_empty() || range.len() > 3 {
            self.sink
                .report(
                    Code::BadBuiltin,
                    range_span.clone(),
                    format!("range() takes 1 to 3 arguments, not {}", range.len()),
                )
                .help("range(N), range(START, END) or range(START, END, STEP)");
            self.fail();
            return;
        }
        let mut vals = Vec::new();
        for e in range {
            match self.const_expr(e) {
                Some(v) => vals.push(v),
                None => {
                    self.sink
                        .report(Code::NotConstant, e.span.clone(), "range() needs values known when compiling")
                        .help("use constants; for a bound computed per packet, write a `while` loop");
                    self.fail();
                    return;
                }
            }
        }
        let Some((start, stop, step, count)) = range_count(&vals) else { return };
        if step == 0 {
            self.sink.report(Code::BadBuiltin, range_span.clone(), "range() step is 0: the loop would never end");
            self.fail();
            return;
        }
        // Whether its iterations fit in the VM's limits is checked once every
        // chain is compiled, over the whole call graph (crate::cost).
        if count == 0 {
            return;
        }
        if !self.check_assignable(var) {
            return;
        }
        let ty = self.vars.get(&var.text).map_or(IntType::U64, |v| v.ty);
        let home = match self.vars.get(&var.text) {
            Some(v) => v.home,
            None => {
                let Some(h) = self.declare(var, ty) else { return };
                h
            }
        };
        // The loop variable counts as read: it drives the loop.
        if let Some(v) = self.vars.get_mut(&var.text) {
            v.reads += 1;
        }
        self.span = range_span.clone();
        self.store(home, ty, Val::Const(start as u64));
        let (head, cont, end) = (self.label(), self.label(), self.label());
        self.place(head);
        let current = match home {
            Home::Reg(r) => Val::Reg { reg: r, temp: false, signed: true },
            Home::Slot(s) => {
                let Some(t) = self.alloc_temp() else { return };
                self.emit(build::load(Size::DW, Bank::Stack, t, 10, Self::slot_off(s)));
                Val::Reg { reg: t, temp: true, signed: true }
            }
        };
        let Val::Reg { reg, .. } = current else { return };
        let exit_cond = if step > 0 { Cond::SGe } else { Cond::SLe };
        self.jump_if(exit_cond, reg, Val::Const(stop as u64), end);
        self.free(current);
        self.loops.push(LoopCtx { brk: end, cont });
        self.block(body);
        self.loops.pop();
        self.span = range_span.clone();
        self.place(cont);
        match home {
            Home::Reg(r) => {
                self.emit(build::alu_imm(AluOp::Add, r, step as i32));
            }
            Home::Slot(s) => {
                if let Some(t) = self.alloc_temp() {
                    self.emit(build::load(Size::DW, Bank::Stack, t, 10, Self::slot_off(s)));
                    self.emit(build::alu_imm(AluOp::Add, t, step as i32));
                    self.emit(build::store(Size::DW, Bank::Stack, 10, Self::slot_off(s), t));
                    self.free_reg(t, true);
                }
            }
        }
        self.jump(head);
        self.place(end);
        let _ = span;
    }

    // ---- conditions ---------------------------------------------------------

    /// Jumps to `target` when `e`'s truth equals `when`; falls through otherwise.
    fn branch(&mut self, e: &Expr, when: bool, target: Label) {
        if let Some(c) = self.const_expr(e) {
            if (c != 0) == when {
                self.jump(target);
            }
            return;
        }
        match &e.kind {
            ExprKind::Unary(UnOp::Not, inner) => self.branch(inner, !when, target),
            ExprKind::And(a, b) => {
                if when {
                    let skip = self.label();
                    self.branch(a, false, skip);
                    self.branch(b, true, target);
                    self.place(skip);
                } else {
                    self.branch(a, false, target);
                    self.branch(b, false, target);
                }
            }
            ExprKind::Or(a, b) => {
                if when {
                    self.branch(a, true, target);
                    self.branch(b, true, target);
                } else {
                    let skip = self.label();
                    self.branch(a, true, skip);
                    self.branch(b, false, target);
                    self.place(skip);
                }
            }
            ExprKind::Compare(first, rest) => {
                let Some(mut left) = self.expr(first) else { return };
                let skip = self.label();
                for (i, (op, right_e)) in rest.iter().enumerate() {
                    let Some(right) = self.expr(right_e) else { return };
                    let last = i == rest.len() - 1;
                    // All pairs must hold: a failing pair decides the chain.
                    if when && !last {
                        self.compare_jump(*op, left, right, false, skip, i + 1 < rest.len());
                    } else if when {
                        self.compare_jump(*op, left, right, true, target, false);
                    } else {
                        self.compare_jump(*op, left, right, false, target, i + 1 < rest.len());
                    }
                    self.free(left);
                    left = right;
                }
                self.free(left);
                self.place(skip);
            }
            _ => {
                let Some(v) = self.expr(e) else { return };
                let v = match v {
                    Val::Const(_) => self.owned_temp(v),
                    other => other,
                };
                let Val::Reg { reg, .. } = v else { return };
                self.jump_if(if when { Cond::Ne } else { Cond::Eq }, reg, Val::Const(0), target);
                self.free(v);
            }
        }
    }

    /// Jumps to `target` when `left op right` is `when`. `keep_right` leaves the
    /// right operand alive (a chained comparison reuses it).
    fn compare_jump(&mut self, op: CmpOp, left: Val, right: Val, when: bool, target: Label, keep_right: bool) {
        let _ = keep_right;
        let signed = left.signed() || right.signed();
        let op = if when { op } else { negate(op) };
        // The jump compares a register with a register or an immediate.
        let (dst, src, op) = match (left, right) {
            (Val::Const(_), Val::Reg { .. }) => (right, left, mirror(op)),
            _ => (left, right, op),
        };
        let dst_reg = match dst {
            Val::Reg { reg, .. } => reg,
            Val::Const(_) => {
                let r = self.materialize(dst);
                self.jump_if(cond_of(op, signed), r, src, target);
                self.free_reg(r, true);
                return;
            }
        };
        self.jump_if(cond_of(op, signed), dst_reg, src, target);
    }

    // ---- expressions --------------------------------------------------------

    /// The value of `e` when it is known when compiling (VM semantics).
    fn const_expr(&self, e: &Expr) -> Option<u64> {
        fold_const(e, &|n| self.consts.get(n).map(|(c, _)| *c).or_else(|| self.scope.consts.get(n).copied()))
    }

    fn expr(&mut self, e: &Expr) -> Option<Val> {
        if let Some(c) = self.const_expr(e) {
            return Some(Val::Const(c));
        }
        self.span_expr(e)
    }

    fn span_expr(&mut self, e: &Expr) -> Option<Val> {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Bool(_) | ExprKind::None => None,
            ExprKind::Str(_) => {
                self.sink
                    .report(Code::BadBuiltin, e.span.clone(), "strings are only for `attach` and loader configuration")
                    .help("chains compute with integers");
                self.fail();
                None
            }
            ExprKind::Name(n) => {
                if !self.vars.contains_key(n) {
                    self.unknown_name(n, &e.span, "variable");
                    return None;
                }
                self.read_var(n)
            }
            ExprKind::Unary(UnOp::Not, _) => self.bool_value(e),
            ExprKind::Unary(op, inner) => {
                let v = self.expr(inner)?;
                match op {
                    UnOp::Plus => Some(v),
                    UnOp::Neg => {
                        let t = self.owned_temp(v);
                        let Val::Reg { reg, .. } = t else { return None };
                        self.emit(build::neg(reg));
                        Some(t)
                    }
                    UnOp::Invert => {
                        let t = self.owned_temp(v);
                        let Val::Reg { reg, .. } = t else { return None };
                        self.emit(build::alu_imm(AluOp::Xor, reg, -1));
                        Some(t)
                    }
                    // Handled above, before the operand is evaluated.
                    UnOp::Not => None,
                }
            }
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, e),
            ExprKind::Compare(..) => self.bool_value(e),
            ExprKind::And(a, b) | ExprKind::Or(a, b) => {
                let is_and = matches!(e.kind, ExprKind::And(..));
                let first = self.expr(a)?;
                let t = self.owned_temp(first);
                let Val::Reg { reg, signed, .. } = t else { return None };
                let end = self.label();
                self.jump_if(if is_and { Cond::Eq } else { Cond::Ne }, reg, Val::Const(0), end);
                let second = self.expr(b)?;
                match second {
                    Val::Const(c) => self.load_const(reg, c),
                    Val::Reg { reg: r2, .. } => {
                        if r2 != reg {
                            self.emit(build::mov_reg(reg, r2));
                        }
                    }
                }
                self.free(second);
                self.place(end);
                Some(Val::Reg { reg, temp: true, signed: signed || second.signed() })
            }
            ExprKind::Call { callee, args } => self.call(callee, args, e),
            ExprKind::Attr(..) => {
                self.sink
                    .report(
                        Code::BadBuiltin,
                        e.span.clone(),
                        "attributes are only the built-in methods of `packet` and `scratch`, called with ()",
                    )
                    .help("e.g. `packet.read_u16(12)`");
                self.fail();
                None
            }
            ExprKind::Subscript(..) | ExprKind::Tuple(_) | ExprKind::Dict(_) => {
                self.sink
                    .report(
                        Code::Syntax,
                        e.span.clone(),
                        "tuples, dictionaries and subscripts only appear in loader configuration",
                    )
                    .help("chains compute with integers");
                self.fail();
                None
            }
        }
    }

    /// A comparison or `not` as a 0/1 value.
    fn bool_value(&mut self, e: &Expr) -> Option<Val> {
        let t = self.alloc_temp()?;
        let end = self.label();
        self.emit(build::mov_imm(t, 1));
        // The temporary is ours during the branch: keep it out of the pool.
        self.branch(e, true, end);
        self.emit(build::mov_imm(t, 0));
        self.place(end);
        Some(Val::Reg { reg: t, temp: true, signed: false })
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, whole: &Expr) -> Option<Val> {
        if op == BinOp::Pow {
            self.sink
                .report(Code::NotConstant, whole.span.clone(), "`**` needs operands known when compiling")
                .help("the VM has no power instruction; multiply instead");
            self.fail();
            return None;
        }
        let left = self.expr(a)?;
        let right = self.expr(b)?;
        let signed = left.signed() || right.signed();
        let alu = match op {
            BinOp::Add => AluOp::Add,
            BinOp::Sub => AluOp::Sub,
            BinOp::Mul => AluOp::Mul,
            BinOp::Div | BinOp::FloorDiv => {
                if signed {
                    AluOp::SDiv
                } else {
                    AluOp::Div
                }
            }
            BinOp::Mod => {
                if signed {
                    AluOp::SMod
                } else {
                    AluOp::Mod
                }
            }
            BinOp::Shl => AluOp::Lsh,
            BinOp::Shr => {
                if signed {
                    AluOp::Arsh
                } else {
                    AluOp::Rsh
                }
            }
            BinOp::BitAnd => AluOp::And,
            BinOp::BitOr => AluOp::Or,
            BinOp::BitXor => AluOp::Xor,
            BinOp::Pow => return None,
        };
        let dst = self.owned_temp(left);
        let Val::Reg { reg: d, .. } = dst else { return None };
        match right {
            Val::Const(c) => {
                let c = if matches!(alu, AluOp::Lsh | AluOp::Rsh | AluOp::Arsh) { c & 63 } else { c };
                match i32::try_from(c as i64) {
                    Ok(imm) => {
                        self.emit(build::alu_imm(alu, d, imm));
                    }
                    Err(_) => {
                        let r = self.materialize(right);
                        self.emit(build::alu_reg(alu, d, r));
                        self.free_reg(r, true);
                    }
                }
            }
            Val::Reg { reg, .. } => {
                self.emit(build::alu_reg(alu, d, reg));
                self.free(right);
            }
        }
        Some(Val::Reg { reg: d, temp: true, signed })
    }

    fn unknown_name(&mut self, n: &str, span: &Span, what: &str) {
        if self.scope.broken.contains(n) {
            self.fail();
            return;
        }
        let mut candidates: Vec<&str> = self.vars.keys().map(String::as_str).collect();
        candidates.extend(self.consts.keys().map(String::as_str));
        candidates.extend(self.scope.consts.keys().map(String::as_str));
        candidates.extend(self.scope.programs.keys().map(String::as_str));
        candidates.extend(self.scope.chains.keys().map(String::as_str));
        let best = did_you_mean(n, candidates);
        let keyword = did_you_mean(n, STATEMENT_KEYWORDS.iter().copied());
        let d = self.sink.report(Code::UnknownName, span.clone(), format!("unknown {what} `{n}`"));
        match (best, keyword) {
            (Some(best), _) => {
                d.help(format!("did you mean `{best}`?"));
            }
            (None, Some(k)) => {
                d.help(format!("did you mean the keyword `{k}`?"));
            }
            (None, None) if is_constant_name(n) => {
                d.help(format!("define the constant first, e.g. `{n} = 0`, or bind it at install time only where a device name is expected"));
            }
            (None, None) => {
                d.help("assign it before reading it, or import it: `from prog.<package> import ...`");
            }
        }
        self.fail();
    }

    // ---- calls --------------------------------------------------------------

    fn call(&mut self, callee: &Expr, args: &[Expr], whole: &Expr) -> Option<Val> {
        match &callee.kind {
            ExprKind::Attr(obj, method) => self.builtin(obj, method, args, whole),
            ExprKind::Name(n) if n == "range" => {
                self.sink.report(
                    Code::BadBuiltin,
                    whole.span.clone(),
                    "range() only appears in `for ... in range(...)`",
                );
                self.fail();
                None
            }
            ExprKind::Name(n) => {
                if let Some((sig, target)) = self.scope.programs.get(n) {
                    let (sig, target) = (sig.clone(), target.clone());
                    if !self.check_args(n, "program", sig.args.len(), args, whole) {
                        return None;
                    }
                    self.used.programs.insert(n.clone());
                    let types: Vec<IntType> = sig.args.iter().map(|(_, t)| *t).collect();
                    let ret_signed = sig.ret.is_some_and(IntType::signed);
                    return self.emit_call(args, &types, build::call_prog(0, args.len() as u8), target, ret_signed);
                }
                if let Some(&nparams) = self.scope.chains.get(n) {
                    if !self.check_args(n, "chain", nparams, args, whole) {
                        return None;
                    }
                    self.used.chains.entry(n.clone()).or_insert_with(|| whole.span.clone());
                    let types = vec![IntType::U64; args.len()];
                    return self.emit_call(
                        args,
                        &types,
                        build::call_chain(0, args.len() as u8),
                        Target::Chain { name: n.clone() },
                        false,
                    );
                }
                if self.scope.loaders.contains(n) {
                    self.sink
                        .report(
                            Code::BadBuiltin,
                            callee.span.clone(),
                            format!(
                                "`{n}` is a loader; loaders are configured and attached outside chains, not called"
                            ),
                        )
                        .help(format!("write `{n}[map] = {{...}}` and `{n}.attach(...)` at the top level"));
                    self.fail();
                    return None;
                }
                self.unknown_name(n, &callee.span, "program or chain");
                None
            }
            _ => {
                self.sink.report(
                    Code::Syntax,
                    callee.span.clone(),
                    "only programs, chains and built-ins can be called",
                );
                self.fail();
                None
            }
        }
    }

    fn check_args(&mut self, name: &str, what: &str, want: usize, args: &[Expr], whole: &Expr) -> bool {
        if args.len() != want {
            self.sink
                .report(
                    Code::ArgCount,
                    whole.span.clone(),
                    format!("{what} `{name}` takes {want} argument(s) but is given {}", args.len()),
                )
                .help(format!("pass exactly {want}"));
            self.fail();
            return false;
        }
        true
    }

    /// Evaluates arguments, moves them into r1..rN, saves temporaries the call
    /// would clobber, calls, and returns the result (in a temporary).
    fn emit_call(
        &mut self,
        args: &[Expr],
        types: &[IntType],
        call: Insn,
        target: Target,
        ret_signed: bool,
    ) -> Option<Val> {
        let mut vals = Vec::new();
        for (e, ty) in args.iter().zip(types) {
            let v = self.expr(e)?;
            if let Val::Const(c) = v
                && !self.fits(c, *ty, e)
            {
                return None;
            }
            vals.push(v);
        }
        let n = vals.len() as u8;
        let arg_temps: Vec<u8> = vals
            .iter()
            .filter_map(|v| if let Val::Reg { reg, temp: true, .. } = v { Some(*reg) } else { None })
            .collect();
        // Temporaries of enclosing expressions in r0 or the argument registers.
        let endangered: Vec<u8> = TEMP_REGS
            .iter()
            .copied()
            .filter(|r| !self.temps.contains(r) && !arg_temps.contains(r) && (*r == 0 || (1..=n).contains(r)))
            .collect();
        let mut saved = Vec::new();
        for r in &endangered {
            let slot = self.alloc_slot()?;
            self.emit(build::store(Size::DW, Bank::Stack, 10, Self::slot_off(slot), *r));
            saved.push((*r, slot));
        }
        self.place_args(&vals);
        for v in &vals {
            self.free(*v);
        }
        let at = self.emit(call);
        self.relocs.push((at, target));
        // The result arrives in r0; keep it there unless r0 belongs to someone.
        let result = if saved.iter().any(|(r, _)| *r == 0) {
            let t = self.alloc_temp()?;
            self.emit(build::mov_reg(t, 0));
            t
        } else if self.take_temp(0) {
            0
        } else {
            let t = self.alloc_temp()?;
            self.emit(build::mov_reg(t, 0));
            t
        };
        for (r, slot) in saved {
            self.emit(build::load(Size::DW, Bank::Stack, r, 10, Self::slot_off(slot)));
            self.free_slots.push(slot);
        }
        Some(Val::Reg { reg: result, temp: true, signed: ret_signed })
    }

    /// Moves argument values into r1..rN without losing any (a parallel move).
    fn place_args(&mut self, vals: &[Val]) {
        let mut pending: Vec<(u8, Val)> = vals.iter().enumerate().map(|(i, v)| (i as u8 + 1, *v)).collect();
        pending.retain(|(dst, v)| !matches!(v, Val::Reg { reg, .. } if reg == dst));
        while !pending.is_empty() {
            let sources: Vec<u8> = pending
                .iter()
                .filter_map(|(_, v)| if let Val::Reg { reg, .. } = v { Some(*reg) } else { None })
                .collect();
            if let Some(i) = pending.iter().position(|(dst, _)| !sources.contains(dst)) {
                let (dst, v) = pending.remove(i);
                match v {
                    Val::Const(c) => self.load_const(dst, c),
                    Val::Reg { reg, .. } => {
                        self.emit(build::mov_reg(dst, reg));
                    }
                }
            } else {
                // A cycle among argument registers: park one source where nothing
                // is kept: not an argument register (written or to be written),
                // not a pending source, and either free or an argument temporary
                // whose value has already been moved.
                let arg_regs = 1..=vals.len() as u8;
                let consumed = |r: &u8| vals.iter().any(|v| matches!(v, Val::Reg { reg, temp: true, .. } if reg == r));
                let Some(park) = TEMP_REGS
                    .iter()
                    .copied()
                    .find(|r| !arg_regs.contains(r) && !sources.contains(r) && (self.temps.contains(r) || consumed(r)))
                else {
                    self.sink
                        .report(
                            Code::TooManyVariables,
                            self.span.clone(),
                            "this call's arguments are too complex for the VM's registers",
                        )
                        .help("compute some arguments into variables first");
                    self.fail();
                    return;
                };
                let (_, v) = pending[0];
                if let Val::Reg { reg, signed, .. } = v {
                    self.emit(build::mov_reg(park, reg));
                    pending[0].1 = Val::Reg { reg: park, signed, temp: true };
                }
            }
        }
    }

    fn builtin(&mut self, obj: &Expr, method: &Name, args: &[Expr], whole: &Expr) -> Option<Val> {
        let ExprKind::Name(o) = &obj.kind else {
            self.sink.report(
                Code::BadBuiltin,
                whole.span.clone(),
                "only `packet.…` and `scratch.…` methods can be called",
            );
            self.fail();
            return None;
        };
        let bank = match o.as_str() {
            "packet" => Bank::Packet,
            "scratch" => Bank::Scratch,
            other => {
                if self.scope.loaders.contains(other) && method.text == "attach" {
                    self.sink.report(
                        Code::BadAttach,
                        whole.span.clone(),
                        "`attach` goes at the top level of the script, outside chains",
                    );
                } else {
                    self.sink.report(
                        Code::BadBuiltin,
                        whole.span.clone(),
                        format!("`{other}` has no methods; the built-in objects are `packet` and `scratch`"),
                    );
                }
                self.fail();
                return None;
            }
        };
        // Packet-information shortcuts: fixed fields of the scratch bank.
        let info = match (bank, method.text.as_str()) {
            (Bank::Packet, "l3_off") => Some((2, Size::H)),
            (Bank::Packet, "l4_off") => Some((4, Size::H)),
            (Bank::Packet, "l3_proto") => Some((6, Size::H)),
            (Bank::Packet, "l4_proto") => Some((8, Size::B)),
            _ => None,
        };
        if let Some((off, size)) = info {
            if !args.is_empty() {
                self.sink.report(
                    Code::ArgCount,
                    whole.span.clone(),
                    format!("packet.{}() takes no arguments", method.text),
                );
                self.fail();
                return None;
            }
            let t = self.alloc_temp()?;
            self.emit(build::mov_imm(t, 0));
            self.emit(build::load(size, Bank::Scratch, t, t, off));
            return Some(Val::Reg { reg: t, temp: true, signed: false });
        }
        let (write, size) = match method.text.as_str() {
            "read_u8" => (false, Size::B),
            "read_u16" => (false, Size::H),
            "read_u32" => (false, Size::W),
            "read_u64" => (false, Size::DW),
            "write_u8" => (true, Size::B),
            "write_u16" => (true, Size::H),
            "write_u32" => (true, Size::W),
            "write_u64" => (true, Size::DW),
            other => {
                let mut names = vec![
                    "read_u8",
                    "read_u16",
                    "read_u32",
                    "read_u64",
                    "write_u8",
                    "write_u16",
                    "write_u32",
                    "write_u64",
                ];
                if bank == Bank::Packet {
                    names.extend(["l3_off", "l4_off", "l3_proto", "l4_proto"]);
                }
                let d =
                    self.sink.report(Code::BadBuiltin, method.span.clone(), format!("`{o}` has no method `{other}`"));
                match did_you_mean(other, names.iter().copied()) {
                    Some(b) => d.help(format!("did you mean `{b}`?")),
                    None => d.help(format!("its methods are {}", names.join(", "))),
                };
                self.fail();
                return None;
            }
        };
        let want = if write { 2 } else { 1 };
        if args.len() != want {
            self.sink.report(
                Code::ArgCount,
                whole.span.clone(),
                format!("{o}.{}() takes {want} argument(s) but is given {}", method.text, args.len()),
            );
            self.fail();
            return None;
        }
        // The address: a register plus a 16-bit constant offset when possible.
        let (base, off) = match self.expr(&args[0])? {
            Val::Const(c) if c <= i16::MAX as u64 => {
                let t = self.alloc_temp()?;
                self.emit(build::mov_imm(t, 0));
                (Val::Reg { reg: t, temp: true, signed: false }, c as i16)
            }
            v => (self.owned_temp(v), 0),
        };
        let Val::Reg { reg: b, .. } = base else { return None };
        // Packet fields are big-endian; scratch is in host order.
        let swap = bank == Bank::Packet && size != Size::B;
        let bits = (size.bytes() * 8) as i32;
        if write {
            let value = self.expr(&args[1])?;
            let v = self.owned_temp(value);
            let Val::Reg { reg: r, .. } = v else { return None };
            if swap {
                self.emit(build::be(r, bits));
            }
            self.emit(build::store(size, bank, b, off, r));
            self.free(v);
            self.free(base);
            Some(Val::Const(0))
        } else {
            self.emit(build::load(size, bank, b, b, off));
            if swap {
                self.emit(build::be(b, bits));
            }
            Some(Val::Reg { reg: b, temp: true, signed: false })
        }
    }

    // ---- finishing ----------------------------------------------------------

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

/// Whether a loop body can leave the loop (break at this level, or return).
fn leaves(body: &[Stmt], depth: usize) -> bool {
    body.iter().any(|s| match s {
        Stmt::Break(_) => depth == 0,
        Stmt::Return { .. } => true,
        Stmt::If { branches, orelse, .. } => {
            branches.iter().any(|(_, b)| leaves(b, depth)) || orelse.as_ref().is_some_and(|b| leaves(b, depth))
        }
        Stmt::While { body, .. } | Stmt::For { body, .. } => leaves(body, depth + 1),
        _ => false,
    })
}

fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
    }
}

/// The operator with its operands swapped: `a < b` is `b > a`.
fn mirror(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

fn cond_of(op: CmpOp, signed: bool) -> Cond {
    match (op, signed) {
        (CmpOp::Eq, _) => Cond::Eq,
        (CmpOp::Ne, _) => Cond::Ne,
        (CmpOp::Lt, false) => Cond::Lt,
        (CmpOp::Le, false) => Cond::Le,
        (CmpOp::Gt, false) => Cond::Gt,
        (CmpOp::Ge, false) => Cond::Ge,
        (CmpOp::Lt, true) => Cond::SLt,
        (CmpOp::Le, true) => Cond::SLe,
        (CmpOp::Gt, true) => Cond::SGt,
        (CmpOp::Ge, true) => Cond::SGe,
    }
}
