//! `ebpkg lock`, `ebpkg update` and `ebpkg tree`.

use std::collections::{BTreeSet, HashSet};
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use ebpkg_resolver::UpdatePolicy;
use ebpkg_spec::{LockedPackage, Lockfile, PackageName};
use semver::Version;
use serde::Serialize;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::resolve::lock_project;
use crate::project::{LockState, Project};
use crate::registries::Registries;

#[derive(Args)]
#[command(
    after_help = "Example:\n  ebpkg lock            resolve and write ebpkg.lock (only when it changes)\n  ebpkg lock --locked   check that ebpkg.lock is up to date (CI)"
)]
pub struct LockArgs {}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg update          every dependency to its newest allowed version\n  ebpkg update meter    only meter (and what must move with it)"
)]
pub struct UpdateArgs {
    /// Only these packages (default: all).
    packages: Vec<String>,
}

#[derive(Args)]
#[command(after_help = "Example:\n  ebpkg tree")]
pub struct TreeArgs {}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg fetch             download every locked package into the cache\n  ebpkg --frozen install  then install with no registry reachable"
)]
pub struct FetchArgs {}

pub fn fetch(ctx: &Ctx, _args: FetchArgs) -> Result<ExitCode> {
    let project = ctx.project()?;
    let regs = ctx.registries()?;
    let locked = lock_project(ctx, &project, &regs, UpdatePolicy::Nothing)?;
    let fetched = crate::ops::fetch::fetch_all(ctx, &regs, &locked.lock)?;
    if ctx.ui.json {
        ctx.ui.json(&serde_json::json!({ "packages": packages_json(&locked.lock) }))?;
    } else {
        let n = fetched.len();
        ctx.ui.status("Ready", format!("{n} package{} in the cache", if n == 1 { "" } else { "s" }));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn lock(ctx: &Ctx, _args: LockArgs) -> Result<ExitCode> {
    let project = ctx.project()?;
    let regs = ctx.registries()?;
    let locked = lock_project(ctx, &project, &regs, UpdatePolicy::Nothing)?;
    if ctx.ui.json {
        ctx.ui.json(&serde_json::json!({ "written": locked.written, "packages": packages_json(&locked.lock) }))?;
    } else if !locked.written {
        ctx.ui.status("Fresh", format!("{} is up to date", project.lock_path().display()));
    }
    // The command ends here: its lock (thousands of packages, each a few values) is left to the
    // process's exit, as the resolution's reads are (`registries::loader`).
    std::mem::forget(locked);
    Ok(ExitCode::SUCCESS)
}

pub fn update(ctx: &Ctx, args: UpdateArgs) -> Result<ExitCode> {
    let project = ctx.project()?;
    let regs = ctx.registries()?;
    let policy = if args.packages.is_empty() {
        UpdatePolicy::All
    } else {
        let old = match project.read_lock()? {
            LockState::Valid(lock) | LockState::Damaged { salvaged: lock, .. } => lock,
            LockState::Missing => Lockfile::default(),
        };
        let mut names = BTreeSet::new();
        for p in &args.packages {
            let name = PackageName::new(p).map_err(|e| crate::exit::bad_name(p, &e))?;
            if !old.packages().iter().any(|l| l.name.normalized() == name.normalized()) {
                return Err(fail(Failure::Usage, format!("`{p}` is not in ebpkg.lock; nothing to update")));
            }
            names.insert(name);
        }
        UpdatePolicy::Only(names)
    };
    let locked = lock_project(ctx, &project, &regs, policy)?;
    if ctx.ui.json {
        ctx.ui.json(&serde_json::json!({ "written": locked.written, "packages": packages_json(&locked.lock) }))?;
    } else {
        if !locked.written {
            ctx.ui.status("Fresh", "every dependency is at its newest allowed version");
        }
        for newer in newer_incompatible(&project, &regs, &locked.lock)? {
            ctx.ui.status("Available", newer);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// For each direct dependency, a newer version than the one locked that its
/// requirement does not allow (as cargo's "latest: 0.2.0"): not yanked, and a
/// pre-release only when the locked version is one.
fn newer_incompatible(project: &Project, regs: &Registries<'_>, lock: &Lockfile) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    let by_name = lock.by_normalized_name();
    for (name, dep) in &project.manifest.dependencies {
        let url = regs.url(dep.registry.as_deref())?;
        let Some(&locked) = by_name.get(&name.normalized()).and_then(|v| v.first()) else { continue };
        let Some(entries) = regs.index(&url, name)? else { continue };
        let newest = entries
            .iter()
            .filter(|e| !e.yanked && e.vers > locked.version && !dep.version.matches(&e.vers))
            .filter(|e| e.vers.pre.is_empty() || !locked.version.pre.is_empty())
            .map(|e| &e.vers)
            .max();
        if let Some(newest) = newest {
            notes.push(format!(
                "{name} {newest}, which ebpkg.toml's `{}` does not allow (locked: {}); `ebpkg add {name}@{newest}` \
                 moves to it",
                dep.version, locked.version
            ));
        }
    }
    Ok(notes)
}

#[derive(Serialize)]
struct Node {
    name: String,
    version: String,
    source: String,
    dependencies: Vec<Node>,
    /// Shown with its dependencies earlier in the tree, so not again (as `cargo tree`'s `(*)`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    repeated: bool,
}

fn packages_json(lock: &Lockfile) -> Vec<serde_json::Value> {
    lock.packages()
        .iter()
        .map(|p| serde_json::json!({ "name": p.name, "version": p.version.to_string(), "source": &*p.source, "checksum": p.checksum.to_hex() }))
        .collect()
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

fn print(n: &Node, prefix: &str, last: bool, out: &mut String) {
    let repeated = if n.repeated { " (*)" } else { "" };
    out.push_str(&format!("{prefix}{}{} {}{repeated}\n", if last { "└── " } else { "├── " }, n.name, n.version));
    let child = format!("{prefix}{}", if last { "    " } else { "│   " });
    for (i, c) in n.dependencies.iter().enumerate() {
        print(c, &child, i + 1 == n.dependencies.len(), out);
    }
}

pub fn tree(ctx: &Ctx, _args: TreeArgs) -> Result<ExitCode> {
    let project = ctx.project()?;
    let regs = ctx.registries()?;
    let lock = lock_project(ctx, &project, &regs, UpdatePolicy::Nothing)?.lock;
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
    if ctx.ui.json {
        let root = Node {
            name: m.name.to_string(),
            version: m.version.to_string(),
            source: "path".into(),
            dependencies: roots,
            repeated: false,
        };
        ctx.ui.json(&root)?;
    } else {
        let mut out = format!("{} {}\n", m.name, m.version);
        for (i, r) in roots.iter().enumerate() {
            print(r, "", i + 1 == roots.len(), &mut out);
        }
        crate::ui::stdout(&out);
    }
    Ok(ExitCode::SUCCESS)
}
