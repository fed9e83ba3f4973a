//! The README's registry sections run as written, by a new user on a new host:
//! the operator's first hour ("A registry for an organisation": PostgreSQL, `init`,
//! `serve`, login, a key, a first package published), the publisher's pipeline
//! ("Publishing from CI": the pipeline's key, `ci/publish --dry-run && ci/publish`
//! of the whole first-party set) and then the README's first session, installing
//! from that registry; and registry-server/README.md's "Running it" and its TLS
//! section (nginx with a certificate from a CA the test makes). Nothing in
//! the blocks is edited: they run in a network
//! namespace of their own (so `127.0.0.1:8080` is free), against a PostgreSQL
//! cluster of their own (found through PGHOST, as libpq and sqlx look for it), with
//! a new HOME and nothing of ebpkg's in the environment but the isolation of the
//! host's state (EBPKG_STATE_DIR, EBPKG_BPFFS_ROOT), the passphrase a person
//! would type, and `EBPKG` (the README: ci/publish builds ebpkg unless it is set).
//!
//! Not run by libtest (`harness = false`): this binary is also `ebpkg-registry`
//! when called by that name, so the scripts run the server's real command line
//! without depending on another package's binary being built.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "it/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{KEY_PASSWORD, Sandbox, copy_dir, first_party};
use ebpkg_registry_testing::{Postgres, spawn_guarded};

const TESTS: [(&str, fn()); 3] = [
    ("the_registry_readme_runs_verbatim", the_registry_readme_runs_verbatim),
    ("the_registry_server_readme_runs_verbatim", the_registry_server_readme_runs_verbatim),
    ("the_registry_tls_section_runs_verbatim", the_registry_tls_section_runs_verbatim),
];

