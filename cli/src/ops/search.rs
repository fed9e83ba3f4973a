//! `ebpkg search`: the default registry's packages matching a query.

use anyhow::Result;
use ebpkg_sources::{RegistryId, SearchHit};

use crate::Ctx;

/// The packages that match, best first.
pub struct Found {
    pub registry: RegistryId,
    pub hits: Vec<SearchHit>,
}

/// At most `limit` packages whose names, keywords, program names or
/// descriptions match `query`.
pub fn search(ctx: &Ctx, query: &str, limit: usize) -> Result<Found> {
    let regs = ctx.registries()?;
    let hits = regs.open(&regs.default)?.search(query, limit)?;
    Ok(Found { registry: regs.default.clone(), hits })
}
