//! `ebpkg status` and `ebpkg uninstall`: what the deployments are, and removing one.

use anyhow::Result;
use ebpkg_deploy::generations::SavedGeneration;
use ebpkg_deploy::{DeploymentRecord, DeploymentStatus, InstallOutcome, MapDump, MapView};

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::install::print_event;

/// Which deployments `status` reports, and how much of them.
pub struct StatusOptions {
    /// Only this deployment.
    pub name: Option<String>,
    /// Read the contents of the maps whose layouts the packages document: which maps
    /// and entries.
    pub maps: Option<MapView>,
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
    if let Some((found, fix)) = crate::ops::writable_vm_tables(&ctx.config.bpffs_root) {
        ctx.ui.warn(format!("{found}\nhelp: {fix}"));
    }
    if let Some(n) = &opts.name {
        all.retain(|d| &d.record.name == n);
        if all.is_empty() {
            return Err(fail(Failure::Input, format!("no deployment named `{n}`")));
        }
    }
    if let Some(only) = opts.maps.as_ref().and_then(|v| v.only.as_deref()) {
        let mut names: Vec<&str> =
            all.iter().flat_map(|d| &d.record.packages).flat_map(|p| &p.maps).map(|m| m.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        if !names.contains(&only) {
            let known = if names.is_empty() { "none documented".to_owned() } else { names.join(", ") };
            return Err(fail(Failure::Input, format!("no deployment has a map `{only}` (their maps: {known})")));
        }
    }
    all.into_iter()
        .map(|status| {
            let maps = match &opts.maps {
                Some(view) => deployer.map_dumps(&status.record, view)?,
                None => Vec::new(),
            };
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
    let name = deployment_name(ctx, opts.name, "uninstall")?;
    Ok(ctx.deployer()?.uninstall(&name, &|e| print_event(ctx, e))?)
}

/// The deployment a command names, else the project's (its package's name).
fn deployment_name(ctx: &Ctx, name: Option<String>, command: &str) -> Result<String> {
    match name {
        Some(n) => Ok(n),
        None => Ok(ctx
            .project()
            .map_err(|e| fail(Failure::Usage, format!("{e:#}\nhelp: name the deployment: `ebpkg {command} NAME`")))?
            .manifest
            .package
            .name
            .to_string()),
    }
}

/// What `rollback` reinstalls.
pub struct RollbackOptions {
    /// The deployment (default: the project's).
    pub name: Option<String>,
    /// The generation (default: the one before the running one).
    pub to: Option<u64>,
    /// Start empty the maps whose layout differs, instead of refusing.
    pub reset_state: bool,
}

/// Installs an earlier generation of a deployment again, from its saved copy.
pub fn rollback(ctx: &Ctx, opts: RollbackOptions) -> Result<InstallOutcome> {
    crate::ops::require_privileges("rollback")?;
    let name = deployment_name(ctx, opts.name, "rollback")?;
    // Chains go native as the saved generation's chain mode says: from the build
    // cache when they are there (no compiler needed), else compiled again.
    let builder = crate::ops::build::builder(ctx, &crate::ops::build::BuildOptions::default())?;
    let compiler = crate::ops::native::ClangCompiler::new(builder);
    let deployer = ctx.deployer()?.with_native_compiler(std::sync::Arc::new(compiler));
    Ok(deployer.restore(&name, opts.to, opts.reset_state, &|e| print_event(ctx, e))?)
}

/// The kept generations of a deployment, oldest first, and the running one's number.
pub fn generations(ctx: &Ctx, name: Option<String>) -> Result<(Vec<SavedGeneration>, Option<u64>)> {
    let name = deployment_name(ctx, name, "status --generations")?;
    let deployer = ctx.deployer()?;
    let running = deployer.store().record(&name)?.map(|r| r.generation);
    Ok((deployer.store().generations(&name)?, running))
}
