//! How long changing a running deployment takes: the DDoS chain's six packages
//! deployed, then (1) `meter` upgraded to a new version whose objects ship with
//! it (one program's source changed), against the floor of loading that
//! package's programs by hand with libbpf; (2) `ebpkg rollback` to the previous
//! generation, against that upgrade; (3) a redeploy with only the `DEVNAME`
//! parameter changed; (4) a redeploy of an unchanged deployment. Rounds
//! interleave the upgrade and the rollback.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::install::Bench;
use super::stats::Summary;

#[derive(Debug, Clone, Serialize)]
pub struct UpgradeResult {
    /// `ebpkg install` moving `meter` to its next version (ms).
    pub upgrade_ms: Summary,
    /// The same package version's programs loaded by hand with libbpf (ms).
    pub floor_ms: Summary,
    /// `ebpkg rollback` to the generation before (ms).
    pub rollback_ms: Summary,
    /// A redeploy with `DEVNAME` changed (ms), the chain native.
    pub param_ms: Summary,
    /// A redeploy that changes nothing (ms), the chain native.
    pub noop_ms: Summary,
    /// How many programs `meter` has.
    pub programs: usize,
}

const DEPLOY: [&str; 4] = ["install", "ddos@^1", "--chain-mode", "interpreted"];

pub fn run(ebpkg: &Path, packages: &Path, rounds: usize) -> Result<UpgradeResult> {
    let bench = Bench::new(ebpkg, packages)?;
    let meter = bench.path("meter");
    copy_dir(&packages.join("meter"), &meter)?;

    // (3) and (4), with the chain native (the default chain mode).
    let native = |dev: &str| -> Result<f64> {
        let run = bench.ok(&["install", "ddos@^1", "--set", &format!("DEVNAME={dev}")])?;
        Ok(run.elapsed.as_secs_f64() * 1e3)
    };
    native("in0")?;
    let (mut noop, mut param) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        let dev = if i % 2 == 0 { "in1" } else { "in0" };
        param.push(native(dev)?);
        noop.push(native(dev)?);
    }
    bench.uninstall()?;

    // (1) and (2), interpreted (as the install benchmark's floor): each round
    // publishes meter 1.0.N with its objects and upgrades to it, then rolls back.
    publish_meter(&bench, &meter, 1)?;
    bench.ok(&[&DEPLOY[..], &["--set", "DEVNAME=in0"]].concat())?;
    let (mut upgrade, mut rollback, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    let mut programs = 0;
    for round in 0..=rounds {
        publish_meter(&bench, &meter, round as u64 + 2)?;
        let run = bench.ok(&DEPLOY)?;
        if !run.stderr.contains("Registered meter@") {
            bail!("the upgrade did not register meter anew: {}", run.stderr);
        }
        let objects = meter_objects(&bench)?;
        programs = objects.iter().map(|(_, p)| p.len()).sum();
        let back = bench.ok(&["rollback", "ddos"])?;
        let floor_ms = load_by_hand(&bench, &objects)?;
        // The first round warms the caches.
        if round > 0 {
            upgrade.push(run.elapsed.as_secs_f64() * 1e3);
            rollback.push(back.elapsed.as_secs_f64() * 1e3);
            floor.push(floor_ms);
        }
    }
    bench.uninstall()?;
    Ok(UpgradeResult {
        upgrade_ms: Summary::of(&upgrade),
        floor_ms: Summary::of(&floor),
        rollback_ms: Summary::of(&rollback),
        param_ms: Summary::of(&param),
        noop_ms: Summary::of(&noop),
        programs,
    })
}

