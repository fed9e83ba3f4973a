//! MMLF three ways, side by side: the `mmlf` chain installed by ebpkg, the
//! hand-written monolithic program, and the same steps chained with plain tail
//! calls; packets that match the blacklist (marked, routed, redirected) and
//! packets that do not (passed to the kernel). ns per packet from
//! BPF_PROG_TEST_RUN, and packets per second with live frames through a veth pair.

use std::net::Ipv6Addr;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hike_runtime::{Runtime, ScratchPath, TestRunOptions};
use serde::Serialize;

use super::stats::{Estimate, Summary, ratio_of_medians};
use crate::bpf::{self, Loaded};
use crate::netns::{Netns, veth};
use crate::packets;

/// Samples `[kind][variant][round]`.
type Samples = Vec<Vec<Vec<f64>>>;

/// Variant 0 is the chain as `ebpkg install` leaves it (native); variant 3 is
/// the same chain with its native program taken out of its slot (the VM).
pub const VARIANTS: [&str; 4] = ["HIKe chain, native", "monolithic", "tail calls", "HIKe chain, VM"];
pub const KINDS: [&str; 2] = ["matching", "not matching"];

#[derive(Debug, Clone, Serialize)]
pub struct MmlfResult {
    /// `[kind][variant]`: ns per packet.
    pub ns: Vec<Vec<Summary>>,
    /// `[kind][variant]`: packets per second, live frames through the veth pair.
    pub pps: Vec<Vec<Summary>>,
    pub repeat: u32,
    pub live_frames: u32,
    /// `[kind]`: time per packet, native HIKe chain / monolithic, with its 95%
    /// bootstrap interval: BPF_PROG_TEST_RUN, and live frames.
    pub ratio_ns: Vec<Estimate>,
    pub ratio_live: Vec<Estimate>,
    /// The same for the chain interpreted by the VM.
    pub ratio_ns_vm: Vec<Estimate>,
    pub ratio_live_vm: Vec<Estimate>,
    /// Rounds kept (more than asked when the live ratio's interval was still
    /// wider than the target's margin).
    pub rounds: usize,
}

/// The live ratio's interval must be narrower than this (the 1.05× target's
/// margin over 1.0) before the benchmark stops adding rounds…
pub const MAX_INTERVAL: f64 = 0.05;
/// …or it has run this many times the rounds asked.
pub const MAX_ROUND_FACTOR: usize = 3;

/// What the benchmark set up, torn down on drop.
struct Setup {
    dut: Netns,
    _gen: Netns,
    _sink: Netns,
    ebpkg: PathBuf,
    env: Vec<(String, String)>,
    root: ScratchPath,
    _dir: tempfile::TempDir,
    mono: Loaded,
    tail: Loaded,
    sink_counter: Loaded,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = Command::new(&self.ebpkg).args(["-q", "uninstall", "mmlf"]).envs(self.env.clone()).output();
    }
}

