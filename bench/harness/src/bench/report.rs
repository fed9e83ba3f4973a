//! bench/results.md and its plots.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use plotters::prelude::*;

use super::calls::CallsResult;
use super::mmlf::{KINDS, MmlfResult, VARIANTS};
use super::stats::Summary;
use super::tierup::TierUpResult;

/// The targets this benchmark checks (issue 16): the native tier against the
/// monolithic program and against raw tail calls of the same shape.
pub const TARGET_MMLF_MATCHING: f64 = 1.05;
pub const TARGET_MMLF_NOT_MATCHING: f64 = 1.10;
pub const TARGET_NATIVE_CALL: f64 = 1.0;

/// A target and whether it was met.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verdict {
    pub what: String,
    pub measured: f64,
    pub target: f64,
    pub met: bool,
}

pub fn verdicts(calls: &CallsResult, mmlf: &MmlfResult) -> Vec<Verdict> {
    let mut out = Vec::new();
    // Time per frame, live (the paper's measure: throughput, the redirect's own
    // cost included), and BPF_PROG_TEST_RUN.
    for (k, target) in [(0, TARGET_MMLF_MATCHING), (1, TARGET_MMLF_NOT_MATCHING)] {
        for (how, ratio) in [("live frames", mmlf.ratio_live[k]), ("test runs", mmlf.ratio_ns[k])] {
            out.push(Verdict {
                what: format!(
                    "MMLF, {} packets, {how}: time per packet, native chain / monolithic (95% interval {:.2}–{:.2})",
                    KINDS[k], ratio.low, ratio.high
                ),
                measured: ratio.value,
                target,
                met: ratio.value <= target,
            });
        }
    }
    // Like with like: each shape against raw tail calls of the same shape.
    for (what, shape) in [("one program called N times", &calls.same), ("N distinct programs", &calls.distinct)] {
        out.push(Verdict {
            what: format!(
                "marginal cost of a program call, {what}: native chain / raw constant-key tail call (95% interval {:.2}–{:.2})",
                shape.native_ratio.low, shape.native_ratio.high
            ),
            measured: shape.native_ratio.value,
            target: TARGET_NATIVE_CALL,
            met: shape.native_ratio.value <= TARGET_NATIVE_CALL,
        });
    }
    out
}

