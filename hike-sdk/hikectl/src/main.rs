//! `hikectl`: inspect and change a HIKe VM instance by hand. ebpkg drives the
//! runtime through the library; this is for people debugging an instance.
//!
//! ```text
//! hikectl [--root DIR] init [--budget N]
//! hikectl [--root DIR] status [--json]
//! hikectl [--root DIR] register --package P --version V [--hook xdp|tc] OBJECT.o
//! hikectl [--root DIR] unregister ID
//! hikectl [--root DIR] install-chain --name NAME [--hook xdp|tc] [--nargs N] FILE.s
//! hikectl [--root DIR] remove-chain ID
//! hikectl [--root DIR] test-run [--hook xdp|tc] CHAIN_ID PACKET_HEX
//! hikectl [--root DIR] destroy
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use hike_bytecode::Hook;
use hike_runtime::{ChainSpec, Clock, DEFAULT_ROOT, InitOptions, ProgramObject, Runtime};

#[derive(Parser)]
#[command(name = "hikectl", version, about = "Inspect and change a HIKe VM instance")]
struct Cli {
    /// The instance's bpffs root.
    #[arg(long, global = true, env = "EBPKG_BPFFS_ROOT", default_value = DEFAULT_ROOT)]
    root: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create the instance (or update the budget of an existing one).
    Init {
        #[arg(long, default_value_t = hike_bytecode::limits::DEFAULT_BUDGET)]
        budget: u32,
    },
    /// Show programs, chains, loaders and counters.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Register the HIKe programs of an object file.
    Register {
        #[arg(long)]
        package: String,
        #[arg(long)]
        version: String,
        #[arg(long, default_value = "xdp", value_parser = parse_hook)]
        hook: Hook,
        object: PathBuf,
    },
    /// Remove a program.
    Unregister { id: u32 },
    /// Install a chain written in HIKe assembly (see docs/BYTECODE.md).
    InstallChain {
        #[arg(long)]
        name: String,
        #[arg(long, default_value = "xdp", value_parser = parse_hook)]
        hook: Hook,
        #[arg(long, default_value_t = 0)]
        nargs: u8,
        file: PathBuf,
    },
    /// Remove a chain.
    RemoveChain { id: u32 },
    /// Run one packet (hex) through a chain with BPF_PROG_TEST_RUN.
    TestRun {
        #[arg(long, default_value = "xdp", value_parser = parse_hook)]
        hook: Hook,
        chain: u32,
        packet: String,
    },
    /// Show or set the clock programs read through hike_ktime_ns() (meters,
    /// expiries): freeze it to make a scenario's counts exact, move it to replay
    /// time passing.
    Clock {
        #[command(subcommand)]
        set: Option<ClockCommand>,
    },
    /// Detach and remove everything under the root.
    Destroy,
}

#[derive(Subcommand)]
enum ClockCommand {
    /// Real time (bpf_ktime_get_ns).
    Real,
    /// Always this instant, e.g. 1000s or 1500000000 (ns).
    Freeze {
        #[arg(value_parser = parse_ns, allow_hyphen_values = true)]
        at: i64,
    },
    /// Real time shifted by this much, e.g. 1h or -30s.
    Offset {
        #[arg(value_parser = parse_ns, allow_hyphen_values = true)]
        by: i64,
    },
    /// Move the clock forward by this much (backward when negative), whatever kind it is.
    Advance {
        #[arg(value_parser = parse_ns, allow_hyphen_values = true)]
        by: i64,
    },
}

/// Nanoseconds from `12`, `12ns`, `12us`, `12ms`, `12s`, `12m` or `12h`, signed.
fn parse_ns(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let (sign, t) = match t.strip_prefix('-') {
        Some(rest) => (-1i64, rest),
        None => (1, t),
    };
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let scale: i64 = match unit {
        "" | "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        other => return Err(format!("unknown unit `{other}` in `{s}` (ns, us, ms, s, m or h)")),
    };
    let n: i64 = num.parse().map_err(|_| format!("`{s}` is not a duration (e.g. 1500ms, 10s, 1h)"))?;
    n.checked_mul(scale).map(|v| v * sign).ok_or_else(|| format!("`{s}` is too large"))
}

fn parse_hex(s: &str) -> Result<Vec<u8>> {
    let s: String = s.chars().filter(|c| !c.is_whitespace() && *c != ':').collect();
    if !s.len().is_multiple_of(2) {
        anyhow::bail!("packet hex has an odd number of digits");
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).with_context(|| format!("`{}` is not hex", &s[i..i + 2])))
        .collect()
}

