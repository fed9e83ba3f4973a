//! What running a chain costs at least, over the whole call graph, and whether
//! it can fit in the VM's limits (BYTECODE.md §5, §7):
//!
//! - at most [`MAX_TAIL_CALLS`] tail calls per packet, and every program call is
//!   one; so is every continuation, needed after [`RESUME_STEPS`] instructions
//!   without a program call. A path of `I` instructions and `P` program calls
//!   needs at least `max(P, ⌈I / 32⌉ − 1)` tail calls (its `P + 1` stretches
//!   between program runs each make `⌊(len − 1) / 32⌋` continuations);
//! - at most the instance's budget of executed instructions.
//!
//! The costs are lower bounds, per way of leaving a piece of code (falling
//! through, `break`, `continue`, `return`): the fewest instructions and the
//! fewest program calls any path can get away with. Loops count their iterations
//! (`range()` is known when compiling), chain calls count the callee's cheapest
//! complete run, and a path through a program that always ends the packet is not
//! a way out. A program that may end the packet is counted as returning: a loop
//! that can only finish if some program drops the packet first is broken for
//! every packet the program lets through.
//!
//! Code that provably cannot finish within the limits — every way out of it costs
//! more than the limits allow — is an error (E302), reported once per chain at
//! the innermost statement that cannot fit. A loop whose iteration count the
//! compiler cannot bound (a `while` loop, or a `for` loop that may `break` early
//! but could not finish all its iterations) gets a warning (W004) saying how many
//! iterations can fit at most.
//!
//! The recursion here follows the syntax tree, whose depth the parser bounds.

use std::collections::HashMap;

use hike_bytecode::limits::{MAX_TAIL_CALLS, RESUME_STEPS};

use crate::artifact::Target;
use crate::ast::*;
use crate::consteval::{fold_const, range_count};
use crate::diag::{Code, Sink, Span};
use crate::env::ProgramSig;
use crate::parser::is_constant_name;
use crate::types::EndsPacket;

/// Instructions and program calls that a path executes at least.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cost {
    pub insns: u64,
    pub calls: u64,
}

impl Cost {
    const ZERO: Cost = Cost { insns: 0, calls: 0 };

    fn insns(n: u64) -> Cost {
        Cost { insns: n, calls: 0 }
    }

    fn plus(self, o: Cost) -> Cost {
        Cost { insns: self.insns.saturating_add(o.insns), calls: self.calls.saturating_add(o.calls) }
    }

    fn times(self, n: u64) -> Cost {
        Cost { insns: self.insns.saturating_mul(n), calls: self.calls.saturating_mul(n) }
    }

    /// Each bound is a bound on its own, so the cheaper of two alternatives is
    /// taken field by field.
    fn min(self, o: Cost) -> Cost {
        Cost { insns: self.insns.min(o.insns), calls: self.calls.min(o.calls) }
    }

    /// The tail calls a path of this cost needs at least.
    pub fn tail_calls(self) -> u64 {
        self.calls.max(self.insns.div_ceil(u64::from(RESUME_STEPS)).saturating_sub(1))
    }
}

fn min_opt(a: Option<Cost>, b: Option<Cost>) -> Option<Cost> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

fn plus_opt(a: Option<Cost>, b: Option<Cost>) -> Option<Cost> {
    Some(a?.plus(b?))
}

/// The ways out of a piece of code, each with what reaching it costs at least;
/// `None`: no path leaves that way.
#[derive(Debug, Clone, Copy, Default)]
struct Flow {
    normal: Option<Cost>,
    brk: Option<Cost>,
    cont: Option<Cost>,
    ret: Option<Cost>,
}

impl Flow {
    /// Code that every path leaves (or never: it ends the packet).
    const NONE: Flow = Flow { normal: None, brk: None, cont: None, ret: None };

    fn straight(c: Option<Cost>) -> Flow {
        Flow { normal: c, ..Flow::NONE }
    }

