//! How long a chain takes to run natively after `ebpkg install`, and what the
//! verifier does for it: the ddos chain (eight program calls over five
//! packages) installed on a veth, interpreted and then native, with the native
//! modules compiled afresh (an empty cache) and from the cache.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use hike_runtime::ScratchPath;
use serde::Serialize;

use super::mmlf::{ebpkg, publish_env};
use super::stats::Summary;
use crate::netns::{Netns, veth};

/// One install, as `ebpkg status --json` records its chain's tier.
#[derive(Debug, Clone, Serialize)]
pub struct Install {
    /// Wall-clock time of `ebpkg install`, ms.
    pub wall_ms: f64,
    /// The native build (package sources to the object), ms.
    pub build_ms: u64,
    /// Loading, verifying and swapping the native program in, ms.
    pub load_ms: u64,
    pub insns: u64,
    pub verified_insns: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TierUpResult {
    /// `--chain-mode interpreted`, everything built and cached: the baseline.
    pub interpreted_ms: Summary,
    /// Native, its modules compiled with an empty cache (the first install).
    pub cold: Install,
    /// Native, its modules from the cache, over the rounds.
    pub warm: Vec<Install>,
    /// Warm native install / interpreted install, wall-clock (medians).
    pub ratio: f64,
}

fn tier_of(status: &str) -> Result<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(status)?;
    let chain = v[0]["chains"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "ddos_tb_2_lev"))
        .context("no ddos_tb_2_lev chain in `ebpkg status --json`")?;
    Ok(chain["tier"].clone())
}

pub fn run(ebpkg_bin: &Path, bpffs: &Path, rounds: usize) -> Result<TierUpResult> {
    let pid = std::process::id();
    let dut = Netns::new(&format!("btd{pid}"), false)?;
    let peer = Netns::new(&format!("btp{pid}"), false)?;
    veth(&peer, "eth0", 0, &dut, "in0", 0)?;
    let dir = tempfile::tempdir()?;
    let guard = ScratchPath::unique(bpffs, "ebpkg-bench-tierup");
    // The native modules' cache starts empty: a cache of this run's own.
    let fresh = dir.path().join("cache");
    let env = publish_env(
        ebpkg_bin,
        dir.path(),
        &fresh,
        guard.path(),
        &["meter", "sets", "sampler", "net", "basic", "ddos"],
    )?;
    let install = |mode: &str| -> Result<(f64, serde_json::Value)> {
        let started = Instant::now();
        ebpkg(
            ebpkg_bin,
            &env,
            dir.path(),
            &[
                "-q",
                "--netns",
                &dut.name,
                "install",
                "ddos@^1",
                "--set",
                "DEVNAME=in0",
                "--force",
                "--chain-mode",
                mode,
            ],
        )?;
        let wall = started.elapsed().as_secs_f64() * 1e3;
        Ok((wall, tier_of(&ebpkg(ebpkg_bin, &env, dir.path(), &["--json", "status"])?)?))
    };
    let native = |(wall, t): (f64, serde_json::Value)| -> Result<Install> {
        if t["tier"] != "native" {
            anyhow::bail!("the ddos chain did not go native: {t}");
        }
        let n = |k: &str| t[k].as_u64().unwrap_or(0);
        Ok(Install {
            wall_ms: wall,
            build_ms: n("build_ms"),
            load_ms: n("load_ms"),
            insns: n("insns"),
            verified_insns: n("verified_insns"),
        })
    };
    // The first install builds the packages' objects; the first native one
    // compiles the modules into the (empty) cache.
    install("interpreted")?;
    let cold = native(install("auto")?)?;
    let mut interpreted = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..rounds {
        interpreted.push(install("interpreted")?.0);
        warm.push(native(install("auto")?)?);
    }
    let _ = ebpkg(ebpkg_bin, &env, dir.path(), &["-q", "uninstall", "ddos"]);
    let interpreted_ms = Summary::of(&interpreted);
    let warm_wall = Summary::of(&warm.iter().map(|w| w.wall_ms).collect::<Vec<_>>());
    Ok(TierUpResult { ratio: warm_wall.median / interpreted_ms.median, interpreted_ms, cold, warm })
}
