//! `ebpkg install`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use ebpkg_deploy::{ChainMode, InstallOutcome};

use ebpkg::Ctx;
use ebpkg::exit::{Failure, fail};
use ebpkg::ops::build::BuildOptions;
use ebpkg::ops::install::{InstallOptions, Target, Timings, install};

const EXAMPLES: &str = "Examples:
  sudo ebpkg install --set DEVNAME=eth0      deploy this project's chains on eth0
  sudo ebpkg install --frozen                exactly ebpkg.lock, nothing from the network
  sudo ebpkg install ddos-guard@^1.4 --set DEVNAME=eth0
                                             deploy a package's chains without a project";

#[derive(Args)]
#[command(after_help = EXAMPLES)]
pub struct InstallArgs {
    /// A package of the registry to deploy (`name` or `name@requirement`) instead of the project.
    package: Option<String>,
    /// Bind a chain-script parameter (`--set DEVNAME=eth0`); repeat it. Values given
    /// earlier are kept when not given again.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Deploy even when nothing changed.
    #[arg(long)]
    force: bool,
    /// The deployment's name (default: the package's name).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// Build packages with `build = "local"` against this BTF file instead of the
    /// running kernel's (portable objects depend on no kernel).
    #[arg(long, value_name = "FILE")]
    btf: Option<PathBuf>,
    /// How chains run: each chain a loader starts is compiled, with the programs
    /// it calls, to one native program (the reason a chain stays in the VM is in
    /// `ebpkg status`).
    #[arg(long, value_name = "MODE", value_enum, default_value_t = ChainMode::Auto)]
    chain_mode: ChainMode,
    /// Start empty the maps of an upgraded package whose layout changed, instead of
    /// refusing the upgrade (what they held is lost; unchanged maps are kept).
    #[arg(long)]
    reset_state: bool,
    /// Print how long each phase took (resolve, fetch, build, verify+register, chains, loaders, attach, native,
    /// commit); `--json` always includes them.
    #[arg(long)]
    timings: bool,
}

/// `NAME=VALUE` pairs.
pub fn parse_params(set: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for s in set {
        let (k, v) = s
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| fail(Failure::Usage, format!("--set `{s}`: write NAME=VALUE, e.g. --set DEVNAME=eth0")))?;
        out.insert(k.trim().to_owned(), v.trim().to_owned());
    }
    Ok(out)
}

/// `name` or `name@req`.
pub fn parse_package_spec(spec: &str) -> Result<(ebpkg_spec::PackageName, semver::VersionReq)> {
    let (name, req) = match spec.split_once('@') {
        Some((n, r)) => (n, r),
        None => (spec, "*"),
    };
    let name = ebpkg_spec::PackageName::new(name).map_err(|e| ebpkg::exit::bad_name(name, &e))?;
    let req = semver::VersionReq::parse(req)
        .map_err(|e| fail(Failure::Usage, format!("`{req}` is not a version requirement: {e}")))?;
    Ok((name, req))
}

pub fn run(ctx: &Ctx, args: InstallArgs) -> Result<ExitCode> {
    let target = match &args.package {
        Some(spec) => {
            let (name, req) = parse_package_spec(spec)?;
            Target::Package { name, req }
        }
        None => Target::Project(Box::new(ctx.project()?.clone())),
    };
    let opts = InstallOptions {
        params: parse_params(&args.set)?,
        force: args.force,
        deployment: args.name,
        build: BuildOptions { btf: args.btf, ..BuildOptions::default() },
        chain_mode: args.chain_mode,
        reset_state: args.reset_state,
    };
    let installed = install(ctx, target, opts)?;
    report(ctx, &installed.outcome, &installed.timings, &installed.kernels, args.timings)
}

/// Prints what an install (or a rollback) did: `--json`, else status lines.
pub fn report(
    ctx: &Ctx,
    outcome: &InstallOutcome,
    timings: &Timings,
    kernels: &[ebpkg::ops::kernel_attestations::Coverage],
    show_timings: bool,
) -> Result<ExitCode> {
    if ctx.ui.json {
        let (state, record) = match outcome {
            InstallOutcome::Installed { record, .. } => ("installed", record),
            InstallOutcome::UpToDate(record) => ("up-to-date", record),
        };
        ctx.ui.json(&serde_json::json!({
            "result": state, "deployment": record, "timings": timings, "kernel_attestations": kernels,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if show_timings {
        for (phase, ms) in &timings.phases {
            ctx.ui.out(format!("{phase:>24}  {ms:>9.1} ms"));
        }
        ctx.ui.out(format!("{:>24}  {:>9.1} ms", "total", timings.total_ms));
    }
    match outcome {
        InstallOutcome::UpToDate(r) => {
            ctx.ui.status("Fresh", format!("deployment {} (generation {}) is up to date", r.name, r.generation));
        }
        InstallOutcome::Installed { record, previous } => {
            let attached: Vec<String> = record
                .loaders
                .iter()
                .flat_map(|l| l.attachments.iter().map(|a| format!("{} ({})", a.interface, a.mode)))
                .collect();
            let restored = record.restores.map(|g| format!(", generation {g} again")).unwrap_or_default();
            ctx.ui.status(
                "Finished",
                format!(
                    "deployment {} generation {}{}{restored}: {} package(s), {} program(s), {} chain(s){}",
                    record.name,
                    record.generation,
                    previous.as_ref().map(|p| format!(" (replaced generation {})", p.generation)).unwrap_or_default(),
                    record.packages.len(),
                    record.programs.len(),
                    record.chains.len(),
                    if attached.is_empty() { String::new() } else { format!(", attached to {}", attached.join(", ")) }
                ),
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
