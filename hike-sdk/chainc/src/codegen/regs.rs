//! Register and stack-slot allocation: variables in r6–r9 then stack slots, temporaries from r5 down to r0.

use super::*;

impl Gen<'_, '_, '_> {
    pub(super) fn alloc_temp(&mut self) -> Option<u8> {
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
    pub(super) fn take_temp(&mut self, r: u8) -> bool {
        if let Some(i) = self.temps.iter().position(|t| *t == r) {
            self.temps.remove(i);
            true
        } else {
            false
        }
    }

    pub(super) fn free_reg(&mut self, r: u8, temp: bool) {
        if temp && !self.temps.contains(&r) {
            // Keep the pool in preference order.
            let pos = TEMP_REGS.iter().position(|t| *t == r).unwrap_or(0);
            let at = self.temps.iter().position(|t| TEMP_REGS.iter().position(|x| x == t).unwrap_or(0) > pos);
            self.temps.insert(at.unwrap_or(self.temps.len()), r);
        }
    }

    pub(super) fn free(&mut self, v: Val) {
        if let Val::Reg { reg, temp: true, .. } = v {
            self.free_reg(reg, true);
        }
    }

    pub(super) fn alloc_slot(&mut self) -> Option<u8> {
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

    pub(super) fn slot_off(slot: u8) -> i16 {
        -8 * (i16::from(slot) + 1)
    }

    /// Loads a 64-bit constant into `r`.
    pub(super) fn load_const(&mut self, r: u8, c: u64) {
        match i32::try_from(c as i64) {
            Ok(imm) => {
                self.emit(build::mov_imm(r, imm));
            }
            Err(_) => self.emit_all(&build::ld_imm64(r, c)),
        }
    }

    /// The value in some register (a temp when it had to be materialized).
    pub(super) fn materialize(&mut self, v: Val) -> u8 {
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
    pub(super) fn owned_temp(&mut self, v: Val) -> Val {
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
}
