//! Resolution time over a synthetic registry of 10,000 packages (the project target: ≤ 50 ms).
//!
//! ```text
//! cargo run --release -p ebpkg-resolver --example bench_resolve [-- PACKAGES RUNS]
//! ```
//!
//! The registry: package `pNNNNN` has 3–7 versions over one or two majors (a few yanked, a few
//! pre-releases); each package depends on 0–5 lower-numbered packages, most of them nearby, with caret
//! requirements on the dependency's current major (older majors of the dependent require the older major
//! of the dependency when it has one). The project depends on every package nothing else depends on, so
//! all packages are in the resolution. Timed: `resolve()` alone, over a source that keeps every package's
//! candidates in memory (as the CLI's does once it has read the index); the median of RUNS runs is
//! printed, for a fresh resolution and for one that starts from the previous lock.

use std::sync::Arc;
use std::time::Instant;

use ebpkg_resolver::{
    QualifiedName, Requirement, ResolveRequest, Shortcut, SourceError, VersionSource, Versions, resolve, resolve_with,
};
use ebpkg_spec::PackageName;
use semver::Version;

/// splitmix64: a fixed seed gives the same registry on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Candidates kept in memory, as a source that has read the index would keep them (in a hash map with
/// a fast hasher: the map is the source's business, not the resolver's).
struct Synthetic {
    packages: pubgrub::Map<QualifiedName, Versions>,
}

impl VersionSource for Synthetic {
    fn versions(&self, pkg: &QualifiedName) -> Result<Versions, SourceError> {
        Ok(self.packages.get(pkg).cloned().unwrap_or_else(Versions::none))
    }
}

fn id(i: usize) -> QualifiedName {
    QualifiedName::new(PackageName::new(&format!("p{i:05}")).unwrap_or_else(|e| panic!("{e}")))
}

fn caret(pkg: QualifiedName, major: u64, minor: u64) -> Requirement {
    Requirement::parse(pkg, &format!("^{major}.{minor}")).unwrap_or_else(|e| panic!("{e}"))
}

/// Builds the registry and the project's request.
fn generate(n: usize) -> (Synthetic, ResolveRequest, usize) {
    let mut rng = Rng(0x5eed);
    // Per package: (majors, minors per major).
    let shapes: Vec<(u64, u64)> = (0..n).map(|_| (1 + rng.below(2), 2 + rng.below(3))).collect();
    let mut depended = vec![false; n];
    let mut packages = pubgrub::Map::default();
    for i in 0..n {
        let ndeps = if i == 0 { 0 } else { rng.below(6) as usize };
        let mut deps: Vec<usize> = Vec::new();
        for _ in 0..ndeps {
            // Mostly nearby packages (libraries of a family), sometimes anything lower.
            let j = if rng.below(4) == 0 {
                rng.below(i as u64) as usize
            } else {
                i - 1 - rng.below(i.min(50) as u64) as usize
            };
            if !deps.contains(&j) {
                deps.push(j);
                depended[j] = true;
            }
        }
        let (majors, minors) = shapes[i];
        let mut candidates = Vec::new();
        for major in 1..=majors {
            for minor in 0..minors {
                let reqs = deps
                    .iter()
                    .map(|&j| {
                        let (dep_majors, dep_minors) = shapes[j];
                        let dep_major = if major < majors && dep_majors > 1 { dep_majors - 1 } else { dep_majors };
                        caret(id(j), dep_major, rng.below(dep_minors))
                    })
                    .collect();
                candidates.push((Version::new(major, minor, 0), false, reqs));
            }
        }
        // A few yanked releases and pre-releases of a next major.
        if rng.below(50) == 0 {
            candidates.push((Version::new(majors, minors, 0), true, Arc::from([])));
        }
        if rng.below(20) == 0 {
            let version = Version::parse(&format!("{}.0.0-beta.1", majors + 1)).unwrap_or_else(|e| panic!("{e}"));
            candidates.push((version, false, Arc::from([])));
        }
        packages.insert(id(i), Versions::of(candidates));
    }
    let roots: Vec<Requirement> = (0..n).filter(|&i| !depended[i]).map(|i| caret(id(i), shapes[i].0, 0)).collect();
    let direct = roots.len();
    let request = ResolveRequest::new(
        PackageName::new("bench-app").unwrap_or_else(|e| panic!("{e}")),
        Version::new(0, 1, 0),
        roots,
    );
    (Synthetic { packages }, request, direct)
}

/// Nanoseconds this thread has spent on a CPU (Linux `schedstat`), so that a busy machine inflates
/// the wall-clock numbers but not this one; `None` elsewhere.
fn cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

struct Timing {
    wall_median: f64,
    wall_min: f64,
    cpu_median: Option<f64>,
}

fn measure(runs: usize, mut f: impl FnMut() -> usize) -> (Timing, usize) {
    let mut wall = Vec::with_capacity(runs);
    let mut cpu = Vec::with_capacity(runs);
    let mut count = 0;
    for _ in 0..runs {
        let c = cpu_ns();
        let t = Instant::now();
        count = f();
        wall.push(t.elapsed().as_secs_f64() * 1e3);
        if let (Some(a), Some(b)) = (c, cpu_ns()) {
            cpu.push((b - a) as f64 / 1e6);
        }
    }
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    let cpu_median = (cpu.len() == runs).then(|| cpu[runs / 2]);
    (Timing { wall_median: wall[runs / 2], wall_min: wall[0], cpu_median }, count)
}

fn report(what: &str, t: &Timing, runs: usize) {
    let cpu = t.cpu_median.map(|c| format!(", on-CPU median {c:.1} ms")).unwrap_or_default();
    println!("{what}: median {:.1} ms (min {:.1} ms{cpu}) over {runs} runs", t.wall_median, t.wall_min);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15);
    let (source, request, direct) = generate(n);

    let (fresh, count) = measure(runs, || match resolve(&request, &source) {
        Ok(r) => r.packages.len(),
        Err(e) => panic!("{e}"),
    });

    let resolution = resolve(&request, &source).unwrap_or_else(|e| panic!("{e}"));
    let mut locked_request = request.clone();
    locked_request.locked = resolution.packages.iter().map(|(k, p)| (k.clone(), p.version.clone())).collect();
    let (locked, _) = measure(runs, || match resolve(&locked_request, &source) {
        Ok(r) => r.packages.len(),
        Err(e) => panic!("{e}"),
    });

    // The same resolution by PubGrub alone: what the settled walk is measured against.
    let (by_pubgrub, _) = measure(runs, || match resolve_with(&request, &source, Shortcut::Never).0 {
        Ok(r) => r.packages.len(),
        Err(e) => panic!("{e}"),
    });
    let settled = resolve_with(&request, &source, Shortcut::Try).1;

    println!("registry: {n} packages, project depends directly on {direct}; resolved {count} packages");
    report(&format!("fresh resolution (every choice settled: {settled})"), &fresh, runs);
    report("with a full lock", &locked, runs);
    report("fresh resolution by PubGrub alone", &by_pubgrub, runs);
}
