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
use hike_runtime::{ChainSpec, DEFAULT_ROOT, InitOptions, ProgramObject, Runtime};

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
    /// Detach and remove everything under the root.
    Destroy,
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
        Command::Unregister { id } => Runtime::open(&cli.root)?.unregister_program(id)?,
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
        Command::RemoveChain { id } => Runtime::open(&cli.root)?.remove_chain(id)?,
        Command::TestRun { hook, chain, packet } => {
            let bytes = parse_hex(&packet)?;
            let run = Runtime::open(&cli.root)?.test_run_chain(hook, chain, &bytes, 0)?;
            let verdict = hook.verdict_name(run.verdict).unwrap_or("other");
            println!("verdict {verdict} ({}), r0 = {}", run.verdict, run.regs[0]);
            if run.packet != bytes {
                println!("packet out: {}", run.packet.iter().map(|b| format!("{b:02x}")).collect::<String>());
            }
        }
        Command::Destroy => Runtime::destroy(&cli.root)?,
    }
    Ok(())
}
