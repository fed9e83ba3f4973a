//! `dataplane-bench`: runs the data-plane benchmark and writes `results.md`,
//! `results.json` and the plots (see `./ci/bench`). A benchmark, not a test:
//! missing a target fails only with `--check`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use ebpkg_packages_harness::bench::{calls, mmlf, report, tierup};

#[derive(Parser)]
#[command(about = "The data-plane benchmark: MMLF three ways, and the cost of a program call")]
struct Args {
    /// The ebpkg binary that installs the `mmlf` chain.
    #[arg(long)]
    ebpkg: PathBuf,
    /// Where results.md, results.json and the plots go.
    #[arg(long, default_value = "bench")]
    out: PathBuf,
    /// Interleaved rounds per measurement (at least 15 outside --quick).
    #[arg(long, default_value_t = 15)]
    rounds: usize,
    /// A short run (3 rounds, fewer repetitions), to see that everything works:
    /// figures, no verdicts.
    #[arg(long)]
    quick: bool,
    /// Exit with 1 when a target is missed.
    #[arg(long)]
    check: bool,
    /// Instead of the benchmark: run one MMLF variant (0 HIKe chain native, 1 monolithic,
    /// 2 tail calls) with live frames for --seconds, under a profiler, e.g.
    /// `perf record -e cpu-clock -a -g -- dataplane-bench --ebpkg E --spin 0`.
    #[arg(long)]
    spin: Option<usize>,
    /// With --spin: matching packets (0) or not (1).
    #[arg(long, default_value_t = 0)]
    kind: usize,
    /// With --spin: how long.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// The bpffs directory benchmark roots are made in.
    #[arg(long, default_value = "/sys/fs/bpf")]
    bpffs: PathBuf,
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned()))
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_owned();
    let jit = std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable").unwrap_or_default().trim().to_owned();
    let clang = std::process::Command::new(std::env::var("EBPKG_CLANG").unwrap_or_else(|_| "clang".into()))
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_default();
    let mitigations = std::fs::read_to_string("/sys/devices/system/cpu/vulnerabilities/spectre_v2")
        .unwrap_or_default()
        .trim()
        .to_owned();
    format!(
        "Machine: {cpu}, {cpus} CPUs; Linux {kernel}, BPF JIT {jit}; {clang}; Spectre v2: {mitigations}. \
         Measured with the packages built by ebpkg (clang -O2)."
    )
}

/// The ebpkg binary, absolute (it runs in package directories, where a relative
/// path would not resolve), and the build cache the MMLF packages are built in.
fn mmlf_inputs(args: &Args) -> Result<(PathBuf, PathBuf)> {
    let ebpkg = std::fs::canonicalize(&args.ebpkg).with_context(|| format!("{}", args.ebpkg.display()))?;
    let cache = std::env::var_os("EBPKG_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("ebpkg-bench-cache"));
    Ok((ebpkg, cache))
}

fn run(args: &Args) -> Result<bool> {
    let (rounds, repeat_calls, repeat_mmlf, live) =
        if args.quick { (3, 20_000, 100, 4_000) } else { (args.rounds.max(15), 1_000_000, 200, mmlf::MAX_LIVE_FRAMES) };
    std::fs::create_dir_all(&args.out).with_context(|| format!("create {}", args.out.display()))?;
    // Described before the calls benchmark pins this thread to one CPU.
    let machine = machine();
    eprintln!("the cost of a program call ({rounds} rounds)…");
    let calls = calls::run(&args.bpffs, rounds, repeat_calls)?;
    eprintln!("MMLF ({rounds} rounds)…");
    let (ebpkg, cache) = mmlf_inputs(args)?;
    let mmlf = mmlf::run(&ebpkg, &args.bpffs, &cache, rounds, repeat_mmlf, live)?;
    eprintln!("time to native ({} rounds)…", rounds.min(5));
    let tierup = tierup::run(&ebpkg, &args.bpffs, rounds.min(5))?;
    // A quick run has too few samples for its verdicts to mean anything.
    let verdicts = if args.quick { Vec::new() } else { report::verdicts(&calls, &mmlf) };
    let md = report::markdown(&machine, &calls, &mmlf, &tierup, &verdicts);
    std::fs::write(args.out.join("results.md"), &md)?;
    let json =
        serde_json::json!({ "machine": machine, "calls": calls, "mmlf": mmlf, "tierup": tierup, "targets": verdicts });
    std::fs::write(args.out.join("results.json"), serde_json::to_string_pretty(&json)? + "\n")?;
    report::load_font()?;
    report::plot_calls(&args.out.join("calls.png"), &calls)?;
    report::plot_mmlf(&args.out.join("mmlf.png"), &mmlf)?;
    print!("{md}");
    Ok(verdicts.iter().all(|v| v.met))
}

fn spin(args: &Args, variant: usize) -> Result<bool> {
    if variant >= mmlf::VARIANTS.len() || args.kind >= mmlf::KINDS.len() {
        anyhow::bail!("--spin takes 0, 1, 2 or 3 and --kind 0 or 1");
    }
    let (ebpkg, cache) = mmlf_inputs(args)?;
    let ns = mmlf::spin(&ebpkg, &args.bpffs, &cache, variant, args.kind, args.seconds)?;
    println!("{}, {} packets: {ns:.1} ns per live frame (median)", mmlf::VARIANTS[variant], mmlf::KINDS[args.kind]);
    Ok(true)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.spin {
        Some(v) => spin(&args, v),
        None => run(&args),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) if args.check => {
            eprintln!("dataplane-bench: a target was missed (see results.md)");
            ExitCode::from(1)
        }
        Ok(false) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dataplane-bench: {e:#}");
            ExitCode::from(2)
        }
    }
}