fn main() -> ExitCode {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    if Path::new(&argv0).file_name().is_some_and(|n| n == "ebpkg-registry") {
        return ebpkg_registry::command_line::main();
    }
    // The libtest options cargo and test runners pass, as libtest reads them.
    let mut filters = Vec::new();
    let mut skips = Vec::new();
    let (mut exact, mut list, mut only_ignored) = (false, false, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--exact" => exact = true,
            "--list" => list = true,
            // Neither test is ignored: `--ignored` runs none, `--include-ignored` both.
            "--ignored" => only_ignored = true,
            "--skip" => skips.extend(args.next()),
            "--test-threads" | "--format" | "--color" | "-Z" | "--logfile" => {
                args.next();
            }
            a if a.starts_with('-') => {}
            _ => filters.push(arg),
        }
    }
    let matches = |name: &str, pattern: &str| if exact { name == pattern } else { name.contains(pattern) };
    let chosen: Vec<_> = TESTS
        .iter()
        .filter(|_| !only_ignored)
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| matches(name, f)))
        .filter(|(name, _)| !skips.iter().any(|s| matches(name, s)))
        .collect();
    if list {
        for (name, _) in &chosen {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    println!("\nrunning {} test(s)", chosen.len());
    let started = Instant::now();
    for (name, test) in &chosen {
        test();
        println!("test {name} ... ok");
    }
    println!(
        "\ntest result: ok. {} passed; 0 failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        chosen.len(),
        TESTS.len() - chosen.len(),
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap()
}

/// The first ```sh block after `marker` in `text`.
fn sh_block(text: &str, marker: &str) -> String {
    let after = text.split(marker).nth(1).unwrap_or_else(|| panic!("README has {marker:?}"));
    after.split("```sh\n").nth(1).and_then(|s| s.split("\n```").next()).expect("a sh block").to_owned()
}

/// A script running in the host's network and PID namespaces (so it, and what it
/// leaves running, dies with the host), its output collected as it comes.
struct Script {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Script {
    fn start(env: &Env, cwd: &Path, script: &str) -> Script {
        // In the host's PID namespace (see `Host::new`) and network namespace.
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--target={}", env.init))
            .arg("--pid")
            .arg(format!("--net=/var/run/netns/{}", env.netns))
            .args(["bash", "-e", "-c", script])
            .current_dir(cwd)
            .env_clear()
            .envs(env.vars.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn_guarded(cmd, rustix::process::Signal::KILL, "a README script").unwrap();
        let collect = |from: Box<dyn Read + Send>| {
            let into = Arc::new(Mutex::new(String::new()));
            let sink = into.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(from).lines().map_while(Result::ok) {
                    let mut text = sink.lock().unwrap();
                    text.push_str(&line);
                    text.push('\n');
                }
            });
            into
        };
        let stdout = collect(Box::new(child.stdout.take().unwrap()));
        let stderr = collect(Box::new(child.stderr.take().unwrap()));
        Script { child, stdout, stderr }
    }

    fn output(&self) -> (String, String) {
        (self.stdout.lock().unwrap().clone(), self.stderr.lock().unwrap().clone())
    }

    /// Waits until `ready` holds of (stdout, stderr); panics with the output after `timeout`.
    fn wait_for(&mut self, what: &str, timeout: Duration, ready: impl Fn(&str, &str) -> bool) {
        let start = Instant::now();
        loop {
            let (out, err) = self.output();
            if ready(&out, &err) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the script ended ({status}) before {what}:\n{out}\n{err}");
            }
            assert!(start.elapsed() < timeout, "no {what} after {timeout:?}:\n{out}\n{err}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the script (not what it left in the background) to end, and
    /// returns its exit code and output.
    fn finish(&mut self, timeout: Duration) -> (i32, String, String) {
        let start = Instant::now();
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code().unwrap_or(-1);
            }
            if start.elapsed() > timeout {
                let (out, err) = self.output();
                panic!("the script did not end within {timeout:?}:\n{out}\n{err}");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        // What it printed last is read before the answer is judged.
        std::thread::sleep(Duration::from_millis(200));
        let (out, err) = self.output();
        (code, out, err)
    }
}

/// The environment of a new user on a new host.
struct Env {
    netns: String,
    /// The init of the host's PID namespace.
    init: u32,
    vars: Vec<(String, String)>,
}

/// A new host for a new user: a network namespace with `eth0` (its loopback up,
/// so `127.0.0.1:8080` is free and private), a PostgreSQL cluster, an empty HOME,
/// `sudo` and `ebpkg-registry` on the PATH.
struct Host {
    /// `unshare --pid --fork --kill-child sleep infinity`: what the scripts run
    /// under, and the server they leave running, dies with the namespace's init
    /// (the `sleep`), which dies with `unshare` (--kill-child), which dies with
    /// this test process however it dies (Ctrl-C, SIGKILL: spawn_guarded) or when
    /// the host is dropped.
    holder: Child,
    init: u32,
    sb: Sandbox,
    _pg: Postgres,
    home: PathBuf,
    vars: Vec<(String, String)>,
}

impl Host {
    fn new(tag: &str) -> Host {
        let sb = Sandbox::with_veth(tag, "eth0", "eth1");
        let netns = sb.netns.clone().unwrap();
        let up = Command::new("ip").args(["-n", &netns, "link", "set", "lo", "up"]).output().unwrap();
        assert!(up.status.success(), "{}", String::from_utf8_lossy(&up.stderr));
        let pg = Postgres::start().unwrap();
        let home = sb.path("home");
        std::fs::create_dir_all(&home).unwrap();
        // `sudo -u USER CMD` (the test is root) and `ebpkg-registry` (this binary).
        let bin = sb.path("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let sudo = bin.join("sudo");
        std::fs::write(
            &sudo,
            "#!/bin/sh\n[ \"$1\" = -u ] || exec \"$@\"\nuser=$2; shift 2\nexec runuser -u \"$user\" -- \"$@\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&sudo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink(std::env::current_exe().unwrap(), bin.join("ebpkg-registry")).unwrap();
        let ebpkg = PathBuf::from(env!("CARGO_BIN_EXE_ebpkg"));
        let path = format!(
            "{}:{}:/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            bin.display(),
            ebpkg.parent().unwrap().display()
        );
        let vars = vec![
            ("PATH".into(), path),
            ("HOME".into(), home.display().to_string()),
            ("USER".into(), "root".into()),
            ("LOGNAME".into(), "root".into()),
            ("LANG".into(), "C.UTF-8".into()),
            ("NO_COLOR".into(), "1".into()),
            ("PGHOST".into(), pg.socket_dir().display().to_string()),
            ("PGPORT".into(), pg.port().to_string()),
            ("EBPKG_KEY_PASSWORD".into(), KEY_PASSWORD.into()),
            ("EBPKG_STATE_DIR".into(), sb.path("state").display().to_string()),
            ("EBPKG_BPFFS_ROOT".into(), sb.root.display().to_string()),
            ("EBPKG".into(), ebpkg.display().to_string()),
        ];
        let mut holder = Command::new("unshare");
        holder.args(["--pid", "--fork", "--kill-child", "sleep", "infinity"]);
        let holder = spawn_guarded(holder, rustix::process::Signal::KILL, "the host's PID namespace").unwrap();
        let children = format!("/proc/{0}/task/{0}/children", holder.id());
        let started = Instant::now();
        let init = loop {
            let text = std::fs::read_to_string(&children).unwrap_or_default();
            if let Some(pid) = text.split_whitespace().next().and_then(|p| p.parse().ok()) {
                break pid;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "unshare started no namespace");
            std::thread::sleep(Duration::from_millis(20));
        };
        Host { holder, init, sb, _pg: pg, home, vars }
    }

    fn env(&self) -> Env {
        Env { netns: self.sb.netns.clone().unwrap(), init: self.init, vars: self.vars.clone() }
    }

    /// Runs `script` to its end in `cwd`; panics with its output unless it exits 0.
    fn run(&self, what: &str, cwd: &Path, script: &str, timeout: Duration) -> (String, String) {
        let mut run = Script::start(&self.env(), cwd, script);
        let (code, out, err) = run.finish(timeout);
        assert_eq!(code, 0, "{what} failed:\n{out}\n{err}");
        (out, err)
    }
}

/// Waits until `script` has printed a token (`ebpkg-registry init`) and its
/// server says it serves, then pastes the token on its standard input, as a
/// person would into `ebpkg login`; returns the token.
impl Drop for Host {
    fn drop(&mut self) {
        // The namespace's init goes with unshare, and everything in it with the init.
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

fn paste_token(script: &mut Script) -> String {
    script.wait_for("the token and a serving server", Duration::from_secs(120), |out, err| {
        out.lines().any(|l| l.starts_with("ebpkg_")) && err.contains("serving")
    });
    let token = script.output().0.lines().find(|l| l.starts_with("ebpkg_")).unwrap().to_owned();
    let mut stdin = script.child.stdin.take().unwrap();
    stdin.write_all(format!("{token}\n").as_bytes()).unwrap();
    token
}

fn the_registry_readme_runs_verbatim() {
    let readme = readme();
    let operator = sh_block(&readme, "<!-- the operator's and publisher's first hour");
    let pipeline = sh_block(&readme, "<!-- run as written, against a fresh registry");
    let session = sh_block(&readme, "A first session");
    for (block, needs) in [
        (&operator, "ebpkg-registry init --admin alice"),
        (&pipeline, "ci/publish --dry-run && ci/publish"),
        (&session, "ebpkg install --set DEVNAME=eth0"),
    ] {
        assert!(block.contains(needs), "{block}");
    }
    let mut host = Host::new("regdoc");
    // The pipeline's working directory: a checkout with ci/ and packages/.
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let checkout = host.sb.path("checkout");
    copy_dir(&repo.join("ci"), &checkout.join("ci"));
    for p in first_party() {
        copy_dir(&p, &checkout.join("packages").join(p.file_name().unwrap()));
    }

    // The operator and a first publish.
    let mut first = Script::start(&host.env(), &host.home, &operator);
    paste_token(&mut first);
    let (code, out, err) = first.finish(Duration::from_secs(600));
    assert_eq!(code, 0, "the operator's block failed:\n{out}\n{err}");
    assert!(err.contains("created user `alice`"), "{err}");
    assert!(err.contains("serve --public-url http://127.0.0.1:8080/"), "init's next steps: {err}");
    assert!(err.contains("Published flowstats@0.1.0"), "{err}");
    assert!(out.contains("flowstats"), "search finds it: {out}");

    // The pipeline: the whole first-party set in one run, on the registry's first day.
    let (out, err) = host.run("the pipeline's block", &checkout, &pipeline, Duration::from_secs(1200));
    let count = first_party().len();
    assert!(out.contains("created user `ci`"), "{out}");
    assert!(
        err.contains("Created token 3 `ci-publish` on http://127.0.0.1:8080/ (publish-new, publish-update"),
        "{err}"
    );
    assert!(err.contains("Revoked token 2 `key-registration`"), "{err}");
    assert!(err.contains(&format!("{count} package(s) checked; nothing was published (--dry-run)")), "{err}");
    assert!(err.contains(&format!("{count} package(s) published or already there")), "{err}");
    // The unrestricted token was refused from its revocation on; the narrow one publishes as `ci`.
    let check = "! EBPKG_REGISTRY_TOKEN=\"$(cat registration.token)\" ebpkg --registry http://127.0.0.1:8080/ token list \
                 2>refused && grep -q 'answered 401 Unauthorized: the API token `key-registration` was revoked' refused \
                 && ebpkg --registry http://127.0.0.1:8080/ owner list net";
    let (out, _) = host.run("the revoked token's refusal", &checkout, check, Duration::from_secs(60));
    assert_eq!(out, "ci\n");

    // The README's first session on this host, from that registry.
    host.vars.push(("EBPKG_REGISTRY".into(), "http://127.0.0.1:8080/".into()));
    let (out, err) = host.run("the README's first session", &host.home, &session, Duration::from_secs(600));
    assert!(out.contains("attached to eth0 (xdp)"), "{out}\n{err}");
    assert!(err.contains("Uninstalled deployment guard"), "{err}");
    assert!(err.contains("Locking net 1.0.0 (http://127.0.0.1:8080/)"), "{err}");
    assert!(!err.contains("Skipping"), "every version is trusted (the publisher's own key): {err}");
    assert!(host.sb.pins().is_empty(), "uninstall removed everything: {:?}", host.sb.pins());
    drop(first);
}

/// registry-server/README.md's "Running it": the operator's commands (the
/// server in the foreground, as in a terminal of its own), then the
/// workstation's, in a package's directory.
fn the_registry_server_readme_runs_verbatim() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../registry-server/README.md")).unwrap();
    let block = sh_block(&text, "## Running it");
    let (operator, workstation) = block.split_once("# on a workstation").expect("the workstation's part");
    let workstation = workstation.split_once('\n').map_or("", |(_, rest)| rest);
    let database = text
        .split("(The database: `")
        .nth(1)
        .and_then(|s| s.split("` on Debian.)").next())
        .expect("the database's command");
    let host = Host::new("srvdoc");
    host.run("the database's command", &host.home, database, Duration::from_secs(60));
    let package = host.sb.path("meter");
    copy_dir(&first_party()[0], &package);

    let mut server = Script::start(&host.env(), &host.home, operator);
    server.wait_for("the ci account's token", Duration::from_secs(120), |out, err| {
        out.lines().filter(|l| l.starts_with("ebpkg_")).count() == 2 && err.contains("serving")
    });
    let alice = server.output().0.lines().find(|l| l.starts_with("ebpkg_")).unwrap().to_owned();
    let (_, err) = server.output();
    assert!(err.contains("created user `alice`"), "{err}");
    assert!(err.contains("publish-new, publish-update; packages net-*; expires"), "{err}");
    let (out, _) = server.output();
    assert!(
        out.contains("\tcreated by ebpkg-registry\tpublish-new, publish-update; packages net-*"),
        "token list: {out}"
    );

    let mut publish = Script::start(&host.env(), &package, workstation);
    {
        let mut stdin = publish.child.stdin.take().unwrap();
        stdin.write_all(format!("{alice}\n").as_bytes()).unwrap();
    }
    let (code, out, err) = publish.finish(Duration::from_secs(600));
    assert_eq!(code, 0, "the workstation's commands failed:\n{out}\n{err}\nserver:\n{:?}", server.output());
    assert!(err.contains("Published meter@1.0.0 to http://127.0.0.1:8080/"), "{err}");
}

/// The first fenced block of `lang` after `marker` in `text`.
fn fenced_block(text: &str, marker: &str, lang: &str) -> String {
    let after = text.split(marker).nth(1).unwrap_or_else(|| panic!("the document has {marker:?}"));
    let open = format!("```{lang}\n");
    after.split(open.as_str()).nth(1).and_then(|s| s.split("\n```").next()).expect("a fenced block").to_owned()
}

/// `script`, run in a mount namespace of its own whose /etc/hosts is `hosts`:
/// the name the section's certificate is for reaches the host's loopback.
fn with_hosts(hosts: &Path, script: &str) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    format!(
        "exec unshare --mount -- bash -e -c {} {}",
        quote(&format!("mount --bind {} /etc/hosts && exec bash -e -c \"$0\"", hosts.display())),
        quote(script)
    )
}

/// Runs openssl in `dir` (the test plays the company's CA).
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// registry-server/README.md's "TLS with your organisation's CA": the
/// certificate request, signed by a CA the test makes; nginx with the section's
/// server block (in the host's network namespace, so port 443 is the test's
/// own); the replica; a client that does not trust the CA yet, refused once with
/// the hint; then the workstation's block (login, publish, install through
/// HTTPS, trusting the CA by the documented setting alone).
fn the_registry_tls_section_runs_verbatim() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../registry-server/README.md")).unwrap();
    let request = sh_block(&text, "<!-- TLS: the certificate request");
    let site = fenced_block(&text, "<!-- TLS: nginx", "nginx");
    let replica = sh_block(&text, "<!-- TLS: the replica");
    let workstation = sh_block(&text, "<!-- TLS: a workstation");
    assert!(site.contains("location = /metrics"), "{site}");
    assert!(workstation.contains("cainfo = "), "{workstation}");
    let database = text
        .split("(The database: `")
        .nth(1)
        .and_then(|s| s.split("` on Debian.)").next())
        .expect("the database's command");

    let mut host = Host::new("tlsdoc");
    let hosts = host.sb.path("hosts");
    std::fs::write(&hosts, "127.0.0.1 localhost\n127.0.0.1 ebpkg.corp.example\n").unwrap();
    host.run("the database's command", &host.home, database, Duration::from_secs(60));

    // The operator's certificate request, signed by the company's CA.
    let (ca, operator) = (host.sb.path("ca"), host.sb.path("operator"));
    std::fs::create_dir_all(&ca).unwrap();
    std::fs::create_dir_all(&operator).unwrap();
    host.run("the certificate request", &operator, &request, Duration::from_secs(60));
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
    openssl(
        &ca,
        &[
            &["req", "-x509"][..],
            &ec,
            &["-keyout", "ca.key", "-out", "corp-ca.pem", "-days", "2", "-subj", "/CN=Corp Test CA"],
        ]
        .concat(),
    );
    let csr = operator.join("registry.csr").display().to_string();
    let crt = operator.join("registry.crt").display().to_string();
    openssl(
        &ca,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "corp-ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-copy_extensions",
            "copy",
            "-days",
            "2",
            "-out",
            &crt,
        ],
    );

    // nginx with the section's server block, its files where the block names them.
    let prefix = host.sb.path("nginx");
    std::fs::create_dir_all(prefix.join("ebpkg")).unwrap();
    for file in ["registry.crt", "registry.key"] {
        std::fs::copy(operator.join(file), prefix.join("ebpkg").join(file)).unwrap();
    }
    let p = prefix.display();
    std::fs::write(
        prefix.join("nginx.conf"),
        format!(
            "user root;\nworker_processes 1;\npid {p}/nginx.pid;\nerror_log {p}/error.log info;\n\
             events {{ worker_connections 256; }}\nhttp {{\naccess_log off;\nclient_body_temp_path {p}/body;\n\
             proxy_temp_path {p}/proxy;\nfastcgi_temp_path {p}/fastcgi;\nuwsgi_temp_path {p}/uwsgi;\n\
             scgi_temp_path {p}/scgi;\n{site}\n}}\n"
        ),
    )
    .unwrap();
    let mut nginx = Script::start(
        &host.env(),
        &prefix,
        &format!("exec nginx -p {p}/ -c {p}/nginx.conf -e {p}/error.log -g 'daemon off;'"),
    );
    nginx.wait_for("nginx's pid file", Duration::from_secs(30), |_, _| prefix.join("nginx.pid").exists());

    // The replica, after `init` as "Running it" does it.
    host.vars.push(("EBPKG_REGISTRY_DATABASE_URL".into(), "postgres:///ebpkg".into()));
    host.vars.push(("EBPKG_REGISTRY_STORAGE".into(), format!("file://{}/ebpkg-blobs", host.home.display())));
    let (out, _) = host.run("init", &host.home, "ebpkg-registry init --admin alice", Duration::from_secs(120));
    let token = out.lines().find(|l| l.starts_with("ebpkg_")).expect("alice's token").to_owned();
    let mut server = Script::start(&host.env(), &host.home, &replica);
    server.wait_for("the replica serving", Duration::from_secs(120), |_, err| err.contains("serving"));

    // Through nginx: HTTP/2, and /metrics only on the private side.
    let curl = "curl -sS --cacert corp-ca.pem -w '%{http_version} %{http_code}\\n' \
                -o /dev/null https://ebpkg.corp.example/index/config.json -o /dev/null https://ebpkg.corp.example/metrics; \
                curl -sS -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:8080/metrics";
    let (out, _) = host.run("curl", &ca, &with_hosts(&hosts, curl), Duration::from_secs(60));
    assert_eq!(out, "2 200\n2 404\n200\n", "HTTP/2 through nginx, /metrics refused there, served by the replica");

    // A client without the setting: refused once, with the hint, no raw log line.
    let handshakes =
        || std::fs::read_to_string(prefix.join("error.log")).unwrap().matches("while SSL handshaking").count();
    assert_eq!(handshakes(), 0);
    let login = format!("echo {token} | ebpkg login --registry https://ebpkg.corp.example/ --token-stdin");
    let mut refused = Script::start(&host.env(), &host.home, &with_hosts(&hosts, &login));
    let (code, out, err) = refused.finish(Duration::from_secs(120));
    assert_eq!(code, 6, "{out}\n{err}");
    assert!(err.contains("the server's certificate was refused (invalid peer certificate: UnknownIssuer)"), "{err}");
    assert!(err.contains("EBPKG_HTTP_CAINFO=/path/ca.pem") && err.contains("[registries.NAME]"), "{err}");
    assert!(!err.contains("rustls") && !err.contains("ERROR") && !err.contains("trying again"), "{err}");
    assert!(!err.contains("PROXY"), "{err}");
    assert_eq!(handshakes(), 1, "one attempt: {err}");

    // The workstation's block, trusting the CA by its setting alone.
    let desk = host.sb.path("workstation");
    std::fs::create_dir_all(&desk).unwrap();
    std::fs::copy(ca.join("corp-ca.pem"), desk.join("corp-ca.pem")).unwrap();
    let mut session = Script::start(&host.env(), &desk, &with_hosts(&hosts, &workstation));
    {
        let mut stdin = session.child.stdin.take().unwrap();
        stdin.write_all(format!("{token}\n").as_bytes()).unwrap();
    }
    let (code, out, err) = session.finish(Duration::from_secs(600));
    assert_eq!(code, 0, "the workstation's block failed:\n{out}\n{err}\nserver: {:?}", server.output());
    assert!(err.contains("Published flowstats@0.1.0 to https://ebpkg.corp.example/"), "{err}");
    assert!(err.contains("Locking flowstats 0.1.0 (https://ebpkg.corp.example/)"), "{err}");
    assert!(err.contains("Installed chain main"), "{err}");
    assert!(!err.contains("rustls"), "{err}");
    assert_eq!(handshakes(), 1, "every later handshake succeeded");
    assert!(host.sb.pins().is_empty(), "uninstall removed everything: {:?}", host.sb.pins());
    drop((server, nginx));
}
