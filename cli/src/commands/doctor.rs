//! `ebpkg doctor`: can this machine build and load HIKe packages? Each check says
//! what it found and, when it fails, what to do.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use ebpkg::Ctx;
use ebpkg::exit::{Failure, fail};
use ebpkg::ops::doctor::{DoctorOptions, doctor};

#[derive(Args)]
#[command(after_help = "Examples:\n  sudo ebpkg doctor\n  sudo ebpkg doctor --fix")]
pub struct DoctorArgs {
    /// Also repair what no other command would: remove what no deployment owns
    /// (left by refused journals), temporary roots and files of processes that
    /// died, and empty roots; finish interrupted transactions.
    #[arg(long)]
    fix: bool,
}

pub fn run(ctx: &Ctx, args: DoctorArgs) -> Result<ExitCode> {
    let checks = doctor(ctx, &DoctorOptions { fix: args.fix });
    let failed = checks.iter().filter(|c| c.status == "fail").count();
    if ctx.ui.json {
        ctx.ui.json(&checks)?;
    } else {
        for c in &checks {
            ctx.ui.out(format!("{:>4}  {:<16} {}", c.status, c.name, c.found));
            if let Some(f) = &c.fix {
                ctx.ui.out(format!("      {:<16} fix: {f}", ""));
            }
        }
    }
    if failed > 0 {
        return Err(fail(Failure::Environment, format!("{failed} check(s) failed")));
    }
    Ok(ExitCode::SUCCESS)
}
