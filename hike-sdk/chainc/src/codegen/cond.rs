//! Conditions compiled straight to jumps: `and`/`or`/`not`, comparison chains.

use super::*;

impl Gen<'_, '_, '_> {
    /// Jumps to `target` when `e`'s truth equals `when`; falls through otherwise.
    pub(super) fn branch(&mut self, e: &Expr, when: bool, target: Label) {
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
    pub(super) fn compare_jump(
        &mut self,
        op: CmpOp,
        left: Val,
        right: Val,
        when: bool,
        target: Label,
        keep_right: bool,
    ) {
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
}

pub(super) fn negate(op: CmpOp) -> CmpOp {
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
pub(super) fn mirror(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        other => other,
    }
}

pub(super) fn cond_of(op: CmpOp, signed: bool) -> Cond {
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