pub fn markdown(
    machine: &str,
    calls: &CallsResult,
    mmlf: &MmlfResult,
    tierup: &TierUpResult,
    verdicts: &[Verdict],
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Data-plane benchmark\n");
    let _ = writeln!(
        s,
        "Written by `./ci/bench`; every number is the median of interleaved rounds, with the lowest and highest \
         round in parentheses. Compare runs only on the same machine.\n"
    );
    let _ = writeln!(s, "{machine}\n");
    if verdicts.is_empty() {
        let _ = writeln!(s, "A `--quick` run: figures only, too few samples for verdicts.\n");
    } else {
        let _ = writeln!(s, "## Targets\n\n| | measured | target | |\n|---|---:|---:|---|");
    }
    for v in verdicts {
        let _ = writeln!(
            s,
            "| {} | {:.2}× | ≤ {:.2}× | {} |",
            v.what,
            v.measured,
            v.target,
            if v.met { "met" } else { "**missed**" }
        );
    }
    let _ = writeln!(s, "\n## MMLF: Match, Mark, Lookup, Forward\n");
    let _ = writeln!(
        s,
        "IPv6 frames of 64 bytes arriving on a veth in a network namespace with a route and a neighbour for the \
         destination. Matching: the source is in the blacklist, so the frame is marked (traffic class 0xb8), looked \
         up in the FIB, rewritten and redirected out of another veth. Not matching: it goes to the kernel. Variants: \
         the `mmlf` chain of the `mmlf` package installed by ebpkg (the `l3_sc` loader and four HIKe programs) in its \
         native tier (`ebpkg install`'s default: the chain and the programs' bodies compiled into one program the \
         loader tail-calls) and with that program taken out of its slot (the VM interprets the chain), the \
         hand-written monolithic program (`packages/mmlf/bench/mmlf_mono.bpf.c`), and the same steps chained with \
         plain tail calls (`mmlf_tail.bpf.c`).\n"
    );
    let _ = writeln!(
        s,
        "ns per packet: BPF_PROG_TEST_RUN; a sample is the fastest of {} runs of {} repetitions (interference \
         from the rest of the machine only adds time). Packets per second: a sample is the fastest of {} \
         BPF_PROG_TEST_RUNs of {} live frames each (`BPF_F_TEST_XDP_LIVE_FRAMES`: redirected frames really leave through \
         the veth, passed ones enter the kernel's stack; every run checks that exactly the matching frames reached \
         the far end), from the kernel's time per frame (it leaves out the time the run yields the CPU between \
         batches: on this 2-CPU machine wall-clock rates were quantised to scheduler ticks). A live run reuses its \
         frames' pages without copying the packet in again, and forwarding decrements the hop limit, so runs are \
         kept short enough that no page runs out of hops.\n",
        25,
        mmlf.repeat,
        super::mmlf::LIVE_RUNS,
        mmlf.live_frames
    );
    let _ = writeln!(
        s,
        "| packets | variant | ns per packet | × monolithic | Mpps (live) | × monolithic |\n|---|---|---:|---:|---:|---:|"
    );
    for (k, kind) in KINDS.iter().enumerate() {
        for (v, variant) in VARIANTS.iter().enumerate() {
            let ns = &mmlf.ns[k][v];
            let pps = &mmlf.pps[k][v];
            let _ = writeln!(
                s,
                "| {kind} | {variant} | {} | {:.2} | {:.3} ({:.3}–{:.3}) | {:.2} |",
                ns.show(1),
                ns.median / mmlf.ns[k][1].median,
                pps.median / 1e6,
                pps.min / 1e6,
                pps.max / 1e6,
                pps.median / mmlf.pps[k][1].median
            );
        }
    }
    let _ = writeln!(
        s,
        "\nTime per packet against the monolithic program, with 95% bootstrap intervals (rounds resampled, pairs kept), \
         over {} rounds (rounds are added, up to {}× those asked, until the matching live ratio's interval is narrower \
         than {:.2}): native chain, matching {} (test runs) and {} (live frames), not matching {} and {}; VM, matching \
         {} and {}, not matching {} and {}.",
        mmlf.rounds,
        super::mmlf::MAX_ROUND_FACTOR,
        super::mmlf::MAX_INTERVAL,
        mmlf.ratio_ns[0].show(2),
        mmlf.ratio_live[0].show(2),
        mmlf.ratio_ns[1].show(2),
        mmlf.ratio_live[1].show(2),
        mmlf.ratio_ns_vm[0].show(2),
        mmlf.ratio_live_vm[0].show(2),
        mmlf.ratio_ns_vm[1].show(2),
        mmlf.ratio_live_vm[1].show(2)
    );
    let _ = writeln!(s, "\n![MMLF ns per packet](mmlf.png)\n");
    s.push_str(&tier_up(tierup));
    s.push_str(&cost_model(calls, mmlf));
    let _ = writeln!(s, "## The cost of a program call\n");
    let _ = writeln!(
        s,
        "Like with like, in two shapes. *One program*: a chain calling one null program N times, against one null \
         program tail-calling itself N times. *Distinct programs*: a chain calling N distinct null programs (30 \
         registrations of one object, each with its own JIT image), against N distinct null programs each \
         tail-calling the next; constant keys (the JIT emits patched direct jumps) and keys read at run time \
         (indirect jumps). BPF_PROG_TEST_RUN on CPU {}, {} repetitions per sample, {} interleaved rounds in rotating \
         order after a warm-up round; steal time during the run {:.2}%. Each cell: median (min–max) ns per packet. \
         Marginal cost per call: the Theil–Sen slope over all samples, with a 95% bootstrap interval (rounds \
         resampled; ratios resample both sides' rounds together).\n",
        calls.cpu, calls.repeat, calls.rounds, calls.steal_percent
    );
    let _ = writeln!(
        s,
        "| N | native, one program | VM, one program | raw, one program | native, distinct | VM, distinct | raw, distinct, constant keys | raw, distinct, dynamic keys |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (i, n) in calls.sizes.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {n} | {} | {} | {} | {} | {} | {} | {} |",
            calls.same.native.points[i].show(1),
            calls.same.vm.points[i].show(1),
            calls.same.raw.points[i].show(1),
            calls.distinct.native.points[i].show(1),
            calls.distinct.vm.points[i].show(1),
            calls.distinct.raw.points[i].show(1),
            calls.raw_dyn.points[i].show(1)
        );
    }
    let _ = writeln!(
        s,
        "\n| marginal ns per call | native chain | HIKe VM | raw tail call | native / raw | VM / raw |\n|---|---:|---:|---:|---:|---:|\n\
         | one program | {} | {} | {} | {} | {} |\n| distinct programs, constant keys | {} | {} | {} | {} | {} |\n\
         | distinct programs, dynamic keys | | {} | {} | | {} |\n",
        calls.same.native.per_call.show(2),
        calls.same.vm.per_call.show(2),
        calls.same.raw.per_call.show(2),
        calls.same.native_ratio.show(2),
        calls.same.ratio.show(2),
        calls.distinct.native.per_call.show(2),
        calls.distinct.vm.per_call.show(2),
        calls.distinct.raw.per_call.show(2),
        calls.distinct.native_ratio.show(2),
        calls.distinct.ratio.show(2),
        calls.distinct.vm.per_call.show(2),
        calls.raw_dyn.per_call.show(2),
        calls.ratio_dyn.show(2)
    );
    let _ = writeln!(
        s,
        "A chain without calls: {} ns; a raw test run without hops (the floor): {} ns. The original HIKe measured \
         about 3.4× a raw tail call.\n",
        calls.vm_empty.show(1),
        calls.raw_floor.show(1)
    );
    if !calls.warnings.is_empty() {
        let _ = writeln!(s, "**Fits not to be believed as they stand:**\n");
        for w in &calls.warnings {
            let _ = writeln!(s, "- {w}");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "Interpreting chain instructions between calls: {:.2} ns per instruction (chains of {} moves: {}).\n",
        calls.per_insn_vm,
        super::calls::INSNS.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", "),
        calls.insns.iter().map(|s| format!("{:.1}", s.median)).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(s, "![ns per packet against the number of calls](calls.png)");
    s
}

