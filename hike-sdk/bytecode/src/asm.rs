//! Text form of the bytecode, in the style of the kernel's eBPF disassembly:
//!
//! ```text
//! r1 = 5                               r0 += r1            r0 s/= 3
//! r0 = -r0                             r0 = be16 r0        r2 = 0x1122334455667788 ll
//! r0 = *(u16 *)(packet + r1 + 12)      *(u64 *)(stack + r10 - 8) = r1
//! if r1 == 5 goto +3                   if r1 s< r2 goto -2   goto +1
//! call prog 12, 2                      call chain 3, 0     exit
//! ```
//!
//! [`format_op`] and [`disassemble`] write it; [`assemble`] reads it back (one
//! instruction per line, `;` or `#` starts a comment), so tests and tools can write
//! chains by hand.

use crate::build;
use crate::insn::Insn;
use crate::op::{AluOp, Bank, Cond, Endian, Op, Operand, Size, decode};

fn reg_or_imm(src: Operand) -> String {
    match src {
        Operand::Reg(r) => format!("r{r}"),
        Operand::Imm(i) => i.to_string(),
    }
}

fn addr(bank: Bank, base: u8, off: i16) -> String {
    match off {
        0 => format!("{} + r{base}", bank.name()),
        o if o < 0 => format!("{} + r{base} - {}", bank.name(), -i32::from(o)),
        o => format!("{} + r{base} + {o}", bank.name()),
    }
}

/// One instruction as text.
pub fn format_op(op: &Op) -> String {
    match *op {
        Op::Alu { op, dst, src } => format!("r{dst} {} {}", op.symbol(), reg_or_imm(src)),
        Op::Neg { dst } => format!("r{dst} = -r{dst}"),
        Op::End { kind, dst, bits } => {
            let name = match kind {
                Endian::ToLe => "le",
                Endian::ToBe => "be",
                Endian::Swap => "bswap",
            };
            format!("r{dst} = {name}{bits} r{dst}")
        }
        Op::LdImm64 { dst, imm } => format!("r{dst} = {imm:#x} ll"),
        Op::Load { size, bank, dst, base, off } => {
            format!("r{dst} = *({} *)({})", size.c_type(), addr(bank, base, off))
        }
        Op::Store { size, bank, base, off, src } => {
            format!("*({} *)({}) = r{src}", size.c_type(), addr(bank, base, off))
        }
        Op::Jump { cond: Cond::Always, off, .. } => format!("goto {off:+}"),
        Op::Jump { cond, dst, src, off } => {
            format!("if r{dst} {} {} goto {off:+}", cond.symbol(), reg_or_imm(src))
        }
        Op::CallProg { id, nargs } => format!("call prog {id}, {nargs}"),
        Op::CallChain { id, nargs } => format!("call chain {id}, {nargs}"),
        Op::Exit => "exit".to_owned(),
    }
}

/// Every instruction of a chain as `(index, text)`; slots that do not decode show
/// their raw bytes.
pub fn disassemble(insns: &[Insn]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pc = 0;
    while pc < insns.len() {
        match decode(insns, pc) {
            Ok(op) => {
                out.push((pc, format_op(&op)));
                pc += op.width();
            }
            Err(e) => {
                out.push((pc, format!(".insn {} ; {e}", insns[pc])));
                pc += 1;
            }
        }
    }
    out
}

/// A line the assembler did not understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}: `{text}`")]
pub struct AsmError {
    pub line: usize,
    pub text: String,
    pub message: String,
}

/// Reads the text form back into instructions.
pub fn assemble(text: &str) -> Result<Vec<Insn>, AsmError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split([';', '#']).next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let fail = |message: &str| AsmError { line: i + 1, text: line.to_owned(), message: message.to_owned() };
        let insns = parse_line(line).map_err(|m| fail(&m))?;
        out.extend(insns);
    }
    Ok(out)
}

