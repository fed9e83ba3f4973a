//! `install-bench`: `ebpkg install` of the DDoS chain, cold and warm, against the
//! same compiles and loads done by hand with clang and bpftool; writes
//! `install.md` and `install.json` (see `./ci/bench`). A benchmark, not a test:
//! missing a target fails only with `--check`.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use ebpkg_packages_harness::bench::{cli, install};

/// Targets (issue 17): a warm install within this factor of the raw loads, a cold
/// one within this factor of the raw compile-and-load sequence.
const WARM_TARGET: f64 = 1.2;
const COLD_TARGET: f64 = 1.3;

#[derive(Parser)]
#[command(about = "ebpkg install, cold and warm, against clang and bpftool by hand")]
struct Args {
    #[command(flatten)]
    common: cli::Common,
}

fn main() -> ExitCode {
    let args = Args::parse();
    cli::exit_code("install-bench", run(&args.common), args.common.check)
}

fn run(args: &cli::Common) -> Result<bool> {
    let ebpkg = std::fs::canonicalize(&args.ebpkg).with_context(|| format!("{}", args.ebpkg.display()))?;
    let rounds = args.rounds();
    std::fs::create_dir_all(&args.out)?;
    let r = install::run(&ebpkg, &ebpkg_packages_harness::packages_dir(), rounds)?;
    // The floors: the loads alone with libbpf (only the programs ebpkg loads), and
    // the same after the by-hand compiles.
    let raw_warm = r.minimal_warm_ms.median;
    let raw_cold = r.hand_compile_ms.median + raw_warm;
    let warm = r.ebpkg_warm.ms.median / raw_warm;
    let cold = r.ebpkg_cold.ms.median / raw_cold;
    let (warm_met, cold_met) = (warm <= WARM_TARGET, cold <= COLD_TARGET);
    let verdict = |met: bool| if met { "met" } else { "**missed**" };
    let mut s = String::from("# Install benchmark\n\n");
    let _ = writeln!(
        s,
        "Written by `./ci/bench` (`install-bench`). `ebpkg install ddos@^1 --set DEVNAME=in0 --chain-mode interpreted` \
         (release build, from a file:// registry holding the first-party packages, onto a veth in a network \
         namespace) against the same work by hand: the same {} clang commands (made by the same `ebpkg_build` \
         function, run one after another as a script runs them), `bpftool prog loadall` of the objects of the {} \
         registered programs, of the loader and of the VM's continuation (which HIKe programs need), `bpftool map \
         update` of the VM's program array for each program, and `bpftool net attach` of the loader (in a mount namespace of its own with a fresh bpffs). Cold: ebpkg's \
         build cache emptied first (the sources stay unpacked, `vmlinux.h` generated); warm: a reinstall after `ebpkg \
         uninstall`, against the loads alone. ebpkg compiles with as many clang processes as CPUs (2 here). Median \
         (min–max) of {rounds} interleaved rounds after a warm-up.\n",
        r.compiles, r.programs
    );
    let _ = writeln!(
        s,
        "## Targets\n\nThe floors are the loads alone done the leanest way: in one process with libbpf, each object \
         opened with only the programs ebpkg loads (the loader object also holds two loaders the chain does not \
         use, each with an interpreter: `bpftool prog loadall` loads them too), the VM's maps shared by name, each \
         program put in the VM's program array, the loader attached; cold adds the by-hand compiles.\n\n\
         | | measured | target | |\n|---|---:|---:|---|\n\
         | warm install: ebpkg ({} ms) / the raw loads ({} ms) | {warm:.2}× | ≤ {WARM_TARGET}× | {} |\n\
         | cold install: ebpkg ({} ms) / compile + raw loads ({raw_cold:.0} ms) | {cold:.2}× | ≤ {COLD_TARGET}× | {} |\n",
        r.ebpkg_warm.ms.show(0),
        r.minimal_warm_ms.show(0),
        verdict(warm_met),
        r.ebpkg_cold.ms.show(0),
        verdict(cold_met)
    );
    let _ = writeln!(
        s,
        "The by-hand script itself (clang, then bpftool): {} ms cold, of which compiling {} ms; {} ms warm \
         (bpftool's loads of every program in each object). A warm install with the chain compiled native \
         (`--chain-mode auto`, the default): {} ms. Peak RSS of `ebpkg install`: {:.0} MiB cold, {:.0} MiB warm.\n",
        r.hand_cold.ms.show(0),
        r.hand_compile_ms.show(0),
        r.hand_warm.ms.show(0),
        r.ebpkg_warm_native_ms.show(0),
        r.ebpkg_cold.rss_mib.as_ref().map_or(f64::NAN, |m| m.median),
        r.ebpkg_warm.rss_mib.as_ref().map_or(f64::NAN, |m| m.median),
    );
    let _ = writeln!(s, "## Where an install's time goes\n\n`ebpkg install --timings`, medians:\n");
    let _ = writeln!(s, "| phase | warm (ms) | cold (ms) |\n|---|---:|---:|");
    for (name, w) in &r.warm_phases {
        let c = r.cold_phases.iter().find(|(n, _)| n == name).map_or(f64::NAN, |(_, ms)| *ms);
        let _ = writeln!(s, "| {name} | {w:.1} | {c:.1} |");
    }
    let _ = writeln!(
        s,
        "\nIn the kernel (`strace -T` of one warm install and of the by-hand loads, outside the timed rounds): \
         ebpkg spent {:.0} ms in {} `BPF_PROG_LOAD` calls (the verifier and the JIT), {:.0}% of the warm install; \
         by hand, {:.0} ms in {} (bpftool loads every program of an object: the loader object's other loaders \
         too). The rest of a warm install is user space: opening and relocating objects, reading the \
         deployment's state, registering programs, the transaction's journal.",
        r.ebpkg_prog_load_ms,
        r.ebpkg_prog_loads,
        100.0 * r.ebpkg_prog_load_ms / r.ebpkg_warm.ms.median,
        r.hand_prog_load_ms,
        r.hand_prog_loads
    );
    std::fs::write(args.out.join("install.md"), &s)?;
    std::fs::write(args.out.join("install.json"), serde_json::to_string_pretty(&r)? + "\n")?;
    print!("{s}");
    Ok(warm_met && cold_met)
}