/// How long the ddos chain takes to go native.
fn tier_up(t: &TierUpResult) -> String {
    let mut s = String::from("## Time to native\n\n");
    let warm_build = Summary::of(&t.warm.iter().map(|w| w.build_ms as f64).collect::<Vec<_>>());
    let warm_load = Summary::of(&t.warm.iter().map(|w| w.load_ms as f64).collect::<Vec<_>>());
    let warm_wall = Summary::of(&t.warm.iter().map(|w| w.wall_ms).collect::<Vec<_>>());
    let _ = writeln!(
        s,
        "The `ddos` package's chain (eight program calls, five packages) installed on a veth with `ebpkg install \
         --force`, all objects built and cached: `--chain-mode interpreted` {} ms, the default (native) {} ms: \
         **{:.2}×** the interpreted install. Inside it, the native build took {} ms with its modules from the cache \
         ({} ms the first time, compiling its package sources into an empty cache), and loading, \
         verifying and swapping it into the chain's slot {} ms. The program: {} instructions; the verifier processed \
         {}. Packets run interpreted from the moment the interfaces are switched, natively once the slot is \
         written.\n",
        t.interpreted_ms.show(0),
        warm_wall.show(0),
        t.ratio,
        warm_build.show(0),
        t.cold.build_ms,
        warm_load.show(0),
        t.cold.insns,
        t.cold.verified_insns
    );
    s
}

/// What the chain's extra time per packet should be, from the VM's measured
/// costs, next to what was measured: so a reader sees what the gap is made of.
fn cost_model(calls: &CallsResult, mmlf: &MmlfResult) -> String {
    // The mmlf6 chain on its two paths (`ebpkg chain compile --emit asm`):
    // (kind, program calls, other instructions interpreted).
    const PATHS: [(usize, u32, u32); 2] = [(0, 4, 5), (1, 1, 3)];
    // The chain calls distinct programs: the model uses that shape's costs.
    let per_call = calls.distinct.vm.per_call.value;
    // Loader, parse, chain start and exit, against a plain XDP program (a raw
    // test run without hops).
    let start = calls.vm_empty.median - calls.raw_floor.median;
    let mut s = String::from(
        "**Where the interpreted chain's extra time goes.** A model from the VM's own costs measured below: the loader's \
         parse and chain start against a plain program, the marginal cost of a program call (which includes \
         interpreting its `call`), and of every other chain instruction interpreted.\n\n\
         | packets | calls | other instructions | model: start + calls + instructions | measured: VM chain − monolithic |\n\
         |---|---:|---:|---:|---:|\n",
    );
    for (k, n_calls, n_insns) in PATHS {
        let model = start + f64::from(n_calls) * per_call + f64::from(n_insns) * calls.per_insn_vm;
        let _ = writeln!(
            s,
            "| {} | {n_calls} | {n_insns} | {:.0} ns = {:.0} + {:.0} + {:.0} | {:.0} ns |",
            KINDS[k],
            model,
            start,
            f64::from(n_calls) * per_call,
            f64::from(n_insns) * calls.per_insn_vm,
            mmlf.ns[k][3].median - mmlf.ns[k][1].median
        );
    }
    s.push_str(
        "\nThe profile behind these numbers (`dataplane-bench --spin 0` under `perf record -e cpu-clock`) and what \
         could still be taken out of them: `hike-sdk/docs/BYTECODE.md`, section 10.\n\n",
    );
    s
}