/// An ebpkg environment of its own in `dir` (a file:// registry, state, config),
/// building in `cache` and deploying to `root`, with a signing key trusted for
/// every package (installs refuse what no trusted key signed, as a publisher and
/// a user would set it up), and `packages` (first-party directories) published.
pub(crate) fn publish_env(
    ebpkg_bin: &Path,
    dir: &Path,
    cache: &Path,
    root: &Path,
    packages: &[&str],
) -> Result<Vec<(String, String)>> {
    let env: Vec<(String, String)> = [
        ("EBPKG_REGISTRY", format!("file://{}/registry", dir.display())),
        ("EBPKG_CACHE_DIR", cache.display().to_string()),
        ("EBPKG_STATE_DIR", dir.join("state").display().to_string()),
        ("EBPKG_BPFFS_ROOT", root.display().to_string()),
        ("EBPKG_CONFIG", dir.join("config.toml").display().to_string()),
        ("EBPKG_KEY_PASSWORD", "benchmark".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    ebpkg(ebpkg_bin, &env, dir, &["-q", "key", "generate"])?;
    let key: serde_json::Value = serde_json::from_str(&ebpkg(ebpkg_bin, &env, dir, &["--json", "key", "show"])?)?;
    let id = key["id"].as_str().context("`ebpkg key show --json` gave no id")?;
    ebpkg(ebpkg_bin, &env, dir, &["-q", "trust", "add", "*", id])?;
    for p in packages {
        ebpkg(ebpkg_bin, &env, &crate::packages_dir().join(p), &["-q", "publish", "--no-verify"])?;
    }
    Ok(env)
}

/// Runs ebpkg; its standard output.
pub(crate) fn ebpkg(path: &Path, env: &[(String, String)], cwd: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new(path).current_dir(cwd).args(args).envs(env.iter().cloned()).output()?;
    if !out.status.success() {
        bail!("ebpkg {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

const LISTED: u16 = 0xa;
/// Live runs per sample (the fastest counts).
pub const LIVE_RUNS: u32 = 5;
/// Most live frames per run. A live run recycles its frames' pages (a pool of
/// batch-size, 64, pages) without copying the packet in again, so every
/// forwarding decrements a page's hop limit for good: at 254 uses frames stop
/// being forwarded and go to the kernel instead. 64 × 250 keeps every frame
/// forwarded; each run checks that the sink received them all.
pub const MAX_LIVE_FRAMES: u32 = 64 * 250;

fn frame(src: u16) -> Vec<u8> {
    packets::ipv6(
        Ipv6Addr::new(0x2001, 0xdb8, 0x50, 0, 0, 0, 0, src),
        Ipv6Addr::new(0x2001, 0xdb8, 0x100, 0, 0, 0, 0, 1),
        255,
        0,
        &[],
        &packets::udp(4000, 80, &[0; 2]),
    )
}

fn setup(ebpkg_bin: &Path, bpffs: &Path, cache: &Path) -> Result<Setup> {
    let pid = std::process::id();
    let dut = Netns::new(&format!("bmd{pid}"), true)?;
    let gen_ns = Netns::new(&format!("bmg{pid}"), false)?;
    let sink = Netns::new(&format!("bms{pid}"), false)?;
    veth(&gen_ns, "gen0", 0, &dut, "in0", 0)?;
    veth(&dut, "out0", 0, &sink, "sink0", 0)?;
    dut.sysctl("net/ipv6/conf/all/forwarding", "1")?;
    for args in [
        &["addr", "add", "2001:db8:50::1/64", "dev", "in0", "nodad"][..],
        &["addr", "add", "2001:db8:60::1/64", "dev", "out0", "nodad"],
        &["neigh", "add", "2001:db8:60::2", "lladdr", "02:00:00:00:60:02", "dev", "out0", "nud", "permanent"],
        &["-6", "route", "add", "2001:db8:100::/48", "via", "2001:db8:60::2"],
    ] {
        dut.ip(args)?;
    }
    let dir = tempfile::tempdir()?;
    let guard = ScratchPath::unique(bpffs, "ebpkg-bench-mmlf");
    let root = guard.path().to_owned();
    let env = publish_env(ebpkg_bin, dir.path(), cache, &root, &["meter", "sets", "sampler", "net", "basic", "mmlf"])?;
    ebpkg(ebpkg_bin, &env, dir.path(), &["-q", "--netns", &dut.name, "install", "mmlf@^1", "--set", "DEVNAME=in0"])?;
    let src = Ipv6Addr::new(0x2001, 0xdb8, 0x50, 0, 0, 0, 0, LISTED).octets();
    Runtime::open(&root)?.package_map("mmlf", "1.0.0", "mmlf_src6")?.write(&src, &[1])?;

    let bench = crate::packages_dir().join("mmlf/bench");
    let mono = Loaded::load(&bpf::compile(&bench.join("mmlf_mono.bpf.c"), cache)?, "mmlf_mono")?;
    mono.update("mono_src6", &src, &[1])?;
    let tail = Loaded::load(&bpf::compile(&bench.join("mmlf_tail.bpf.c"), cache)?, "mmlf_tail")?;
    tail.update("tail_src6", &src, &[1])?;
    for (i, p) in ["mmlf_tail_match", "mmlf_tail_mark", "mmlf_tail_lookup", "mmlf_tail_forward"].iter().enumerate() {
        tail.set_prog("mmlf_tail_progs", i as u32, p)?;
    }
    // Redirected frames need a receiver with XDP on the far end of out0.
    let mut sink_counter = Loaded::load(&bpf::compile(&crate::scenario_source(), cache)?, "sink")?;
    sink_counter.attach("xdp_count", &sink, "sink0")?;
    Ok(Setup {
        dut,
        _gen: gen_ns,
        _sink: sink,
        ebpkg: ebpkg_bin.to_owned(),
        env,
        root: guard,
        _dir: dir,
        mono,
        tail,
        sink_counter,
    })
}

const INSTANCE: &str = "mmlf-1-basic-l3_sc";

/// The packet of a kind: from the blacklisted source, or from another.
fn kind_frame(kind: usize) -> Vec<u8> {
    frame(if kind == 0 { LISTED } else { 0xb1 })
}

/// What reaches the three variants: plain values, to cross into the thread that
/// runs inside the namespace.
struct Targets {
    in0: u32,
    mono: RawFd,
    tail: RawFd,
    root: PathBuf,
    /// The chain's id (its native slot).
    chain: u32,
}

impl Setup {
    fn targets(&self) -> Result<Targets> {
        let rt = Runtime::open(self.root.path())?;
        let chain = rt
            .status()?
            .chains
            .iter()
            .find(|c| c.name == "mmlf6")
            .map(|c| c.id)
            .context("the mmlf6 chain (IPv6 packets) is not installed")?;
        if rt.native_of(chain)?.is_none() {
            bail!(
                "`ebpkg install` left the mmlf6 chain interpreted (see `ebpkg status`): the benchmark compares both tiers"
            );
        }
        Ok(Targets {
            in0: self.dut.ifindex("in0")?,
            mono: self.mono.prog_fd("mmlf_mono")?,
            tail: self.tail.prog_fd("mmlf_tail_entry")?,
            root: self.root.path().to_owned(),
            chain: chain.0,
        })
    }
}

/// The variants, run from inside the namespace of the host under test.
struct Runner {
    t: Targets,
    rt: Runtime,
    /// The chain's native program, held open while its slot is emptied for the VM.
    native: std::os::fd::OwnedFd,
    slots: libbpf_rs::MapHandle,
}

impl Runner {
    fn open(t: Targets) -> Result<Runner> {
        let rt = Runtime::open(&t.root)?;
        let id = rt.native_of(hike_runtime::ChainId(t.chain))?.context("the mmlf6 chain has no native program")?;
        // SAFETY: a plain syscall wrapper; the descriptor it returns is ours.
        let fd = unsafe { libbpf_rs::libbpf_sys::bpf_prog_get_fd_by_id(id) };
        if fd < 0 {
            bail!("cannot open native program {id}: {}", std::io::Error::from_raw_os_error(-fd));
        }
        // SAFETY: the kernel just gave us this descriptor.
        let native = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        let slots = libbpf_rs::MapHandle::from_pinned_path(t.root.join("vm/hike_native_xdp"))?;
        Ok(Runner { rt, t, native, slots })
    }

    /// Puts the native program in the chain's slot, or takes it out (the loader
    /// then interprets the chain).
    fn tier(&self, native: bool) -> Result<()> {
        use libbpf_rs::MapCore;
        let key = self.t.chain.to_le_bytes();
        if native {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&self.native) as u32;
            self.slots.update(&key, &fd.to_le_bytes(), libbpf_rs::MapFlags::ANY)?;
        } else if self.slots.lookup(&key, libbpf_rs::MapFlags::ANY)?.is_some() {
            self.slots.delete(&key)?;
        }
        Ok(())
    }

    /// Runs `variant` on `p` `n` times: its verdict, and the kernel's time per
    /// repetition in ns (which leaves out the time the run yields the CPU
    /// between batches).
    fn run(&self, variant: usize, p: &[u8], live: bool, n: u32) -> Result<(u32, f64)> {
        let (verdict, d) = match variant {
            0 | 3 => {
                self.tier(variant == 0)?;
                let opts = TestRunOptions { repeat: n, ingress_ifindex: self.t.in0, live_frames: live };
                let r = self.rt.test_run_loader_with(INSTANCE, p, &opts)?;
                (r.verdict, r.duration)
            }
            1 => {
                let r = bpf::test_run(self.t.mono, p, self.t.in0, live, n)?;
                (r.verdict, r.duration)
            }
            _ => {
                let r = bpf::test_run(self.t.tail, p, self.t.in0, live, n)?;
                (r.verdict, r.duration)
            }
        };
        Ok((verdict, d.as_nanos() as f64))
    }
}

/// Runs one variant on one kind of packet with live frames for `seconds`, for a
/// profiler to sample (`perf record -e cpu-clock -a`); returns the median kernel
/// time per frame in ns.
pub fn spin(ebpkg_bin: &Path, bpffs: &Path, cache: &Path, variant: usize, kind: usize, seconds: u64) -> Result<f64> {
    let s = setup(ebpkg_bin, bpffs, cache).context("set up the MMLF benchmark")?;
    let targets = s.targets()?;
    s.dut.run(move || -> Result<f64> {
        let runner = Runner::open(targets)?;
        let p = kind_frame(kind);
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let mut per_frame = Vec::new();
        while Instant::now() < deadline {
            per_frame.push(runner.run(variant, &p, true, MAX_LIVE_FRAMES)?.1);
        }
        Ok(Summary::of(&per_frame).median)
    })?
}

/// ns per packet from packets per second.
fn time_of(rates: &[f64]) -> Vec<f64> {
    rates.iter().map(|r| 1e9 / r).collect()
}

/// `live`: frames per live run (at most MAX_LIVE_FRAMES).
pub fn run(ebpkg_bin: &Path, bpffs: &Path, cache: &Path, rounds: usize, repeat: u32, live: u32) -> Result<MmlfResult> {
    let live = live.min(MAX_LIVE_FRAMES);
    let s = setup(ebpkg_bin, bpffs, cache).context("set up the MMLF benchmark")?;
    let sunk = s.sink_counter.counter("counted", &0u32.to_le_bytes())?;
    let targets = s.targets()?;
    let (ns, pps) = s.dut.run(move || -> Result<(Samples, Samples)> {
        let runner = Runner::open(targets)?;
        // Expected verdicts: redirect when matching, pass otherwise.
        let frames = [kind_frame(0), kind_frame(1)];
        let expect = [4u32, 2];
        let restore = |r: &Runner| r.tier(true);
        for (k, p) in frames.iter().enumerate() {
            for (v, name) in VARIANTS.iter().enumerate() {
                let (got, _) = runner.run(v, p, false, 1)?;
                if got != expect[k] {
                    bail!("{name} returned {got} for a {} packet instead of {}", KINDS[k], expect[k]);
                }
            }
        }
        let mut ns = vec![vec![Vec::new(); VARIANTS.len()]; KINDS.len()];
        let mut pps = vec![vec![Vec::new(); VARIANTS.len()]; KINDS.len()];
        // The hop limit falls by one per repetition of a forwarded packet: runs
        // of `repeat` (< 255) keep it forwarding; 25 of them make one sample.
        let calls = 25;
        let mut round = 0;
        loop {
            let kept = ns[0][0].len();
            if kept >= rounds {
                // Enough when the matching live ratio is known to within the target's margin.
                let r = ratio_of_medians(&time_of(&pps[0][0]), &time_of(&pps[0][1]));
                if r.high - r.low < MAX_INTERVAL || kept >= rounds * MAX_ROUND_FACTOR {
                    break;
                }
            }
            for (k, p) in frames.iter().enumerate() {
                for i in 0..VARIANTS.len() {
                    let v = (round + i) % VARIANTS.len();
                    // Interference on a shared machine only ever adds time: each
                    // sample is the fastest of several runs.
                    let mut fastest = f64::INFINITY;
                    for _ in 0..calls {
                        fastest = fastest.min(runner.run(v, p, false, repeat)?.1);
                    }
                    let mut per_frame = f64::INFINITY;
                    for _ in 0..LIVE_RUNS {
                        let before = sunk.read()?;
                        per_frame = per_frame.min(runner.run(v, p, true, live)?.1);
                        // Every matching frame is forwarded to the sink, no other.
                        let want = if k == 0 { u64::from(live) } else { 0 };
                        let mut got = sunk.read()? - before;
                        let deadline = Instant::now() + Duration::from_secs(2);
                        while got < want && Instant::now() < deadline {
                            std::thread::sleep(Duration::from_millis(5));
                            got = sunk.read()? - before;
                        }
                        if got != want {
                            bail!(
                                "{}, {} packets: {got} of {live} live frames reached the sink instead of {want}",
                                VARIANTS[v],
                                KINDS[k]
                            );
                        }
                    }
                    let rate = 1e9 / per_frame;
                    if round > 0 {
                        ns[k][v].push(fastest);
                        pps[k][v].push(rate);
                    }
                }
            }
            round += 1;
        }
        restore(&runner)?;
        Ok((ns, pps))
    })??;
    let ratio_ns = (0..KINDS.len()).map(|k| ratio_of_medians(&ns[k][0], &ns[k][1])).collect();
    let ratio_live = (0..KINDS.len()).map(|k| ratio_of_medians(&time_of(&pps[k][0]), &time_of(&pps[k][1]))).collect();
    let ratio_ns_vm = (0..KINDS.len()).map(|k| ratio_of_medians(&ns[k][3], &ns[k][1])).collect();
    let ratio_live_vm =
        (0..KINDS.len()).map(|k| ratio_of_medians(&time_of(&pps[k][3]), &time_of(&pps[k][1]))).collect();
    let rounds = ns[0][0].len();
    let sum = |v: Samples| -> Vec<Vec<Summary>> {
        v.into_iter().map(|k| k.iter().map(|s| Summary::of(s)).collect()).collect()
    };
    Ok(MmlfResult {
        ns: sum(ns),
        pps: sum(pps),
        repeat,
        live_frames: live,
        ratio_ns,
        ratio_live,
        ratio_ns_vm,
        ratio_live_vm,
        rounds,
    })
}
