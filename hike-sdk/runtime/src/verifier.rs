//! Making the kernel verifier's rejection readable: the reason, the source line of
//! the failing instruction (from the BTF line info the log interleaves as
//! `; <source text> @ <file>:<line>`), and the end of the log.

use std::fmt;

/// How many log lines a failure shows (the full log is kept in `log`).
pub const TAIL_LINES: usize = 20;

/// A program the kernel refused to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierFailure {
    /// The program's function name.
    pub program: String,
    /// The object it came from (package@version or a file name).
    pub object: String,
    /// The error libbpf returned.
    pub error: String,
    /// The kernel's one-line reason (the last message before the statistics line).
    pub reason: Option<String>,
    /// Where in the source the failing instruction comes from.
    pub source: Option<SourceLine>,
    /// The complete verifier log.
    pub log: String,
}

/// A source line named by the verifier log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLine {
    pub file: String,
    pub line: u32,
    pub text: String,
}

impl VerifierFailure {
    /// Builds the failure from the raw log.
    pub fn from_log(program: &str, object: &str, error: &str, log: &str) -> Self {
        let lines: Vec<&str> = log.lines().collect();
        // The statistics line closes the interesting part of the log.
        let end = lines.iter().rposition(|l| l.starts_with("processed ")).unwrap_or(lines.len());
        let body = &lines[..end];
        let reason = body.iter().rev().find(|l| is_message(l)).map(|l| l.trim().to_owned());
        let source = body.iter().rev().find_map(|l| parse_source(l));
        VerifierFailure {
            program: program.to_owned(),
            object: object.to_owned(),
            error: error.to_owned(),
            reason,
            source,
            log: log.to_owned(),
        }
    }

    /// The last [`TAIL_LINES`] lines of the log.
    pub fn tail(&self) -> Vec<&str> {
        let lines: Vec<&str> = self.log.lines().collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].to_vec()
    }
}

/// A line of the log that is the verifier talking, not an instruction dump, a
/// register state or a source annotation.
fn is_message(line: &str) -> bool {
    let t = line.trim();
    if t.is_empty() || t.starts_with(';') || t.starts_with("R") && t.contains('=') {
        return false;
    }
    // "12: (61) r1 = *(u32 *)(r2 +0)" and "from 3 to 7: ..." are instruction lines.
    let first = t.split(':').next().unwrap_or_default();
    if first.chars().all(|c| c.is_ascii_digit()) || t.starts_with("from ") || t.starts_with("func#") {
        return false;
    }
    // Register states the verifier prints after its message ("infinite loop
    // detected at insn 5" is followed by "cur state: R1=…" and "old state: …").
    let state_dump = ["cur state:", "old state:", "frame"].iter().any(|p| t.starts_with(p)) && t.contains('=');
    !state_dump && !t.starts_with("last_idx") && !t.starts_with("regs=") && !t.starts_with("mark_precise")
}

/// `; return x; @ vm.h:55` → the file, line and text.
fn parse_source(line: &str) -> Option<SourceLine> {
    let rest = line.trim().strip_prefix(';')?;
    let (text, at) = rest.rsplit_once(" @ ")?;
    let (file, line_no) = at.trim().rsplit_once(':')?;
    Some(SourceLine { file: file.to_owned(), line: line_no.parse().ok()?, text: text.trim().to_owned() })
}

impl fmt::Display for VerifierFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the kernel verifier rejected program `{}` of {}", self.program, self.object)?;
        match &self.reason {
            Some(r) => write!(f, ": {r}")?,
            None => write!(f, ": {}", self.error)?,
        }
        if let Some(s) = &self.source {
            write!(f, "\n  at {}:{}: {}", s.file, s.line, s.text)?;
        }
        writeln!(f, "\n  last lines of the verifier log:")?;
        for l in self.tail() {
            writeln!(f, "    {l}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
func#0 @0
0: R1=ctx() R10=fp0
; void *data = (void *)(long)ctx->data; @ prog.bpf.c:12
0: (61) r2 = *(u32 *)(r1 +0)          ; R1=ctx() R2=pkt(r=0)
; return data[40]; @ prog.bpf.c:14
1: (71) r0 = *(u8 *)(r2 +40)
invalid access to packet, off=40 size=1, R2(id=0,off=40,r=0)
R2 offset is outside of the packet
processed 2 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0
";

    #[test]
    fn finds_reason_and_source_line() {
        let f = VerifierFailure::from_log("reader", "demo@1.0.0", "Permission denied (os error 13)", LOG);
        assert_eq!(f.reason.as_deref(), Some("R2 offset is outside of the packet"));
        assert_eq!(f.source, Some(SourceLine { file: "prog.bpf.c".into(), line: 14, text: "return data[40];".into() }));
        let text = f.to_string();
        assert!(text.starts_with(
            "the kernel verifier rejected program `reader` of demo@1.0.0: R2 offset is outside of the packet\n  at prog.bpf.c:14: return data[40];"
        ), "{text}");
        assert!(text.contains("    processed 2 insns"));
    }

    #[test]
    fn an_infinite_loop_is_named_not_the_states_printed_after_it() {
        let log = "\
func#0 @0
0: R1=ctx() R10=fp0
; for (;;) @ loop.bpf.c:5
0: (05) goto pc-1
infinite loop detected at insn 0
cur state: R1=ctx() R10=fp0
old state: R1=ctx() R10=fp0
processed 2 insns (limit 1000000) max_states_per_insn 0 total_states 1 peak_states 1 mark_read 0
";
        let f = VerifierFailure::from_log("spin", "demo@1.0.0", "Permission denied (os error 13)", log);
        assert_eq!(f.reason.as_deref(), Some("infinite loop detected at insn 0"));
        assert_eq!(f.source.map(|s| s.line), Some(5));
    }
}
