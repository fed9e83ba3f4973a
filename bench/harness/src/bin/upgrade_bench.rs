//! `upgrade-bench`: changing a running DDoS deployment — upgrading one package,
//! rolling back, changing a parameter, redeploying with nothing changed —
//! against the floors of issue 39; writes `upgrade.md` and `upgrade.json` (see
//! `./ci/bench`). A benchmark, not a test: missing a target fails only with
//! `--check`.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use ebpkg_packages_harness::bench::{cli, upgrade};

/// An upgrade within this factor of loading the package's programs by hand; a
/// rollback within this factor of the upgrade.
const UPGRADE_TARGET: f64 = 1.3;
const ROLLBACK_TARGET: f64 = 1.3;
/// Redeploys, in milliseconds.
const PARAM_TARGET_MS: f64 = 300.0;
const NOOP_TARGET_MS: f64 = 150.0;

#[derive(Parser)]
#[command(about = "ebpkg upgrade, rollback and redeploys of a running deployment")]
struct Args {
    #[command(flatten)]
    common: cli::Common,
}

fn main() -> ExitCode {
    let args = Args::parse();
    cli::exit_code("upgrade-bench", run(&args.common), args.common.check)
}

fn run(args: &cli::Common) -> Result<bool> {
    let ebpkg = std::fs::canonicalize(&args.ebpkg).with_context(|| format!("{}", args.ebpkg.display()))?;
    let rounds = args.rounds();
    std::fs::create_dir_all(&args.out)?;
    let r = upgrade::run(&ebpkg, &ebpkg_packages_harness::packages_dir(), rounds)?;
    let upgrade = r.upgrade_ms.median / r.floor_ms.median;
    let rollback = r.rollback_ms.median / r.upgrade_ms.median;
    let met = [
        upgrade <= UPGRADE_TARGET,
        rollback <= ROLLBACK_TARGET,
        r.param_ms.median <= PARAM_TARGET_MS,
        r.noop_ms.median <= NOOP_TARGET_MS,
    ];
    let verdict = |met: bool| if met { "met" } else { "**missed**" };
    let mut s = String::from("# Upgrade benchmark\n\n");
    let _ = writeln!(
        s,
        "Written by `./ci/bench` (`upgrade-bench`). The DDoS chain's six packages deployed with `ebpkg install \
         ddos@^1` (release build, a file:// registry, a veth in a network namespace). Upgrade: `meter` moves to a new \
         version published with its portable objects (one program's source changed), `--chain-mode interpreted`; \
         its floor is that version's {} programs loaded by hand the leanest way (one process, libbpf, the VM's maps \
         by name, each program put in the VM's program array), as the install benchmark's floor. Rollback: `ebpkg \
         rollback ddos` to the generation before the upgrade. Redeploys, the chain native (the default): `--set \
         DEVNAME=` another interface, and the same command again. Median (min–max) of {rounds} rounds after a \
         warm-up.\n",
        r.programs
    );
    let _ = writeln!(
        s,
        "## Targets\n\n| | measured | target | |\n|---|---:|---:|---|\n\
         | upgrade of one package: ebpkg ({} ms) / its programs loaded by hand ({} ms) | {upgrade:.2}× | ≤ {UPGRADE_TARGET}× | {} |\n\
         | rollback to the previous generation ({} ms) / that upgrade | {rollback:.2}× | ≤ {ROLLBACK_TARGET}× | {} |\n\
         | redeploy with only a parameter changed | {:.0} ms | ≤ {PARAM_TARGET_MS:.0} ms | {} |\n\
         | redeploy of an unchanged deployment | {:.0} ms | ≤ {NOOP_TARGET_MS:.0} ms | {} |\n",
        r.upgrade_ms.show(0),
        r.floor_ms.show(0),
        verdict(met[0]),
        r.rollback_ms.show(0),
        verdict(met[1]),
        r.param_ms.median,
        verdict(met[2]),
        r.noop_ms.median,
        verdict(met[3]),
    );
    let _ = writeln!(
        s,
        "Redeploys, min–max: parameter {} ms, unchanged {} ms. Zero packets lost and counters never reset across \
         upgrade and rollback under traffic are kernel tests (`cli/tests/it/upgrade_state.rs`), not timings.",
        r.param_ms.show(0),
        r.noop_ms.show(0)
    );
    std::fs::write(args.out.join("upgrade.md"), &s)?;
    std::fs::write(args.out.join("upgrade.json"), serde_json::to_string_pretty(&r)? + "\n")?;
    print!("{s}");
    Ok(met.iter().all(|m| *m))
}
