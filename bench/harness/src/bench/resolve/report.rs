//! The resolution report's targets table and its TUF section (resolve.md).

use std::fmt::Write as _;

use serde::Serialize;

use super::served::Request;
use super::tuf::{FLOOR_PARALLEL, PROJECT_DEPS, PROJECT_MOST_NEEDED, Tally, TufResult};

/// Issue 40's targets, each a ratio or a count measured in the same run.
pub const HTTP_WARM_TARGET: f64 = 1.2;
pub const PROJECT_WARM_TARGET_MS: f64 = 20.0;
pub const PROJECT_WARM_REQUESTS_TARGET: f64 = 1.0;
/// timestamp, snapshot, one bin, one index file.
pub const CHANGED_REQUESTS_TARGET: f64 = 4.0;
pub const COLD_TARGET: f64 = 1.5;
pub const OFFLINE_TARGET: f64 = 1.2;
pub const RSS_TARGET: f64 = 1.5;

/// How many requests of the changed re-resolution the report lists before
/// summing the rest up (all of them are in resolve.json).
const LISTED_REQUESTS: usize = 40;

/// One row of the targets table.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    pub what: String,
    pub measured: String,
    pub limit: String,
    pub met: bool,
}

impl Target {
    fn ratio(what: String, measured: f64, limit: f64) -> Target {
        Target { what, measured: format!("{measured:.2}×"), limit: format!("≤ {limit}×"), met: measured <= limit }
    }
}

/// The targets table; with `quick`, under a heading bench-summary does not
/// collect (a short run's figures are indicative only).
pub fn targets_table(targets: &[Target], quick: bool) -> String {
    let mut s = String::from(if quick {
        "### Targets (a `--quick` run: indicative; bench-summary collects only a full run's)\n\n"
    } else {
        "## Target\n\n"
    });
    s.push_str("| | measured | target | |\n|---|---:|---:|---|\n");
    for t in targets {
        let verdict = if t.met { "met" } else { "**missed**" };
        let _ = writeln!(s, "| {} | {} | {} | {verdict} |", t.what, t.measured, t.limit);
    }
    s
}

/// Issue 40's targets from one run (a NaN, from a measurement that failed every
/// round, misses its target).
pub fn tuf_targets(t: &TufResult) -> Vec<Target> {
    let p = &t.project;
    let file_ms = t.file_warm_ms.median;
    vec![
        Target::ratio(
            format!(
                "10,000 packages with TUF, warm: over HTTP ({:.0} ms) / file:// ({file_ms:.0} ms)",
                t.http_warm_ms.median
            ),
            t.http_warm_ms.median / file_ms,
            HTTP_WARM_TARGET,
        ),
        Target {
            what: format!("{PROJECT_DEPS} dependencies, warm over HTTP with TUF"),
            measured: format!("{:.1} ms", p.warm_ms.median),
            limit: format!("≤ {PROJECT_WARM_TARGET_MS:.0} ms"),
            met: p.warm_ms.median <= PROJECT_WARM_TARGET_MS,
        },
        Target {
            what: format!("{PROJECT_DEPS} dependencies, warm, nothing changed: requests (most in a round)"),
            measured: format!("{:.0}", p.warm_requests.max),
            limit: format!("≤ {PROJECT_WARM_REQUESTS_TARGET:.0}"),
            met: p.warm_requests.max <= PROJECT_WARM_REQUESTS_TARGET,
        },
        Target {
            what: format!(
                "one dependency changed upstream: requests of the warm re-resolution (most in a round; the new \
                 version locked every round: {}){}",
                if p.change_seen { "yes" } else { "**no**" },
                compact_paths(&p.changed_paths)
            ),
            measured: format!("{:.0}", p.changed_requests.max),
            limit: format!("≤ {CHANGED_REQUESTS_TARGET:.0}"),
            met: p.change_seen && p.changed_requests.max <= CHANGED_REQUESTS_TARGET,
        },
        Target::ratio(
            format!(
                "10,000 packages with TUF, cold over HTTP ({:.0} ms) / `curl --parallel` of its {} index files ({:.0} ms)",
                t.http_cold_ms.median, t.fetched_files, t.fetch_floor_ms.median
            ),
            t.http_cold_ms.median / t.fetch_floor_ms.median,
            COLD_TARGET,
        ),
        Target::ratio(
            format!("`--offline` from the HTTP cache ({:.0} ms) / file:// with TUF, warm", t.offline_ms.median),
            t.offline_ms.median / file_ms,
            OFFLINE_TARGET,
        ),
        Target::ratio(
            format!(
                "peak RSS, warm: over HTTP with TUF ({:.0} MiB) / file:// with TUF ({:.0} MiB)",
                t.http_warm_rss_mib.median, t.file_warm_rss_mib.median
            ),
            t.http_warm_rss_mib.median / t.file_warm_rss_mib.median,
            RSS_TARGET,
        ),
    ]
}

