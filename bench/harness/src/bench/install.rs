//! How long `ebpkg install` of the eCLAT paper's DDoS chain takes, against the
//! same work done by hand: the same clang commands (built by the same
//! `ebpkg_build` function, run one after another as a script would), then
//! `bpftool prog loadall` of the same objects and of the VM's continuation (which
//! HIKe programs need), `bpftool map update` of the VM's program array and
//! `bpftool net attach` of the loader. The floor of the loads is the same done
//! leanest, in one process with libbpf, only the programs ebpkg loads. Cold:
//! ebpkg's build cache empty (the by-hand script compiles everything too); warm: a
//! reinstall after an uninstall (the by-hand script loads the objects it compiled
//! before). Rounds interleave them. The by-hand script runs in a mount namespace
//! of its own with a fresh bpffs at /sys/fs/bpf, where libbpf pins the VM's maps by
//! name, so it touches nothing of the host's.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use std::os::fd::{AsFd, AsRawFd};

use anyhow::{Context, Result, bail};
use ebpkg_build::{Btf, Builder, Toolchain, ToolchainOptions};
use ebpkg_spec::Manifest;
use ebpkg_spec::cache_layout::CacheLayout;
use libbpf_rs::MapCore;
use serde::Serialize;

use super::process;
use super::stats::Summary;
use crate::netns::Netns;

/// The object index of the VM's continuation program (written beside the compiled
/// objects): loading HIKe programs by hand needs it too.
const CONTINUATION: usize = 999;

/// The packages the DDoS chain needs, published to the benchmark's registry.
const PACKAGES: [&str; 6] = ["meter", "sets", "sampler", "net", "basic", "ddos"];

