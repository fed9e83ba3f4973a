//! Resolution against the 10,000-package registry with TUF metadata (issue 40):
//! as a file:// registry (`ebpkg registry tuf-init`) and served by
//! `ebpkg-registry` (`ebpkg-registry tuf init`), each client trusting the root
//! the way a user does (`ebpkg registry add origin URL --root root.json`).
//!
//! Measured in the same rounds: the file:// registry warm; over HTTP warm, cold
//! and `--offline`; and the floors: reading the index files locally, and
//! fetching the index files a cold resolution fetched from the same server with
//! `curl --parallel` (16 in flight, keep-alive). Then a realistic project — 30
//! dependencies spread over the registry — against a second server process over
//! the same database that logs every request: each round, a warm resolution with
//! nothing changed, then one package it uses published upstream and a warm
//! re-resolution, the requests of each counted in that log. The timed 10,000-package
//! runs use a server that logs nothing, so that logging 8,000 lines costs them nothing.
//!
//! The client changes while this is written: every figure is what the binary
//! measured does; a resolution that fails is reported, not assumed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::realistic;
use super::served::{Request, ServeOptions, Served};
use super::upstream::Upstream;
use super::{IndexDatabase, Locked, SETTLE, ebpkg_env, generate, lock, project, read_all, write_project};
use crate::bench::process;
use crate::bench::stats::Summary;

/// Dependencies of the realistic project.
pub const PROJECT_DEPS: usize = realistic::DEPENDENCIES;
/// Most packages one of them needs, itself included.
pub const PROJECT_MOST_NEEDED: usize = realistic::MOST_NEEDED;
/// Requests the floor's client keeps in flight (what the targets assume).
pub const FLOOR_PARALLEL: usize = 16;

/// What was measured.
#[derive(Debug, Clone, Serialize)]
pub struct TufResult {
    pub packages: usize,
    /// Packages in the 10,000-package project's lock.
    pub locked: usize,
    /// Reading every index file of the registry (ms): the local floor.
    pub read_ms: Summary,
    /// `ebpkg lock` against the file:// registry with TUF, warm: time (ms), peak RSS (MiB).
    pub file_warm_ms: Summary,
    pub file_warm_rss_mib: Summary,
    /// Against the server with TUF: warm (every index file and the metadata
    /// cached), its peak RSS, cold (the cache removed), `--offline` from the cache.
    pub http_warm_ms: Summary,
    pub http_warm_rss_mib: Summary,
    pub http_cold_ms: Summary,
    /// The cold resolution's own CPU time, and the server's meanwhile (ms):
    /// client and server share the machine's CPUs.
    pub http_cold_cpu_ms: Summary,
    pub server_cold_cpu_ms: Summary,
    pub offline_ms: Summary,
    /// `curl --parallel` fetching the index files a cold resolution fetched (ms).
    pub fetch_floor_ms: Summary,
    /// The server's CPU time during the parallel fetch (ms).
    pub server_floor_cpu_ms: Summary,
    /// How many index files that is.
    pub fetched_files: usize,
    /// The requests of one cold and one warm resolution of this project.
    pub cold_requests: Tally,
    pub warm_requests: Tally,
    /// The 30-dependency project.
    pub project: ProjectResult,
    /// Measurements that failed (the first failure of each, as ebpkg said it).
    pub failures: Vec<String>,
}

/// A resolution's requests, by kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Tally {
    pub total: usize,
    /// `/tuf/…` metadata.
    pub tuf: usize,
    /// `/index/config.json`, whatever the answer.
    pub config: usize,
    /// Other `/index/…` answered 200, and 304.
    pub index_fetched: usize,
    pub index_not_modified: usize,
    pub other: usize,
    /// The metadata requests, in order (`/tuf/timestamp.json 200`).
    pub tuf_paths: Vec<String>,
}

