//! What one program call costs, like with like: the VM calling one program N
//! times against one program tail-calling itself N times, and the VM calling N
//! distinct programs against N distinct programs tail-calling the next (constant
//! keys, which the JIT turns into patched direct jumps, and keys read at run
//! time), N = 0..30, with BPF_PROG_TEST_RUN on one pinned CPU, interleaved in
//! rotating order. The marginal cost is the Theil–Sen slope over N, with
//! bootstrap intervals for slopes and ratios.
//!
//! Why both shapes: on this machine's CPU a tail-call chain through more than a
//! few distinct programs costs several ns more per hop than a program calling
//! itself, so comparing the VM's one-program chain with the raw side's distinct
//! programs (as this benchmark once did) flattered the VM about fourfold.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use hike_bytecode::{Hook, Insn, build};
use hike_runtime::native_testing::TestNative;
use hike_runtime::{ChainId, ChainSpec, InitOptions, ProgramObject, ScratchPath, ScratchRoot, objects};
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder};
use serde::Serialize;

use super::stats::{Estimate, Rounds, Summary, bimodal, not_linear, ratio_estimate, slope, slope_estimate};

/// Calls per packet (the kernel allows 33 tail calls; the entry makes one).
pub const SIZES: [u32; 11] = [0, 1, 2, 4, 6, 8, 12, 16, 20, 24, 30];
/// Instructions interpreted without calls (below the VM's 32-step slice, after
/// which it continues in a tail call of its own).
pub const INSNS: [u32; 5] = [0, 4, 8, 16, 24];
/// The CPU the measurements run on (BPF_PROG_TEST_RUN runs on the caller's).
const CPU: usize = 1;

/// One kind of chain measured at every size.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// ns per packet at each size: median, min, max over the rounds.
    pub points: Vec<Summary>,
    /// Marginal ns per call.
    pub per_call: Estimate,
}

/// The VM, the native tier and raw tail calls in one shape.
#[derive(Debug, Clone, Serialize)]
pub struct Shape {
    pub vm: Series,
    pub raw: Series,
    /// VM / raw, marginal cost per call.
    pub ratio: Estimate,
    /// The same chains compiled natively (hike-native: bodies inlined).
    pub native: Series,
    /// Native / raw, marginal cost per call.
    pub native_ratio: Estimate,
}

#[derive(Debug, Clone, Serialize)]
pub struct CallsResult {
    pub sizes: Vec<u32>,
    pub repeat: u32,
    pub rounds: usize,
    pub cpu: usize,
    /// Steal time of the machine during the measurement, in % of CPU time.
    pub steal_percent: f64,
    /// One program called N times; raw: one program tail-calling itself.
    pub same: Shape,
    /// N distinct programs; raw: N distinct programs, constant keys.
    pub distinct: Shape,
    /// N distinct raw programs with keys read at run time (indirect jumps).
    pub raw_dyn: Series,
    /// VM (distinct programs) / raw with dynamic keys.
    pub ratio_dyn: Estimate,
    /// A raw test run that makes no hop (the floor every raw figure sits on).
    pub raw_floor: Summary,
    /// A chain without calls (the loader and the VM entry alone).
    pub vm_empty: Summary,
    /// ns per packet for chains of INSNS[i] moves and an exit.
    pub insns: Vec<Summary>,
    /// Marginal ns per interpreted instruction.
    pub per_insn_vm: f64,
    /// Why some fit should not be believed (not linear, two clusters), if so.
    pub warnings: Vec<String>,
}

fn packet() -> Vec<u8> {
    let mut p = vec![0u8; 64];
    p[12] = 0x86;
    p[13] = 0xdd;
    p
}

/// How a raw chain's program array is filled.
#[derive(Clone, Copy)]
enum Wiring {
    /// Slot 1 holds raw_self.
    SelfLoop,
    /// Slot n holds raw_k<n>.
    Constant,
    /// Every slot holds raw_dyn.
    Dynamic,
}

