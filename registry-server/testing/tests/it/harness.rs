//! The harness against the real servers: PostgreSQL, moto (S3), nginx.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ebpkg_registry_testing::{Error, HttpPeer, Nginx, Postgres, S3Server, free_port, http, respond};

#[test]
fn databases_of_the_shared_cluster_are_isolated_and_dropped() {
    let start = Instant::now();
    let pg = Postgres::shared().unwrap();
    eprintln!("shared cluster ready in {:?}", start.elapsed());
    let start = Instant::now();
    // Two at once, from two threads.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| pg.database().unwrap());
        let b = s.spawn(|| pg.database().unwrap());
        (a.join().unwrap(), b.join().unwrap())
    });
    eprintln!("two databases in {:?}", start.elapsed());
    assert_ne!(a.name(), b.name());
    assert_eq!(a.psql("select 1").unwrap().trim(), "1");
    assert_eq!(b.psql("select current_database()").unwrap().trim(), b.name());
    a.psql("CREATE TABLE t (x int); INSERT INTO t VALUES (1)").unwrap();
    assert_eq!(a.psql("SELECT count(*) FROM t").unwrap().trim(), "1");
    assert!(b.psql("SELECT count(*) FROM t").is_err(), "b does not see a's table");
    let url = a.url();
    assert!(
        url.starts_with(&format!("postgres://postgres@localhost/{}?host=/", a.name()))
            && url.ends_with(&format!("&port={}", pg.port())),
        "{url}"
    );
    let name = a.name().to_owned();
    drop(a);
    let left = b.psql(&format!("SELECT count(*) FROM pg_database WHERE datname = '{name}'")).unwrap();
    assert_eq!(left.trim(), "0", "dropped with its guard");
}

#[test]
fn the_shared_cluster_is_one_per_process() {
    let a = Postgres::shared().unwrap();
    let b = std::thread::spawn(|| Postgres::shared().unwrap().socket_dir().to_owned()).join().unwrap();
    assert_eq!(a.socket_dir(), b);
    assert!(a.socket_dir().join(format!(".s.PGSQL.{}", a.port())).exists(), "a unix socket");
}

#[test]
fn a_private_cluster_stops_and_starts_again() {
    let start = Instant::now();
    let pg = Postgres::start().unwrap();
    eprintln!("private cluster ready in {:?}", start.elapsed());
    let db = pg.database().unwrap();
    db.psql("CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)").unwrap();
    pg.stop().unwrap();
    let refused = db.psql("SELECT 1").unwrap_err().to_string();
    assert!(refused.contains("No such file or directory") || refused.contains("refused"), "{refused}");
    pg.start_again().unwrap();
    assert_eq!(db.psql("SELECT x FROM kept").unwrap().trim(), "7", "the data survived the restart");
    let dir = pg.socket_dir().to_owned();
    drop(db);
    drop(pg);
    assert!(!dir.exists(), "removed on drop");
}

fn curl(args: &[&str]) -> (Vec<u8>, bool) {
    let out = Command::new("curl").args(["-sS", "--max-time", "10"]).args(args).output().unwrap();
    (out.stdout, out.status.success())
}

#[test]
fn the_s3_server_stores_objects_over_real_http() {
    let start = Instant::now();
    let mut s3 = S3Server::start().unwrap();
    eprintln!("S3 server ready in {:?}", start.elapsed());
    s3.create_bucket("harness-bucket").unwrap();
    assert!(matches!(s3.create_bucket("x"), Err(Error::Command { .. })), "S3 refuses a one-letter bucket");
    let env = s3.env();
    let var = |k: &str| env.iter().find(|(key, _)| *key == k).map(|(_, v)| v.clone()).unwrap();
    assert_eq!(var("AWS_ENDPOINT"), s3.endpoint());
    assert_eq!(var("AWS_ALLOW_HTTP"), "true");
    assert_eq!(var("AWS_REGION"), "us-east-1");

    // Signed requests, as S3 clients make them.
    let user = format!("{}:{}", var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY"));
    let signed = ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", &user];
    let object = format!("{}/harness-bucket/dir/object.bin", s3.endpoint());
    let file = tempfile_with(b"an object's bytes\n\x00\xff");
    let (_, ok) = curl(&[&signed[..], &["-f", "-T", file.to_str().unwrap(), &object]].concat());
    assert!(ok);
    let (body, ok) = curl(&[&signed[..], &["-f", &object]].concat());
    assert!(ok);
    assert_eq!(body, std::fs::read(&file).unwrap());
    let (listing, _) = curl(&[&signed[..], &[&format!("{}/harness-bucket?list-type=2", s3.endpoint())]].concat());
    let listing = String::from_utf8(listing).unwrap();
    assert!(listing.contains("<Key>dir/object.bin</Key>"), "{listing}");

    // Each server is its own: a second one has no bucket.
    let other = S3Server::start().unwrap();
    assert_ne!(other.endpoint(), s3.endpoint());
    let (status, _) = http(port_of(&other.endpoint()), "GET", "/harness-bucket", b"").unwrap();
    assert_eq!(status, 404);

    s3.stop();
    assert!(TcpStream::connect(s3.endpoint().trim_start_matches("http://")).is_err(), "stopped: refused");
    let _ = std::fs::remove_file(file);
}

fn port_of(endpoint: &str) -> u16 {
    endpoint.rsplit(':').next().unwrap().parse().unwrap()
}

fn tempfile_with(bytes: &[u8]) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("harness-{}-{}", std::process::id(), free_port().unwrap()));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A tiny HTTP responder: answers every request with `body`, keeping the
/// connection open for the next (nginx's upstream keepalive).
fn responder(body: &'static str) -> HttpPeer {
    HttpPeer::start(move |_, stream| {
        let _ = respond(stream, "200 OK", &[], body.as_bytes());
    })
    .unwrap()
}

