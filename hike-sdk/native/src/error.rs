//! Why a chain cannot be compiled natively. Every one of them leaves the chain
//! interpreted; the message is what `ebpkg status` shows.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    #[error("chain {chain} is not installed")]
    MissingChain { chain: u32 },
    #[error("chain {chain} calls program id {id}, which has no native code")]
    MissingProgram { chain: u32, id: u32 },
    #[error("chain {chain} has an invalid instruction at {pc}: {reason}")]
    BadCode { chain: u32, pc: usize, reason: String },
    #[error(
        "chain {chain} unfolds to more than {limit} states (its loops and the chains it calls, as the VM would run them): it stays interpreted"
    )]
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
