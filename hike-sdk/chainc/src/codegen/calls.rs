//! Calls to programs and chains: argument checks and placement in r1–r4, saving temporaries the call clobbers.

use super::*;

impl Gen<'_, '_, '_> {
    pub(super) fn call(&mut self, callee: &Expr, args: &[Expr], whole: &Expr) -> Option<Val> {
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

    pub(super) fn check_args(&mut self, name: &str, what: &str, want: usize, args: &[Expr], whole: &Expr) -> bool {
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
    pub(super) fn emit_call(
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
    pub(super) fn place_args(&mut self, vals: &[Val]) {
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
}