/// The realistic project: 30 dependencies over HTTP with TUF, warm.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectResult {
    pub dependencies: Vec<String>,
    pub locked: usize,
    /// Nothing changed upstream: time (ms) and requests.
    pub warm_ms: Summary,
    pub warm_requests: Summary,
    /// One package it depends on published a new version: the re-resolution's
    /// time (ms) and requests.
    pub changed_package: String,
    pub changed_ms: Summary,
    pub changed_requests: Summary,
    /// The last round's re-resolution's requests, in order.
    pub changed_paths: Vec<Request>,
    /// Whether every re-resolution locked the version just published.
    pub change_seen: bool,
}

/// An `ebpkg` with its own cache, state and configuration under `dir`, and a project.
#[derive(Clone)]
struct Client {
    dir: PathBuf,
    env: Vec<(String, String)>,
    project: PathBuf,
}

impl Client {
    /// A client of `url` trusting `root` for it (`ebpkg registry add --root`),
    /// its project in `dir/project`.
    fn trusting(ebpkg: &Path, dir: &Path, url: &str, root: &Path) -> Result<Client> {
        let env = ebpkg_env(url, dir)?;
        let root = root.to_str().context("the root's path is not UTF-8")?;
        run_ok(ebpkg, &env, dir, &["registry", "add", "origin", url, "--root", root])?;
        Ok(Client { dir: dir.to_owned(), env, project: dir.join("project") })
    }

    /// The same client (cache, trust) with the project in `dir`.
    fn with_project(&self, dir: PathBuf) -> Client {
        Client { project: dir, ..self.clone() }
    }

    fn lock(&self, ebpkg: &Path) -> Result<Locked> {
        lock(ebpkg, &self.env, &self.project)
    }

    /// `ebpkg lock` with no idle time before and nothing measured: leaves the
    /// cache as a resolution leaves it (a failure shows in the measured run
    /// that follows).
    fn prime(&self, ebpkg: &Path) -> Result<()> {
        let _ = std::fs::remove_file(self.project.join("ebpkg.lock"));
        let mut cmd = Command::new(ebpkg);
        cmd.current_dir(&self.project).args(["-q", "lock"]).envs(self.env.iter().cloned());
        process::run(&mut cmd)?;
        Ok(())
    }

    /// Empties its cache (index files, TUF metadata seen): the next resolution is
    /// cold. The cache is moved aside, not deleted (the temporary directory goes
    /// at the end): ext4 skips inodes freed in the last minutes when it allocates
    /// new ones, so thousands of files deleted just before a cold run made its
    /// thousands of new files cost several times what a user's first run pays.
    fn forget(&self) -> Result<()> {
        let cache = self.dir.join("cache");
        let aside = self.dir.join(format!("forgotten-{}", std::process::id()));
        std::fs::create_dir_all(&aside).with_context(|| format!("creating {}", aside.display()))?;
        let to =
            aside.join(format!("{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos()));
        match std::fs::rename(&cache, &to) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("moving {} aside", cache.display()))
            }
            _ => Ok(()),
        }
    }

    fn lockfile(&self) -> Result<String> {
        let path = self.project.join("ebpkg.lock");
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    }
}

