//! Resolving the project's dependencies into a lockfile: PubGrub over the
//! registries' indexes, preferring what ebpkg.lock already pins.

use std::collections::BTreeSet;

use anyhow::Result;
use ebpkg_resolver::{PackageId, Requirement, ResolveError, ResolveRequest, UpdatePolicy};
use ebpkg_spec::{LockedDependency, LockedPackage, Lockfile, Manifest};

use crate::Ctx;
use crate::exit::{ExitExt, Failure, fail};
use crate::project::Project;
use crate::registries::Registries;

/// What resolving produced.
pub struct Locked {
    pub lock: Lockfile,
    /// The lockfile on disk changed (or would have, under --locked it is an error).
    pub written: bool,
}

/// The manifest's dependencies as the resolver takes them.
pub fn requirements(manifest: &Manifest, regs: &Registries<'_>) -> Result<Vec<Requirement>> {
    manifest
        .dependencies
        .iter()
        .map(|(name, d)| {
            let url = regs.url(d.registry.as_deref())?;
            Ok(Requirement {
                pkg: PackageId::in_registry(name.clone(), regs.id_registry(&url)),
                req: d.version.clone(),
                req_text: d.version.to_string(),
            })
        })
        .collect()
}

/// Resolves `manifest`'s dependencies (`old` is the previous lock) into a lockfile.
pub fn resolve_manifest(
    manifest: &Manifest,
    old: Option<&Lockfile>,
    update: UpdatePolicy,
    regs: &Registries<'_>,
) -> Result<Lockfile> {
    let mut locked = Vec::new();
    for p in old.map(Lockfile::packages).unwrap_or_default() {
        let url = regs.url(Some(&p.source))?;
        locked.push((PackageId::in_registry(p.name.clone(), regs.id_registry(&url)), p.version.clone()));
    }
    let request = ResolveRequest {
        root: manifest.package.name.clone(),
        root_version: manifest.package.version.clone(),
        deps: requirements(manifest, regs)?,
        locked,
        update,
    };
    let resolution = ebpkg_resolver::resolve(&request, regs).map_err(|e| match e {
        ResolveError::Source { .. } => fail(Failure::Registry, e),
        other => fail(Failure::Resolution, other),
    })?;
    let mut packages = Vec::new();
    for (id, rp) in &resolution.packages {
        let url = regs.url(id.registry.as_deref())?;
        let entry = regs.entry(&url, &id.name, &rp.version)?;
        let lp = LockedPackage {
            name: entry.name.clone(),
            version: rp.version.clone(),
            source: url.to_string(),
            checksum: entry.cksum,
            signer: None,
            dependencies: rp
                .deps
                .iter()
                .map(|(d, v)| LockedDependency { name: d.name.clone(), version: v.clone() })
                .collect(),
        };
        // A version pinned before must still be the same bytes.
        if let Some(prev) = old.and_then(|o| o.get(lp.name.as_str(), &lp.version)).filter(|p| p.source == lp.source) {
            ebpkg_sources::check_locked(&entry, prev).exit(Failure::Registry)?;
        }
        packages.push(lp);
    }
    Ok(Lockfile::new(packages))
}

/// Resolves the project and writes ebpkg.lock when it changes; under --locked a
/// change is an error and nothing is written.
pub fn lock_project(ctx: &Ctx, project: &Project, regs: &Registries<'_>, update: UpdatePolicy) -> Result<Locked> {
    let old = project.lockfile()?;
    if ctx.locked && update != UpdatePolicy::Nothing {
        return Err(fail(Failure::LockDrift, "--locked forbids updating ebpkg.lock; drop --locked to update"));
    }
    ctx.ui.status("Resolving", format!("dependencies of {}", project.manifest.package.name));
    let lock = resolve_manifest(&project.manifest, old.as_ref(), update, regs)?;
    let changed = old.as_ref().is_none_or(|o| o.to_toml_string() != lock.to_toml_string());
    if !changed {
        return Ok(Locked { lock, written: false });
    }
    if ctx.locked {
        let what = match &old {
            None => format!("{} does not exist", project.lock_path().display()),
            Some(o) => format!("{} is out of date:\n{}", project.lock_path().display(), diff(o, &lock)),
        };
        return Err(fail(
            Failure::LockDrift,
            format!("{what}\nhelp: --locked needs it unchanged; run `ebpkg lock` and commit ebpkg.lock"),
        ));
    }
    for line in old.as_ref().map(|o| diff(o, &lock)).unwrap_or_else(|| diff(&Lockfile::default(), &lock)).lines() {
        let (verb, rest) = line.split_once(' ').unwrap_or(("", line));
        ctx.ui.status(if verb == "+" { "Locking" } else { "Removing" }, rest);
    }
    project.write_lockfile(&lock)?;
    Ok(Locked { lock, written: true })
}

/// `+ name version (source)` and `- …` lines between two lockfiles.
pub fn diff(old: &Lockfile, new: &Lockfile) -> String {
    let key = |p: &LockedPackage| format!("{} {} ({})", p.name, p.version, p.source);
    let a: BTreeSet<String> = old.packages().iter().map(key).collect();
    let b: BTreeSet<String> = new.packages().iter().map(key).collect();
    let mut out = String::new();
    for r in a.difference(&b) {
        out.push_str(&format!("- {r}\n"));
    }
    for r in b.difference(&a) {
        out.push_str(&format!("+ {r}\n"));
    }
    if out.is_empty() {
        out.push_str("  (the same versions with other dependencies or checksums)\n");
    }
    out
}
