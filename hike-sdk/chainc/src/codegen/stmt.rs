//! Statements: blocks, assignments, `if`/`elif`/`else`, and whether a call ends the packet.

use super::*;

impl Gen<'_, '_, '_> {
    /// Compiles a block; returns true when control never leaves its end (it
    /// returns, breaks or continues on every path).
    ///
    /// A call to a program declared `ends-packet = "always"` makes what follows
    /// unreachable for warnings, but not for code: if a program returned after
    /// all, the chain must still be well-formed, so it gets its jumps and `exit`.
    pub(super) fn block(&mut self, stmts: &[Stmt]) -> bool {
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

    pub(super) fn statement(&mut self, s: &Stmt) -> bool {
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
    pub(super) fn ends_packet(&self, e: &Expr) -> bool {
        if let ExprKind::Call { callee, .. } = &e.kind
            && let ExprKind::Name(n) = &callee.kind
            && let Some((sig, _)) = self.scope.programs.get(n)
        {
            return sig.ends_packet == EndsPacket::Always;
        }
        false
    }

    pub(super) fn assign(&mut self, target: &Name, ty: Option<&(IntType, Span)>, value: &Expr) {
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
    pub(super) fn fits(&mut self, c: u64, ty: IntType, at: &Expr) -> bool {
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

    pub(super) fn if_stmt(&mut self, branches: &[(Expr, Vec<Stmt>)], orelse: Option<&[Stmt]>) -> bool {
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
}
