//! `ebpkg chain check` and `ebpkg chain compile`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use ebpkg_spec::Manifest;
use hike_chainc::{CompileEnv, Diagnostics};

use crate::{Ctx, EXIT_INPUT};

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
    /// The chain script.
    file: PathBuf,
    /// A package directory (with an ebpkg.toml) the script may import from; repeat it.
    #[arg(long = "package", value_name = "DIR")]
    packages: Vec<PathBuf>,
    /// Package signatures as JSON (a hike_chainc::CompileEnv), instead of or besides --package.
    #[arg(long, value_name = "FILE")]
    signatures: Option<PathBuf>,
}

pub fn run(ctx: &Ctx, args: ChainArgs) -> Result<ExitCode> {
    match args.command {
        ChainCommand::Check(source) => {
            let (_, result) = compile(&source)?;
            match result {
                Ok(c) => {
                    report(ctx, &c.warnings)?;
                    if !ctx.ui.quiet && !ctx.ui.json {
                        let n = c.artifact.chains.len();
                        eprintln!("{}: {n} chain(s), no errors", source.file.display());
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
            let (text, result) = compile(&source)?;
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
                None => crate::ui::stdout(&out),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn compile(source: &Source) -> Result<(String, std::result::Result<hike_chainc::Compiled, Diagnostics>)> {
    let text = crate::ops::chains::read_chain_source(&source.file)?;
    let env = environment(&source.packages, source.signatures.as_deref())?;
    let name = source.file.display().to_string();
    Ok((text.clone(), hike_chainc::compile(&text, &name, &env)))
}

/// Largest signatures file read.
const MAX_SIGNATURES_BYTES: u64 = 16 * 1024 * 1024;

/// The packages the script may use: from package directories and/or a JSON file.
fn environment(packages: &[PathBuf], signatures: Option<&Path>) -> Result<CompileEnv> {
    let mut env = match signatures {
        Some(path) => {
            let text = ebpkg_input::read_text(path, MAX_SIGNATURES_BYTES)
                .map_err(|e| crate::exit::fail(crate::exit::Failure::Input, e))?;
            serde_json::from_str(&text).with_context(|| format!("{} is not a signatures file", path.display()))?
        }
        None => CompileEnv::new(),
    };
    let mut manifests = Vec::new();
    for dir in packages {
        let path = dir.join(ebpkg_spec::manifest::MANIFEST_FILE);
        let m = Manifest::load(&path).map_err(|e| anyhow::anyhow!("{}", e.render().trim_end()))?;
        manifests.push(m);
    }
    let from_manifests = ebpkg_deploy::signatures::env_from_manifests(&manifests)?;
    env.packages.extend(from_manifests.packages);
    Ok(env)
}

fn report(ctx: &Ctx, d: &Diagnostics) -> Result<()> {
    if ctx.ui.json {
        crate::ui::stdout(&format!(
            "{}\n",
            serde_json::to_string_pretty(&serde_json::json!({ "file": d.file, "diagnostics": d.items }))?
        ));
    } else if !ctx.ui.quiet || d.has_errors() {
        eprint!("{}", d.render());
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
