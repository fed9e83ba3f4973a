//! Verifying an object without registering anything: what the kernel's verifier
//! says of each program (instructions processed, states, stack depth, time), for
//! package authors and their READMEs (`ebpkg build --verify`).

use std::path::PathBuf;

use serde::Serialize;

use crate::error::Result;
use crate::load::{self, LoadRequest};
use crate::runtime::Runtime;

/// The verifier's statistics for one program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerifierStats {
    pub program: String,
    /// BPF instructions in the program as loaded.
    pub insns: u32,
    /// Instructions the verifier processed (its "complexity").
    pub insns_processed: u64,
    pub total_states: u64,
    pub peak_states: u64,
    /// Stack bytes per subprogram, as the verifier prints them (`48+0`).
    pub stack_depth: String,
    pub verification_us: u64,
}

impl VerifierStats {
    /// Parses the statistics lines of a `BPF_LOG_STATS` log.
    pub fn from_log(program: &str, insns: u32, log: &str) -> VerifierStats {
        let mut s = VerifierStats {
            program: program.to_owned(),
            insns,
            insns_processed: 0,
            total_states: 0,
            peak_states: 0,
            stack_depth: String::new(),
            verification_us: 0,
        };
        for line in log.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            let after = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1)).copied();
            if line.starts_with("processed ") {
                s.insns_processed = after("processed").and_then(|v| v.parse().ok()).unwrap_or(0);
                s.total_states = after("total_states").and_then(|v| v.parse().ok()).unwrap_or(0);
                s.peak_states = after("peak_states").and_then(|v| v.parse().ok()).unwrap_or(0);
            } else if let Some(rest) = line.strip_prefix("stack depth ") {
                s.stack_depth = rest.trim().to_owned();
            } else if let Some(rest) = line.strip_prefix("verification time ") {
                s.verification_us = rest.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0);
            }
        }
        s
    }
}

impl Runtime {
    /// Loads `programs` of an object as the runtime would (VM maps shared with
    /// this instance, the object's own maps unpinned), records what the verifier
    /// says, and unloads it again. Nothing is registered or pinned.
    pub fn verify_object(&self, object_name: &str, elf: &[u8], programs: &[String]) -> Result<Vec<VerifierStats>> {
        let vm_dir = self.layout.vm_dir();
        let no_pins = |_: &str| -> Option<PathBuf> { None };
        let (obj, logs) = load::load_with_stats(&LoadRequest {
            object_name,
            elf,
            vm_dir: &vm_dir,
            maps: load::Maps::Pin(&no_pins),
            programs,
            mmapable: &[],
            runtime_object: false,
        })?;
        let mut out = Vec::new();
        for (name, log) in logs {
            let insns = obj.progs().find(|p| p.name() == name.as_str()).map_or(0, |p| p.insn_cnt() as u32);
            out.push(VerifierStats::from_log(&name, insns, &log));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_statistics_lines() {
        let log = "func#0 @0\nverification time 1234 usec\nstack depth 48+8\n\
                   processed 8917 insns (limit 1000000) max_states_per_insn 4 total_states 412 peak_states 301 mark_read 52\n";
        let s = VerifierStats::from_log("p", 900, log);
        assert_eq!(
            (s.insns, s.insns_processed, s.total_states, s.peak_states, s.stack_depth.as_str(), s.verification_us),
            (900, 8917, 412, 301, "48+8", 1234)
        );
    }
}
