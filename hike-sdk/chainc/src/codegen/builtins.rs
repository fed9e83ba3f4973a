//! The built-ins: `packet.read_*`/`write_*`, scratch access and the like.

use super::*;

impl Gen<'_, '_, '_> {
    pub(super) fn builtin(&mut self, obj: &Expr, method: &Name, args: &[Expr], whole: &Expr) -> Option<Val> {
        let ExprKind::Name(o) = &obj.kind else {
            self.sink.report(
                Code::BadBuiltin,
                whole.span.clone(),
                "only `packet.…` and `scratch.…` methods can be called",
            );
            self.fail();
            return None;
        };
        let bank = match o.as_str() {
            "packet" => Bank::Packet,
            "scratch" => Bank::Scratch,
            other => {
                if self.scope.loaders.contains(other) && method.text == "attach" {
                    self.sink.report(
                        Code::BadAttach,
                        whole.span.clone(),
                        "`attach` goes at the top level of the script, outside chains",
                    );
                } else {
                    self.sink.report(
                        Code::BadBuiltin,
                        whole.span.clone(),
                        format!("`{other}` has no methods; the built-in objects are `packet` and `scratch`"),
                    );
                }
                self.fail();
                return None;
            }
        };
        // Packet-information shortcuts: fixed fields of the scratch bank.
        let info = match (bank, method.text.as_str()) {
            (Bank::Packet, "l3_off") => Some((2, Size::H)),
            (Bank::Packet, "l4_off") => Some((4, Size::H)),
            (Bank::Packet, "l3_proto") => Some((6, Size::H)),
            (Bank::Packet, "l4_proto") => Some((8, Size::B)),
            _ => None,
        };
        if let Some((off, size)) = info {
            if !args.is_empty() {
                self.sink.report(
                    Code::ArgCount,
                    whole.span.clone(),
                    format!("packet.{}() takes no arguments", method.text),
                );
                self.fail();
                return None;
            }
            let t = self.alloc_temp()?;
            self.emit(build::mov_imm(t, 0));
            self.emit(build::load(size, Bank::Scratch, t, t, off));
            return Some(Val::Reg { reg: t, temp: true, signed: false });
        }
        let (write, size) = match method.text.as_str() {
            "read_u8" => (false, Size::B),
            "read_u16" => (false, Size::H),
            "read_u32" => (false, Size::W),
            "read_u64" => (false, Size::DW),
            "write_u8" => (true, Size::B),
            "write_u16" => (true, Size::H),
            "write_u32" => (true, Size::W),
            "write_u64" => (true, Size::DW),
            other => {
                let mut names = vec![
                    "read_u8",
                    "read_u16",
                    "read_u32",
                    "read_u64",
                    "write_u8",
                    "write_u16",
                    "write_u32",
                    "write_u64",
                ];
                if bank == Bank::Packet {
                    names.extend(["l3_off", "l4_off", "l3_proto", "l4_proto"]);
                }
                let d =
                    self.sink.report(Code::BadBuiltin, method.span.clone(), format!("`{o}` has no method `{other}`"));
                match did_you_mean(other, names.iter().copied()) {
                    Some(b) => d.help(format!("did you mean `{b}`?")),
                    None => d.help(format!("its methods are {}", names.join(", "))),
                };
                self.fail();
                return None;
            }
        };
        let want = if write { 2 } else { 1 };
        if args.len() != want {
            self.sink.report(
                Code::ArgCount,
                whole.span.clone(),
                format!("{o}.{}() takes {want} argument(s) but is given {}", method.text, args.len()),
            );
            self.fail();
            return None;
        }
        // The address: a register plus a 16-bit constant offset when possible.
        let (base, off) = match self.expr(&args[0])? {
            Val::Const(c) if c <= i16::MAX as u64 => {
                let t = self.alloc_temp()?;
                self.emit(build::mov_imm(t, 0));
                (Val::Reg { reg: t, temp: true, signed: false }, c as i16)
            }
            v => (self.owned_temp(v), 0),
        };
        let Val::Reg { reg: b, .. } = base else { return None };
        // Packet fields are big-endian; scratch is in host order.
        let swap = bank == Bank::Packet && size != Size::B;
        let bits = (size.bytes() * 8) as i32;
        if write {
            let value = self.expr(&args[1])?;
            let v = self.owned_temp(value);
            let Val::Reg { reg: r, .. } = v else { return None };
            if swap {
                self.emit(build::be(r, bits));
            }
            self.emit(build::store(size, bank, b, off, r));
            self.free(v);
            self.free(base);
            Some(Val::Const(0))
        } else {
            self.emit(build::load(size, bank, b, b, off));
            if swap {
                self.emit(build::be(b, bits));
            }
            Some(Val::Reg { reg: b, temp: true, signed: false })
        }
    }

    // ---- finishing ----------------------------------------------------------
}
