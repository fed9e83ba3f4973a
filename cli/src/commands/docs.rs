//! `ebpkg completions` and `ebpkg man`: shell completions and manual pages,
//! generated from the same clap definitions as `--help`, so they cannot drift.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory};

use ebpkg::Ctx;

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg completions bash > /etc/bash_completion.d/ebpkg\n  ebpkg completions zsh > \"${fpath[1]}/_ebpkg\"\n  ebpkg completions fish > ~/.config/fish/completions/ebpkg.fish"
)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    shell: clap_complete::Shell,
}

#[derive(Args)]
#[command(
    after_help = "Examples:\n  ebpkg man | man -l -                       read ebpkg(1)\n  ebpkg man --out-dir /usr/local/share/man/man1   ebpkg.1 and a page per command"
)]
pub struct ManArgs {
    /// Write ebpkg.1 and one page per command (ebpkg-install.1, …) into this
    /// directory instead of printing ebpkg.1.
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
}

pub fn completions(_ctx: &Ctx, args: CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = crate::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "ebpkg", &mut out);
    ebpkg::ui::stdout(&String::from_utf8_lossy(&out));
    Ok(ExitCode::SUCCESS)
}

pub fn man(ctx: &Ctx, args: ManArgs) -> Result<ExitCode> {
    let cmd = crate::Cli::command();
    match args.out_dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir)
                .with_context(|| format!("cannot write pages into {}", dir.display()))?;
            ctx.ui.status("Wrote", format!("manual pages into {}", dir.display()));
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out).context("cannot render the manual page")?;
            ebpkg::ui::stdout(&String::from_utf8_lossy(&out));
        }
    }
    Ok(ExitCode::SUCCESS)
}
