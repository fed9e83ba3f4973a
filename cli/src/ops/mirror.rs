//! `ebpkg mirror`: every package of the project's ebpkg.lock copied into a
//! file:// registry, for hosts without access to the registries.

use std::path::Path;

use anyhow::Result;
use ebpkg_resolver::UpdatePolicy;
use ebpkg_sources::{MirrorReport, RegistryId};

use crate::Ctx;

/// Makes `dir` a file:// registry holding the project's locked packages
/// (created, or extended with what it lacks).
pub fn mirror(ctx: &Ctx, dir: &Path) -> Result<MirrorReport> {
    let project = ctx.project()?;
    let regs = ctx.registries()?;
    let lock = crate::ops::resolve::lock_project(ctx, project, &regs, UpdatePolicy::Nothing)?.lock;
    let cache = ctx.cache()?;
    let open = |url: &RegistryId| -> ebpkg_sources::Result<Box<dyn ebpkg_sources::Registry>> {
        let fetch = ctx.config.fetch_url(url);
        ebpkg_sources::open_registry(fetch, &ctx.config.open_options(fetch, ctx.offline))
    };
    Ok(ebpkg_sources::mirror(&lock, open, &cache, dir)?)
}
