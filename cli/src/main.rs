//! `ebpkg`: the package manager for eBPF. Commands are thin (`commands/`); they
//! parse arguments, call the operation that does the work, and print.

mod commands;
mod signatures;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// Exit code of a command whose input was wrong (a script, a manifest, …).
pub const EXIT_INPUT: u8 = 1;

const EXAMPLES: &str = "Examples:
  ebpkg chain check chains/ddos.eclat --package ../net --package ../basic
  ebpkg chain compile chains/ddos.eclat --emit asm --package ../net --package ../basic";

#[derive(Parser)]
#[command(name = "ebpkg", version, about = "The package manager for eBPF: HIKe programs, loaders and chains", after_help = EXAMPLES)]
struct Cli {
    /// More output (-vv for debug logs).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Only errors.
    #[arg(short, long, global = true)]
    quiet: bool,
    /// When to use colours.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    color: Color,
    /// Machine-readable output (JSON) on stdout.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum Color {
    Auto,
    Always,
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Check and compile chain scripts.
    Chain(commands::chain::ChainArgs),
}

/// What every command can use: output settings.
pub struct Ctx {
    pub json: bool,
    pub quiet: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let ansi = match cli.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => std::io::IsTerminal::is_terminal(&std::io::stderr()),
    };
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("EBPKG_LOG").unwrap_or_else(|_| level.into()))
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .without_time()
        .init();
    let ctx = Ctx { json: cli.json, quiet: cli.quiet };
    let result = match cli.command {
        Command::Chain(args) => commands::chain::run(&ctx, args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_INPUT)
        }
    }
}
