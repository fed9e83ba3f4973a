//! `ebpkg cache clean`.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand, ValueEnum};
use ebpkg_spec::cache_layout::CachePart;

use ebpkg::Ctx;
use ebpkg::ops::cache::{cache_dir, clean};

#[derive(Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    command: CacheCommand,
}

#[derive(Subcommand)]
enum CacheCommand {
    /// Remove cached archives, unpacked sources, built objects and registry servers' index files.
    #[command(
        after_help = "Examples:\n  ebpkg cache clean\n  ebpkg cache clean --only archives\n  ebpkg cache clean --only indexes"
    )]
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
    Indexes,
}

pub fn run(ctx: &Ctx, args: CacheArgs) -> Result<ExitCode> {
    match args.command {
        CacheCommand::Dir => ctx.ui.out(cache_dir(ctx).display()),
        CacheCommand::Clean { only } => {
            let parts = match only {
                Some(Part::Archives) => vec![CachePart::Archives],
                Some(Part::Sources) => vec![CachePart::Sources],
                Some(Part::Builds) => vec![CachePart::Builds],
                Some(Part::Indexes) => vec![CachePart::Indexes],
                None => vec![CachePart::Archives, CachePart::Sources, CachePart::Builds, CachePart::Indexes],
            };
            let removed = clean(ctx, &parts)?;
            if ctx.ui.json {
                ctx.ui.json(&serde_json::json!({ "files": removed.files, "bytes": removed.bytes }))?;
            } else {
                ctx.ui.status(
                    "Removed",
                    format!("{} file(s), {} bytes from {}", removed.files, removed.bytes, cache_dir(ctx).display()),
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
