//! `ebpkg add` and `ebpkg remove`: edit `[dependencies]` keeping the file's
//! formatting and comments, check the result resolves, then write ebpkg.toml and
//! ebpkg.lock together.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use ebpkg_spec::{PackageName, RegistryId};

use crate::commands::install::parse_package_spec;
use ebpkg::Ctx;
use ebpkg::ops::edit::{self as ops, Requested};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg add net basic              the newest versions, as ^X.Y.Z\n  ebpkg add meter@~1.2             a requirement of your own\n  ebpkg add p4filter --from https://registry.example.org/"
)]
pub struct AddArgs {
    /// `name` or `name@requirement`; several at once.
    #[arg(required = true)]
    packages: Vec<String>,
    /// Take them from this registry instead of the default one.
    #[arg(long, value_name = "URL")]
    from: Option<String>,
}

#[derive(Args)]
#[command(after_help = "Example:\n  ebpkg remove meter")]
pub struct RemoveArgs {
    /// Dependencies to remove.
    #[arg(required = true)]
    packages: Vec<String>,
}

pub fn add(ctx: &Ctx, args: AddArgs) -> Result<ExitCode> {
    let packages = args
        .packages
        .iter()
        .map(|spec| {
            let (name, req) = parse_package_spec(spec)?;
            Ok(Requested { name, req, explicit: spec.contains('@') })
        })
        .collect::<Result<Vec<_>>>()?;
    // (The command line is where a registry it names is read.)
    let from = args.from.as_deref().map(|u| RegistryId::parse(u).with_context(|| format!("registry `{u}`")));
    ops::add(ctx, &packages, from.transpose()?.as_ref())?;
    Ok(ExitCode::SUCCESS)
}

pub fn remove(ctx: &Ctx, args: RemoveArgs) -> Result<ExitCode> {
    let names = args
        .packages
        .iter()
        .map(|spec| PackageName::new(spec).map_err(|e| ebpkg::exit::bad_name(spec, &e)))
        .collect::<Result<Vec<_>>>()?;
    ops::remove(ctx, &names)?;
    Ok(ExitCode::SUCCESS)
}