fn parse_reg(s: &str) -> Result<u8, String> {
    let n = s.strip_prefix('r').ok_or_else(|| format!("expected a register, found `{s}`"))?;
    n.parse::<u8>().ok().filter(|r| *r <= 10).ok_or_else(|| format!("no register `{s}`"))
}

fn parse_int(s: &str) -> Result<i64, String> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = match body.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).map(|v| v as i64),
        None => body.parse::<u64>().map(|v| v as i64),
    }
    .map_err(|_| format!("expected a number, found `{s}`"))?;
    Ok(if neg { v.wrapping_neg() } else { v })
}

fn parse_i32(s: &str) -> Result<i32, String> {
    let v = parse_int(s)?;
    i32::try_from(v).map_err(|_| format!("`{s}` does not fit in 32 bits (use `ll`)"))
}

fn parse_off(s: &str) -> Result<i16, String> {
    let v = parse_int(s)?;
    i16::try_from(v).map_err(|_| format!("offset `{s}` does not fit in 16 bits"))
}

fn parse_operand(s: &str) -> Result<Operand, String> {
    if s.starts_with('r') { Ok(Operand::Reg(parse_reg(s)?)) } else { Ok(Operand::Imm(parse_i32(s)?)) }
}

/// `*(u16 *)(packet + r1 + 12)` → (size, bank, base, off)
fn parse_mem(s: &str) -> Result<(Size, Bank, u8, i16), String> {
    let s = s.trim();
    let rest = s.strip_prefix("*(").ok_or("expected `*(uN *)(bank + rN ...)`")?;
    let (ty, rest) = rest.split_once("*)").ok_or("expected `*)` after the type")?;
    let size = match ty.trim() {
        "u8" => Size::B,
        "u16" => Size::H,
        "u32" => Size::W,
        "u64" => Size::DW,
        other => return Err(format!("unknown type `{other}`")),
    };
    let inner = rest.trim().strip_prefix('(').and_then(|r| r.strip_suffix(')')).ok_or("expected `(bank + rN)`")?;
    let tokens: Vec<&str> = inner.split_whitespace().collect();
    let bank = match tokens.first().copied() {
        Some("stack") => Bank::Stack,
        Some("packet") => Bank::Packet,
        Some("scratch") => Bank::Scratch,
        other => return Err(format!("unknown bank `{}`", other.unwrap_or(""))),
    };
    let (base, off) = match tokens.as_slice() {
        [_, "+", r] => (parse_reg(r)?, 0),
        [_, "+", r, "+", o] => (parse_reg(r)?, parse_off(o)?),
        [_, "+", r, "-", o] => (parse_reg(r)?, parse_off(&format!("-{o}"))?),
        _ => return Err("expected `bank + rN`, `bank + rN + off` or `bank + rN - off`".into()),
    };
    Ok((size, bank, base, off))
}