/// The rows issue 40 asks for when the TUF part could not run at all.
pub fn tuf_not_measured(why: &str) -> Vec<Target> {
    vec![Target {
        what: format!("issue 40's targets (TUF): not measured: {why}"),
        measured: "—".into(),
        limit: "—".into(),
        met: false,
    }]
}

/// The section on resolution with TUF.
pub fn tuf_section(t: &TufResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n### With TUF\n\nThe same 10,000-package registry with TUF metadata: as a file:// registry (`ebpkg registry \
         tuf-init`) and served by `ebpkg-registry` over the same index (`ebpkg-registry tuf init`, served with its \
         online key); each client trusts the root as a user does (`ebpkg registry add origin URL --root root.json`). \
         The same project, in the same rounds: file:// warm; over HTTP cold (the client's cache removed: index \
         files and TUF metadata), warm (after one unmeasured resolution, so that warm follows warm) and `--offline`. \
         Floors: reading every index file locally; `curl --parallel --parallel-max {FLOOR_PARALLEL}` (keep-alive, \
         compressed as ebpkg asks) fetching from the same server the {} index files a cold resolution fetched. \
         Requests are counted in the request log of a second server process over the same database (one JSON line \
         per answered request); the timed runs go to a server that logs nothing.\n",
        t.fetched_files
    );
    let _ = writeln!(
        s,
        "| | time | × | peak RSS | requests |\n|---|---:|---:|---:|---|\n\
         | read the index files (floor) | {} ms | | | |\n\
         | file://, warm | {} ms | {:.2} × read | {:.0} MiB | |\n\
         | HTTP, warm | {} ms | {:.2} × file:// | {:.0} MiB | {} |\n\
         | HTTP, `--offline` | {} ms | {:.2} × file:// | | |\n\
         | HTTP, cold | {} ms | {:.2} × curl | | {} |\n\
         | `curl --parallel`, {} index files (floor) | {} ms | | | {} |\n",
        t.read_ms.show(1),
        t.file_warm_ms.show(1),
        t.file_warm_ms.median / t.read_ms.median,
        t.file_warm_rss_mib.median,
        t.http_warm_ms.show(1),
        t.http_warm_ms.median / t.file_warm_ms.median,
        t.http_warm_rss_mib.median,
        tally_text(&t.warm_requests),
        t.offline_ms.show(1),
        t.offline_ms.median / t.file_warm_ms.median,
        t.http_cold_ms.show(1),
        t.http_cold_ms.median / t.fetch_floor_ms.median,
        tally_text(&t.cold_requests),
        t.fetched_files,
        t.fetch_floor_ms.show(1),
        t.fetched_files,
    );
    let _ = writeln!(
        s,
        "Locked: {} packages. TUF metadata a warm resolution requested: {}.\n",
        t.locked,
        paths_or_none(&t.warm_requests.tuf_paths)
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let _ = writeln!(
        s,
        "Where a cold resolution's time goes: CPU time, user and system, all threads (medians): `ebpkg lock` {:.0} ms \
         and the server {:.0} ms meanwhile — on {cpus} CPUs, at least {:.0} ms of wall time, against {:.0} ms measured; \
         during the parallel fetch the server used {:.0} ms. Besides fetching, ebpkg checks each index file against its \
         signed hash, parses it, writes it to its cache (one file per package) and writes the resolution cache (records \
         of every package read), and client and server share this machine's CPUs.\n",
        t.http_cold_cpu_ms.median,
        t.server_cold_cpu_ms.median,
        (t.http_cold_cpu_ms.median + t.server_cold_cpu_ms.median) / cpus as f64,
        t.http_cold_ms.median,
        t.server_floor_cpu_ms.median,
    );
    s.push_str(&project_section(t));
    if !t.failures.is_empty() {
        s.push_str("\nFailed (the first failure of each):\n\n");
        for f in &t.failures {
            let _ = writeln!(s, "- {f}");
        }
    }
    s
}

/// The 30-dependency project's part of the TUF section.
fn project_section(t: &TufResult) -> String {
    let p = &t.project;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "#### {PROJECT_DEPS} dependencies\n\nA project depending on {PROJECT_DEPS} packages spread over the registry \
         ({} … {}, at `^2`): for each of {PROJECT_DEPS} evenly spaced places, the first package from there that \
         needs at most {PROJECT_MOST_NEEDED} packages in all (here a package needs either a few dozen at most or \
         thousands, and a project of 30 dependencies usually locks tens to hundreds). Over HTTP with TUF, warm, \
         against the server that logs its requests. Each round: a resolution with nothing changed upstream; \
         then a new version of `{}` published the way the server's publish writes it (its index file, its TUF \
         bin, the snapshot and the timestamp, in one transaction) and a warm re-resolution, which must lock it.\n\n\
         | locked | warm | requests | one changed: re-resolution | requests | new version locked |\n\
         |---:|---:|---:|---:|---:|---|\n| {} | {} ms | {} | {} ms | {} | {} |\n",
        p.dependencies.first().map_or("", String::as_str),
        p.dependencies.last().map_or("", String::as_str),
        p.changed_package,
        p.locked,
        p.warm_ms.show(1),
        p.warm_requests.show(0),
        p.changed_ms.show(1),
        p.changed_requests.show(0),
        if p.change_seen { "every round" } else { "**not every round**" },
    );
    let _ =
        writeln!(s, "The last re-resolution's requests, in order:\n\n```text\n{}```", request_list(&p.changed_paths));
    s.push_str(
        "\nOne more than the four the target counts: once the timestamp has changed, the TUF client asks for the \
         next version of the root (`2.root.json`, 404 while the root is unchanged) before it uses the new \
         timestamp, as the specification's update workflow requires (§5.3 before §5.4). That request is how a \
         client learns of a key rotation: a timestamp signed with a revoked key is refused only by a client that \
         asked. With the timestamp unchanged nothing is new to verify, and no request but the timestamp's is made \
         (docs/SECURITY.md).\n",
    );
    s
}

/// `8594 (1 config.json, 20 TUF, 8573 index files fetched, 0 not modified)`
fn tally_text(t: &Tally) -> String {
    let mut s = format!(
        "{} ({} config.json, {} TUF, {} index files fetched, {} not modified",
        t.total, t.config, t.tuf, t.index_fetched, t.index_not_modified
    );
    if t.other > 0 {
        let _ = write!(s, ", {} other", t.other);
    }
    s.push(')');
    s
}

/// `: /tuf/timestamp.json, …` when there are few enough to read in a table row.
fn compact_paths(requests: &[Request]) -> String {
    if requests.is_empty() || requests.len() > 2 * CHANGED_REQUESTS_TARGET as usize {
        return String::new();
    }
    let paths: Vec<String> = requests
        .iter()
        .map(|r| if r.status == 200 { format!("`{}`", r.path) } else { format!("`{}` ({})", r.path, r.status) })
        .collect();
    format!(": {}", paths.join(", "))
}

fn paths_or_none(paths: &[String]) -> String {
    if paths.is_empty() {
        "none".to_owned()
    } else {
        paths.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
    }
}

/// One request per line, the first `LISTED_REQUESTS`, then how many more by status.
fn request_list(requests: &[Request]) -> String {
    let mut s = String::new();
    for r in requests.iter().take(LISTED_REQUESTS) {
        let _ = writeln!(s, "{r}");
    }
    let rest = requests.get(LISTED_REQUESTS..).unwrap_or_default();
    if !rest.is_empty() {
        let not_modified = rest.iter().filter(|r| r.status == 304).count();
        let _ = writeln!(s, "… and {} more ({not_modified} answered 304; all in resolve.json)", rest.len());
    }
    if requests.is_empty() {
        s.push_str("(none)\n");
    }
    s
}
