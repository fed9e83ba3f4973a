//! `ebpkg chain check` and `ebpkg chain compile`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use hike_chainc::Diagnostics;

use ebpkg::ops::chain_script::{ChainSource, CompiledScript, compile};
use ebpkg::{Ctx, EXIT_INPUT};

#[derive(Args)]
pub struct ChainArgs {
    #[command(subcommand)]
    command: ChainCommand,
}

#[derive(Subcommand)]
enum ChainCommand {
    /// Report the errors and warnings of a chain script.
    #[command(after_help = "Example:\n  ebpkg chain check chains/ddos.eclat --package ../net --package ../basic")]
    Check(Source),
    /// Compile a chain script: the artifact as JSON, or a readable disassembly.
    #[command(
        after_help = "Examples:\n  ebpkg chain compile chains/ddos.eclat --package ../net --package ../basic --emit asm\n  ebpkg chain compile chains/ddos.eclat --signatures sigs.json -o ddos.json"
    )]
    Compile {
        #[command(flatten)]
        source: Source,
        /// What to print: the artifact (json) or the bytecode with source lines (asm).
        #[arg(long, value_enum, default_value_t = Emit::Json)]
        emit: Emit,
        /// Write to this file instead of stdout.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Emit {
    Json,
    Asm,
}

#[derive(Args)]
struct Source {
    /// The chain script. Inside a project (an ebpkg.toml here or above), it may
    /// import from the project and its dependencies, as `ebpkg install` compiles it.
    file: PathBuf,
    /// A package directory (with an ebpkg.toml) the script may import from; repeat it.
    #[arg(long = "package", value_name = "DIR")]
    packages: Vec<PathBuf>,
    /// Package signatures as JSON (a hike_chainc::CompileEnv), instead of or besides --package.
    #[arg(long, value_name = "FILE")]
    signatures: Option<PathBuf>,
}

impl Source {
    fn chain_source(&self) -> ChainSource {
        ChainSource { file: self.file.clone(), packages: self.packages.clone(), signatures: self.signatures.clone() }
    }
}

pub fn run(ctx: &Ctx, args: ChainArgs) -> Result<ExitCode> {
    match args.command {
        ChainCommand::Check(source) => {
            let result = compile(ctx, &source.chain_source())?.result;
            match result {
                Ok(c) => {
                    report(ctx, &c.warnings)?;
                    if !ctx.ui.quiet && !ctx.ui.json {
                        let n = c.artifact.chains.len();
                        ebpkg::ui::stderr(&format!("{}: {n} chain(s), no errors\n", source.file.display()));
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Err(d) => {
                    report(ctx, &d)?;
                    Ok(ExitCode::from(EXIT_INPUT))
                }
            }
        }
        ChainCommand::Compile { source, emit, output } => {
            let CompiledScript { text, result } = compile(ctx, &source.chain_source())?;
            let compiled = match result {
                Ok(c) => c,
                Err(d) => {
                    report(ctx, &d)?;
                    return Ok(ExitCode::from(EXIT_INPUT));
                }
            };
            if !ctx.ui.json {
                report(ctx, &compiled.warnings)?;
            }
            let out = match emit {
                Emit::Json => serde_json::to_string_pretty(&compiled.artifact)? + "\n",
                Emit::Asm => listing(&compiled.artifact, &text),
            };
            match output {
                Some(path) => std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))?,
                None => ebpkg::ui::stdout(&out),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn report(ctx: &Ctx, d: &Diagnostics) -> Result<()> {
    if ctx.ui.json {
        ebpkg::ui::stdout(&format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({ "file": d.file, "diagnostics": d.items }))?
        ));
    } else if !ctx.ui.quiet || d.has_errors() {
        ebpkg::ui::stderr(&d.render());
    }
    Ok(())
}

fn listing(art: &hike_chainc::Artifact, text: &str) -> String {
    let mut out = String::new();
    for c in &art.chains {
        out.push_str(&c.disassemble(text));
        out.push('\n');
    }
    for cfg in &art.loader_configs {
        out.push_str(&format!(
            "loader {}::{} map {}: {} entr{}\n",
            cfg.package,
            cfg.loader,
            cfg.map,
            cfg.entries.len(),
            if cfg.entries.len() == 1 { "y" } else { "ies" }
        ));
    }
    for a in &art.attaches {
        let dev = match &a.device {
            hike_chainc::Device::Name(n) => n.clone(),
            hike_chainc::Device::Param(p) => format!("${p}"),
        };
        out.push_str(&format!("attach {}::{} to {dev} ({})\n", a.package, a.loader, a.mode));
    }
    out
}
