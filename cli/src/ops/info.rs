//! `ebpkg info`: what the default registry says of a package.

use std::sync::Arc;

use anyhow::Result;
use ebpkg_spec::PackageName;
use ebpkg_spec::index::IndexEntry;

use crate::Ctx;
use crate::exit::{Failure, fail};

/// A package's versions, and the one a requirement picks.
pub struct PackageInfo {
    /// The newest version the requirement matches, preferring versions not yanked.
    pub chosen: IndexEntry,
    /// Every version, yanked ones too, in the index's order.
    pub versions: Arc<Vec<IndexEntry>>,
}

pub fn info(ctx: &Ctx, name: &PackageName, req: &semver::VersionReq) -> Result<PackageInfo> {
    let regs = ctx.registries()?;
    let url = &regs.default;
    let versions = regs.index(url, name)?.ok_or_else(|| {
        let names = regs.open(url).ok().and_then(|r| r.names().ok()).unwrap_or_default();
        let close: Vec<String> = names
            .iter()
            .filter(|n| strsim::levenshtein(n.as_str(), name.as_str()) <= 2)
            .map(|n| format!("`{n}`"))
            .collect();
        fail(
            Failure::Registry,
            format!(
                "package `{name}` is not in {url}{}",
                if close.is_empty() { String::new() } else { format!("; did you mean {}?", close.join(" or ")) }
            ),
        )
    })?;
    let chosen = versions
        .iter()
        .filter(|e| req.matches(&e.vers))
        .max_by(|a, b| (!a.yanked, &a.vers).cmp(&(!b.yanked, &b.vers)))
        .ok_or_else(|| fail(Failure::Registry, format!("no version of {name} matches {req}")))?
        .clone();
    Ok(PackageInfo { chosen, versions })
}