fn parse_line(line: &str) -> Result<Vec<Insn>, String> {
    let t: Vec<&str> = line.split_whitespace().collect();
    match t.as_slice() {
        ["exit"] => return Ok(vec![build::exit()]),
        ["goto", off] => return Ok(vec![build::ja(parse_off(off)?)]),
        ["call", kind, id, nargs] => {
            let id = u32::try_from(parse_int(id.trim_end_matches(','))?).map_err(|_| "bad id".to_owned())?;
            let nargs = u8::try_from(parse_int(nargs)?).map_err(|_| "bad argument count".to_owned())?;
            return match *kind {
                "prog" => Ok(vec![build::call_prog(id, nargs)]),
                "chain" => Ok(vec![build::call_chain(id, nargs)]),
                _ => Err(format!("call what? `{kind}` (prog or chain)")),
            };
        }
        ["if", dst, cond, src, "goto", off] => {
            let cond = Cond::ALL
                .into_iter()
                .find(|c| c.symbol() == *cond)
                .ok_or_else(|| format!("unknown condition `{cond}`"))?;
            let dst = parse_reg(dst)?;
            let off = parse_off(off)?;
            return Ok(vec![match parse_operand(src)? {
                Operand::Reg(r) => build::jmp_reg(cond, dst, r, off),
                Operand::Imm(i) => build::jmp_imm(cond, dst, i, off),
            }]);
        }
        _ => {}
    }
    if line.starts_with("*(") {
        let (lhs, rhs) = line.rsplit_once('=').ok_or("expected `= rN`")?;
        let (size, bank, base, off) = parse_mem(lhs)?;
        return Ok(vec![build::store(size, bank, base, off, parse_reg(rhs.trim())?)]);
    }
    match t.as_slice() {
        [dst, "=", v, "ll"] => Ok(build::ld_imm64(parse_reg(dst)?, parse_int(v)? as u64).to_vec()),
        [dst, "=", neg] if neg.starts_with("-r") => {
            let d = parse_reg(dst)?;
            if parse_reg(&neg[1..])? != d {
                return Err("negation works in place: `rN = -rN`".into());
            }
            Ok(vec![build::neg(d)])
        }
        [dst, "=", f, src] if ["be", "le", "bswap"].iter().any(|p| f.starts_with(p)) => {
            let d = parse_reg(dst)?;
            if parse_reg(src)? != d {
                return Err("byte swaps work in place: `rN = be16 rN`".into());
            }
            let (kind, bits) = if let Some(b) = f.strip_prefix("bswap") {
                (Endian::Swap, b)
            } else if let Some(b) = f.strip_prefix("be") {
                (Endian::ToBe, b)
            } else {
                (Endian::ToLe, &f[2..])
            };
            let bits = parse_i32(bits)?;
            Ok(vec![match kind {
                Endian::ToBe => build::be(d, bits),
                Endian::ToLe => build::le(d, bits),
                Endian::Swap => build::bswap(d, bits),
            }])
        }
        [dst, "=", rest @ ..] if rest.first().is_some_and(|r| r.starts_with("*(")) => {
            let (size, bank, base, off) = parse_mem(&rest.join(" "))?;
            Ok(vec![build::load(size, bank, parse_reg(dst)?, base, off)])
        }
        [dst, sym, src] => {
            let op = AluOp::ALL
                .into_iter()
                .find(|o| o.symbol() == *sym)
                .ok_or_else(|| format!("unknown operator `{sym}`"))?;
            let dst = parse_reg(dst)?;
            Ok(vec![match parse_operand(src)? {
                Operand::Reg(r) => build::alu_reg(op, dst, r),
                Operand::Imm(i) => build::alu_imm(op, dst, i),
            }])
        }
        _ => Err("not an instruction".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
r1 = 5
r0 += r1
r0 s/= 3
r0 s%= r2
r3 s>>= 2
r0 = -r0
r0 = be16 r0
r4 = le32 r4
r5 = bswap64 r5
r2 = 0x1122334455667788 ll
r0 = *(u16 *)(packet + r1 + 12)
r6 = *(u8 *)(scratch + r7)
*(u64 *)(stack + r10 - 8) = r1
if r1 == 5 goto +3
if r1 s< r2 goto -2
if r3 & 0x10 goto +0
goto +1
call prog 12, 2
call chain 3, 0
exit";

    #[test]
    fn disassembly_round_trips() {
        let insns = assemble(SAMPLE).unwrap();
        let text: Vec<String> = disassemble(&insns).into_iter().map(|(_, t)| t).collect();
        let again = assemble(&text.join("\n")).unwrap();
        assert_eq!(again, insns);
        assert_eq!(text.join("\n"), SAMPLE.replace("0x10", "16"));
    }

    #[test]
    fn errors_name_the_line() {
        let e = assemble("exit\nr11 = 1").unwrap_err();
        assert_eq!(e.to_string(), "line 2: no register `r11`: `r11 = 1`");
        assert!(assemble("r1 = 99999999999").is_err());
        assert!(assemble("frobnicate").is_err());
    }
}
