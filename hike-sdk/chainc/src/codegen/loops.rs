//! Loops: `while` and `for … in range(…)`, with `break`/`continue` targets.

use super::*;

impl Gen<'_, '_, '_> {
    pub(super) fn while_stmt(&mut self, cond: &Expr, body: &[Stmt], span: &Span) {
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

    pub(super) fn for_stmt(&mut self, var: &Name, range: &[Expr], range_span: &Span, body: &[Stmt], span: &Span) {
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
}

/// Whether a loop body can leave the loop (break at this level, or return).
pub(super) fn leaves(body: &[Stmt], depth: usize) -> bool {
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