/// One variant's runs.
#[derive(Debug, Clone, Serialize)]
pub struct Variant {
    /// Wall time (ms).
    pub ms: Summary,
    /// Peak resident memory (MiB); `ebpkg` only.
    pub rss_mib: Option<Summary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct InstallResult {
    pub ebpkg_cold: Variant,
    pub ebpkg_warm: Variant,
    pub hand_cold: Variant,
    pub hand_warm: Variant,
    /// The same loads with libbpf, only the programs ebpkg loads (ms).
    pub minimal_warm_ms: Summary,
    /// The by-hand script's compile part alone (ms).
    pub hand_compile_ms: Summary,
    /// A warm install with the chain compiled native (`--chain-mode auto`), for reference (ms).
    pub ebpkg_warm_native_ms: Summary,
    /// `ebpkg install --timings` phases, median of the warm and of the cold runs (ms).
    pub warm_phases: Vec<(String, f64)>,
    pub cold_phases: Vec<(String, f64)>,
    /// Time inside BPF_PROG_LOAD (the verifier and the JIT) during one warm ebpkg
    /// install and during the by-hand loads, from strace (ms), and how many loads.
    pub ebpkg_prog_load_ms: f64,
    pub ebpkg_prog_loads: usize,
    pub hand_prog_load_ms: f64,
    pub hand_prog_loads: usize,
    /// What was built and loaded.
    pub compiles: usize,
    pub programs: usize,
}

/// The benchmark's scratch: registry, cache, state, a network namespace with a veth.
pub(crate) struct Bench {
    ebpkg: PathBuf,
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
    ns: Netns,
    bpffs_root: PathBuf,
}

impl Drop for Bench {
    fn drop(&mut self) {
        let _ = self.ebpkg(&["uninstall", "ddos"], &[]);
        let _ = hike_runtime::Runtime::destroy(&self.bpffs_root);
    }
}

impl Bench {
    pub(crate) fn new(ebpkg: &Path, packages: &Path) -> Result<Bench> {
        let dir = tempfile::tempdir()?;
        let tag = std::process::id();
        let bpffs_root = PathBuf::from(format!("/sys/fs/bpf/ebpkg-install-bench-{tag}"));
        let d = dir.path();
        let env: Vec<(String, String)> = [
            ("EBPKG_REGISTRY", format!("file://{}/registry", d.display())),
            ("EBPKG_CACHE_DIR", d.join("cache").display().to_string()),
            ("EBPKG_STATE_DIR", d.join("state").display().to_string()),
            ("EBPKG_CONFIG", d.join("config.toml").display().to_string()),
            ("EBPKG_BPFFS_ROOT", bpffs_root.display().to_string()),
            ("NO_COLOR", "1".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let ns = Netns::new(&format!("ebib{tag}"), false)?;
        ns.ip(&["link", "add", "in0", "type", "veth", "peer", "name", "in1"])?;
        ns.ip(&["link", "set", "in0", "up"])?;
        ns.ip(&["link", "set", "in1", "up"])?;
        std::fs::create_dir_all(d.join("empty"))?;
        let bench = Bench { ebpkg: ebpkg.to_owned(), dir, env, ns, bpffs_root };
        // Before publishing: publishing resolves a package's dependencies, which
        // the trust policy would refuse unsigned.
        bench.ok(&["trust", "allow-unsigned", "*"])?;
        for p in PACKAGES {
            let run = bench.ebpkg_in(&packages.join(p), &["publish", "--no-verify"], &[])?;
            if !run.status.success() {
                bail!("ebpkg publish of {p}: {}", run.stderr);
            }
        }
        Ok(bench)
    }

    pub(crate) fn bpffs_root(&self) -> &Path {
        &self.bpffs_root
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn ebpkg_in(&self, cwd: &Path, args: &[&str], extra: &[&str]) -> Result<process::Measured> {
        let mut cmd = Command::new(&self.ebpkg);
        cmd.current_dir(cwd).args(["--netns", &self.ns.name]).args(args).args(extra).envs(self.env.iter().cloned());
        process::run(&mut cmd)
    }

    fn ebpkg(&self, args: &[&str], extra: &[&str]) -> Result<process::Measured> {
        self.ebpkg_in(&self.path("empty"), args, extra)
    }

    pub(crate) fn ok(&self, args: &[&str]) -> Result<process::Measured> {
        let run = self.ebpkg(args, &[])?;
        if !run.status.success() {
            bail!("ebpkg {}: {}", args.join(" "), run.stderr);
        }
        Ok(run)
    }

    /// `ebpkg install` of the DDoS chain on in0: (run, the --json document).
    fn install(&self, chain_mode: &str) -> Result<(process::Measured, serde_json::Value)> {
        let args = ["install", "ddos@^1", "--set", "DEVNAME=in0", "--chain-mode", chain_mode, "--json"];
        let run = self.ok(&args)?;
        let doc = serde_json::from_str(&run.stdout).context("ebpkg install --json")?;
        Ok((run, doc))
    }

    pub(crate) fn uninstall(&self) -> Result<()> {
        self.ok(&["uninstall", "ddos"]).map(drop)
    }

    fn clear_build_cache(&self) -> Result<()> {
        let objects = CacheLayout::new(self.path("cache")).objects();
        match std::fs::remove_dir_all(&objects) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}

/// What the by-hand script does, from what ebpkg installed.
struct Plan {
    /// (package root, source, hook): every compile of the cold install.
    compiles: Vec<(PathBuf, String, ebpkg_spec::types::Hook)>,
    /// (object index, program name, program id): every registered program.
    programs: Vec<(usize, String, u64)>,
    /// Object index and program name of the loader.
    loader: (usize, String),
}

fn hook_of(text: &str) -> Result<ebpkg_spec::types::Hook> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).with_context(|| format!("hook `{text}`"))
}

/// The plan: compiles from the cold install's "Compiled" lines, programs and the
/// loader from its deployment record, sources from the packages' manifests.
fn plan(bench: &Bench, cold_stderr: &str, record: &serde_json::Value) -> Result<Plan> {
    let layout = CacheLayout::new(bench.path("cache"));
    let mut roots: BTreeMap<String, PathBuf> = BTreeMap::new();
    for p in record["packages"].as_array().context("packages")? {
        let name = ebpkg_spec::PackageName::new(p["name"].as_str().context("name")?).map_err(anyhow::Error::msg)?;
        let version = semver::Version::parse(p["version"].as_str().context("version")?)?;
        let digest: ebpkg_spec::types::Sha256Digest = serde_json::from_value(p["checksum"].clone())?;
        roots.insert(name.to_string(), layout.source_dir(&name, &version, &digest));
    }
    let mut compiles = Vec::new();
    for line in cold_stderr.lines() {
        // `Compiled src/sc.bpf.c (xdp) of basic@1.0.0 in 0.66s`
        let Some(rest) = line.trim_start().strip_prefix("Compiled ") else { continue };
        let mut words = rest.split_whitespace();
        let (Some(source), Some(hook), Some("of"), Some(pkg)) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            bail!("unexpected line: {line}");
        };
        let name = pkg.split('@').next().unwrap_or(pkg);
        let root = roots.get(name).with_context(|| format!("no package {name} in the record"))?;
        compiles.push((root.clone(), source.to_owned(), hook_of(hook.trim_matches(|c| c == '(' || c == ')'))?));
    }
    let object_of =
        |pkg: &str, source: &str| compiles.iter().position(|(root, s, _)| Some(root) == roots.get(pkg) && s == source);
    let manifest = |pkg: &str| -> Result<Manifest> {
        let root = roots.get(pkg).with_context(|| format!("no package {pkg}"))?;
        let path = root.join("ebpkg.toml");
        Manifest::parse_bytes(&std::fs::read(&path)?, &path.display().to_string())
            .map_err(|e| anyhow::anyhow!("{}: {e:?}", path.display()))
    };
    let mut programs = Vec::new();
    for p in record["programs"].as_array().context("programs")? {
        let pkg = p["package"].as_str().context("package")?;
        let name = p["name"].as_str().context("name")?;
        let m = manifest(pkg)?;
        let decl = m.programs.iter().find(|d| d.name.as_str() == name).context("program in its manifest")?;
        let source = decl.source.as_ref().context("a program built from source")?;
        let object = object_of(pkg, source.as_str()).with_context(|| format!("{pkg} {source} was not compiled"))?;
        programs.push((object, name.to_owned(), p["id"].as_u64().context("id")?));
    }
    let l = &record["loaders"][0];
    let (pkg, name) = (l["package"].as_str().context("loader package")?, l["loader"].as_str().context("loader")?);
    let m = manifest(pkg)?;
    let decl = m.loaders.iter().find(|d| d.name.as_str() == name).context("loader in its manifest")?;
    let source = decl.source.as_ref().context("a loader built from source")?;
    let loader = (object_of(pkg, source.as_str()).context("the loader was not compiled")?, name.to_owned());
    Ok(Plan { compiles, programs, loader })
}

fn quote(word: &std::ffi::OsStr) -> String {
    format!("'{}'", word.to_string_lossy().replace('\'', r"'\''"))
}

/// The by-hand script: the compiles (when `compile`), then the loads, registering
/// and attaching, timed inside (mount namespace set-up excluded); prints
/// `<compile ms> <load ms>`, then detaches.
fn script(bench: &Bench, plan: &Plan, builder: &Builder, objects: &Path, compile: bool) -> Result<String> {
    let mut s = String::from("set -euo pipefail\nmount -t bpf bpf /sys/fs/bpf\nt0=$(date +%s%N)\n");
    if compile {
        for (i, (root, source, hook)) in plan.compiles.iter().enumerate() {
            let args = builder.resolved_args(*hook, ebpkg_spec::manifest::KernelBuild::Portable, root)?;
            let words: Vec<String> = args.iter().map(|a| quote(a)).collect();
            let _ = writeln!(
                s,
                "(cd {root} && PWD={root} {clang} {} -c {} -o {})",
                words.join(" "),
                quote(source.as_ref()),
                quote(objects.join(format!("{i}.o")).as_os_str()),
                root = quote(root.as_os_str()),
                clang = quote(builder.toolchain()?.clang.as_os_str()),
            );
        }
    }
    s.push_str("t1=$(date +%s%N)\n");
    let mut used: Vec<usize> = plan.programs.iter().map(|p| p.0).chain([CONTINUATION]).collect();
    used.sort_unstable();
    used.dedup();
    for i in used {
        let _ = writeln!(
            s,
            "bpftool prog loadall {} /sys/fs/bpf/o{i} type xdp",
            quote(objects.join(format!("{i}.o")).as_os_str())
        );
    }
    for (i, name, id) in plan.programs.iter().chain([&(CONTINUATION, "hike_cont".to_owned(), 0)]) {
        let _ = writeln!(
            s,
            "bpftool map update pinned /sys/fs/bpf/hike_progs_xdp key {} 0 0 0 value pinned /sys/fs/bpf/o{i}/{name}",
            id
        );
    }
    let (li, lname) = &plan.loader;
    let netns = format!("--net=/var/run/netns/{}", bench.ns.name);
    let _ = writeln!(
        s,
        "bpftool prog loadall {} /sys/fs/bpf/loader type xdp\nnsenter {netns} bpftool net attach xdp pinned /sys/fs/bpf/loader/{lname} dev in0",
        quote(objects.join(format!("{li}.o")).as_os_str())
    );
    s.push_str("t2=$(date +%s%N)\necho $(( (t1 - t0) / 1000 )) $(( (t2 - t1) / 1000 ))\n");
    let _ = writeln!(s, "nsenter {netns} bpftool net detach xdp dev in0");
    Ok(s)
}

/// Runs a by-hand script in its own mount namespace: (compile ms, load ms, stderr).
fn run_script(path: &Path, strace: Option<&Path>) -> Result<(f64, f64, String)> {
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private"]);
    if let Some(out) = strace {
        cmd.args(["strace", "-f", "-T", "-e", "trace=bpf", "-o"]).arg(out);
    }
    cmd.arg("bash").arg(path);
    let run = process::run(&mut cmd)?;
    if !run.status.success() {
        bail!("the by-hand script {} failed: {}", path.display(), run.stderr);
    }
    let mut words = run.stdout.split_whitespace().map(str::parse::<f64>);
    match (words.next(), words.next()) {
        (Some(Ok(c)), Some(Ok(l))) => Ok((c / 1e3, l / 1e3, run.stderr)),
        _ => bail!("the by-hand script printed {:?}", run.stdout),
    }
}

/// The physical limit of a warm install: in this process, with libbpf, each object
/// opened and loaded with only the programs ebpkg loads (bpftool loads every
/// program of an object: the loader object's two other loaders, each carrying an
/// interpreter, cost more than the rest), the VM's maps shared by name under a
/// fresh pin root, each program put in the VM's program array, the loader attached
/// to in0. Returns milliseconds.
fn minimal_loads(bench: &Bench, plan: &Plan, objects: &Path) -> Result<f64> {
    let pins = PathBuf::from(format!("{}-by-hand", bench.bpffs_root.display()));
    let _ = std::fs::remove_dir_all(&pins);
    std::fs::create_dir_all(&pins).with_context(|| format!("create {}", pins.display()))?;
    let ifindex = bench.ns.ifindex("in0")?;
    let started = std::time::Instant::now();
    let mut loaded = Vec::new();
    let mut wanted: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for (i, name, _) in &plan.programs {
        wanted.entry(*i).or_default().push(name);
    }
    wanted.entry(plan.loader.0).or_default().push(&plan.loader.1);
    // The VM's continuation (program 0), which every chain longer than a run needs.
    wanted.insert(CONTINUATION, vec!["hike_cont"]);
    for (i, names) in &wanted {
        let mut builder = libbpf_rs::ObjectBuilder::default();
        builder.pin_root_path(&pins).context("pin root")?;
        let mut open = builder.open_file(objects.join(format!("{i}.o"))).with_context(|| format!("open object {i}"))?;
        for mut prog in open.progs_mut() {
            let name = prog.name().to_string_lossy().into_owned();
            prog.set_autoload(names.contains(&name.as_str()));
        }
        loaded.push((*i, open.load().with_context(|| format!("load object {i} ({names:?})"))?));
    }
    let find = |i: usize, name: &str| -> Result<std::os::fd::RawFd> {
        let (_, obj) = loaded.iter().find(|(j, _)| *j == i).context("object")?;
        let prog = obj.progs().find(|p| p.name() == name).with_context(|| format!("program {name}"))?;
        Ok(prog.as_fd().as_raw_fd())
    };
    let (_, first) = loaded.first().context("no object")?;
    let progs = first.maps().find(|m| m.name() == "hike_progs_xdp").context("hike_progs_xdp")?;
    for (i, name, id) in plan.programs.iter().chain([&(CONTINUATION, "hike_cont".to_owned(), 0)]) {
        let fd = u32::try_from(find(*i, name)?)?;
        let key = u32::try_from(*id)?;
        progs.update(&key.to_le_bytes(), &fd.to_le_bytes(), libbpf_rs::MapFlags::ANY).context("register")?;
    }
    let loader = find(plan.loader.0, &plan.loader.1)?;
    let link = bench.ns.run(move || {
        let opts = libbpf_rs::libbpf_sys::bpf_link_create_opts {
            sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_link_create_opts>() as _,
            ..Default::default()
        };
        // SAFETY: `loader` is a valid program fd and `opts` is initialized.
        unsafe { libbpf_rs::libbpf_sys::bpf_link_create(loader, ifindex as i32, libbpf_rs::libbpf_sys::BPF_XDP, &opts) }
    })?;
    if link < 0 {
        bail!("attaching the loader: {}", std::io::Error::from_raw_os_error(-link));
    }
    let ms = started.elapsed().as_secs_f64() * 1e3;
    // SAFETY: bpf_link_create returned a new fd that nothing else owns; closing it detaches.
    drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(link) });
    drop(loaded);
    std::fs::remove_dir_all(&pins)?;
    Ok(ms)
}

