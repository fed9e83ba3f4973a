//! `ebpkg build`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::build::{BuildInput, BuildOptions, build_packages};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg build                 objects for the running kernel (in the build cache)\n  ebpkg build --btf vmlinux   against another kernel's BTF\n  ebpkg build --out-dir out   and copy the objects there"
)]
pub struct BuildArgs {
    /// Build against this BTF file instead of the running kernel's.
    #[arg(long, value_name = "FILE")]
    btf: Option<PathBuf>,
    /// Copy the objects into this directory (named <file>.<hook>.o).
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
}

pub fn run(ctx: &Ctx, args: BuildArgs) -> Result<ExitCode> {
    let project = ctx.project()?;
    let packed = ebpkg_archive::pack(&project.dir).map_err(|e| fail(Failure::Input, e.render().trim_end()))?;
    let objects = build_packages(
        ctx,
        &[BuildInput { root: &project.dir, digest: packed.sha256, manifest: &project.manifest }],
        &BuildOptions { btf: args.btf },
    )?
    .pop()
    .unwrap_or_default();
    let mut out = Vec::new();
    for o in &objects {
        let path = match &args.out_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| fail(Failure::Input, format!("{}: {e}", dir.display())))?;
                let name = format!("{}.{}.o", o.object_name.replace('/', "_"), o.hook.name());
                let dest = dir.join(name);
                std::fs::copy(&o.path, &dest).map_err(|e| fail(Failure::Input, format!("{}: {e}", dest.display())))?;
                dest
            }
            None => o.path.clone(),
        };
        out.push(serde_json::json!({
            "source": o.object_name, "hook": o.hook.name(), "object": path,
            "programs": o.programs, "loaders": o.loaders,
        }));
        if !ctx.ui.json {
            ctx.ui.out(format!("{} ({}) -> {}", o.object_name, o.hook.name(), path.display()));
        }
    }
    if ctx.ui.json {
        ctx.ui.json(&out)?;
    } else if objects.is_empty() {
        ctx.ui.status("Finished", format!("{} has no programs or loaders to build", project.manifest.package.name));
    }
    Ok(ExitCode::SUCCESS)
}