/// Runs `ebpkg ARGS` in `dir`, failing with what it said.
fn run_ok(ebpkg: &Path, env: &[(String, String)], dir: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new(ebpkg)
        .current_dir(dir)
        .args(args)
        .envs(env.iter().cloned())
        .output()
        .with_context(|| format!("running {}", ebpkg.display()))?;
    if !out.status.success() {
        bail!("ebpkg {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Everything the rounds use. Fields drop in order: the servers stop before
/// their database.
struct Setup {
    logged: Served,
    quiet: Served,
    loaded: IndexDatabase,
    registry: PathBuf,
    /// The server's online TUF key, for the upstream change.
    online_key: PathBuf,
    /// The file:// registry; the quiet server; the logged server (and the
    /// 30-dependency project on it, sharing that client's cache).
    file: Client,
    http: Client,
    counted: Client,
    thirty: Client,
    /// The 30-dependency project's dependencies.
    dependencies: Vec<String>,
}

impl Setup {
    fn new(ebpkg: &Path, server: &Path, dir: &Path, n: usize) -> Result<Setup> {
        let registry = dir.join("registry");
        generate(&registry, n)?;
        let keys = dir.join("keys");
        std::fs::create_dir_all(&keys).with_context(|| format!("creating {}", keys.display()))?;
        let loaded = IndexDatabase::load(server, &registry)?;
        let online_key = keys.join("server-online.key");
        server_tuf_init(server, &loaded.db.url(), &keys.join("server-root.key"), &online_key)?;
        file_tuf_init(ebpkg, &registry, &keys, dir)?;
        let blobs = dir.join("blobs");
        std::fs::create_dir_all(&blobs).with_context(|| format!("creating {}", blobs.display()))?;
        let db_url = loaded.db.url();
        let options =
            ServeOptions { database_url: &db_url, blobs: &blobs, online_key: &online_key, public_url: None, log: None };
        let quiet = Served::start(server, &options)?;
        let log = dir.join("requests.log");
        let logged = Served::start(server, &ServeOptions { public_url: Some(&quiet.url), log: Some(&log), ..options })?;
        let root = fetch_root(&quiet, &dir.join("server-root.json"))?;
        let file_url = format!("file://{}", registry.display());
        let file = Client::trusting(ebpkg, &dir.join("file"), &file_url, &registry.join("tuf/root.json"))?;
        let http = Client::trusting(ebpkg, &dir.join("http"), &quiet.url, &root)?;
        let counted = Client::trusting(ebpkg, &dir.join("counted"), &logged.url, &root)?;
        let thirty = counted.with_project(dir.join("counted/thirty"));
        for client in [&file, &http, &counted] {
            project(&client.project, n, false)?;
        }
        let dependencies = realistic::dependencies(&registry, n)?;
        let deps: Vec<(String, &str)> = dependencies.iter().map(|d| (d.clone(), "^2")).collect();
        write_project(&thirty.project, &deps)?;
        Ok(Setup { logged, quiet, loaded, registry, online_key, file, http, counted, thirty, dependencies })
    }
}

/// `ebpkg-registry tuf init`: metadata over every index file in the database.
fn server_tuf_init(server: &Path, database_url: &str, root_key: &Path, online_key: &Path) -> Result<()> {
    let out = Command::new(server)
        .args(["--database-url", database_url, "tuf", "init", "--root-key"])
        .arg(root_key)
        .arg("--online-key")
        .arg(online_key)
        .output()
        .with_context(|| format!("running {}", server.display()))?;
    if !out.status.success() {
        bail!("ebpkg-registry tuf init: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// `ebpkg registry tuf-init`: metadata over every index file of the directory.
fn file_tuf_init(ebpkg: &Path, registry: &Path, keys: &Path, dir: &Path) -> Result<()> {
    let env = ebpkg_env(&format!("file://{}", registry.display()), &dir.join("signer"))?;
    let path = |p: &Path| p.to_str().map(str::to_owned).context("a path that is not UTF-8");
    let (reg, root, online) =
        (path(registry)?, path(&keys.join("file-root.key"))?, path(&keys.join("file-online.key"))?);
    run_ok(ebpkg, &env, dir, &["registry", "tuf-init", &reg, "--root-key", &root, "--online-key", &online])
}

/// The server's `root.json`, saved to `to`: what its operator would publish for users to trust.
fn fetch_root(server: &Served, to: &Path) -> Result<PathBuf> {
    let (status, body) = ebpkg_registry_testing::http(server.port, "GET", "/tuf/root.json", &[])?;
    if status != 200 {
        bail!("GET /tuf/root.json answered {status}: {}", String::from_utf8_lossy(&body));
    }
    std::fs::write(to, body).with_context(|| format!("writing {}", to.display()))?;
    Ok(to.to_owned())
}

/// The samples of one measurement over the rounds, and how it first failed.
#[derive(Default)]
struct Series {
    ms: Vec<f64>,
    rss: Vec<f64>,
    /// ebpkg's own CPU time, all threads, user and system (ms).
    cpu: Vec<f64>,
    failed: Option<String>,
}

impl Series {
    /// Keeps `run`'s figures when `keep` (not the warm-up round) and it
    /// succeeded; remembers the first failure.
    fn add(&mut self, run: &Locked, keep: bool) {
        if !run.succeeded {
            self.failed.get_or_insert_with(|| said(&run.stderr));
        } else if keep {
            self.ms.push(run.ms);
            self.rss.push(run.rss_mib);
            self.cpu.push(run.cpu_ms);
        }
    }

    fn ms(&self) -> Summary {
        Summary::of(&self.ms)
    }

    fn rss(&self) -> Summary {
        Summary::of(&self.rss)
    }

    fn cpu(&self) -> Summary {
        Summary::of(&self.cpu)
    }
}

/// What a failed command said, on one line and not too long for a report.
fn said(stderr: &str) -> String {
    let line = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(300).collect()
}

/// Sets up what the measurement uses (the registry of `n` packages, both
/// servers, every client), prints each client's environment and waits for a
/// line on stdin: for a profiler or `strace` on one `ebpkg lock` by hand.
pub fn hold(ebpkg: &Path, server: &Path, n: usize) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let setup = Setup::new(ebpkg, server, dir.path(), n)?;
    for (name, client) in [("file", &setup.file), ("http", &setup.http), ("counted", &setup.counted)] {
        let env: Vec<String> = client.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!("# {name}: cd {} && env {} ebpkg lock", client.project.display(), env.join(" "));
    }
    println!("# requests of the counted client are logged in {}", dir.path().join("requests.log").display());
    println!("# press Enter to stop the servers and remove {}", dir.path().display());
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(())
}

/// Runs the whole measurement: setup, the 10,000-package rounds, the project's rounds.
pub fn run(ebpkg: &Path, server: &Path, n: usize, rounds: usize) -> Result<TufResult> {
    let dir = tempfile::tempdir()?;
    let setup = Setup::new(ebpkg, server, dir.path(), n)?;
    let (cold_requests, fetched) = counted_cold(ebpkg, &setup)?;
    // Warm after warm, as the timed runs are.
    setup.counted.prime(ebpkg)?;
    let warm_requests = tally(&counted_run(ebpkg, &setup.logged, &setup.counted)?.1);
    let urls = dir.path().join("index-urls.curl");
    write_curl_config(&urls, &setup.quiet.url, &fetched)?;
    // ebpkg trusts a directory registry's index file's fingerprint only once it is 2 s old.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let big = registry_rounds(ebpkg, &setup, &urls, fetched.len(), rounds)?;
    let locked = setup.file.lockfile().map(|l| l.matches("[[package]]").count()).unwrap_or(0);
    let (project, project_failures) = project_rounds(ebpkg, &setup, rounds)?;
    let mut failures: Vec<String> = big.failures();
    failures.extend(project_failures);
    Ok(TufResult {
        packages: n,
        locked,
        read_ms: Summary::of(&big.read),
        file_warm_ms: big.file.ms(),
        file_warm_rss_mib: big.file.rss(),
        http_warm_ms: big.warm.ms(),
        http_warm_rss_mib: big.warm.rss(),
        http_cold_ms: big.cold.ms(),
        http_cold_cpu_ms: big.cold.cpu(),
        server_cold_cpu_ms: Summary::of(&big.server_cold_cpu),
        server_floor_cpu_ms: Summary::of(&big.server_floor_cpu),
        offline_ms: big.offline.ms(),
        fetch_floor_ms: Summary::of(&big.floor),
        fetched_files: fetched.len(),
        cold_requests,
        warm_requests,
        project,
        failures,
    })
}

/// `ebpkg lock` by `client` against `server`, and the requests the server answered meanwhile.
fn counted_run(ebpkg: &Path, server: &Served, client: &Client) -> Result<(Locked, Vec<Request>)> {
    let at = server.log_end()?;
    let run = client.lock(ebpkg)?;
    Ok((run, server.requests_since(at)?))
}

/// One cold resolution on the logged server: its requests, and the index files
/// it fetched (the parallel-fetch floor fetches the same).
fn counted_cold(ebpkg: &Path, setup: &Setup) -> Result<(Tally, Vec<String>)> {
    setup.counted.forget()?;
    let (run, requests) = counted_run(ebpkg, &setup.logged, &setup.counted)?;
    if !run.succeeded {
        bail!("a cold ebpkg lock against the server with TUF failed: {}", run.stderr);
    }
    let fetched: Vec<String> = requests
        .iter()
        .filter(|r| {
            r.method == "GET" && r.status == 200 && r.path.starts_with("/index/") && r.path != "/index/config.json"
        })
        .map(|r| r.path.clone())
        .collect();
    if fetched.is_empty() {
        bail!("the server's log shows no index file fetched by a cold resolution");
    }
    Ok((tally(&requests), fetched))
}

fn tally(requests: &[Request]) -> Tally {
    let mut t = Tally { total: requests.len(), ..Tally::default() };
    for r in requests {
        if r.path == "/index/config.json" {
            t.config += 1;
        } else if r.path.starts_with("/tuf/") {
            t.tuf += 1;
            t.tuf_paths.push(format!("{} {}", r.path, r.status));
        } else if r.path.starts_with("/index/") && r.status == 200 {
            t.index_fetched += 1;
        } else if r.path.starts_with("/index/") && r.status == 304 {
            t.index_not_modified += 1;
        } else {
            t.other += 1;
        }
    }
    t
}

/// A curl config fetching every path of `paths` from `base` to /dev/null.
fn write_curl_config(to: &Path, base: &str, paths: &[String]) -> Result<()> {
    let base = base.trim_end_matches('/');
    let mut config = String::new();
    for path in paths {
        let _ = writeln!(config, "url = \"{base}{path}\"\noutput = \"/dev/null\"");
    }
    std::fs::write(to, config).with_context(|| format!("writing {}", to.display()))
}

/// The floor of a cold resolution over HTTP: `curl` fetching the `expected`
/// index files listed in `config`, `FLOOR_PARALLEL` in flight over keep-alive
/// connections, compressed as ebpkg asks (ms).
fn fetch_floor(config: &Path, expected: usize) -> Result<f64> {
    std::thread::sleep(SETTLE);
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--parallel", "--parallel-immediate", "--parallel-max", &FLOOR_PARALLEL.to_string()])
        .args(["--compressed", "--write-out", "%{http_code}\\n", "--config"])
        .arg(config);
    let run = process::run(&mut cmd).context("running curl (./ci/setup installs it)")?;
    let fetched = run.stdout.lines().filter(|code| *code == "200").count();
    if !run.status.success() || fetched != expected {
        bail!("curl fetched {fetched} of {expected} index files: {}", run.stderr);
    }
    Ok(run.elapsed.as_secs_f64() * 1e3)
}

/// Reading every index file of the directory (ms), after the same idle time as a resolution.
fn read_floor(index: &Path) -> Result<f64> {
    std::thread::sleep(SETTLE);
    let started = Instant::now();
    read_all(index)?;
    Ok(started.elapsed().as_secs_f64() * 1e3)
}

/// The 10,000-package project's samples.
#[derive(Default)]
struct BigRounds {
    read: Vec<f64>,
    floor: Vec<f64>,
    file: Series,
    warm: Series,
    offline: Series,
    cold: Series,
    /// The server's CPU time during each cold resolution, and during each
    /// parallel fetch (ms).
    server_cold_cpu: Vec<f64>,
    server_floor_cpu: Vec<f64>,
}

impl BigRounds {
    fn failures(&self) -> Vec<String> {
        let named = [
            ("file:// with TUF, warm", &self.file),
            ("HTTP with TUF, warm", &self.warm),
            ("HTTP with TUF, --offline", &self.offline),
            ("HTTP with TUF, cold", &self.cold),
        ];
        named.iter().filter_map(|(what, s)| s.failed.as_ref().map(|f| format!("{what}: {f}"))).collect()
    }
}

/// The 10,000-package project, round after round: the floors, file:// warm,
/// HTTP cold (then one unmeasured resolution, so that warm follows warm), warm
/// and offline. Round 0 warms up and is not kept.
fn registry_rounds(ebpkg: &Path, setup: &Setup, urls: &Path, fetched: usize, rounds: usize) -> Result<BigRounds> {
    let mut b = BigRounds::default();
    for round in 0..=rounds {
        let keep = round > 0;
        let read = read_floor(&setup.registry.join("index"))?;
        b.file.add(&setup.file.lock(ebpkg)?, keep);
        setup.http.forget()?;
        let server_before = setup.quiet.cpu_ms()?;
        b.cold.add(&setup.http.lock(ebpkg)?, keep);
        let server_cold = setup.quiet.cpu_ms()? - server_before;
        setup.http.prime(ebpkg)?;
        b.warm.add(&setup.http.lock(ebpkg)?, keep);
        b.offline.add(&super::lock_with(ebpkg, &setup.http.env, &setup.http.project, &["--offline"])?, keep);
        let server_before = setup.quiet.cpu_ms()?;
        let floor = fetch_floor(urls, fetched)?;
        let server_floor = setup.quiet.cpu_ms()? - server_before;
        if keep {
            b.read.push(read);
            b.floor.push(floor);
            b.server_cold_cpu.push(server_cold);
            b.server_floor_cpu.push(server_floor);
        }
    }
    Ok(b)
}

/// The 30-dependency project on the logged server, round after round: warm
/// with nothing changed, then a new version of one of its dependencies
/// published upstream and a warm re-resolution. Round 0 is not kept.
fn project_rounds(ebpkg: &Path, setup: &Setup, rounds: usize) -> Result<(ProjectResult, Vec<String>)> {
    let dependencies = setup.dependencies.clone();
    let changed = dependencies.get(PROJECT_DEPS / 2).context("no dependency to change")?.clone();
    let index = setup.registry.join("index").join(ebpkg_spec::index_path(&changed));
    let mut upstream = Upstream {
        db: &setup.loaded.db,
        scratch: setup.loaded.pg.socket_dir().to_owned(),
        online_key: &setup.online_key,
        name: changed.clone(),
        index_file: std::fs::read_to_string(&index).with_context(|| format!("reading {}", index.display()))?,
    };
    let thirty = &setup.thirty;
    thirty.prime(ebpkg)?;
    let (mut warm, mut changed_runs) = (Series::default(), Series::default());
    let (mut warm_requests, mut changed_requests) = (Vec::new(), Vec::new());
    let (mut changed_paths, mut change_seen) = (Vec::new(), true);
    for round in 0..=rounds {
        let keep = round > 0;
        let (w, w_requests) = counted_run(ebpkg, &setup.logged, thirty)?;
        warm.add(&w, keep);
        let vers = format!("2.{}.0", 9 + round);
        upstream.publish(&vers)?;
        let (c, c_requests) = counted_run(ebpkg, &setup.logged, thirty)?;
        changed_runs.add(&c, keep);
        let pinned = format!("name = \"{changed}\"\nversion = \"{vers}\"");
        change_seen &= c.succeeded && thirty.lockfile().is_ok_and(|l| l.contains(&pinned));
        if keep {
            warm_requests.push(w_requests.len() as f64);
            changed_requests.push(c_requests.len() as f64);
        }
        changed_paths = c_requests;
    }
    let locked = thirty.lockfile().map(|l| l.matches("[[package]]").count()).unwrap_or(0);
    let failures = [("30 dependencies, warm", &warm), ("30 dependencies, one changed", &changed_runs)]
        .iter()
        .filter_map(|(what, s)| s.failed.as_ref().map(|f| format!("{what}: {f}")))
        .collect();
    let result = ProjectResult {
        dependencies,
        locked,
        warm_ms: warm.ms(),
        warm_requests: Summary::of(&warm_requests),
        changed_package: changed,
        changed_ms: changed_runs.ms(),
        changed_requests: Summary::of(&changed_requests),
        changed_paths,
        change_seen,
    };
    Ok((result, failures))
}
