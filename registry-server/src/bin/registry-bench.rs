//! `registry-bench`: the registry's throughput against nginx serving the same
//! files from disk, measured in one run, interleaved. Run by `./ci/bench`.
//!
//! Index-file and archive requests per second and p50/p99 latency with `wrk` at
//! 1, 16 and 64 connections on loopback; publishes per second with 8 concurrent
//! publishers; the server's peak RSS. Targets: ≥ 0.5× nginx's throughput and
//! p99 ≤ 10 ms at 64 connections (index files).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use ebpkg_registry::testing::{key_registration, pack_with, signed_publish_body};
use ebpkg_registry_testing::{Nginx, Postgres, ServedRegistry, free_port};

struct Args {
    server: PathBuf,
    out: PathBuf,
    seconds: u64,
    rounds: usize,
    check: bool,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        server: PathBuf::from("target/release/ebpkg-registry"),
        out: PathBuf::from("bench"),
        seconds: 5,
        rounds: 3,
        check: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--server" => args.server = it.next().context("--server PATH")?.into(),
            "--out" => args.out = it.next().context("--out DIR")?.into(),
            "--quick" => {
                args.seconds = 2;
                args.rounds = 1;
            }
            "--check" => args.check = true,
            other => bail!("unknown argument `{other}` (--server PATH, --out DIR, --quick, --check)"),
        }
    }
    Ok(args)
}

