//! Why a chain cannot be compiled natively. Every one of them leaves the chain
//! interpreted; the message is what `ebpkg status` shows.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    /// The chain has a loop: the verifier would have to unroll it up to the
    /// budget, so it stays interpreted.
    #[error("chain {chain} loops (a backward jump at instruction {pc}); chains with loops stay interpreted")]
    Loop { chain: u32, pc: usize },
    #[error("chain {chain} is not installed")]
    MissingChain { chain: u32 },
    #[error("chain {chain} calls program id {id}, which has no native code")]
    MissingProgram { chain: u32, id: u32 },
    #[error("chain {chain} has an invalid instruction at {pc}: {reason}")]
    BadCode { chain: u32, pc: usize, reason: String },
    /// A path that makes more calls than the VM allows always aborts somewhere;
    /// counting them natively is not worth it for chains that cannot finish.
    #[error(
        "chain {chain} can make {calls} program calls and continuations, more than the VM's {limit}: it stays interpreted"
    )]
    CallLimit { chain: u32, calls: u32, limit: u32 },
    #[error("chain {chain} expands to more than {limit} instructions with the chains it calls inlined")]
    TooLarge { chain: u32, limit: usize },
    #[error("program name `{0}` is not a C identifier")]
    BadName(String),
    #[error("{tool} failed ({status}) on {what}:\n{stderr}")]
    Tool { tool: String, status: String, what: String, stderr: String },
    #[error("cannot run {tool}: {cause}")]
    Spawn { tool: String, cause: std::io::Error },
    #[error("cannot {action} {}: {cause}", path.display())]
    Io { action: &'static str, path: PathBuf, cause: std::io::Error },
    #[error("the programs' licenses are not compatible with one program: {0}")]
    License(String),
}

pub type Result<T, E = NativeError> = std::result::Result<T, E>;
