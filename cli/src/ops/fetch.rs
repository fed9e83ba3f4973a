//! Fetching the locked packages into the cache: each archive checked against the
//! lockfile's checksum (and the index against the lockfile) before it is unpacked.

use std::path::PathBuf;

use anyhow::Result;
use ebpkg_sources::RegistryUrl;
use ebpkg_spec::manifest::MANIFEST_FILE;
use ebpkg_spec::{LockedPackage, Lockfile, Manifest};

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::project::manifest_error;
use crate::registries::Registries;

/// A package ready to build.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub locked: LockedPackage,
    /// The unpacked package.
    pub root: PathBuf,
    pub manifest: Manifest,
}

pub fn fetch_all(ctx: &Ctx, regs: &Registries<'_>, lock: &Lockfile) -> Result<Vec<Fetched>> {
    let cache = ctx.cache();
    let progress = ctx.ui.progress("Fetching", lock.packages().len() as u64);
    let mut out = Vec::new();
    for p in lock.packages() {
        let id = format!("{}@{}", p.name, p.version);
        progress.message(id.clone());
        let url = RegistryUrl::parse(&p.source)
            .map_err(|e| fail(Failure::Input, format!("ebpkg.lock: {id} has source `{}`: {e}", p.source)))?;
        let cached = cache.archive_path(&p.checksum);
        let was_cached = cached.exists();
        // Offline, a cached archive is used as it is (unpacking checks it against the
        // lockfile's checksum): the registry, even a local one, may be unreachable.
        let archive = if ctx.offline && was_cached {
            cached
        } else {
            let registry = regs.open(&url)?;
            let entry = regs.entry(&url, &p.name, &p.version)?;
            ebpkg_sources::check_locked(&entry, p)?;
            cache.fetch(registry.as_ref(), &p.name, &p.version, &p.checksum, ctx.offline)?
        };
        let root = cache.unpack(&p.name, &p.version, &p.checksum, &archive)?;
        let manifest = Manifest::load(&root.join(MANIFEST_FILE)).map_err(manifest_error)?;
        progress.inc(id.clone());
        if !was_cached {
            progress.println(&ctx.ui, "Fetched", format!("{id} from {url}"));
        }
        out.push(Fetched { locked: p.clone(), root, manifest });
    }
    Ok(out)
}
