//! What the benchmark binaries share on their command line, and how each exits.

use std::path::PathBuf;
use std::process::ExitCode;

/// The options of a benchmark of `ebpkg` commands.
#[derive(clap::Args)]
pub struct Common {
    /// The ebpkg binary.
    #[arg(long)]
    pub ebpkg: PathBuf,
    /// Where the report (.md and .json) goes.
    #[arg(long, default_value = "bench")]
    pub out: PathBuf,
    /// Rounds (after a warm-up).
    #[arg(long, default_value_t = 7)]
    pub rounds: usize,
    /// A short run: 2 rounds.
    #[arg(long)]
    pub quick: bool,
    /// Exit with 1 when a target is missed.
    #[arg(long)]
    pub check: bool,
}

impl Common {
    /// The rounds to run: 2 for --quick, else at least 3.
    pub fn rounds(&self) -> usize {
        if self.quick { 2 } else { self.rounds.max(3) }
    }
}

/// A benchmark's exit code: 0, or 1 when a target was missed and `check` asks
/// for it; 2 (with the error said) when it could not run.
pub fn exit_code(name: &str, result: anyhow::Result<bool>, check: bool) -> ExitCode {
    match result {
        Ok(met) if met || !check => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("{name}: {e:#}");
            ExitCode::from(2)
        }
    }
}