fn parse_hook(s: &str) -> Result<Hook, String> {
    match s {
        "xdp" => Ok(Hook::Xdp),
        "tc" => Ok(Hook::Tc),
        other => Err(format!("unknown hook `{other}` (xdp or tc)")),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hikectl: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Init { budget } => {
            Runtime::init(&cli.root, InitOptions { budget })?;
            println!("initialized {}", cli.root.display());
        }
        Command::Status { json } => {
            let status = Runtime::open(&cli.root)?.status()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                println!("root {} (ABI {}, budget {})", status.root.display(), status.abi_version, status.budget);
                for p in &status.programs {
                    println!(
                        "program {:>4} {}@{} {} ({}, {} args) calls {}",
                        p.id, p.package, p.version, p.name, p.hook, p.nargs, p.calls
                    );
                }
                for c in &status.chains {
                    println!(
                        "chain   {:>4} {} [{}] ({}, {} insns) runs {}",
                        c.id, c.name, c.owner, c.hook, c.instructions, c.runs
                    );
                }
                for l in &status.loaders {
                    let at: Vec<String> = l.attachments.iter().map(|a| format!("{}:{}", a.interface, a.mode)).collect();
                    println!(
                        "loader  {} {}@{} {} attached [{}]",
                        l.instance,
                        l.package,
                        l.version,
                        l.program,
                        at.join(", ")
                    );
                }
                for (reason, n) in &status.aborts {
                    println!("aborted {n} packet(s): {reason}");
                }
            }
        }
        Command::Register { package, version, hook, object } => {
            let elf = std::fs::read(&object).with_context(|| format!("cannot read {}", object.display()))?;
            let rt = Runtime::open(&cli.root)?;
            let name = object.display().to_string();
            let regs = rt.register_object(&ProgramObject {
                package: &package,
                version: &version,
                object_name: &name,
                elf: &elf,
                hook,
            })?;
            for r in regs {
                println!("{} {} {}", r.id, r.name, r.signature.nargs());
            }
        }
        Command::Unregister { id } => Runtime::open(&cli.root)?.unregister_program(hike_runtime::ProgId(id))?,
        Command::InstallChain { name, hook, nargs, file } => {
            let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let insns = hike_bytecode::asm::assemble(&text).with_context(|| format!("in {}", file.display()))?;
            let id = Runtime::open(&cli.root)?.install_chain(&ChainSpec {
                name: &name,
                owner: "hikectl",
                hook,
                insns: &insns,
                nargs,
            })?;
            println!("{id}");
        }
        Command::RemoveChain { id } => Runtime::open(&cli.root)?.remove_chain(hike_runtime::ChainId(id))?,
        Command::TestRun { hook, chain, packet } => {
            let bytes = parse_hex(&packet)?;
            let run = Runtime::open(&cli.root)?.test_run_chain(hook, hike_runtime::ChainId(chain), &bytes, 0)?;
            let verdict = hook.verdict_name(run.verdict).unwrap_or("other");
            println!("verdict {verdict} ({}), r0 = {}", run.verdict, run.regs[0]);
            if run.packet != bytes {
                println!("packet out: {}", run.packet.iter().map(|b| format!("{b:02x}")).collect::<String>());
            }
        }
        Command::Clock { set } => {
            let rt = Runtime::open(&cli.root)?;
            let now = rt.clock()?;
            let next = match set {
                None => None,
                Some(ClockCommand::Real) => Some(Clock::Real),
                Some(ClockCommand::Freeze { at }) => {
                    let at = u64::try_from(at).ok().filter(|t| *t > 0);
                    Some(Clock::Frozen(at.context("a frozen clock needs an instant after 0")?))
                }
                Some(ClockCommand::Offset { by }) => Some(Clock::Offset(by)),
                Some(ClockCommand::Advance { by }) => Some(now.advanced(by)),
            };
            if let Some(next) = next {
                rt.set_clock(next)?;
            }
            println!("clock {}", next.unwrap_or(now));
        }
        Command::Destroy => Runtime::destroy(&cli.root)?,
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::parse_ns;

    #[test]
    fn durations_parse_with_units_and_signs() {
        assert_eq!(parse_ns("12"), Ok(12));
        assert_eq!(parse_ns("1500ms"), Ok(1_500_000_000));
        assert_eq!(parse_ns("-30s"), Ok(-30_000_000_000));
        assert_eq!(parse_ns("2h"), Ok(7_200_000_000_000));
        assert!(parse_ns("10 parsecs").is_err());
        assert!(parse_ns("s").is_err());
        assert!(parse_ns("9999999999999h").unwrap_err().contains("too large"));
    }
}
