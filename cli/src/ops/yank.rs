//! `ebpkg yank`: a published version marked yanked (or not) in the default
//! registry: new resolutions leave it out, existing lockfiles keep it.

use anyhow::Result;
use ebpkg_sources::RegistryId;
use ebpkg_spec::PackageName;
use ebpkg_spec::index::IndexEntry;

use crate::Ctx;

pub struct YankOptions {
    pub name: PackageName,
    pub version: semver::Version,
    /// Un-yank.
    pub undo: bool,
}

/// The version's index entry as the registry has it now.
pub struct Yanked {
    pub registry: RegistryId,
    pub entry: IndexEntry,
}

pub fn yank(ctx: &Ctx, opts: &YankOptions) -> Result<Yanked> {
    let regs = ctx.registries()?;
    let entry = regs.open_origin(&regs.default, None)?.set_yanked(&opts.name, &opts.version, !opts.undo)?;
    Ok(Yanked { registry: regs.default.clone(), entry })
}
