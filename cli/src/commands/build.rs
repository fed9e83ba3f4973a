//! `ebpkg build`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use ebpkg::Ctx;
use ebpkg::ops::build::{BuildOptions, BuildProjectOptions, BuiltObject, BuiltProject, build_project};

#[derive(Args)]
#[command(
    after_help = "Objects are portable: compiled once against the HIKe SDK's reference kernel types, they load on \
every kernel with BTF (libbpf relocates them), so a cached one is reused by any kernel and needs no clang. A \
package with `build = \"local\"` in [package.kernel] is compiled against the running kernel's own types instead.\n\n\
Examples:\n  ebpkg build                 portable objects (in the build cache)\n  ebpkg build --btf vmlinux   build = \"local\" packages against another kernel's BTF\n  ebpkg build --out-dir out   and copy the objects there"
)]
pub struct BuildArgs {
    /// Build packages with `build = "local"` against this BTF file instead of the
    /// running kernel's (portable objects depend on no kernel).
    #[arg(long, value_name = "FILE")]
    btf: Option<PathBuf>,
    /// Copy the objects into this directory (named <file>.<hook>.o).
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Also have the kernel verify every program and loader (in a HIKe root of
    /// this run's own) and print the verifier's statistics. Needs root.
    #[arg(long)]
    verify: bool,
}

pub fn run(ctx: &Ctx, args: BuildArgs) -> Result<ExitCode> {
    let project = ctx.project()?;
    let opts = BuildProjectOptions {
        build: BuildOptions { btf: args.btf, ..BuildOptions::default() },
        out_dir: args.out_dir,
        verify: args.verify,
    };
    let BuiltProject { objects, stats } = build_project(ctx, project, opts)?;
    let mut out = Vec::new();
    for BuiltObject { object: o, path } in &objects {
        let verified: Vec<&hike_runtime::VerifierStats> =
            stats.iter().filter(|(obj, _)| obj == &o.object_name).map(|(_, s)| s).collect();
        out.push(serde_json::json!({
            "source": o.object_name, "hook": o.hook.name(), "object": path,
            "programs": o.programs, "loaders": o.loaders, "verifier": verified,
        }));
        if !ctx.ui.json {
            ctx.ui.out(format!("{} ({}) -> {}", o.object_name, o.hook.name(), path.display()));
        }
    }
    if !ctx.ui.json && !stats.is_empty() {
        ctx.ui.out(
            "\n| program | object | insns | processed | states (peak) | stack | verified in |\n|---|---|---:|---:|---:|---|---:|",
        );
        for (obj, s) in &stats {
            ctx.ui.out(format!(
                "| `{}` | {obj} | {} | {} | {} ({}) | {} | {} µs |",
                s.program, s.insns, s.insns_processed, s.total_states, s.peak_states, s.stack_depth, s.verification_us
            ));
        }
    }
    if ctx.ui.json {
        ctx.ui.json(&out)?;
    } else if objects.is_empty() {
        ctx.ui.status("Finished", format!("{} has no programs or loaders to build", project.manifest.package.name));
    }
    Ok(ExitCode::SUCCESS)
}