/// Publishes meter 1.0.`n` with its portable objects; `n` is also written into a
/// comment of one program's source, so every version's objects differ.
fn publish_meter(bench: &Bench, dir: &Path, n: u64) -> Result<()> {
    let manifest = dir.join("ebpkg.toml");
    let text = std::fs::read_to_string(&manifest)?;
    let text = regex_version(&text, &format!("1.0.{n}"));
    std::fs::write(&manifest, text)?;
    let source = dir.join("src/tbmon.bpf.c");
    let mut src = std::fs::read_to_string(&source)?;
    src.push_str(&format!("/* revision {n} */\n"));
    std::fs::write(&source, src)?;
    let run = bench.ebpkg_in(dir, &["publish", "--no-verify", "--with-objects"], &[])?;
    if !run.status.success() {
        bail!("publishing meter 1.0.{n}: {}", run.stderr);
    }
    Ok(())
}

/// The manifest with its package version replaced.
fn regex_version(manifest: &str, version: &str) -> String {
    let mut done = false;
    manifest
        .lines()
        .map(|l| {
            if !done && l.starts_with("version = ") {
                done = true;
                format!("version = \"{version}\"")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The running generation's objects of `meter` (from its saved copy), with the
/// programs each provides.
fn meter_objects(bench: &Bench) -> Result<Vec<(PathBuf, Vec<String>)>> {
    let dir = bench.path("state/generations/ddos");
    let newest = std::fs::read_dir(&dir)?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u64>().ok())
        .max()
        .context("no saved generation")?;
    let gen_dir = dir.join(newest.to_string());
    let saved: serde_json::Value = serde_json::from_slice(&std::fs::read(gen_dir.join("generation.json"))?)?;
    let meter = saved["packages"]
        .as_array()
        .context("packages")?
        .iter()
        .find(|p| p["id"]["name"] == "meter")
        .context("meter in the generation")?;
    let mut out = Vec::new();
    for o in meter["objects"].as_array().context("objects")? {
        let programs: Vec<String> =
            o["programs"].as_array().into_iter().flatten().filter_map(|p| p.as_str().map(str::to_owned)).collect();
        if !programs.is_empty() {
            out.push((gen_dir.join("objects").join(o["file"].as_str().context("file")?), programs));
        }
    }
    Ok(out)
}

/// Loads the programs of `objects` the leanest way, as the install benchmark's
/// floor does: one process, libbpf, only those programs, the VM's maps shared by
/// name under a fresh pin root, each program put in the VM's program array.
fn load_by_hand(bench: &Bench, objects: &[(PathBuf, Vec<String>)]) -> Result<f64> {
    use libbpf_rs::MapCore;
    use std::os::fd::{AsFd, AsRawFd};
    let fresh = PathBuf::from(format!("{}-upgrade-by-hand", bench.bpffs_root().display()));
    let _ = std::fs::remove_dir_all(&fresh);
    std::fs::create_dir_all(&fresh)?;
    let started = std::time::Instant::now();
    let mut loaded = Vec::new();
    for (path, names) in objects {
        let mut builder = libbpf_rs::ObjectBuilder::default();
        builder.pin_root_path(&fresh).context("pin root")?;
        let mut open = builder.open_file(path).with_context(|| format!("open {}", path.display()))?;
        for mut prog in open.progs_mut() {
            let name = prog.name().to_string_lossy().into_owned();
            prog.set_autoload(names.contains(&name));
        }
        loaded.push(open.load().with_context(|| format!("load {}", path.display()))?);
    }
    let first = loaded.first().context("no object")?;
    let progs = first.maps().find(|m| m.name() == "hike_progs_xdp").context("hike_progs_xdp")?;
    let mut id = 100u32;
    for obj in &loaded {
        for prog in obj.progs() {
            let fd = u32::try_from(prog.as_fd().as_raw_fd())?;
            progs.update(&id.to_le_bytes(), &fd.to_le_bytes(), libbpf_rs::MapFlags::ANY).context("register")?;
            id += 1;
        }
    }
    let ms = started.elapsed().as_secs_f64() * 1e3;
    drop(loaded);
    std::fs::remove_dir_all(&fresh)?;
    Ok(ms)
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    let status = Command::new("cp").arg("-r").arg(from).arg(to).status()?;
    if !status.success() {
        bail!("cp -r {} {}", from.display(), to.display());
    }
    Ok(())
}
