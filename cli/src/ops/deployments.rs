//! `ebpkg status` and `ebpkg uninstall`: what the deployments are, and removing one.

use anyhow::Result;
use ebpkg_deploy::{DeploymentRecord, DeploymentStatus, MapDump};

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::install::print_event;

/// Which deployments `status` reports, and how much of them.
pub struct StatusOptions {
    /// Only this deployment.
    pub name: Option<String>,
    /// Read the contents of the maps whose layouts the packages document.
    pub maps: bool,
    /// With `maps`: at most this many entries per map.
    pub limit: usize,
}

/// One deployment as the kernel has it, with its maps when asked for.
pub struct Deployment {
    pub status: DeploymentStatus,
    /// Empty unless `StatusOptions::maps`.
    pub maps: Vec<MapDump>,
}

/// The deployments (interrupted transactions are finished or undone first).
pub fn status(ctx: &Ctx, opts: &StatusOptions) -> Result<Vec<Deployment>> {
    let deployer = ctx.deployer()?;
    let mut all = deployer.status(&|e| print_event(ctx, e))?;
    if let Some(n) = &opts.name {
        all.retain(|d| &d.record.name == n);
        if all.is_empty() {
            return Err(fail(Failure::Input, format!("no deployment named `{n}`")));
        }
    }
    all.into_iter()
        .map(|status| {
            let maps = if opts.maps { deployer.map_dumps(&status.record, opts.limit)? } else { Vec::new() };
            Ok(Deployment { status, maps })
        })
        .collect()
}

/// Which deployment `uninstall` removes: by name, else the project's.
pub struct UninstallOptions {
    pub name: Option<String>,
}

/// Removes a deployment; returns its record.
pub fn uninstall(ctx: &Ctx, opts: UninstallOptions) -> Result<DeploymentRecord> {
    crate::ops::require_privileges("uninstall")?;
    let name = match opts.name {
        Some(n) => n,
        None => ctx
            .project()
            .map_err(|e| fail(Failure::Usage, format!("{e:#}\nhelp: name the deployment: `ebpkg uninstall NAME`")))?
            .manifest
            .package
            .name
            .to_string(),
    };
    Ok(ctx.deployer()?.uninstall(&name, &|e| print_event(ctx, e))?)
}
