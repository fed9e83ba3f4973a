//! How long `ebpkg lock` takes to resolve a project against a large registry:
//! synthetic file:// registries of 1,000 and 10,000 packages × 20 versions
//! (dependency fan-out of 0–5 mostly nearby packages, two majors, a pre-release
//! and some yanked versions per package), a project depending on the newest 100
//! packages, and the same project with a deep conflict to explain. Each time is
//! set against reading the same index files (the floor: the resolution cannot
//! be faster than its input), measured in the same run. Over HTTP: the same
//! registry served by `ebpkg-registry` without TUF (here) and, with TUF metadata
//! as a file:// registry and served, against the floors of issue 40 ([`tuf`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use ebpkg_registry_testing::{Database, Postgres, ServedRegistry};
use serde::Serialize;

use super::process;
use super::stats::Summary;

mod realistic;
pub mod report;
pub mod served;
pub mod tuf;
mod upstream;

/// Versions per package.
pub const VERSIONS: usize = 20;
/// Packages the project depends on directly (the newest ones).
pub const ROOTS: usize = 100;

/// A fixed-seed generator, so every run resolves the same registry.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn name(i: usize) -> String {
    format!("p{i:05}")
}

/// The versions of every package: 1.0.0–1.9.0, 2.0.0–2.8.0 and 3.0.0-rc.1.
fn version(k: usize) -> String {
    match k {
        0..=9 => format!("1.{k}.0"),
        10..=18 => format!("2.{}.0", k - 10),
        _ => "3.0.0-rc.1".to_owned(),
    }
}

fn index_path(root: &Path, name: &str) -> PathBuf {
    root.join("index").join(ebpkg_spec::index_path(name))
}

/// Writes a registry of `n` packages (and the conflict's chain) under `root`.
pub fn generate(root: &Path, n: usize) -> Result<()> {
    std::fs::create_dir_all(root)?;
    std::fs::write(root.join("config.json"), "{\"ebpkg-registry\":1}\n")?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ n as u64);
    let cksum = "0".repeat(64);
    let write = |name: &str, lines: &str| -> Result<()> {
        let path = index_path(root, name);
        std::fs::create_dir_all(path.parent().context("index path")?)?;
        std::fs::write(&path, lines)?;
        Ok(())
    };
    for i in 0..n {
        // Dependencies: up to 5 lower-numbered packages, most of them nearby.
        let fan = if i == 0 { 0 } else { rng.below(6) as usize };
        let mut deps: Vec<usize> = (0..fan)
            .map(|_| {
                if rng.below(4) == 0 {
                    rng.below(i as u64) as usize
                } else {
                    i - 1 - rng.below(i.min(50) as u64) as usize
                }
            })
            .collect();
        // p00001 needs p00000 (at its own major): the conflict below goes through it.
        if i == 1 {
            deps.push(0);
        }
        deps.sort_unstable();
        deps.dedup();
        let mut lines = String::new();
        for k in 0..VERSIONS {
            let vers = version(k);
            let major = if k < 10 { 1 } else { 2 };
            // A few yanked versions, never the newest of a major nor p00000's (the conflict's).
            let yanked = i != 0 && k != 9 && k != 18 && rng.below(20) == 0;
            let deps_json: Vec<String> = deps
                .iter()
                .map(|&d| format!("{{\"name\":\"{}\",\"req\":\"^{major}\",\"registry\":null}}", name(d)))
                .collect();
            let _ = writeln!(
                lines,
                "{{\"v\":1,\"name\":\"{}\",\"vers\":\"{vers}\",\"deps\":[{}],\"cksum\":\"{cksum}\",\"yanked\":{yanked}}}",
                name(i),
                deps_json.join(",")
            );
        }
        write(&name(i), &lines)?;
    }
    // The conflict: deep1 → deep2 → … → deep5, which wants p00000 at 1.x, while the
    // project's other dependencies want 2.x.
    for d in 1..=5 {
        let dep = if d < 5 { format!("deep{}", d + 1) } else { name(0) };
        let req = if d < 5 { "^1" } else { "=1.0.0" };
        write(
            &format!("deep{d}"),
            &format!(
                "{{\"v\":1,\"name\":\"deep{d}\",\"vers\":\"1.0.0\",\"deps\":[{{\"name\":\"{dep}\",\"req\":\"{req}\",\"registry\":null}}],\"cksum\":\"{cksum}\",\"yanked\":false}}\n"
            ),
        )?;
    }
    Ok(())
}

