//! What one program call costs: chains of N null programs through the HIKe VM
//! versus N plain tail calls (constant keys, which the JIT turns into direct
//! jumps, and keys read at run time, which are indirect jumps), N = 1..16, with
//! BPF_PROG_TEST_RUN, interleaved; the marginal cost is the slope over N.

use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use hike_bytecode::{Hook, Insn, build};
use hike_runtime::{ChainId, ChainSpec, InitOptions, ProgramObject, ScratchPath, ScratchRoot, objects};
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder};
use serde::Serialize;

use super::stats::{Summary, slope};

pub const SIZES: [u32; 7] = [1, 2, 4, 6, 8, 12, 16];
/// Instructions interpreted without calls (below the VM's 32-step slice, after
/// which it continues in a tail call of its own).
pub const INSNS: [u32; 5] = [0, 4, 8, 16, 24];

#[derive(Debug, Clone, Serialize)]
pub struct CallsResult {
    pub sizes: Vec<u32>,
    pub repeat: u32,
    /// ns per packet for each size.
    pub vm: Vec<Summary>,
    pub raw_const: Vec<Summary>,
    pub raw_dyn: Vec<Summary>,
    /// A chain without calls (the loader and the VM entry alone).
    pub vm_empty: Summary,
    /// ns per packet for chains of INSNS[i] moves and an exit.
    pub insns: Vec<Summary>,
    /// Marginal ns per interpreted instruction.
    pub per_insn_vm: f64,
    /// Marginal ns per call (slope of the medians).
    pub per_call_vm: f64,
    pub per_call_raw_const: f64,
    pub per_call_raw_dyn: f64,
}

fn packet() -> Vec<u8> {
    let mut p = vec![0u8; 64];
    p[12] = 0x86;
    p[13] = 0xdd;
    p
}

/// The raw tail-call object for `hops` hops.
fn raw_object(hops: u32) -> Result<Object> {
    let mut open = ObjectBuilder::default().open_memory(objects::rawtail())?;
    for mut m in open.maps_mut() {
        if m.name().to_string_lossy().ends_with(".rodata")
            && let Some(data) = m.initial_value_mut()
        {
            data[..4].copy_from_slice(&hops.to_le_bytes());
        }
    }
    Ok(open.load()?)
}

/// Points the object's program array at the constant-key or the dynamic hops.
fn wire(obj: &Object, constant: bool) -> Result<i32> {
    let progs = obj.maps().find(|m| m.name() == "raw_progs").ok_or_else(|| anyhow!("no raw_progs"))?;
    for slot in 1..=16u32 {
        let name = if constant { format!("raw_k{slot}") } else { "raw_dyn".to_owned() };
        let p = obj.progs().find(|p| p.name().to_string_lossy() == name).ok_or_else(|| anyhow!("no {name}"))?;
        let fd = p.as_fd().as_raw_fd() as u32;
        progs.update(&slot.to_le_bytes(), &fd.to_le_bytes(), MapFlags::ANY)?;
    }
    let entry = obj.progs().find(|p| p.name() == "raw_entry").ok_or_else(|| anyhow!("no raw_entry"))?;
    Ok(entry.as_fd().as_raw_fd())
}

pub fn run(bpffs: &Path, rounds: usize, repeat: u32) -> Result<CallsResult> {
    let rt = ScratchRoot::init(ScratchPath::unique(bpffs, "ebpkg-bench-calls"), InitOptions::default())?;
    let regs = rt.register_object(&ProgramObject {
        package: "bench",
        version: "0.0.0",
        object_name: "vmtest.bpf.c",
        elf: objects::vmtest(Hook::Xdp),
        hook: Hook::Xdp,
    })?;
    let nop = regs.iter().find(|r| r.name == "test_nop").context("no test_nop")?.id;
    let install = |name: &str, mut insns: Vec<Insn>| {
        insns.push(build::exit());
        rt.install_chain(&ChainSpec { name, owner: "bench", hook: Hook::Xdp, insns: &insns, nargs: 0 })
    };
    let mut chains = Vec::new();
    for &n in &SIZES {
        chains.push(install("calls", (0..n).map(|_| build::call_prog(nop.0, 0)).collect())?);
    }
    let mut movs = Vec::new();
    for &n in &INSNS {
        movs.push(install("movs", (0..n).map(|i| build::mov_imm(1 + (i % 5) as u8, i as i32)).collect())?);
    }
    let empty = install("empty", Vec::new())?;
    // One object per size and key kind, loaded once.
    let mut raws = Vec::new();
    for &n in &SIZES {
        let k = raw_object(n)?;
        let kfd = wire(&k, true)?;
        let d = raw_object(n)?;
        let dfd = wire(&d, false)?;
        raws.push((k, kfd, d, dfd));
    }
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

    let (mut vm, mut k, mut d, mut e) =
        (vec![Vec::new(); SIZES.len()], vec![Vec::new(); SIZES.len()], vec![Vec::new(); SIZES.len()], Vec::new());
    let mut m = vec![Vec::new(); INSNS.len()];
    for round in 0..=rounds {
        // Round 0 warms caches and JITed code up and is not kept.
        let keep = round > 0;
        let v = vm_ns(empty)?;
        if keep {
            e.push(v);
        }
        for (i, &c) in movs.iter().enumerate() {
            let v = vm_ns(c)?;
            if keep {
                m[i].push(v);
            }
        }
        for i in 0..SIZES.len() {
            // Rotate the order so no variant always runs first.
            let order = [(round + i) % 3, (round + i + 1) % 3, (round + i + 2) % 3];
            for which in order {
                let ns = match which {
                    0 => vm_ns(chains[i])?,
                    1 => raw_ns(raws[i].1)?,
                    _ => raw_ns(raws[i].3)?,
                };
                if keep {
                    [&mut vm, &mut k, &mut d][which][i].push(ns);
                }
            }
        }
    }
    let sum = |v: &[Vec<f64>]| v.iter().map(|s| Summary::of(s)).collect::<Vec<_>>();
    let (vm, raw_const, raw_dyn) = (sum(&vm), sum(&k), sum(&d));
    let xs: Vec<f64> = SIZES.iter().map(|&n| f64::from(n)).collect();
    let med = |v: &[Summary]| v.iter().map(|s| s.median).collect::<Vec<_>>();
    let insns = sum(&m);
    let xi: Vec<f64> = INSNS.iter().map(|&n| f64::from(n)).collect();
    Ok(CallsResult {
        per_insn_vm: slope(&xi, &med(&insns)),
        insns,
        sizes: SIZES.to_vec(),
        repeat,
        per_call_vm: slope(&xs, &med(&vm)),
        per_call_raw_const: slope(&xs, &med(&raw_const)),
        per_call_raw_dyn: slope(&xs, &med(&raw_dyn)),
        vm,
        raw_const,
        raw_dyn,
        vm_empty: Summary::of(&e),
    })
}
