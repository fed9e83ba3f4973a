//! Fetching the locked packages into the cache: each archive checked against the
//! lockfile's checksum (and the index against the lockfile) before it is unpacked.

use ebpkg_spec::PackageId;
use std::path::PathBuf;

use anyhow::Result;
use ebpkg_sources::{RegistryId, SignedVersion};
use ebpkg_spec::names::PackageGlob;
use ebpkg_spec::{LockedPackage, Lockfile, Manifest};

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::trust::{Trust, Verdict};
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
    let cache = ctx.cache()?;
    let mut trust = Trust::load(ctx)?;
    let mut unchecked = Vec::new();
    let progress = ctx.ui.progress("Fetching", lock.packages().len() as u64);
    let mut out = Vec::new();
    for p in lock.packages() {
        let id = p.id();
        progress.message(id.to_string());
        let url = p.source.clone();
        let was_cached = cache.archive_path(&p.checksum).exists();
        // Offline, a cached archive (checked against the lockfile's checksum) is used
        // as it is: the registry, even a local one, may be unreachable. The archive
        // is read and hashed once here; the signature check and the unpacking use
        // these bytes.
        let cached = if ctx.offline { cache.cached_archive(&p.checksum)? } else { None };
        let archive = if let Some(archive) = cached {
            archive
        } else {
            let registry = regs.open(&url)?;
            let entry = regs.entry(&url, &p.name, &p.version)?;
            ebpkg_sources::check_locked(&(&entry).into(), p)?;
            if entry.yanked {
                ctx.ui.warn(format!(
                    "{id} is yanked in {url}: ebpkg.lock keeps it, but its publisher asks not to use it; \
                     `ebpkg update {}` moves to another version",
                    p.name
                ));
            }
            // The entry just read (and checked against the lock) is the one fetched.
            cache.fetch(registry.as_ref(), &entry, &p.checksum, ctx.offline)?
        };
        // Checked before the archive is unpacked: nothing of a refused package is used.
        trust.check(ctx, regs, &url, p, &archive, &mut unchecked)?;
        // Its manifest comes from the archive's bytes, not from the tree read back.
        let ebpkg_sources::CachedSource { root, manifest } = cache.unpack(&p.name, &p.version, &archive)?;
        progress.inc(id.to_string());
        if !was_cached {
            // From where the bytes came: a mirror is named, with the registry it stands in for.
            let from = match regs.read_from(&url) {
                mirror if mirror != url => format!("{mirror} (mirror of {url})"),
                _ => url.to_string(),
            };
            progress.println(&ctx.ui, "Fetched", format!("{id} from {from}"));
        }
        out.push(Fetched { locked: p.clone(), root, manifest });
    }
    // Said once for the command, not once per package.
    if let Some(first) = unchecked.first() {
        let which = match unchecked.len() {
            1 => first.to_string(),
            n => format!("{n} packages ({first}, …)"),
        };
        ctx.ui.warn(format!(
            "the signatures of {which} were verified with cached keys; the registry was not asked (offline) or could \
             not be reached, so whether those keys were revoked since was not checked"
        ));
    }
    Ok(out)
}

/// The trust policy, checked over each fetched archive.
impl Trust {
    /// Refuses `p` unless the policy accepts its signer (or its being unsigned)
    /// and, when signed, its bundle verifies over the archive at `archive`; a
    /// signature whose key could not be checked for revocation (offline, the
    /// registry unreachable) is added to `unchecked`.
    fn check(
        &mut self,
        ctx: &Ctx,
        regs: &Registries<'_>,
        url: &RegistryId,
        p: &LockedPackage,
        archive: &ebpkg_archive::VerifiedArchive,
        unchecked: &mut Vec<PackageId>,
    ) -> Result<()> {
        let id = p.id();
        let key = match self.judge(&p.name, p.signer.as_ref()) {
            Verdict::UnsignedAllowed { by } => {
                tracing::info!("{id} is unsigned; allowed by the trust policy's `{by}`");
                return Ok(());
            }
            Verdict::Refused { why, fix } => {
                let from = if p.signer.is_none() { format!(" from {url}") } else { String::new() };
                return Err(fail(Failure::Trust, format!("{id}{from} {why}; nothing was installed. {fix}")));
            }
            Verdict::TrustedOnFirstUse { key } => {
                crate::ops::trust::record_trust(&self.user_path, &p.name, key)?;
                let exact = PackageGlob::new(p.name.as_str()).map_err(|e| anyhow::anyhow!("{e}"))?;
                self.policy.trust(exact.clone(), key);
                ctx.trusted_on_first_use(exact, key);
                ctx.ui.warn(format!(
                    "trusting key {key} for {} from now on (first use, --trust-new-keys; recorded in {})",
                    p.name,
                    self.user_path.display()
                ));
                key
            }
            Verdict::Trusted { key } => key,
        };
        let registry = regs.open(url)?;
        let signed = SignedVersion { name: p.name.clone(), version: p.version.clone(), cksum: p.checksum, key };
        let verified = ctx.cache()?.fetch_signature(registry.as_ref(), &signed, archive, ctx.offline)?;
        if let Some(at) = verified.revoked_at {
            return Err(fail(
                Failure::Trust,
                format!(
                    "{id} is signed only by key {key}, which its owner revoked on {at} (the registry {url} says so); \
                     nothing was installed. Use a version signed by another key"
                ),
            ));
        }
        if !verified.revocation_checked {
            tracing::info!("{id}: signature by key {key} verified with the cached key; revocation not checked");
            unchecked.push(id.clone());
        }
        tracing::info!("{id}: signature by key {key} verified over the archive; the key is trusted and not revoked");
        Ok(())
    }
}