/// A project depending on the newest `ROOTS` packages (at 2.x), and with
/// `conflict`, on `p00001` and `deep1` too.
pub fn project(dir: &Path, n: usize, conflict: bool) -> Result<()> {
    let mut deps: Vec<(String, &str)> = (n.saturating_sub(ROOTS)..n).map(|i| (name(i), "^2")).collect();
    if conflict {
        // p00001 ^2 needs p00000 ^2; deep1's chain needs p00000 =1.0.0.
        deps.extend([(name(1), "^2"), ("deep1".to_owned(), "^1")]);
    }
    write_project(dir, &deps)
}

/// Writes the manifest of a project depending on `deps` (name, requirement).
fn write_project(dir: &Path, deps: &[(String, &str)]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut toml = String::from("[package]\nname = \"resolve-bench\"\nversion = \"0.1.0\"\n\n[dependencies]\n");
    for (dep, req) in deps {
        let _ = writeln!(toml, "{dep} = \"{req}\"");
    }
    let path = dir.join("ebpkg.toml");
    std::fs::write(&path, toml).with_context(|| format!("writing {}", path.display()))
}

/// One registry size's results.
#[derive(Debug, Clone, Serialize)]
pub struct SizeResult {
    pub packages: usize,
    pub index_bytes: u64,
    /// Reading every index file (ms): the floor.
    pub read_ms: Summary,
    /// `ebpkg lock` from scratch, its resolution cache warm (ms), and against the floor.
    pub lock_ms: Summary,
    pub lock_ratio: f64,
    /// `ebpkg lock` from scratch with no resolution cache (ms): every index file
    /// read and parsed, and the cache written.
    pub uncached_ms: Summary,
    /// Its peak resident memory (MiB), CPU time (ms, all threads) and minor page faults.
    pub lock_rss_mib: Summary,
    pub lock_cpu_ms: Summary,
    pub lock_minor_faults: Summary,
    /// `ebpkg lock` again with the ebpkg.lock it wrote (ms): the lock read and
    /// kept as preferences, the resolution done again, nothing written.
    pub relock_ms: Summary,
    /// `ebpkg lock` failing on the conflict, explanation printed (ms).
    pub conflict_ms: Summary,
    pub conflict_ratio: f64,
    /// Packages in the lock.
    pub locked: usize,
    /// What `ebpkg lock` said of the conflict.
    pub explanation: String,
}

/// Reads every file under `dir` (the floor), returning how many bytes.
fn read_all(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for_each_file(dir, |path| {
        total += std::fs::read(path)?.len() as u64;
        Ok(())
    })?;
    Ok(total)
}

/// Calls `f` with every file under `dir`.
fn for_each_file(dir: &Path, mut f: impl FnMut(&Path) -> Result<()>) -> Result<()> {
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                todo.push(e.path());
            } else {
                f(&e.path())?;
            }
        }
    }
    Ok(())
}

/// How long the machine is left idle before each timed run. A user's command
/// starts on an idle machine; one started right after another command that freed
/// a few hundred MB gets that memory back still mapped. A virtual machine that
/// returns freed memory to its host (free page reporting, as here) does so about
/// 2 s after it is freed, and a command run within that window looked more than
/// twice as fast as any user saw it (a warm 10,000-package lock: 80 ms against 225).
const SETTLE: std::time::Duration = std::time::Duration::from_secs(3);

/// What one `ebpkg lock` gave.
struct Locked {
    ms: f64,
    succeeded: bool,
    stderr: String,
    rss_mib: f64,
    cpu_ms: f64,
    minor_faults: f64,
}

/// One `ebpkg lock` from scratch in `dir` (with `flags`), after [`SETTLE`].
fn lock_with(ebpkg: &Path, env: &[(String, String)], dir: &Path, flags: &[&str]) -> Result<Locked> {
    let _ = std::fs::remove_file(dir.join("ebpkg.lock"));
    lock_again(ebpkg, env, dir, flags)
}

/// [`lock_with`], keeping the ebpkg.lock in `dir`.
fn lock_again(ebpkg: &Path, env: &[(String, String)], dir: &Path, flags: &[&str]) -> Result<Locked> {
    std::thread::sleep(SETTLE);
    let mut cmd = Command::new(ebpkg);
    cmd.current_dir(dir).args(["-q", "lock"]).args(flags).envs(env.iter().cloned());
    let run = process::run(&mut cmd)?;
    Ok(Locked {
        ms: run.elapsed.as_secs_f64() * 1e3,
        succeeded: run.status.success(),
        stderr: run.stderr,
        rss_mib: run.peak_rss_kib as f64 / 1024.0,
        cpu_ms: run.cpu.as_secs_f64() * 1e3,
        minor_faults: run.minor_faults as f64,
    })
}

fn lock(ebpkg: &Path, env: &[(String, String)], dir: &Path) -> Result<Locked> {
    lock_with(ebpkg, env, dir, &[])
}