/// Registers the font plots are labelled with (Debian's fonts-dejavu-core).
pub fn load_font() -> Result<()> {
    const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
    let bytes = std::fs::read(FONT).with_context(|| format!("{FONT} (ci/setup installs fonts-dejavu-core)"))?;
    plotters::style::register_font("sans-serif", FontStyle::Normal, Box::leak(bytes.into_boxed_slice()))
        .map_err(|_| anyhow::anyhow!("{FONT} is not a font plotters can read"))
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing a plot: {e:?}")
}

pub fn plot_calls(path: &Path, calls: &CallsResult) -> Result<()> {
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let all = [
        &calls.same.vm,
        &calls.same.raw,
        &calls.distinct.vm,
        &calls.distinct.raw,
        &calls.raw_dyn,
        &calls.same.native,
        &calls.distinct.native,
    ];
    let ymax = all.iter().flat_map(|s| &s.points).map(|s| s.max).fold(0.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption("ns per packet against program calls per packet", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0u32..31u32, 0f64..ymax)
        .map_err(err)?;
    chart.configure_mesh().x_desc("calls per packet").y_desc("ns per packet").draw().map_err(err)?;
    let series: [(&str, &Vec<super::stats::Summary>, RGBColor); 7] = [
        ("native chain, one program", &calls.same.native.points, RGBColor(253, 174, 107)),
        ("native chain, distinct programs", &calls.distinct.native.points, RGBColor(230, 85, 13)),
        ("HIKe VM, one program", &calls.same.vm.points, RGBColor(158, 202, 225)),
        ("raw, one program", &calls.same.raw.points, RGBColor(161, 217, 155)),
        ("HIKe VM, distinct programs", &calls.distinct.vm.points, RGBColor(31, 119, 180)),
        ("raw, distinct, constant keys", &calls.distinct.raw.points, RGBColor(44, 160, 44)),
        ("raw, distinct, dynamic keys", &calls.raw_dyn.points, RGBColor(214, 39, 40)),
    ];
    for (name, data, color) in series {
        let pts: Vec<(u32, f64)> = calls.sizes.iter().zip(data).map(|(n, s)| (*n, s.median)).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart
            .draw_series(
                calls
                    .sizes
                    .iter()
                    .zip(data)
                    .map(|(n, s)| ErrorBar::new_vertical(*n, s.min, s.median, s.max, color.filled(), 6)),
            )
            .map_err(err)?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

pub fn plot_mmlf(path: &Path, mmlf: &MmlfResult) -> Result<()> {
    let root = BitMapBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let ymax = mmlf.ns.iter().flatten().map(|s| s.max).fold(0.0, f64::max) * 1.15;
    let colors = [RGBColor(230, 85, 13), RGBColor(255, 187, 14), RGBColor(148, 103, 189), RGBColor(31, 119, 180)];
    let mut chart = ChartBuilder::on(&root)
        .caption("MMLF: ns per packet (lower is better)", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..10f64, 0f64..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(11)
        .x_label_formatter(&|x| match x.round() as i64 {
            2 => KINDS[0].to_owned(),
            7 => KINDS[1].to_owned(),
            _ => String::new(),
        })
        .y_desc("ns per packet")
        .draw()
        .map_err(err)?;
    for (v, variant) in VARIANTS.iter().enumerate() {
        let color = colors[v];
        let bars: Vec<(f64, &super::stats::Summary)> =
            (0..KINDS.len()).map(|k| (k as f64 * 5.0 + 0.5 + v as f64, &mmlf.ns[k][v])).collect();
        chart
            .draw_series(
                bars.iter().map(|(x, s)| Rectangle::new([(*x - 0.4, 0.0), (*x + 0.4, s.median)], color.filled())),
            )
            .map_err(err)?
            .label(*variant)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        chart
            .draw_series(
                bars.iter().map(|(x, s)| ErrorBar::new_vertical(*x, s.min, s.median, s.max, BLACK.filled(), 6)),
            )
            .map_err(err)?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
