//! `ebpkg lock`, `fetch`, `update` and `tree`: the project's lockfile.

use std::collections::{BTreeSet, HashSet};

use anyhow::Result;
use ebpkg_resolver::UpdatePolicy;
use ebpkg_spec::{LockedPackage, Lockfile, PackageName};
use semver::{Version, VersionReq};
use serde::Serialize;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::resolve::{Locked, lock_project};
use crate::ops::trust::{Trust, Verdict};
use crate::project::{LockState, Project};
use crate::registries::Registries;

/// Resolves the project (ebpkg.lock kept up to date).
pub fn lock(ctx: &Ctx) -> Result<(Project, Locked)> {
    let project = ctx.project()?;
    let regs = ctx.registries()?;
    let locked = lock_project(ctx, project, &regs, UpdatePolicy::Nothing)?;
    Ok((project.clone(), locked))
}

/// Resolves the project and brings every locked package into the cache; returns
/// the lock and how many packages are there.
pub fn fetch(ctx: &Ctx) -> Result<(Locked, usize)> {
    let project = ctx.project()?;
    let regs = ctx.registries()?;
    let locked = lock_project(ctx, project, &regs, UpdatePolicy::Nothing)?;
    let fetched = crate::ops::fetch::fetch_all(ctx, &regs, &locked.lock)?;
    Ok((locked, fetched.len()))
}

/// A newer version of a direct dependency than the one locked, which its
/// requirement does not allow.
pub struct NewerIncompatible {
    pub name: PackageName,
    pub newest: Version,
    pub requirement: VersionReq,
    pub locked: Version,
    /// Why the trust policy refuses it (following "it", as
    /// [`Verdict::Refused`] says it): no move to advertise, only a version to know of.
    pub refused: Option<String>,
}

/// What `update` did.
pub struct Updated {
    pub locked: Locked,
    pub newer: Vec<NewerIncompatible>,
}

/// Moves these locked packages (all when empty) to their newest allowed versions.
pub fn update(ctx: &Ctx, packages: &[PackageName]) -> Result<Updated> {
    let project = ctx.project()?;
    let regs = ctx.registries()?;
    let policy = if packages.is_empty() {
        UpdatePolicy::All
    } else {
        let old = match project.read_lock()? {
            LockState::Valid(lock) | LockState::Damaged { salvaged: lock, .. } => lock,
            LockState::Missing => Lockfile::default(),
        };
        let mut names = BTreeSet::new();
        for name in packages {
            if !old.packages().iter().any(|l| l.name.normalized() == name.normalized()) {
                return Err(fail(Failure::Usage, format!("`{name}` is not in ebpkg.lock; nothing to update")));
            }
            names.insert(name.clone());
        }
        UpdatePolicy::Only(names)
    };
    let locked = lock_project(ctx, project, &regs, policy)?;
    let newer = newer_incompatible(ctx, project, &regs, &locked.lock)?;
    Ok(Updated { locked, newer })
}

/// For each direct dependency, the newest version newer than the one locked that
/// its requirement does not allow (as cargo's "latest: 0.2.0"): not yanked, and a
/// pre-release only when the locked version is one. The newest the trust policy
/// accepts is the one to move to; a newer one it refuses is told apart, with why.
fn newer_incompatible(
    ctx: &Ctx,
    project: &Project,
    regs: &Registries<'_>,
    lock: &Lockfile,
) -> Result<Vec<NewerIncompatible>> {
    let trust = Trust::load(ctx)?;
    let mut notes = Vec::new();
    let by_name = lock.by_normalized_name();
    for (name, dep) in &project.manifest.dependencies {
        let url = regs.url(dep.registry.as_ref());
        let Some(&locked) = by_name.get(&name.normalized()).and_then(|v| v.first()) else { continue };
        let Some(entries) = regs.index(&url, name)? else { continue };
        let mut newer: Vec<_> = entries
            .iter()
            .filter(|e| !e.yanked && e.vers > locked.version && !dep.version.matches(&e.vers))
            .filter(|e| e.vers.pre.is_empty() || !locked.version.pre.is_empty())
            .collect();
        newer.sort_by(|a, b| b.vers.cmp(&a.vers));
        let note = |version: &Version, refused: Option<String>| NewerIncompatible {
            name: name.clone(),
            newest: version.clone(),
            requirement: dep.version.clone(),
            locked: locked.version.clone(),
            refused,
        };
        for (at, e) in newer.iter().enumerate() {
            match trust.judge(&e.name, e.signed_by.as_ref()) {
                // The newest of all, refused: said once, then the newest accepted.
                Verdict::Refused { why, .. } if at == 0 => notes.push(note(&e.vers, Some(why))),
                Verdict::Refused { .. } => {}
                _ => {
                    notes.push(note(&e.vers, None));
                    break;
                }
            }
        }
    }
    Ok(notes)
}

/// A package of the dependency tree.
#[derive(Serialize)]
pub struct Node {
    pub name: String,
    pub version: String,
    pub source: String,
    pub dependencies: Vec<Node>,
    /// Shown with its dependencies earlier in the tree, so not again (as `cargo tree`'s `(*)`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repeated: bool,
}

/// The project's dependency tree, from the lock (resolved as needed).
pub fn tree(ctx: &Ctx) -> Result<Node> {
    let project = ctx.project()?;
    let regs = ctx.registries()?;
    let lock = lock_project(ctx, project, &regs, UpdatePolicy::Nothing)?.lock;
    let mut roots = Vec::new();
    let mut shown = HashSet::new();
    let by_name = lock.by_normalized_name();
    for name in project.manifest.dependencies.keys() {
        // The newest locked version (the first of them, in canonical order).
        let newest = by_name.get(&name.normalized()).and_then(|ps| ps.iter().min_by(|a, b| b.version.cmp(&a.version)));
        if let Some(p) = newest {
            roots.push(node(&lock, p, &mut shown));
        }
    }
    let m = &project.manifest.package;
    Ok(Node {
        name: m.name.to_string(),
        version: m.version.to_string(),
        source: "path".into(),
        dependencies: roots,
        repeated: false,
    })
}

/// `p` and what it depends on, each package's dependencies shown once in the whole
/// tree: expanding every path instead grows exponentially with shared dependencies
/// (a chain of diamonds 30 deep has a billion paths), and a cycle would not end.
fn node<'l>(lock: &'l Lockfile, p: &'l LockedPackage, shown: &mut HashSet<(&'l str, &'l Version)>) -> Node {
    let mut dependencies = Vec::new();
    let first = shown.insert((p.name.as_str(), &p.version));
    if first {
        for d in &p.dependencies {
            if let Some(dp) = lock.get(d.name.as_str(), &d.version) {
                dependencies.push(node(lock, dp, shown));
            }
        }
    }
    Node {
        name: p.name.to_string(),
        version: p.version.to_string(),
        source: p.source.to_string(),
        dependencies,
        repeated: !first && !p.dependencies.is_empty(),
    }
}
