//! `ebpkg mirror`: copy exactly the packages a lockfile names into a file registry, for
//! sites that cannot reach the original registries.
//!
//! The mirror's index lines are the source registries' lines, unchanged, and its
//! archives the locked bytes, so the checksums in the lockfile hold for the mirror too:
//! `ebpkg install --locked --registry file:///mirror` installs byte-identical packages.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::path::Path;

use ebpkg_spec::{LockedPackage, Lockfile, PackageId};

use crate::RegistryId;
use crate::cache::{Cache, check_locked};
use crate::error::{ErrorKind, Result};
use crate::file_registry::{FileRegistry, Imported};
use crate::registry::Registry;
use crate::registry::{PublishSignature, SignedVersion};

/// What [`mirror`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorReport {
    /// The mirror's URL: what to pass as `--registry`.
    pub url: RegistryId,
    /// Packages copied by this run, in lockfile order.
    pub added: Vec<PackageId>,
    /// Packages the mirror held already, with the locked checksum.
    pub already_present: Vec<PackageId>,
}

/// Makes the directory `dest` a file registry holding every package of `lock`, fetched
/// (through `cache`, checked against the lockfile's checksums) from the registries the
/// lockfile names, which `open` opens.
///
/// Re-running adds what is missing and changes nothing else; packages already in the
/// mirror are not fetched again, so a re-run needs no access to the sources unless
/// something is missing. Refused before anything is written: one name taken from two
/// registries with different content.
pub fn mirror(
    lock: &Lockfile,
    open: impl Fn(&RegistryId) -> Result<Box<dyn Registry>>,
    cache: &Cache,
    dest: &Path,
) -> Result<MirrorReport> {
    let plan = plan(lock)?;
    let target = FileRegistry::at(dest)?.into_mirror();
    target.create_if_missing()?;
    let mut report = MirrorReport { url: target.url().clone(), added: Vec::new(), already_present: Vec::new() };
    let mut sources: BTreeMap<RegistryId, Box<dyn Registry>> = BTreeMap::new();
    for (locked, url) in plan.iter().cloned() {
        let id = locked.id();
        if target.holds_exactly(&locked.name, &locked.version, &locked.checksum)? {
            report.already_present.push(id);
            continue;
        }
        let source = match sources.entry(url.clone()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(open(&url)?),
        };
        let not_listed = || ErrorKind::LockedNotInRegistry {
            package: locked.name.clone(),
            version: locked.version.clone(),
            registry: url.clone(),
        };
        let entries = source.index(&locked.name)?.ok_or_else(not_listed)?;
        let entry = entries.into_iter().find(|e| e.vers == locked.version).ok_or_else(not_listed)?;
        check_locked(&(&entry).into(), locked)?;
        let archive = cache.fetch(source.as_ref(), &entry, &locked.checksum, false)?;
        let signature = match entry.signed_by {
            Some(key) => {
                let signed =
                    SignedVersion { name: entry.name.clone(), version: entry.vers.clone(), cksum: entry.cksum, key };
                let verified = cache.fetch_signature(source.as_ref(), &signed, &archive, false)?;
                Some(PublishSignature { bundle: verified.bundle, key: verified.key })
            }
            None => None,
        };
        match target.import(&entry, &archive, signature.as_ref(), &url)? {
            Imported::Added => report.added.push(id),
            Imported::AlreadyPresent => report.already_present.push(id),
        }
        copy_attestations(source.as_ref(), &target, locked)?;
    }
    carry_tuf(&plan, &sources, &target)?;
    Ok(report)
}

/// When a source registry has TUF metadata, the mirror serves that metadata and
/// the source's index files byte for byte, so that readers check the mirror
/// against the origin's root exactly as they would check the origin. One
/// mirror carries one registry's metadata. Only the sources this run had to
/// open are asked (a re-run that finds nothing missing needs no source); their
/// packages already in the mirror get the index files matching the new metadata.
fn carry_tuf(
    plan: &[(&LockedPackage, RegistryId)],
    sources: &BTreeMap<RegistryId, Box<dyn Registry>>,
    target: &FileRegistry,
) -> Result<()> {
    let mut carried: Option<(RegistryId, crate::registry::TufFiles)> = None;
    for (locked, url) in plan {
        let Some(source) = sources.get(url) else { continue };
        let Some(files) = source.tuf_files()? else { continue };
        match &carried {
            Some((first, _)) if first != url => {
                return Err(ErrorKind::MirrorTufConflict { first: first.clone(), second: url.clone() }.into());
            }
            Some(_) => {}
            None => carried = Some((url.clone(), files)),
        }
        let not_listed = || ErrorKind::LockedNotInRegistry {
            package: locked.name.clone(),
            version: locked.version.clone(),
            registry: url.clone(),
        };
        let bytes = source.index_text(&locked.name)?.ok_or_else(not_listed)?.bytes;
        let holds = ebpkg_spec::index::parse_index_file(locked.name.as_str(), &bytes)
            .entries
            .iter()
            .any(|e| e.vers == locked.version && e.cksum == locked.checksum);
        if !holds {
            return Err(not_listed().into());
        }
        target.write_index_verbatim(&locked.name, &bytes)?;
        copy_attestations(source.as_ref(), target, locked)?;
    }
    if let Some((_, files)) = carried {
        target.write_tuf_files(&files)?;
    }
    Ok(())
}

/// The version's kernel verification attestations, so that an air-gapped install
/// judges the kernel as one from the origin would.
fn copy_attestations(source: &dyn Registry, target: &FileRegistry, locked: &LockedPackage) -> Result<()> {
    if let Some(bytes) = source.attestations(&locked.name, &locked.version)? {
        target.write_attestations_verbatim(&locked.name, &locked.version, &bytes)?;
    }
    Ok(())
}

/// The lockfile's packages with their sources, each distinct package once.
/// A mirror has one index file per name, so a name may come from one registry only —
/// unless two sources served the very same archive.
fn plan(lock: &Lockfile) -> Result<Vec<(&LockedPackage, RegistryId)>> {
    let mut plan: Vec<(&LockedPackage, RegistryId)> = Vec::new();
    let mut origin: BTreeMap<String, (RegistryId, &LockedPackage)> = BTreeMap::new();
    for locked in lock.packages() {
        let url = locked.source.clone();
        match origin.entry(locked.name.normalized()) {
            Entry::Vacant(e) => {
                e.insert((url.clone(), locked));
            }
            Entry::Occupied(e) => {
                let (first_url, first) = e.get();
                if *first_url != url {
                    let same_archive = first.name == locked.name
                        && first.version == locked.version
                        && first.checksum == locked.checksum;
                    if same_archive {
                        continue;
                    }
                    return Err(ErrorKind::MirrorConflict {
                        name: locked.name.clone(),
                        first: first_url.clone(),
                        second: url,
                    }
                    .into());
                }
            }
        }
        plan.push((locked, url));
    }
    Ok(plan)
}