    /// `self` then `next` (entered only through `self`'s normal way out).
    fn then(self, next: Flow) -> Flow {
        let n = self.normal;
        Flow {
            normal: plus_opt(n, next.normal),
            brk: min_opt(self.brk, plus_opt(n, next.brk)),
            cont: min_opt(self.cont, plus_opt(n, next.cont)),
            ret: min_opt(self.ret, plus_opt(n, next.ret)),
        }
    }

    /// `c` spent before entering `self`.
    fn after(self, c: Cost) -> Flow {
        Flow::straight(Some(c)).then(self)
    }

    fn either(self, o: Flow) -> Flow {
        Flow {
            normal: min_opt(self.normal, o.normal),
            brk: min_opt(self.brk, o.brk),
            cont: min_opt(self.cont, o.cont),
            ret: min_opt(self.ret, o.ret),
        }
    }

    /// The cheapest way out, whichever it is.
    fn cheapest(self) -> Option<Cost> {
        min_opt(min_opt(self.normal, self.brk), min_opt(self.cont, self.ret))
    }
}

/// What the cost analysis knows of a chain once analysed.
#[derive(Debug, Clone, Copy)]
pub struct ChainCost {
    /// The cheapest complete run, `exit` included; `None` when every path ends
    /// the packet.
    pub run: Option<Cost>,
    /// Whether the chain was refused (E302): its callers are not refused again
    /// for its sake.
    pub refused: bool,
}

/// The names a chain's code refers to.
pub struct Names<'a> {
    pub programs: &'a HashMap<String, (ProgramSig, Target)>,
    /// Chains analysed so far (callees come first).
    pub chains: &'a HashMap<String, ChainCost>,
    /// Top-level constants and the chain's own.
    pub consts: &'a HashMap<String, u64>,
    pub local_consts: &'a HashMap<String, u64>,
}

/// Analyses one chain: reports what cannot fit (E302) and loops without a
/// bound (W004), and returns its cost for its callers.
pub fn analyse_chain(def: &Def, names: &Names<'_>, budget: u32, sink: &mut Sink<'_>) -> ChainCost {
    let mut a =
        Analyser { names, budget: u64::from(budget), sink, refused: false, tainted: false, calls_refused: false };
    let flow = a.block(&def.body, Some(Cost::ZERO));
    // Falling off the end returns 0: `r0 = 0; exit`.
    let run = min_opt(plus_opt(flow.normal, Some(Cost::insns(2))), flow.ret);
    ChainCost { run, refused: a.refused || a.calls_refused }
}

struct Analyser<'a, 'b, 's> {
    names: &'a Names<'a>,
    budget: u64,
    sink: &'b mut Sink<'s>,
    /// One E302 per chain: set once reported.
    refused: bool,
    /// The statement being checked calls a chain that was refused already.
    tainted: bool,
    /// Some statement of the chain does.
    calls_refused: bool,
}