#[test]
fn nginx_proxies_to_a_test_server() {
    let responder = responder("hello from behind nginx");
    let backend = responder.addr().port();
    let port = free_port().unwrap();
    let start = Instant::now();
    let nginx = Nginx::start(&format!(
        "upstream backend {{ server 127.0.0.1:{backend}; keepalive 4; }}\n\
         server {{ listen 127.0.0.1:{port}; location / {{ proxy_pass http://backend; \
         proxy_http_version 1.1; proxy_set_header Connection \"\"; }} }}"
    ))
    .unwrap();
    eprintln!("nginx ready in {:?}", start.elapsed());
    for _ in 0..3 {
        let (status, body) = http(port, "GET", "/anything", b"").unwrap();
        assert_eq!((status, String::from_utf8_lossy(&body).as_ref()), (200, "hello from behind nginx"));
    }
    let prefix = nginx.prefix().to_owned();
    assert!(prefix.join("nginx.conf").exists() && nginx.error_log().starts_with(&prefix));
    let master: u32 = std::fs::read_to_string(prefix.join("nginx.pid")).unwrap().trim().parse().unwrap();
    drop(nginx);
    assert!(!prefix.exists(), "prefix removed on drop");
    assert!(gone(master), "the master is gone");
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err(), "workers gone too: nothing listens");
}

#[test]
fn a_broken_nginx_config_fails_with_nginx_s_words() {
    let err = Nginx::start("server { listen 127.0.0.1:1; no_such_directive on; }").err().unwrap();
    assert!(err.to_string().contains("unknown directive \"no_such_directive\""), "{err}");
}

/// Whether a process is gone (or a zombie nobody reaped).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().next()) == Some("Z"),
        Err(_) => true,
    }
}

fn wait_gone(pid: u32) -> bool {
    let start = Instant::now();
    while !gone(pid) {
        if start.elapsed() > Duration::from_secs(15) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

const CHILD_VAR: &str = "EBPKG_HARNESS_CHILD";

/// Run by the test below in a process of its own, which it then SIGKILLs.
#[test]
#[ignore = "run by servers_die_with_a_killed_test_process"]
fn child_holds_servers() {
    if std::env::var_os(CHILD_VAR).is_none() {
        return;
    }
    let shared = Postgres::shared().unwrap();
    let private = Postgres::start().unwrap();
    let s3 = S3Server::start().unwrap();
    let port = free_port().unwrap();
    let nginx = Nginx::start(&format!("server {{ listen 127.0.0.1:{port}; return 204; }}")).unwrap();
    let postmaster = |pg: &Postgres| {
        std::fs::read_to_string(pg.socket_dir().join("data/postmaster.pid")).unwrap().lines().next().unwrap().to_owned()
    };
    println!(
        "SERVERS {} {} {} {} {} {}",
        postmaster(shared),
        postmaster(&private),
        shared.socket_dir().display(),
        s3.endpoint(),
        std::fs::read_to_string(nginx.prefix().join("nginx.pid")).unwrap().trim(),
        port
    );
    std::io::stdout().flush().unwrap();
    std::thread::sleep(Duration::from_secs(120));
}

#[test]
fn servers_die_with_a_killed_test_process() {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "harness::child_holds_servers", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.find_map(|l| l.unwrap().split_once("SERVERS ").map(|(_, s)| s.to_owned())).unwrap();
    let f: Vec<&str> = line.split(' ').collect();
    let (shared, private, shared_dir, s3, nginx, nginx_port) = (f[0], f[1], f[2], f[3], f[4], f[5]);
    for pid in [shared, private, nginx] {
        assert!(!gone(pid.parse().unwrap()), "{pid} runs");
    }
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    for (what, pid) in [("shared postmaster", shared), ("private postmaster", private), ("nginx master", nginx)] {
        assert!(wait_gone(pid.parse().unwrap()), "the {what} ({pid}) outlived the test process");
    }
    let start = Instant::now();
    while TcpStream::connect(s3.trim_start_matches("http://")).is_ok()
        || TcpStream::connect(("127.0.0.1", nginx_port.parse::<u16>().unwrap())).is_ok()
    {
        assert!(start.elapsed() < Duration::from_secs(15), "moto or nginx workers outlived the test process");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The dead process's directories go with the next start of a server.
    assert!(Path::new(shared_dir).exists());
    drop(Postgres::start().unwrap());
    assert!(!Path::new(shared_dir).exists(), "swept: {shared_dir}");
    drop(lines);
}
