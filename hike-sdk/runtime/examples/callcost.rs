//! Measures what one program call through the HIKe VM costs compared with a plain
//! tail call: chains of N null programs versus N raw tail calls, N = 1..16, with
//! BPF_PROG_TEST_RUN, interleaved, medians of several rounds.
//!
//! ```text
//! cargo run --release -p hike-runtime --example callcost -- [repeat] [rounds]
//! ```
//! Needs root and bpffs. Uses its own root under /sys/fs/bpf and removes it.

use std::path::PathBuf;

use anyhow::{Context, Result, anyhow};
use hike_bytecode::{Hook, build};
use hike_runtime::{ChainSpec, InitOptions, ProgramObject, Runtime, objects};
use libbpf_rs::{MapCore, MapFlags, ObjectBuilder, ProgramInput};

const SIZES: [u32; 6] = [1, 2, 4, 8, 12, 16];

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let repeat: u32 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let rounds: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let root = PathBuf::from(format!("/sys/fs/bpf/hike-callcost-{}", std::process::id()));
    let result = run(&root, repeat, rounds);
    Runtime::destroy(&root).context("remove the benchmark root")?;
    result
}

fn packet() -> Vec<u8> {
    let mut p = vec![0u8; 64];
    p[12] = 0x86;
    p[13] = 0xdd;
    p
}

fn run(root: &std::path::Path, repeat: u32, rounds: usize) -> Result<()> {
    let rt = Runtime::init(root, InitOptions::default())?;
    let regs = rt.register_object(&ProgramObject {
        package: "bench",
        version: "0.0.0",
        object_name: "vmtest.bpf.c",
        elf: objects::vmtest(Hook::Xdp),
        hook: Hook::Xdp,
    })?;
    let nop = regs.iter().find(|r| r.name == "test_nop").ok_or_else(|| anyhow!("no test_nop"))?.id;
    let mut chains = Vec::new();
    for &n in &SIZES {
        let mut insns: Vec<_> = (0..n).map(|_| build::call_prog(nop, 0)).collect();
        insns.push(build::exit());
        chains.push(rt.install_chain(&ChainSpec {
            name: "calls",
            owner: "bench",
            hook: Hook::Xdp,
            insns: &insns,
            nargs: 0,
        })?);
    }
    let empty = rt.install_chain(&ChainSpec {
        name: "empty",
        owner: "bench",
        hook: Hook::Xdp,
        insns: &[build::exit()],
        nargs: 0,
    })?;

    let pkt = packet();
    let mut vm = vec![Vec::new(); SIZES.len()];
    let mut dyn_ = vec![Vec::new(); SIZES.len()];
    let mut konst = vec![Vec::new(); SIZES.len()];
    let mut vm0 = Vec::new();
    // One untimed round first: the first runs of a program are slower (cold caches).
    for round in 0..=rounds {
        if round == 0 {
            rt.test_run_chain(Hook::Xdp, empty, &pkt, repeat)?;
            for (i, &n) in SIZES.iter().enumerate() {
                rt.test_run_chain(Hook::Xdp, chains[i], &pkt, repeat)?;
                raw(n, false, repeat, &pkt)?;
                raw(n, true, repeat, &pkt)?;
            }
            continue;
        }
        vm0.push(rt.test_run_chain(Hook::Xdp, empty, &pkt, repeat)?.duration.as_nanos() as f64);
        for (i, &n) in SIZES.iter().enumerate() {
            vm[i].push(rt.test_run_chain(Hook::Xdp, chains[i], &pkt, repeat)?.duration.as_nanos() as f64);
            dyn_[i].push(raw(n, false, repeat, &pkt)?);
            konst[i].push(raw(n, true, repeat, &pkt)?);
        }
    }
    // The minimum over rounds: on a shared machine interference only ever adds time.
    let med = |v: &mut Vec<f64>| v.iter().copied().fold(f64::INFINITY, f64::min);
    println!("ns per packet (minimum of {rounds} rounds of {repeat}); chain without calls: {:.1}", med(&mut vm0));
    println!("{:>4} {:>10} {:>12} {:>12}", "N", "hike VM", "raw dynamic", "raw const");
    let mut pts = Vec::new();
    for (i, &n) in SIZES.iter().enumerate() {
        let (a, b, c) = (med(&mut vm[i]), med(&mut dyn_[i]), med(&mut konst[i]));
        println!("{n:>4} {a:>10.1} {b:>12.1} {c:>12.1}");
        pts.push((f64::from(n), a, b, c));
    }
    let slope = |f: fn(&(f64, f64, f64, f64)) -> f64| {
        let n = pts.len() as f64;
        let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
        let my = pts.iter().map(f).sum::<f64>() / n;
        pts.iter().map(|p| (p.0 - mx) * (f(p) - my)).sum::<f64>() / pts.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>()
    };
    let (s_vm, s_dyn, s_k) = (slope(|p| p.1), slope(|p| p.2), slope(|p| p.3));
    println!("marginal ns per call: vm {s_vm:.2}, raw dynamic {s_dyn:.2}, raw const {s_k:.2}");
    println!("vm / raw dynamic = {:.2}x, vm / raw const = {:.2}x", s_vm / s_dyn, s_vm / s_k);
    Ok(())
}

/// ns per packet for `n` raw tail-call hops.
fn raw(n: u32, constant: bool, repeat: u32, pkt: &[u8]) -> Result<f64> {
    let mut open = ObjectBuilder::default().open_memory(objects::rawtail())?;
    for mut m in open.maps_mut() {
        if m.name().to_string_lossy().ends_with(".rodata")
            && let Some(data) = m.initial_value_mut()
        {
            data[..4].copy_from_slice(&n.to_le_bytes());
        }
    }
    let obj = open.load()?;
    let progs = obj.maps().find(|m| m.name() == "raw_progs").ok_or_else(|| anyhow!("no raw_progs"))?;
    for slot in 1..=16u32 {
        let name = if constant { format!("raw_k{slot}") } else { "raw_dyn".to_owned() };
        let p = obj.progs().find(|p| p.name().to_string_lossy() == name).ok_or_else(|| anyhow!("no {name}"))?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(&p)) as u32;
        progs.update(&slot.to_le_bytes(), &fd.to_le_bytes(), MapFlags::ANY)?;
    }
    let entry = obj.progs_mut().find(|p| p.name() == "raw_entry").ok_or_else(|| anyhow!("no raw_entry"))?;
    let input = ProgramInput { data_in: Some(pkt), repeat, ..Default::default() };
    let out = entry.test_run(input)?;
    if out.return_value != 2 {
        return Err(anyhow!("raw chain returned {} instead of XDP_PASS", out.return_value));
    }
    Ok(out.duration.as_nanos() as f64)
}