/// Sum and count of BPF_PROG_LOAD calls in an `strace -T` log.
fn prog_loads(log: &Path) -> Result<(f64, usize)> {
    let text = std::fs::read_to_string(log)?;
    let mut total = 0.0;
    let mut n = 0;
    for line in text.lines().filter(|l| l.contains("bpf(BPF_PROG_LOAD")) {
        if let Some(t) = line.rsplit_once('<').and_then(|(_, t)| t.trim_end_matches('>').parse::<f64>().ok()) {
            total += t * 1e3;
            n += 1;
        }
    }
    Ok((total, n))
}

fn phases(doc: &serde_json::Value) -> Vec<(String, f64)> {
    doc["timings"]["phases"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| Some((p[0].as_str()?.to_owned(), p[1].as_f64()?))).collect::<Vec<_>>())
        .unwrap_or_default()
}

fn median_phases(runs: &[Vec<(String, f64)>]) -> Vec<(String, f64)> {
    let Some(first) = runs.first() else { return Vec::new() };
    first
        .iter()
        .map(|(name, _)| {
            let v: Vec<f64> =
                runs.iter().filter_map(|r| r.iter().find(|(n, _)| n == name).map(|(_, ms)| *ms)).collect();
            (name.clone(), Summary::of(&v).median)
        })
        .collect()
}

