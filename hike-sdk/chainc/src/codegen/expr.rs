//! Expressions to values: constants, names, unary and binary operators.

use super::*;

impl Gen<'_, '_, '_> {
    /// The value of `e` when it is known when compiling (VM semantics).
    pub(super) fn const_expr(&self, e: &Expr) -> Option<u64> {
        fold_const(e, &|n| self.consts.get(n).map(|(c, _)| *c).or_else(|| self.scope.consts.get(n).copied()))
    }

    pub(super) fn expr(&mut self, e: &Expr) -> Option<Val> {
        if let Some(c) = self.const_expr(e) {
            return Some(Val::Const(c));
        }
        self.span_expr(e)
    }

    pub(super) fn span_expr(&mut self, e: &Expr) -> Option<Val> {
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
    pub(super) fn bool_value(&mut self, e: &Expr) -> Option<Val> {
        let t = self.alloc_temp()?;
        let end = self.label();
        self.emit(build::mov_imm(t, 1));
        // The temporary is ours during the branch: keep it out of the pool.
        self.branch(e, true, end);
        self.emit(build::mov_imm(t, 0));
        self.place(end);
        Some(Val::Reg { reg: t, temp: true, signed: false })
    }

    pub(super) fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, whole: &Expr) -> Option<Val> {
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

    pub(super) fn unknown_name(&mut self, n: &str, span: &Span, what: &str) {
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
}
