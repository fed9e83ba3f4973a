//! Emitting instructions, labels and jumps (targets are resolved by `finish`).

use super::*;

impl Gen<'_, '_, '_> {
    pub(super) fn fail(&mut self) {
        self.failed = true;
    }

    // ---- emitting -----------------------------------------------------------

    pub(super) fn emit(&mut self, insn: Insn) -> usize {
        self.code.push(insn);
        self.spans.push(self.span.clone());
        self.code.len() - 1
    }

    pub(super) fn emit_all(&mut self, insns: &[Insn]) {
        for i in insns {
            self.emit(*i);
        }
    }

    pub(super) fn label(&mut self) -> Label {
        self.labels.push(None);
        self.labels.len() - 1
    }

    pub(super) fn place(&mut self, l: Label) {
        self.labels[l] = Some(self.code.len());
    }

    pub(super) fn jump(&mut self, l: Label) {
        let at = self.emit(build::ja(0));
        self.jumps.insert(at, l);
    }

    pub(super) fn jump_if(&mut self, cond: Cond, dst: u8, src: Val, l: Label) {
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
}
