//! Variables: declaration, assignment checks, typed stores and reads, unused-variable warnings.

use super::*;

impl Gen<'_, '_, '_> {
    pub(super) fn check_assignable(&mut self, name: &Name) -> bool {
        let reason = if IntType::from_name(&name.text).is_some() {
            Some("is a type")
        } else if crate::types::BUILT_INS.contains(&name.text.as_str()) {
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

    pub(super) fn declare(&mut self, name: &Name, ty: IntType) -> Option<Home> {
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
    pub(super) fn store(&mut self, home: Home, ty: IntType, v: Val) {
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
    pub(super) fn convert_in_place(&mut self, r: u8, ty: IntType) {
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

    pub(super) fn read_var(&mut self, name: &str) -> Option<Val> {
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

    pub(super) fn unused_variables(&mut self) {
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
}
