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

pub fn run(ctx: &Ctx, args: ChainArgs) -> Result<ExitCode> {
    match args.command {
        ChainCommand::Check(source) => {
            let (_, result) = compile(ctx, &source)?;
            match result {
                Ok(c) => {
                    report(ctx, &c.warnings)?;
                    if !ctx.ui.quiet && !ctx.ui.json {
                        let n = c.artifact.chains.len();
                        crate::ui::stderr(&format!("{}: {n} chain(s), no errors\n", source.file.display()));
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
            let (text, result) = compile(ctx, &source)?;
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

fn compile(ctx: &Ctx, source: &Source) -> Result<(String, std::result::Result<hike_chainc::Compiled, Diagnostics>)> {
    let text = crate::ops::chains::read_chain_source(&source.file)?;
    let mut env = environment(&source.packages, source.signatures.as_deref())?;
    if let Some(project) = project_of(ctx, &source.file)? {
        // The project's own view wins over nothing, never over what was given.
        for (name, sigs) in project_environment(ctx, &project)?.packages {
            env.packages.entry(name).or_insert(sigs);
        }
    }
    let name = source.file.display().to_string();
    Ok((text.clone(), hike_chainc::compile(&text, &name, &env)))
}

/// Largest signatures file read.
const MAX_SIGNATURES_BYTES: u64 = 16 * 1024 * 1024;

/// The project the script belongs to: the nearest ebpkg.toml above it (or the
/// `--manifest-path` one).
fn project_of(ctx: &Ctx, file: &Path) -> Result<Option<crate::project::Project>> {
    if ctx.manifest_path.is_some() {
        return ctx.project().map(Some);
    }
    let abs = std::path::absolute(file).with_context(|| format!("cannot resolve {}", file.display()))?;
    match abs.ancestors().skip(1).map(|d| d.join(ebpkg_spec::manifest::MANIFEST_FILE)).find(|p| p.is_file()) {
        Some(manifest) => crate::project::Project::load(&manifest).map(Some),
        None => Ok(None),
    }
}

/// What the project's chain scripts may import, as `ebpkg install` sees it: the
/// locked packages (resolved and fetched as needed, ebpkg.lock kept up to date).
fn project_environment(ctx: &Ctx, project: &crate::project::Project) -> Result<CompileEnv> {
    let m = &project.manifest;
    if m.dependencies.is_empty() {
        return crate::ops::chains::environment(m, &[]);
    }
    let regs = ctx.registries()?;
    let locked = crate::ops::resolve::lock_project(ctx, project, &regs, ebpkg_resolver::UpdatePolicy::Nothing)?;
    let fetched = crate::ops::fetch::fetch_all(ctx, &regs, &locked.lock)?;
    let resolved: Vec<&Manifest> = fetched.iter().map(|f| &f.manifest).collect();
    crate::ops::chains::environment(m, &resolved)
}

/// The packages the script may use: from package directories and/or a JSON file.
fn environment(packages: &[PathBuf], signatures: Option<&Path>) -> Result<CompileEnv> {
    let mut env = match signatures {
        Some(path) => {
            let text = ebpkg_fs::read_text(path, MAX_SIGNATURES_BYTES)
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
        crate::ui::stderr(&d.render());
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