/// The environment of an `ebpkg` resolving against `registry` with its own
/// cache, state and configuration under `dir`. The synthetic registries'
/// versions are unsigned, and resolution leaves out what the trust policy would
/// refuse: its policy (`dir/trust.toml`) allows every package unsigned.
fn ebpkg_env(registry: &str, dir: &Path) -> Result<Vec<(String, String)>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let policy = dir.join("trust.toml");
    std::fs::write(&policy, "[unsigned]\nallow = [\"*\"]\n")
        .with_context(|| format!("writing {}", policy.display()))?;
    Ok([
        ("EBPKG_REGISTRY", registry.to_owned()),
        ("EBPKG_CACHE_DIR", dir.join("cache").display().to_string()),
        ("EBPKG_STATE_DIR", dir.join("state").display().to_string()),
        ("EBPKG_CONFIG", dir.join("config.toml").display().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect())
}

pub fn run(ebpkg: &Path, sizes: &[usize], rounds: usize) -> Result<Vec<SizeResult>> {
    let mut out = Vec::new();
    for &n in sizes {
        let dir = tempfile::tempdir()?;
        let registry = dir.path().join("registry");
        generate(&registry, n)?;
        let env = ebpkg_env(&format!("file://{}", registry.display()), dir.path())?;
        let ok = dir.path().join("ok");
        let clash = dir.path().join("clash");
        project(&ok, n, false)?;
        project(&clash, n, true)?;
        // ebpkg trusts an index file's fingerprint only once it is 2 s old.
        std::thread::sleep(std::time::Duration::from_millis(2100));
        let resolution_caches = dir.path().join("cache/index");
        let (mut read, mut locks, mut conflicts, mut rss) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut cpu, mut faults) = (Vec::new(), Vec::new());
        let mut relocks = Vec::new();
        let mut uncached = Vec::new();
        let mut index_bytes = 0;
        let mut explanation = String::new();
        // Round 0 warms the page cache and is not kept; the variants alternate.
        for round in 0..=rounds {
            std::thread::sleep(SETTLE);
            let started = Instant::now();
            index_bytes = read_all(&registry.join("index"))?;
            let r = started.elapsed().as_secs_f64() * 1e3;
            if resolution_caches.exists() {
                std::fs::remove_dir_all(&resolution_caches)?;
            }
            let u = lock(ebpkg, &env, &ok)?;
            if !u.succeeded {
                bail!("ebpkg lock failed on the {n}-package registry: {}", u.stderr);
            }
            let l = lock(ebpkg, &env, &ok)?;
            if !l.succeeded {
                bail!("ebpkg lock failed on the {n}-package registry: {}", l.stderr);
            }
            let again = lock_again(ebpkg, &env, &ok, &[])?;
            if !again.succeeded {
                bail!("ebpkg lock with its ebpkg.lock failed on the {n}-package registry: {}", again.stderr);
            }
            let c = lock(ebpkg, &env, &clash)?;
            if c.succeeded || !c.stderr.contains("deep5") {
                bail!("the {n}-package conflict was not explained (it should name deep5): {}", c.stderr);
            }
            explanation = c.stderr;
            if round > 0 {
                read.push(r);
                uncached.push(u.ms);
                locks.push(l.ms);
                conflicts.push(c.ms);
                rss.push(l.rss_mib);
                cpu.push(l.cpu_ms);
                faults.push(l.minor_faults);
                relocks.push(again.ms);
            }
        }
        let lockfile = std::fs::read_to_string(ok.join("ebpkg.lock"))?;
        let locked = lockfile.matches("[[package]]").count();
        let (read_ms, lock_ms, conflict_ms) = (Summary::of(&read), Summary::of(&locks), Summary::of(&conflicts));
        out.push(SizeResult {
            packages: n,
            index_bytes,
            lock_ratio: lock_ms.median / read_ms.median,
            conflict_ratio: conflict_ms.median / read_ms.median,
            read_ms,
            lock_ms,
            lock_rss_mib: Summary::of(&rss),
            lock_cpu_ms: Summary::of(&cpu),
            lock_minor_faults: Summary::of(&faults),
            relock_ms: Summary::of(&relocks),
            uncached_ms: Summary::of(&uncached),
            conflict_ms,
            locked,
            explanation,
        });
    }
    Ok(out)
}

/// Resolution against a registry server.
#[derive(Debug, Clone, Serialize)]
pub struct HttpResult {
    pub packages: usize,
    /// The first `ebpkg lock`, its index cache empty (ms).
    pub cold_ms: f64,
    /// Later ones, every index file cached and revalidated (ms).
    pub warm_ms: Summary,
    /// The same, `--offline`: from the cache alone (ms).
    pub offline_ms: Summary,
    /// Peak resident memory of the warm runs (MiB).
    pub warm_rss_mib: Summary,
    pub locked: usize,
}

