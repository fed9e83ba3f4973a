//! `ebpkg lock`, `ebpkg update` and `ebpkg tree`.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use ebpkg_spec::{Lockfile, PackageName};

use ebpkg::Ctx;
use ebpkg::ops::lock::{self as ops, Node, Updated};

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
    let (locked, n) = ops::fetch(ctx)?;
    if ctx.ui.json {
        ctx.ui.json(&serde_json::json!({ "packages": packages_json(&locked.lock) }))?;
    } else {
        ctx.ui.status("Ready", format!("{n} package{} in the cache", if n == 1 { "" } else { "s" }));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn lock(ctx: &Ctx, _args: LockArgs) -> Result<ExitCode> {
    let (project, locked) = ops::lock(ctx)?;
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
    let names = args
        .packages
        .iter()
        .map(|p| PackageName::new(p).map_err(|e| ebpkg::exit::bad_name(p, &e)))
        .collect::<Result<Vec<_>>>()?;
    let Updated { locked, newer } = ops::update(ctx, &names)?;
    if ctx.ui.json {
        ctx.ui.json(&serde_json::json!({ "written": locked.written, "packages": packages_json(&locked.lock) }))?;
    } else {
        if !locked.written {
            ctx.ui.status("Fresh", "every dependency is at its newest allowed version");
        }
        for n in newer {
            let what = format!(
                "{} {}, which ebpkg.toml's `{}` does not allow (locked: {})",
                n.name, n.newest, n.requirement, n.locked
            );
            match n.refused {
                None => ctx.ui.status("Available", format!("{what}; `ebpkg add {}@{}` moves to it", n.name, n.newest)),
                Some(why) => {
                    ctx.ui.status("Untrusted", format!("{what}, but the trust policy refuses it: it {why}"));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn packages_json(lock: &Lockfile) -> Vec<serde_json::Value> {
    lock.packages()
        .iter()
        .map(|p| serde_json::json!({ "name": p.name, "version": p.version.to_string(), "source": p.source.as_str(), "checksum": p.checksum.to_hex() }))
        .collect()
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
    let root = ops::tree(ctx)?;
    if ctx.ui.json {
        ctx.ui.json(&root)?;
    } else {
        let mut out = format!("{} {}\n", root.name, root.version);
        for (i, r) in root.dependencies.iter().enumerate() {
            print(r, "", i + 1 == root.dependencies.len(), &mut out);
        }
        ebpkg::ui::stdout(&out);
    }
    Ok(ExitCode::SUCCESS)
}