/// A raw tail-call object for `hops` hops, wired one way; its entry's fd.
fn raw_chain(hops: u32, wiring: Wiring) -> Result<(Object, i32)> {
    let mut open = ObjectBuilder::default().open_memory(objects::rawtail())?;
    for mut m in open.maps_mut() {
        if m.name().to_string_lossy().ends_with(".rodata")
            && let Some(data) = m.initial_value_mut()
        {
            data[..4].copy_from_slice(&hops.to_le_bytes());
        }
    }
    let obj = open.load()?;
    let progs = obj.maps().find(|m| m.name() == "raw_progs").ok_or_else(|| anyhow!("no raw_progs"))?;
    let prog_fd = |name: &str| -> Result<u32> {
        let p = obj.progs().find(|p| p.name().to_string_lossy() == name).ok_or_else(|| anyhow!("no {name}"))?;
        Ok(p.as_fd().as_raw_fd() as u32)
    };
    let slots: Vec<(u32, String)> = match wiring {
        Wiring::SelfLoop => vec![(1, "raw_self".into())],
        Wiring::Constant => (1..=30).map(|n| (n, format!("raw_k{n}"))).collect(),
        Wiring::Dynamic => (1..=31).map(|n| (n, "raw_dyn".to_owned())).collect(),
    };
    for (slot, name) in slots {
        progs.update(&slot.to_le_bytes(), &prog_fd(&name)?.to_le_bytes(), MapFlags::ANY)?;
    }
    let entry = prog_fd("raw_entry")? as i32;
    Ok((obj, entry))
}

/// The machine's steal time so far: (steal, total) jiffies from /proc/stat.
fn steal_jiffies() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let fields: Vec<u64> =
        stat.lines().next().unwrap_or_default().split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
    (fields.get(7).copied().unwrap_or(0), fields.iter().sum())
}

fn pin_to(cpu: usize) -> Result<()> {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).with_context(|| format!("pinning the benchmark to CPU {cpu}"))
}