/// `ebpkg lock` against `ebpkg-registry` (`server`) serving the `n`-package
/// registry: cold once, then warm (revalidating) and offline in alternating rounds.
pub fn run_http(ebpkg: &Path, server: &Path, n: usize, rounds: usize) -> Result<HttpResult> {
    let dir = tempfile::tempdir()?;
    let registry = dir.path().join("registry");
    generate(&registry, n)?;
    let loaded = IndexDatabase::load(server, &registry)?;
    let db = &loaded.db;
    let blobs = dir.path().join("blobs");
    std::fs::create_dir_all(&blobs)?;
    let served = ServedRegistry::start(server, &db.url(), &blobs, &["--db-pool", "16"])?;
    let env = ebpkg_env(&served.url, dir.path())?;
    let ok = dir.path().join("ok");
    project(&ok, n, false)?;
    let cold = lock(ebpkg, &env, &ok)?;
    if !cold.succeeded {
        bail!("ebpkg lock against the registry server failed: {}", cold.stderr);
    }
    let cold_ms = cold.ms;
    let (mut warm, mut offline, mut rss) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..=rounds {
        let w = lock(ebpkg, &env, &ok)?;
        if !w.succeeded {
            bail!("ebpkg lock against the registry server failed: {}", w.stderr);
        }
        let o = lock_with(ebpkg, &env, &ok, &["--offline"])?;
        if !o.succeeded {
            bail!("ebpkg lock --offline against the cached index failed: {}", o.stderr);
        }
        if round > 0 {
            warm.push(w.ms);
            offline.push(o.ms);
            rss.push(w.rss_mib);
        }
    }
    let lockfile = std::fs::read_to_string(ok.join("ebpkg.lock"))?;
    drop(served);
    Ok(HttpResult {
        packages: n,
        cold_ms,
        warm_ms: Summary::of(&warm),
        offline_ms: Summary::of(&offline),
        warm_rss_mib: Summary::of(&rss),
        locked: lockfile.matches("[[package]]").count(),
    })
}

/// A PostgreSQL cluster whose database holds a generated registry's index
/// files, as `ebpkg-registry` serves them. The database is dropped before the
/// cluster stops (fields drop in order).
struct IndexDatabase {
    db: Database,
    pg: Postgres,
}

impl IndexDatabase {
    /// Starts a cluster, migrates a database for `server` and loads every index
    /// file of `registry` into it.
    fn load(server: &Path, registry: &Path) -> Result<IndexDatabase> {
        let pg = Postgres::start()?;
        let db = pg.database()?;
        let admin = Command::new(server)
            .args(["--database-url", &db.url(), "migrate"])
            .output()
            .with_context(|| format!("running {}", server.display()))?;
        if !admin.status.success() {
            bail!("ebpkg-registry migrate: {}", String::from_utf8_lossy(&admin.stderr));
        }
        let loaded = IndexDatabase { db, pg };
        loaded.insert_index(&registry.join("index"))?;
        Ok(loaded)
    }

    /// The index files go straight into the table the server serves them from:
    /// publishing 200,000 versions one by one would measure publishing instead.
    fn insert_index(&self, index: &Path) -> Result<()> {
        let rows = self.pg.socket_dir().join("index.tsv");
        let files = index_files(index)?;
        let mut tsv = String::new();
        for (name, text) in &files {
            let sha = ebpkg_spec::types::Sha256Digest::of(text.as_bytes());
            let escaped = text.replace('\\', "\\\\").replace('\n', "\\n").replace('\t', "\\t");
            let _ = writeln!(tsv, "{name}\t{escaped}\t{sha}");
        }
        std::fs::write(&rows, tsv).with_context(|| format!("writing {}", rows.display()))?;
        self.db.psql(&format!(
            "CREATE TEMP TABLE rows (name text, index_file text, sha text); COPY rows FROM '{}'; \
             INSERT INTO packages (name, normalized_name, index_file, index_sha256, index_modified_at, described_version, \
             all_yanked, search) SELECT name, name, index_file, decode(sha, 'hex'), now(), '2.8.0', false, \
             to_tsvector('simple', name) FROM rows",
            rows.display()
        ))?;
        Ok(())
    }
}

/// Every index file under `dir`: (file name, text).
fn index_files(dir: &Path) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for_each_file(dir, |path| {
        let name = path.file_name().and_then(|n| n.to_str()).context("index file name")?.to_owned();
        out.push((name, std::fs::read_to_string(path)?));
        Ok(())
    })?;
    Ok(out)
}
