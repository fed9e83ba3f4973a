//! Evaluating what is known when compiling, with exactly the VM's semantics:
//! constant folding for code generation, loader map entries and the cost
//! analysis, and the iteration count of `range(...)`.

use hike_bytecode::AluOp;

use crate::ast::*;

/// The value of `e` when it is known when compiling, folded with the VM's
/// semantics; `lookup` gives the constants in scope.
pub fn fold_const(e: &Expr, lookup: &dyn Fn(&str) -> Option<u64>) -> Option<u64> {
    Some(match &e.kind {
        ExprKind::Int(v) => *v,
        ExprKind::Bool(b) => u64::from(*b),
        ExprKind::None => 0,
        ExprKind::Name(n) => lookup(n)?,
        ExprKind::Unary(op, inner) => {
            let v = fold_const(inner, lookup)?;
            match op {
                UnOp::Neg => v.wrapping_neg(),
                UnOp::Plus => v,
                UnOp::Invert => !v,
                UnOp::Not => u64::from(v == 0),
            }
        }
        ExprKind::Binary(op, a, b) => fold(*op, fold_const(a, lookup)?, fold_const(b, lookup)?)?,
        ExprKind::Compare(first, rest) => {
            let mut left = fold_const(first, lookup)?;
            for (op, r) in rest {
                let right = fold_const(r, lookup)?;
                if !compare(*op, left, right, false) {
                    return Some(0);
                }
                left = right;
            }
            1
        }
        ExprKind::And(a, b) => {
            let a = fold_const(a, lookup)?;
            if a == 0 { 0 } else { fold_const(b, lookup)? }
        }
        ExprKind::Or(a, b) => {
            let a = fold_const(a, lookup)?;
            if a != 0 { a } else { fold_const(b, lookup)? }
        }
        _ => return None,
    })
}

/// `a op b` on constants, with the VM's unsigned semantics (`**` wraps like
/// repeated `*`).
pub fn fold(op: BinOp, a: u64, b: u64) -> Option<u64> {
    Some(match op {
        BinOp::Add => AluOp::Add.apply(a, b),
        BinOp::Sub => AluOp::Sub.apply(a, b),
        BinOp::Mul => AluOp::Mul.apply(a, b),
        BinOp::Div | BinOp::FloorDiv => AluOp::Div.apply(a, b),
        BinOp::Mod => AluOp::Mod.apply(a, b),
        BinOp::Shl => AluOp::Lsh.apply(a, b),
        BinOp::Shr => AluOp::Rsh.apply(a, b),
        BinOp::BitAnd => a & b,
        BinOp::BitOr => a | b,
        BinOp::BitXor => a ^ b,
        BinOp::Pow => {
            // Square-and-multiply, wrapping like repeated `*`.
            let (mut base, mut exp, mut r) = (a, b, 1u64);
            while exp > 0 {
                if exp & 1 == 1 {
                    r = r.wrapping_mul(base);
                }
                base = base.wrapping_mul(base);
                exp >>= 1;
            }
            r
        }
    })
}

/// `a op b` for comparisons.
pub fn compare(op: CmpOp, a: u64, b: u64, signed: bool) -> bool {
    if signed {
        let (a, b) = (a as i64, b as i64);
        match op {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    } else {
        match op {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

/// `range(...)`'s arguments as (start, stop, step, number of iterations); the
/// iteration count is 0 for a step of 0 (refused separately).
pub fn range_count(vals: &[u64]) -> Option<(i64, i64, i64, u64)> {
    let (start, stop, step) = match *vals {
        [n] => (0, n as i64, 1),
        [a, b] => (a as i64, b as i64, 1),
        [a, b, s] => (a as i64, b as i64, s as i64),
        _ => return None,
    };
    let (start_w, stop_w, step_w) = (i128::from(start), i128::from(stop), i128::from(step));
    let count = if step > 0 && stop > start {
        (stop_w - start_w + step_w - 1) / step_w
    } else if step < 0 && start > stop {
        (start_w - stop_w - step_w - 1) / -step_w
    } else {
        0
    };
    Some((start, stop, step, count as u64))
}