impl Analyser<'_, '_, '_> {
    fn constant(&self, e: &Expr) -> Option<u64> {
        let local = self.names.local_consts;
        let global = self.names.consts;
        fold_const(e, &|n| local.get(n).or_else(|| global.get(n)).copied())
    }

    /// Why a path that cost at least `c` from the start of the packet cannot
    /// fit, if it cannot.
    fn exceeded(&self, c: Cost) -> Option<String> {
        let limit = u64::from(MAX_TAIL_CALLS);
        if c.calls > limit {
            return Some(format!(
                "at least {} program calls, but a packet can make at most {limit} (the kernel's tail-call limit)",
                c.calls
            ));
        }
        if c.tail_calls() > limit {
            let calls = match c.calls {
                0 => "no program call".to_owned(),
                1 => "only 1 program call".to_owned(),
                n => format!("only {n} program calls"),
            };
            return Some(format!(
                "at least {} instructions with {calls} among them; the VM hands over with a tail call after every \
                 {RESUME_STEPS} instructions without a program call, so that is at least {} tail calls, but a packet \
                 can make at most {limit}",
                c.insns,
                c.tail_calls()
            ));
        }
        if c.insns > self.budget {
            return Some(format!(
                "at least {} instructions, but the VM's budget is {} per packet",
                c.insns, self.budget
            ));
        }
        None
    }

    /// A block entered at a cost of at least `at` (`None`: not reachable).
    fn block(&mut self, stmts: &[Stmt], at: Option<Cost>) -> Flow {
        let mut flow = Flow::straight(Some(Cost::ZERO));
        for s in stmts {
            let Some(before) = flow.normal else { break };
            let here = plus_opt(at, Some(before));
            let f = self.statement(s, here);
            flow = flow.then(f);
        }
        flow
    }

    /// One statement, checked: when every way out of it costs more than the
    /// limits allow (and nothing inside it was reported), it is refused here.
    fn statement(&mut self, s: &Stmt, at: Option<Cost>) -> Flow {
        let outer_taint = std::mem::replace(&mut self.tainted, false);
        let reported_before = self.refused;
        let f = self.flow(s, at);
        if !self.refused
            && !reported_before
            && !self.tainted
            && let Some(start) = at
            && let Some(out) = f.cheapest()
            && self.exceeded(start).is_none()
            && let Some(why) = self.exceeded(start.plus(out))
        {
            self.refuse(s, &why);
        }
        self.tainted |= outer_taint;
        f
    }

    fn refuse(&mut self, s: &Stmt, why: &str) {
        self.refused = true;
        let (span, what) = match s {
            Stmt::For { range_span, .. } => (range_span.clone(), "this loop cannot finish"),
            Stmt::While { cond, span, .. } => (span.start..cond.span.end, "this loop cannot finish"),
            Stmt::If { branches, span, .. } => (
                span.start..branches.first().map_or(span.end, |(c, _)| c.span.end),
                "a packet cannot get past this `if`",
            ),
            other => (other.span(), "a packet cannot get past this statement"),
        };
        self.sink
            .report(
                Code::LoopTooLong,
                span,
                format!("{what} within the VM's limits: every packet that runs it needs {why}"),
            )
            .help(
                "unless a program ends the packet first, the VM drops it (call-limit or budget): loop fewer times, \
                 call fewer programs, or move the work into a program",
            );
    }

    fn flow(&mut self, s: &Stmt, at: Option<Cost>) -> Flow {
        match s {
            Stmt::Pass(_) => Flow::straight(Some(Cost::ZERO)),
            Stmt::Break(_) => Flow { brk: Some(Cost::ZERO), ..Flow::NONE },
            Stmt::Continue(_) => Flow { cont: Some(Cost::ZERO), ..Flow::NONE },
            Stmt::Expr(e) => Flow::straight(self.expr(e)),
            Stmt::Assign { target, value, .. } => {
                if is_constant_name(&target.text) {
                    return Flow::straight(Some(Cost::ZERO));
                }
                // A constant is loaded with one instruction; a computed value may
                // already be in the variable's register.
                let store = if self.constant(value).is_some() { 1 } else { 0 };
                Flow::straight(plus_opt(self.expr(value), Some(Cost::insns(store))))
            }
            Stmt::AugAssign { value, .. } => Flow::straight(plus_opt(self.expr(value), Some(Cost::insns(1)))),
            Stmt::Return { value, .. } => {
                let v = match value {
                    Some(e) => self.expr(e),
                    None => Some(Cost::ZERO),
                };
                Flow { ret: plus_opt(v, Some(Cost::insns(1))), ..Flow::NONE }
            }
            Stmt::If { branches, orelse, .. } => self.if_flow(branches, orelse.as_deref(), at),
            Stmt::While { cond, body, span } => self.while_flow(cond, body, span, at),
            Stmt::For { range, range_span, body, .. } => self.for_flow(range, range_span, body, at),
        }
    }

    fn if_flow(&mut self, branches: &[(Expr, Vec<Stmt>)], orelse: Option<&[Stmt]>, at: Option<Cost>) -> Flow {
        // `tested`: what the conditions tested so far cost on the way to the next.
        let mut tested = Cost::ZERO;
        let mut flow = Flow::NONE;
        for (cond, body) in branches {
            match self.constant(cond) {
                // A constant condition picks its branch when compiling.
                Some(0) => continue,
                Some(_) => return flow.either(self.block(body, plus_opt(at, Some(tested))).after(tested)),
                None => {}
            }
            let Some(c) = self.branch(cond) else { return flow };
            tested = tested.plus(c);
            flow = flow.either(self.block(body, plus_opt(at, Some(tested))).after(tested));
        }
        let rest = match orelse {
            Some(b) => self.block(b, plus_opt(at, Some(tested))),
            None => Flow::straight(Some(Cost::ZERO)),
        };
        flow.either(rest.after(tested))
    }

    fn while_flow(&mut self, cond: &Expr, body: &[Stmt], span: &Span, at: Option<Cost>) -> Flow {
        let constant = self.constant(cond);
        if constant == Some(0) {
            return Flow::straight(Some(Cost::ZERO));
        }
        // The first test (none when the condition is constant).
        let test = match constant {
            Some(_) => Cost::ZERO,
            None => match self.branch(cond) {
                Some(c) => c,
                None => return Flow::NONE,
            },
        };
        let b = self.block(body, plus_opt(at, Some(test)));
        // One more iteration: the body to its end or a `continue`, the jump back
        // and the next test.
        if let Some(again) = min_opt(b.normal, b.cont) {
            let per = again.plus(test).plus(Cost::insns(1));
            let why = if constant.is_some() {
                "it runs until a `break` or `return`, which depends on the packet"
            } else {
                "its condition depends on the packet"
            };
            self.unbounded(span.start..cond.span.end, why, at.map(|a| a.plus(test)), per, None);
        }
        let leave = if constant.is_some() { None } else { Some(test) };
        Flow { normal: min_opt(leave, plus_opt(Some(test), b.brk)), ret: plus_opt(Some(test), b.ret), ..Flow::NONE }
    }

    fn for_flow(&mut self, range: &[Expr], range_span: &Span, body: &[Stmt], at: Option<Cost>) -> Flow {
        let vals: Option<Vec<u64>> = range.iter().map(|e| self.constant(e)).collect();
        let Some((_, _, _, count)) = vals.as_deref().and_then(range_count) else {
            // Refused when compiling the chain.
            return Flow::straight(Some(Cost::ZERO));
        };
        if count == 0 {
            return Flow::straight(Some(Cost::ZERO));
        }
        // The loop variable's first value, then the first test.
        let entry = Cost::insns(2);
        let b = self.block(body, plus_opt(at, Some(entry)));
        let leave_early = plus_opt(Some(entry), b.brk);
        let ret = plus_opt(Some(entry), b.ret);
        // Every iteration: the body to its end or a `continue`, the step, the jump
        // back and the next test.
        let full = min_opt(b.normal, b.cont).map(|again| {
            let per = again.plus(Cost::insns(3));
            (per, entry.plus(per.times(count)))
        });
        if let (Some((per, whole)), Some(start)) = (full, at)
            && (leave_early.is_some() || ret.is_some())
            && self.exceeded(start).is_none()
            && self.exceeded(start.plus(whole)).is_some()
        {
            self.unbounded(
                range_span.clone(),
                "it can leave early (`break` or `return`), but not all its iterations fit",
                Some(start.plus(entry)),
                per,
                Some(count),
            );
        }
        Flow { normal: min_opt(full.map(|(_, w)| w), leave_early), ret, ..Flow::NONE }
    }

    /// W004: a loop whose iterations could outrun the limits. `start`: the cost
    /// before its first iteration; `per`: each iteration's at least; `count`:
    /// the iterations of a `for` loop.
    fn unbounded(&mut self, span: Span, why: &str, start: Option<Cost>, per: Cost, count: Option<u64>) {
        // After a refusal, or where nothing fits any more, a warning adds nothing.
        if self.refused || start.is_some_and(|s| self.exceeded(s).is_some()) {
            return;
        }
        let fit = start.map(|s| self.iterations_that_fit(s, per));
        let limits = format!(
            "{MAX_TAIL_CALLS} tail calls, the budget, a continuation every {RESUME_STEPS} instructions without a \
             program call"
        );
        let (message, help) = match (count, fit) {
            (Some(n), Some(k)) => (
                format!("this loop may not finish within the VM's limits: {why}"),
                format!(
                    "at most {k} of its {n} iterations fit ({limits}); a packet that needs more is dropped: loop at \
                     most {k} times, or do the work in a program"
                ),
            ),
            (None, Some(0)) => (
                format!("the compiler cannot bound how often this loop runs: {why}"),
                format!(
                    "not even one iteration fits after what runs before it ({limits}): a packet that runs the loop \
                     body is dropped; do the work in a program"
                ),
            ),
            (None, Some(k)) => (
                format!("the compiler cannot bound how often this loop runs: {why}"),
                format!(
                    "at most {k} iteration(s) fit ({limits}); a packet that needs more is dropped: bound the loop \
                     with `for _i in range({k}):` and `break`, or do the work in a program"
                ),
            ),
            (_, None) => (
                format!("the compiler cannot bound how often this loop runs: {why}"),
                "bound it with `for _i in range(N):` and `break`, or do the work in a program".to_owned(),
            ),
        };
        self.sink.report(Code::UnboundedLoop, span, message).help(help);
    }

    /// How many iterations of cost `per` fit after `start`, at most.
    fn iterations_that_fit(&self, start: Cost, per: Cost) -> u64 {
        if per == Cost::ZERO {
            return u64::MAX;
        }
        // Binary search on a monotone predicate: k iterations fit.
        let (mut lo, mut hi) = (0u64, 1u64 << 20);
        if self.exceeded(start.plus(per.times(hi))).is_none() {
            return hi;
        }
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if self.exceeded(start.plus(per.times(mid))).is_none() {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Evaluating `e` for its value; `None` when it never completes (it calls a
    /// program that always ends the packet, or a chain that never returns).
    fn expr(&mut self, e: &Expr) -> Option<Cost> {
        if self.constant(e).is_some() {
            return Some(Cost::ZERO);
        }
        match &e.kind {
            ExprKind::Unary(UnOp::Not, _) | ExprKind::Compare(..) => {
                // `t = 1`, the test, `t = 0` when it fails.
                plus_opt(self.branch(e), Some(Cost::insns(1)))
            }
            ExprKind::Unary(UnOp::Plus, x) => self.expr(x),
            ExprKind::Unary(_, x) => plus_opt(self.expr(x), Some(Cost::insns(1))),
            ExprKind::Binary(_, a, b) => {
                let both = plus_opt(self.expr(a), self.expr(b));
                plus_opt(both, Some(Cost::insns(1)))
            }
            // The right side may be skipped; the test of the left is not.
            ExprKind::And(a, _) | ExprKind::Or(a, _) => plus_opt(self.expr(a), Some(Cost::insns(1))),
            ExprKind::Call { callee, args } => {
                let mut total = Some(Cost::insns(1));
                for a in args {
                    total = plus_opt(total, self.expr(a));
                }
                let ExprKind::Name(n) = &callee.kind else { return total };
                if let Some((sig, _)) = self.names.programs.get(n) {
                    if sig.ends_packet == EndsPacket::Always {
                        return None;
                    }
                    return plus_opt(total, Some(Cost { insns: 0, calls: 1 }));
                }
                if let Some(c) = self.names.chains.get(n) {
                    self.tainted |= c.refused;
                    self.calls_refused |= c.refused;
                    return plus_opt(total, c.run);
                }
                total
            }
            _ => Some(Cost::ZERO),
        }
    }

    /// Testing `e` as a condition (a jump, after what it needs evaluated: the
    /// left side of `and`/`or`, both sides of a comparison's first pair).
    fn branch(&mut self, e: &Expr) -> Option<Cost> {
        if self.constant(e).is_some() {
            return Some(Cost::ZERO);
        }
        match &e.kind {
            ExprKind::Unary(UnOp::Not, x) => self.branch(x),
            ExprKind::And(a, _) | ExprKind::Or(a, _) => self.branch(a),
            ExprKind::Compare(first, rest) => {
                let right = rest.first().map_or(Some(Cost::ZERO), |(_, r)| self.expr(r));
                plus_opt(plus_opt(self.expr(first), right), Some(Cost::insns(1)))
            }
            _ => plus_opt(self.expr(e), Some(Cost::insns(1))),
        }
    }
}