pub fn run(ebpkg: &Path, packages: &Path, rounds: usize) -> Result<InstallResult> {
    let bench = Bench::new(ebpkg, packages)?;
    // Warm-up, which also says what the by-hand script must do.
    bench.clear_build_cache()?;
    let (first, doc) = bench.install("interpreted")?;
    let plan = plan(&bench, &first.stderr, &doc["deployment"])?;
    bench.uninstall()?;
    let builder =
        Builder::new(bench.path("cache"), Toolchain::detect(&ToolchainOptions::default())?, Btf::kernel()?, None);
    let objects = bench.path("objects");
    std::fs::create_dir_all(&objects)?;
    std::fs::write(
        objects.join(format!("{CONTINUATION}.o")),
        hike_runtime::objects::continuation(ebpkg_spec::types::Hook::Xdp),
    )?;
    let cold_script = bench.path("by-hand-cold.sh");
    let warm_script = bench.path("by-hand-warm.sh");
    std::fs::write(&cold_script, script(&bench, &plan, &builder, &objects, true)?)?;
    std::fs::write(&warm_script, script(&bench, &plan, &builder, &objects, false)?)?;
    run_script(&cold_script, None)?;

    let (mut ec, mut ew, mut hc, mut hw) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut hcomp, mut native, mut ec_rss, mut ew_rss) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut minimal = Vec::new();
    let (mut cold_phases, mut warm_phases) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        bench.clear_build_cache()?;
        let (run, doc) = bench.install("interpreted")?;
        ec.push(run.elapsed.as_secs_f64() * 1e3);
        ec_rss.push(run.peak_rss_kib as f64 / 1024.0);
        cold_phases.push(phases(&doc));
        bench.uninstall()?;

        let (c, l, _) = run_script(&cold_script, None)?;
        hc.push(c + l);
        hcomp.push(c);

        let (run, doc) = bench.install("interpreted")?;
        ew.push(run.elapsed.as_secs_f64() * 1e3);
        ew_rss.push(run.peak_rss_kib as f64 / 1024.0);
        warm_phases.push(phases(&doc));
        bench.uninstall()?;

        let (_, l, _) = run_script(&warm_script, None)?;
        hw.push(l);
        minimal.push(minimal_loads(&bench, &plan, &objects)?);

        let (run, _) = bench.install("auto")?;
        native.push(run.elapsed.as_secs_f64() * 1e3);
        bench.uninstall()?;
    }

    // Kernel time, once each, under strace (not among the timed runs).
    let log = bench.path("ebpkg.strace");
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-T", "-e", "trace=bpf", "-o"]).arg(&log).arg(ebpkg).current_dir(bench.path("empty"));
    cmd.args(["--netns", &bench.ns.name, "install", "ddos@^1", "--set", "DEVNAME=in0", "--chain-mode", "interpreted"]);
    let traced = process::run(cmd.envs(bench.env.iter().cloned()))?;
    if !traced.status.success() {
        bail!("ebpkg install under strace: {}", traced.stderr);
    }
    bench.uninstall()?;
    let (ebpkg_prog_load_ms, ebpkg_prog_loads) = prog_loads(&log)?;
    let hand_log = bench.path("hand.strace");
    run_script(&warm_script, Some(&hand_log))?;
    let (hand_prog_load_ms, hand_prog_loads) = prog_loads(&hand_log)?;

    let variant = |v: &[f64], rss: Option<&[f64]>| Variant { ms: Summary::of(v), rss_mib: rss.map(Summary::of) };
    Ok(InstallResult {
        ebpkg_cold: variant(&ec, Some(&ec_rss)),
        ebpkg_warm: variant(&ew, Some(&ew_rss)),
        hand_cold: variant(&hc, None),
        hand_warm: variant(&hw, None),
        minimal_warm_ms: Summary::of(&minimal),
        hand_compile_ms: Summary::of(&hcomp),
        ebpkg_warm_native_ms: Summary::of(&native),
        warm_phases: median_phases(&warm_phases),
        cold_phases: median_phases(&cold_phases),
        ebpkg_prog_load_ms,
        ebpkg_prog_loads,
        hand_prog_load_ms,
        hand_prog_loads,
        compiles: plan.compiles.len(),
        programs: plan.programs.len(),
    })
}
