//! `ebpkg new` and `ebpkg init`: a package to start from — a chain project by
//! default, or a package of HIKe programs with a test.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use ebpkg::Ctx;
use ebpkg::ops::new::{self as ops, Created, NewOptions};

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg new edge-guard              a chain project\n  ebpkg new flowstats --program     a package of HIKe programs, with a test"
)]
pub struct NewArgs {
    /// The directory to create; its name is the package's name unless --name says otherwise.
    path: PathBuf,
    #[command(flatten)]
    kind: Kind,
}

#[derive(Args)]
#[command(after_help = "Examples:\n  ebpkg init\n  ebpkg init --program --name flowstats")]
pub struct InitArgs {
    #[command(flatten)]
    kind: Kind,
}

#[derive(Args)]
struct Kind {
    /// A package of HIKe programs (C, with a test) instead of a chain project.
    #[arg(long)]
    program: bool,
    /// The package's name (default: the directory's name).
    #[arg(long)]
    name: Option<String>,
}

pub fn new(ctx: &Ctx, args: NewArgs) -> Result<ExitCode> {
    report(ctx, &ops::new(ctx, &args.path, &args.kind.options())?);
    Ok(ExitCode::SUCCESS)
}

pub fn init(ctx: &Ctx, args: InitArgs) -> Result<ExitCode> {
    report(ctx, &ops::init(ctx, &args.kind.options())?);
    Ok(ExitCode::SUCCESS)
}

impl Kind {
    fn options(self) -> NewOptions {
        NewOptions { program: self.program, name: self.name }
    }
}

fn report(ctx: &Ctx, created: &Created) {
    let Created { name, dir, program, remembered_registry } = created;
    if let Some(registry) = remembered_registry {
        ctx.ui.status("Remembered", format!("{registry} in {}", ebpkg::config::PROJECT_CONFIG));
    }
    ctx.ui.status(
        "Created",
        format!("{} package `{name}` in {}", if *program { "program" } else { "chain" }, dir.display()),
    );
    if !program {
        ctx.ui.status(
            "Next",
            "`ebpkg add <package>`, write chains/main.eclat, then `sudo ebpkg install --set DEVNAME=<if>`",
        );
    } else {
        ctx.ui.status("Next", "write the program in src/, then `sudo ebpkg test` and `ebpkg publish`");
    }
}
