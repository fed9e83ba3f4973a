//! `ebpkg cache clean`.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use ebpkg_sources::CleanScope;

use crate::Ctx;
use crate::exit::Failure;

#[derive(Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    command: CacheCommand,
}

#[derive(Subcommand)]
enum CacheCommand {
    /// Remove cached archives, unpacked sources and built objects.
    #[command(after_help = "Examples:\n  ebpkg cache clean\n  ebpkg cache clean --only archives")]
    Clean {
        /// Only this part of the cache.
        #[arg(long, value_enum)]
        only: Option<Part>,
    },
    /// Print where the cache is.
    Dir,
}

#[derive(Clone, Copy, ValueEnum)]
enum Part {
    Archives,
    Sources,
    Builds,
}

pub fn run(ctx: &Ctx, args: CacheArgs) -> Result<ExitCode> {
    let cache = ctx.cache();
    match args.command {
        CacheCommand::Dir => ctx.ui.out(cache.root().display()),
        CacheCommand::Clean { only } => {
            let (mut files, mut bytes) = (0, 0);
            if matches!(only, None | Some(Part::Archives | Part::Sources)) {
                let scope = match only {
                    Some(Part::Archives) => CleanScope::Archives,
                    Some(Part::Sources) => CleanScope::Sources,
                    _ => CleanScope::All,
                };
                let r = cache.clean(scope)?;
                files += r.files;
                bytes += r.bytes;
            }
            if matches!(only, None | Some(Part::Builds)) {
                for sub in ["objects", "vmlinux", "sdk"] {
                    let (f, b) = remove_tree(&cache.root().join(sub))?;
                    files += f;
                    bytes += b;
                }
            }
            if ctx.ui.json {
                ctx.ui.json(&serde_json::json!({ "files": files, "bytes": bytes }))?;
            } else {
                ctx.ui.status("Removed", format!("{files} file(s), {bytes} bytes from {}", cache.root().display()));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Removes a directory tree; returns the files and bytes it held.
fn remove_tree(dir: &std::path::Path) -> Result<(u64, u64)> {
    fn count(dir: &std::path::Path, acc: &mut (u64, u64)) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => count(&e.path(), acc),
                Ok(_) => {
                    acc.0 += 1;
                    acc.1 += e.metadata().map(|m| m.len()).unwrap_or(0);
                }
                Err(_) => {}
            }
        }
    }
    let mut acc = (0, 0);
    count(dir, &mut acc);
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(acc),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((0, 0)),
        Err(e) => Err(crate::exit::fail(Failure::Environment, format!("cannot remove {}: {e}", dir.display()))),
    }
}
