//! `ebpkg cache`: where the cache is, and emptying it.

use std::path::PathBuf;

use anyhow::Result;
use ebpkg_sources::CleanReport;
use ebpkg_spec::cache_layout::CachePart;

use crate::Ctx;

/// The cache's root directory.
pub fn cache_dir(ctx: &Ctx) -> PathBuf {
    ctx.config.cache_dir.clone()
}

/// Removes these parts of the cache.
pub fn clean(ctx: &Ctx, parts: &[CachePart]) -> Result<CleanReport> {
    Ok(ctx.cache()?.clean(parts)?)
}