pub fn run(bpffs: &Path, rounds: usize, repeat: u32) -> Result<CallsResult> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let cpu = if cpus > CPU { CPU } else { 0 };
    pin_to(cpu)?;
    let rt = ScratchRoot::init(ScratchPath::unique(bpffs, "ebpkg-bench-calls"), InitOptions::default())?;
    // 30 registrations of one object: 30 distinct null programs (own JIT images).
    let mut nops = Vec::new();
    for i in 0..30 {
        let package = format!("bench{i}");
        let regs = rt.register_object(&ProgramObject {
            package: &package,
            version: "0.0.0",
            object_name: "mini.bpf.c",
            elf: objects::mini(),
            hook: Hook::Xdp,
        })?;
        nops.push(regs.iter().find(|r| r.name == "test_nop").context("no test_nop")?.id);
    }
    let install = |name: &str, mut insns: Vec<Insn>| {
        insns.push(build::exit());
        rt.install_chain(&ChainSpec { name, owner: "bench", hook: Hook::Xdp, insns: &insns, nargs: 0 })
    };
    let mut same = Vec::new();
    let mut distinct = Vec::new();
    for &n in &SIZES {
        same.push(install("same", (0..n).map(|_| build::call_prog(nops[0].0, 0)).collect())?);
        distinct.push(install("distinct", (0..n as usize).map(|i| build::call_prog(nops[i].0, 0)).collect())?);
    }
    // The same chains again, under ids of their own, compiled natively: one
    // module per registration, as ebpkg compiles one per package source.
    let mut native = TestNative::new(Hook::Xdp).map_err(|e| anyhow!("native chains: {e}"))?;
    let mut programs = BTreeMap::new();
    for (i, id) in nops.iter().enumerate() {
        let m = native.add_module("test/mini.bpf.c", &format!("bench{i}"), "0.0.0").map_err(|e| anyhow!(e))?;
        programs.insert(id.0, (m, "test_nop".to_owned()));
    }
    let mut natives = [Vec::new(), Vec::new()];
    for (shape, chains) in [&same, &distinct].into_iter().enumerate() {
        for &vm_chain in chains {
            let (insns, _) = rt.chain_insns(vm_chain)?.context("a benchmark chain vanished")?;
            let id =
                install(if shape == 0 { "same-native" } else { "distinct-native" }, insns[..insns.len() - 1].to_vec())?;
            let code: BTreeMap<u32, Vec<Insn>> = [(id.0, insns)].into_iter().collect();
            native.install(&rt, id, &code, &programs).map_err(|e| anyhow!("native chain: {e}"))?;
            natives[shape].push(id);
        }
    }
    let mut movs = Vec::new();
    for &n in &INSNS {
        movs.push(install("movs", (0..n).map(|i| build::mov_imm(1 + (i % 5) as u8, i as i32)).collect())?);
    }
    let empty = install("empty", Vec::new())?;
    let mut raws = Vec::new();
    for &n in &SIZES {
        raws.push([raw_chain(n, Wiring::SelfLoop)?, raw_chain(n, Wiring::Constant)?, raw_chain(n, Wiring::Dynamic)?]);
    }
    let floor = raw_chain(0, Wiring::SelfLoop)?;
    let pkt = packet();
    let raw_ns = |fd: i32| -> Result<f64> {
        let r = crate::bpf::test_run(fd, &pkt, 0, false, repeat)?;
        if r.verdict != 2 {
            return Err(anyhow!("a raw tail-call chain returned {} instead of XDP_PASS", r.verdict));
        }
        Ok(r.duration.as_nanos() as f64)
    };
    let vm_ns = |chain: ChainId| -> Result<f64> {
        Ok(rt.test_run_chain(Hook::Xdp, chain, &pkt, repeat)?.duration.as_nanos() as f64)
    };

    // samples[variant][round][size]: variants VM same, raw self, VM distinct, raw constant, raw dynamic,
    // native same, native distinct.
    const VARIANTS: usize = 7;
    let mut samples = vec![Vec::new(); VARIANTS];
    let (mut floors, mut empties, mut movs_ns) = (Vec::new(), Vec::new(), vec![Vec::new(); INSNS.len()]);
    let steal_before = steal_jiffies();
    for round in 0..=rounds {
        // Round 0 warms caches and JITed code up and is not kept.
        let keep = round > 0;
        let mut row = vec![vec![0.0; SIZES.len()]; VARIANTS];
        for i in 0..SIZES.len() {
            // Rotate the order so that no variant always runs first.
            for k in 0..VARIANTS {
                let which = (round + i + k) % VARIANTS;
                row[which][i] = match which {
                    0 => vm_ns(same[i])?,
                    1 => raw_ns(raws[i][0].1)?,
                    2 => vm_ns(distinct[i])?,
                    3 => raw_ns(raws[i][1].1)?,
                    4 => raw_ns(raws[i][2].1)?,
                    5 => vm_ns(natives[0][i])?,
                    _ => vm_ns(natives[1][i])?,
                };
            }
        }
        let (f, e) = (raw_ns(floor.1)?, vm_ns(empty)?);
        let m: Vec<f64> = movs.iter().map(|&c| vm_ns(c)).collect::<Result<_>>()?;
        if keep {
            for (v, r) in row.into_iter().enumerate() {
                samples[v].push(r);
            }
            floors.push(f);
            empties.push(e);
            for (i, ns) in m.into_iter().enumerate() {
                movs_ns[i].push(ns);
            }
        }
    }
    let steal_after = steal_jiffies();
    let steal_percent = 100.0 * steal_after.0.saturating_sub(steal_before.0) as f64
        / (steal_after.1.saturating_sub(steal_before.1).max(1)) as f64;

    let xs: Vec<f64> = SIZES.iter().map(|&n| f64::from(n)).collect();
    let names = [
        "VM, one program",
        "raw, one program",
        "VM, distinct programs",
        "raw, distinct, constant keys",
        "raw, distinct, dynamic keys",
        "native, one program",
        "native, distinct programs",
    ];
    let series: Vec<Rounds<'_>> = samples.iter().map(|s| Rounds { xs: &xs, rounds: s }).collect();
    let mut warnings = Vec::new();
    for (s, name) in series.iter().zip(names) {
        warnings.extend(not_linear(name, s));
        warnings.extend(bimodal(name, s));
    }
    let summarize = |s: &Rounds<'_>| Series {
        points: (0..SIZES.len()).map(|i| Summary::of(&s.at(i))).collect(),
        per_call: slope_estimate(s),
    };
    let insns: Vec<Summary> = movs_ns.iter().map(|s| Summary::of(s)).collect();
    let xi: Vec<f64> = INSNS.iter().map(|&n| f64::from(n)).collect();
    Ok(CallsResult {
        sizes: SIZES.to_vec(),
        repeat,
        rounds,
        cpu,
        steal_percent,
        same: Shape {
            vm: summarize(&series[0]),
            raw: summarize(&series[1]),
            ratio: ratio_estimate(&series[0], &series[1]),
            native: summarize(&series[5]),
            native_ratio: ratio_estimate(&series[5], &series[1]),
        },
        distinct: Shape {
            vm: summarize(&series[2]),
            raw: summarize(&series[3]),
            ratio: ratio_estimate(&series[2], &series[3]),
            native: summarize(&series[6]),
            native_ratio: ratio_estimate(&series[6], &series[3]),
        },
        raw_dyn: summarize(&series[4]),
        ratio_dyn: ratio_estimate(&series[2], &series[4]),
        raw_floor: Summary::of(&floors),
        vm_empty: Summary::of(&empties),
        per_insn_vm: slope(&xi, &insns.iter().map(|s| s.median).collect::<Vec<_>>()),
        insns,
        warnings,
    })
}