fn admin(server: &Path, db_url: &str, args: &[&str]) -> Result<String> {
    let out =
        Command::new(server).args(["--database-url", db_url, "--storage", "file:///unused"]).args(args).output()?;
    if !out.status.success() {
        bail!("{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

#[derive(Debug, Clone, Copy, Default)]
struct Wrk {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
}

fn wrk(url: &str, connections: u32, seconds: u64) -> Result<Wrk> {
    let out = Command::new("wrk")
        .args(["-t", &connections.min(2).to_string(), "-c", &connections.to_string(), "-d", &format!("{seconds}s")])
        .args(["--latency", url])
        .output()
        .context("running wrk (installed by ci/setup)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("Non-2xx") {
        bail!("wrk got errors from {url}:\n{text}");
    }
    let mut w = Wrk::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["Requests/sec:", n] => w.rps = n.parse()?,
            ["50%", t] => w.p50_ms = millis(t)?,
            ["99%", t] => w.p99_ms = millis(t)?,
            _ => {}
        }
    }
    if w.rps == 0.0 {
        bail!("no result from wrk for {url}:\n{text}");
    }
    Ok(w)
}

fn millis(t: &str) -> Result<f64> {
    let (n, unit) = t.split_at(t.find(|c: char| c.is_ascii_alphabetic()).context("a unit")?);
    let n: f64 = n.parse()?;
    Ok(match unit {
        "us" => n / 1000.0,
        "ms" => n,
        "s" => n * 1000.0,
        _ => bail!("unit `{unit}`"),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("VmHWM:").map(|v| v.trim().trim_end_matches(" kB").to_owned()))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let pg = Postgres::start()?;
    let db = pg.database()?;
    let blobs = tempfile::tempdir()?;
    admin(&args.server, &db.url(), &["migrate"])?;
    admin(&args.server, &db.url(), &["user", "create", "bench"])?;
    let token = admin(&args.server, &db.url(), &["token", "create", "--user", "bench"])?.trim().to_owned();
    let served = ServedRegistry::start(
        &args.server,
        &db.url(),
        blobs.path(),
        &["--new-package-burst", "100000", "--new-version-burst", "100000", "--db-pool", "16"],
    )?;

    // Publishes per second: 8 publishers, 25 new packages each, signed (the
    // server verifies every signature, as in production).
    let key = ebpkg_signing::SigningKey::generate()?;
    let registered = reqwest::blocking::Client::new()
        .post(format!("{}api/v1/me/keys", served.url))
        .header("Authorization", &token)
        .json(&key_registration("bench", &key)?)
        .send()?;
    if !registered.status().is_success() {
        bail!("registering the benchmark's key: {}", registered.status());
    }
    let scratch = tempfile::tempdir()?;
    let mut bodies = Vec::new();
    for p in 0..8 {
        let mut mine = Vec::new();
        for i in 0..25 {
            let name = format!("pkg-{p}-{i}");
            let packed = pack_with(
                scratch.path(),
                &name,
                "1.0.0",
                "description = \"a benchmark package\"\n",
                &[("data.txt", &"x".repeat(20_000))],
            )?;
            mine.push(signed_publish_body(&packed, &name, "1.0.0", &key)?);
        }
        bodies.push(mine);
    }
    let client = reqwest::blocking::Client::new();
    let start = Instant::now();
    let failures: usize = std::thread::scope(|s| {
        let handles: Vec<_> = bodies
            .iter()
            .map(|mine| {
                let (client, url, token) = (client.clone(), served.url.clone(), token.clone());
                s.spawn(move || {
                    mine.iter()
                        .filter(|b| {
                            client
                                .put(format!("{url}api/v1/packages/new"))
                                .header("Authorization", &token)
                                .body((*b).clone())
                                .send()
                                .map_or(true, |r| !r.status().is_success())
                        })
                        .count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or(usize::MAX)).sum()
    });
    let publish_secs = start.elapsed().as_secs_f64();
    if failures > 0 {
        bail!("{failures} publishes failed");
    }
    let publishes_per_sec = 200.0 / publish_secs;

    // The same files on disk for nginx, at the same paths.
    let www = tempfile::tempdir()?;
    let index_path = ebpkg_spec::index_path("pkg-3-7");
    let archive_path = "api/v1/packages/pkg-3-7/1.0.0/download";
    // The catalog's page of the package (rendered from the database per request)
    // against the same HTML as a static file.
    let page_path = "packages/pkg-3-7";
    for path in [format!("index/{index_path}"), archive_path.to_owned(), page_path.to_owned()] {
        let bytes = client.get(format!("{}{path}", served.url)).send()?.error_for_status()?.bytes()?;
        let file = www.path().join(&path);
        std::fs::create_dir_all(file.parent().context("a parent")?)?;
        std::fs::write(&file, &bytes)?;
    }
    let nginx_port = free_port()?;
    let _nginx = Nginx::start(&format!(
        "sendfile on;\ntcp_nopush on;\nkeepalive_requests 100000;\nserver {{\n  listen 127.0.0.1:{nginx_port};\n  root {};\n  etag on;\n}}",
        www.path().display()
    ))?;
    let nginx_url = format!("http://127.0.0.1:{nginx_port}/");

    let kinds = [
        ("index file", format!("index/{index_path}")),
        ("archive", archive_path.to_owned()),
        ("package page", page_path.to_owned()),
    ];
    let mut rows = Vec::new();
    for (kind, path) in &kinds {
        for connections in [1u32, 16, 64] {
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            for _ in 0..args.rounds {
                ours.push(wrk(&format!("{}{path}", served.url), connections, args.seconds)?);
                theirs.push(wrk(&format!("{nginx_url}{path}"), connections, args.seconds)?);
            }
            let pick = |v: &[Wrk], f: fn(&Wrk) -> f64| median(v.iter().map(f).collect());
            rows.push((
                *kind,
                connections,
                [pick(&ours, |w| w.rps), pick(&ours, |w| w.p50_ms), pick(&ours, |w| w.p99_ms)],
                [pick(&theirs, |w| w.rps), pick(&theirs, |w| w.p50_ms), pick(&theirs, |w| w.p99_ms)],
            ));
            eprintln!(
                "{kind} at {connections}: {:.0} req/s vs nginx {:.0}",
                rows.last().map_or(0.0, |r| r.2[0]),
                rows.last().map_or(0.0, |r| r.3[0])
            );
        }
    }
    let rss_mib = peak_rss_kib(served.child.id()) as f64 / 1024.0;

    let at64 = |kind: &str| rows.iter().find(|r| r.0 == kind && r.1 == 64).map(|r| (r.2, r.3));
    let mut report = String::from(
        "# Registry benchmark\n\nWritten by `./ci/bench` (`registry-bench`). `ebpkg-registry` (release build, a private \
         PostgreSQL 15 on a unix socket, blobs on local disk) against nginx serving the same bytes from disk at the same \
         paths, both on loopback, measured with `wrk` in the same run, interleaved; each figure is the median of the \
         rounds. wrk runs on the same 2 CPUs as the server, so both sides share the machine alike.\n\n## Targets\n\n\
         | | measured | target | |\n|---|---:|---:|---|\n",
    );
    let mut missed = Vec::new();
    for kind in ["index file", "archive", "package page"] {
        if let Some((ours, theirs)) = at64(kind) {
            let ratio = ours[0] / theirs[0];
            // A page is rendered from several queries; a file is sent from the page cache.
            let floor = if kind == "package page" { 0.25 } else { 0.5 };
            let ok = ratio >= floor;
            if !ok {
                missed.push(format!("{kind} throughput {ratio:.2}× nginx"));
            }
            report.push_str(&format!(
                "| {kind} requests/s at 64 connections: registry / nginx | {ratio:.2}× | ≥ {floor:.2}× | {} |\n",
                if ok { "met" } else { "**missed**" }
            ));
            let ok = ours[2] <= 10.0;
            if !ok {
                missed.push(format!("{kind} p99 {:.1} ms", ours[2]));
            }
            report.push_str(&format!(
                "| {kind} p99 latency at 64 connections | {:.2} ms | ≤ 10 ms | {} |\n",
                ours[2],
                if ok { "met" } else { "**missed**" }
            ));
        }
    }
    report.push_str("\n## Requests\n\n| request | connections | registry req/s | p50 ms | p99 ms | nginx req/s | p50 ms | p99 ms | registry / nginx |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (kind, c, ours, theirs) in &rows {
        report.push_str(&format!(
            "| {kind} | {c} | {:.0} | {:.2} | {:.2} | {:.0} | {:.2} | {:.2} | {:.2}× |\n",
            ours[0],
            ours[1],
            ours[2],
            theirs[0],
            theirs[1],
            theirs[2],
            ours[0] / theirs[0]
        ));
    }
    report.push_str(&format!(
        "\n## Publishing and memory\n\n- Publishes per second, 8 concurrent publishers, 200 new packages of one 20 kB file \
         each (unpacked, validated, stored, one transaction each): **{publishes_per_sec:.1}/s** ({publish_secs:.2} s in all).\n\
         - Peak RSS of the server after all of the above: **{rss_mib:.1} MiB**.\n"
    ));
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("registry.md"), &report)?;
    println!("{report}");
    if args.check && !missed.is_empty() {
        bail!("targets missed: {}", missed.join("; "));
    }
    drop(served);
    drop(db);
    Ok(())
}
