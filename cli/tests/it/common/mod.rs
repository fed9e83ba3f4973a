//! A sandbox for running the real `ebpkg` binary: a file:// registry, cache,
//! state directory, config and HIKe root of the test's own, and a network
//! namespace with a veth pair when asked for; all removed by the guard, even when
//! the test fails.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// The first-party package directories, dependencies first.
pub fn first_party() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../packages");
    ["meter", "sets", "sampler", "net", "alt_mark", "basic", "mmlf", "ddos"].iter().map(|p| root.join(p)).collect()
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub use hike_runtime::testing::require_kernel;

/// The passphrase of the sandboxes' signing key.
pub const KEY_PASSWORD: &str = "sandbox passphrase";

/// One key per test process (scrypt makes encrypting it take a moment), as its
/// encrypted PEM and the key.
fn test_key() -> &'static (String, ebpkg_signing::SigningKey) {
    static KEY: std::sync::OnceLock<(String, ebpkg_signing::SigningKey)> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let key = ebpkg_signing::SigningKey::generate().unwrap();
        let pem = key.to_encrypted_pem(KEY_PASSWORD.as_bytes()).unwrap().to_string();
        (pem, key)
    })
}

/// Gives a sandbox what a publisher and an installer have: the signing key as
/// `ebpkg key generate` writes it, and a trust policy trusting it for everything.
fn install_signing_key(dir: &Path) {
    let (pem, key) = test_key();
    std::fs::create_dir_all(dir.join("keys")).unwrap();
    std::fs::write(dir.join("keys/default.key"), pem).unwrap();
    std::fs::write(dir.join("keys/default.pub"), key.public().to_pem()).unwrap();
    std::fs::write(dir.join("trust.toml"), format!("[keys]\n\"*\" = [\"{}\"]\n", key.public().id())).unwrap();
}

pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub netns: Option<String>,
    pub tag: String,
    /// The download and build cache (the sandbox's own unless shared).
    pub cache: PathBuf,
    /// The default registry, when not the sandbox's own file:// one (a server).
    pub registry: Option<String>,
    _root: hike_runtime::ScratchPath,
}

/// What one `ebpkg` run did.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The HTTP requests a `-vv` run sent, as `GET /path → status`, in order.
    #[allow(dead_code)]
    pub fn requests(&self) -> Vec<String> {
        self.stderr
            .lines()
            .filter_map(|l| {
                let (head, rest) = l.split_once(" → ")?;
                let (method, url) = head.rsplit_once(' ')?;
                let method = method.rsplit(' ').next()?;
                let path = url.split_once("://").map_or(url, |(_, u)| u.split_once('/').map_or("", |(_, p)| p));
                Some(format!("{method} /{path} → {}", rest.split(' ').next()?))
            })
            .collect()
    }

    pub fn from(out: Output) -> Run {
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(self.code, 0, "ebpkg failed:\n{}\n{}", self.stdout, self.stderr);
        self
    }

    #[track_caller]
    pub fn fails(self, code: i32) -> Run {
        assert_eq!(self.code, code, "expected exit {code}:\n{}\n{}", self.stdout, self.stderr);
        self
    }
}

impl Sandbox {
    pub fn new(tag: &str) -> Sandbox {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::SeqCst);
        let tag = format!("{tag}{}x{n}", std::process::id());
        let guard = hike_runtime::ScratchPath::at(PathBuf::from(format!("/sys/fs/bpf/ebpkg-cli-{tag}")));
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        install_signing_key(dir.path());
        Sandbox { dir, root: guard.path().to_owned(), netns: None, tag, cache, registry: None, _root: guard }
    }

    /// The id of the sandbox's signing key (`keys/default.key`), which its
    /// trust.toml trusts for every package.
    pub fn key_id(&self) -> String {
        test_key().1.public().id().to_string()
    }

    /// Uses a cache shared by the tests of this crate (safe: the cache's writes are
    /// atomic), so the first-party packages are built once per test run.
    pub fn shared_cache(mut self) -> Sandbox {
        self.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ebpkg-shared-cache");
        self
    }

    /// A sandbox whose installs attach in a network namespace of its own, holding
    /// a veth pair `va`/`vb`.
    pub fn with_netns(tag: &str) -> Sandbox {
        Sandbox::with_veth(tag, "va", "vb")
    }

    /// A sandbox with a network namespace of its own holding a veth pair `a`/`b`.
    pub fn with_veth(tag: &str, a: &str, b: &str) -> Sandbox {
        require_kernel();
        let mut s = Sandbox::new(tag);
        let ns = format!("ebc{}", s.tag);
        let ip = |args: &[&str]| {
            let out = Command::new("ip").args(args).output().expect("ip (iproute2)");
            assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        };
        ip(&["netns", "add", &ns]);
        s.netns = Some(ns.clone());
        // No IPv6 neighbour discovery or router solicitations: the only packets
        // the tests' chains see are the tests' own.
        let quiet =
            "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6";
        let out = Command::new("ip").args(["netns", "exec", &ns, "sh", "-c", quiet]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        ip(&["-n", &ns, "link", "add", a, "type", "veth", "peer", "name", b]);
        ip(&["-n", &ns, "link", "set", a, "up"]);
        ip(&["-n", &ns, "link", "set", b, "up"]);
        s
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn registry_url(&self) -> String {
        self.registry.clone().unwrap_or_else(|| format!("file://{}/", self.path("registry").display()))
    }

    /// Publishes every first-party package (packages/ of the repository).
    pub fn publish_first_party(&self) {
        for p in first_party() {
            self.publish(&p);
        }
    }

    /// A sandbox in a network namespace of its own with the e2e fixtures flow,
    /// verdict and classify published, and the app project that uses them.
    #[allow(dead_code)]
    pub fn with_app_published(tag: &str) -> (Sandbox, PathBuf) {
        let sb = Sandbox::with_netns(tag);
        for p in ["flow", "verdict", "classify"] {
            sb.publish(&sb.package(p));
        }
        let app = sb.package("app");
        (sb, app)
    }

    /// Copies fixture package `name` (from tests/fixtures/e2e) into the sandbox.
    pub fn package(&self, name: &str) -> PathBuf {
        let dest = self.path(&format!("pkgs/{name}"));
        copy_dir(&fixtures().join("e2e").join(name), &dest);
        dest
    }

    /// A command running `ebpkg` in `cwd` with the sandbox's settings.
    pub fn cmd(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ebpkg"));
        cmd.current_dir(cwd).args(args);
        self.set_env(&mut cmd);
        if let Some(ns) = &self.netns {
            cmd.args(["--netns", ns]);
        }
        cmd
    }

    /// A shell script run as a user would run it: `ebpkg` on the PATH, the
    /// sandbox's settings in the environment, inside the sandbox's network
    /// namespace when it has one (entered with nsenter, which keeps /sys/fs/bpf).
    pub fn shell(&self, cwd: &Path, script: &str) -> Run {
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("nsenter");
                c.arg(format!("--net=/var/run/netns/{ns}")).args(["bash", "-e", "-c", script]);
                c
            }
            None => {
                let mut c = Command::new("bash");
                c.args(["-e", "-c", script]);
                c
            }
        };
        let bin = Path::new(env!("CARGO_BIN_EXE_ebpkg")).parent().unwrap().to_owned();
        let path = std::env::join_paths(
            std::iter::once(bin).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
        )
        .unwrap();
        cmd.current_dir(cwd).env("PATH", path);
        self.set_env(&mut cmd);
        Run::from(cmd.output().unwrap())
    }

    fn set_env(&self, cmd: &mut Command) {
        cmd.env("EBPKG_CONFIG", self.path("config.toml"))
            .env("EBPKG_REGISTRY", self.registry_url())
            .env("EBPKG_CACHE_DIR", &self.cache)
            .env("EBPKG_STATE_DIR", self.path("state"))
            .env("EBPKG_BPFFS_ROOT", &self.root)
            .env("NO_COLOR", "1")
            .env("EBPKG_KEY_PASSWORD", KEY_PASSWORD)
            .env_remove("EBPKG_MIRROR")
            .env_remove("EBPKG_REGISTRY_TOKEN")
            .env_remove("EBPKG_CRASH_AT")
            .env_remove("EBPKG_LOG");
    }

    pub fn run(&self, cwd: &Path, args: &[&str]) -> Run {
        Run::from(self.cmd(cwd, args).output().unwrap())
    }

    /// Runs `ebpkg` as [`Sandbox::run`] does, under `strace -f` (ci/setup installs
    /// it): with the run, every file it or a child of it opened (the opens that
    /// succeeded), as `(path, flags)` in order (`flags` as strace writes them:
    /// `O_RDONLY|O_CLOEXEC`).
    pub fn run_traced(&self, cwd: &Path, args: &[&str]) -> (Run, Vec<(String, String)>) {
        static N: AtomicU32 = AtomicU32::new(0);
        let log = self.path(&format!("strace-{}.log", N.fetch_add(1, Ordering::SeqCst)));
        let cmd = self.cmd(cwd, args);
        let mut traced = Command::new("strace");
        // (-z: only the calls that succeeded, each on one line.)
        traced.args(["-f", "-qq", "-z", "-s", "4096", "-e", "trace=open,openat,openat2", "-o"]).arg(&log);
        traced.arg(cmd.get_program()).args(cmd.get_args()).current_dir(cwd);
        for (name, value) in cmd.get_envs() {
            match value {
                Some(value) => traced.env(name, value),
                None => traced.env_remove(name),
            };
        }
        let run = Run::from(traced.output().expect("strace (ci/setup installs it)"));
        let opens = std::fs::read_to_string(&log).unwrap().lines().filter_map(traced_open).collect();
        (run, opens)
    }

    /// Runs `ebpkg` with more environment variables and, if given, `stdin` on its
    /// standard input.
    pub fn run_with(&self, cwd: &Path, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Run {
        let mut cmd = self.cmd(cwd, args);
        cmd.envs(env.iter().copied())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            std::io::Write::write_all(&mut input, text.as_bytes()).unwrap();
        }
        drop(input);
        Run::from(child.wait_with_output().unwrap())
    }

    /// Publishes a package directory (without the verification build unless asked).
    pub fn publish(&self, dir: &Path) {
        self.run(dir, &["publish", "--no-verify"]).ok();
    }

    /// Publishes the fixture package flow as `version`, its source with `from`
    /// replaced by `to`.
    #[allow(dead_code)]
    pub fn publish_flow_variant(&self, version: &str, from: &str, to: &str) {
        let dir = self.package("flow");
        let toml = std::fs::read_to_string(dir.join("ebpkg.toml"))
            .unwrap()
            .replace("version = \"1.0.0\"", &format!("version = \"{version}\""));
        std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();
        let src = std::fs::read_to_string(dir.join("src/flow.bpf.c")).unwrap();
        assert!(src.contains(from), "flow.bpf.c has no {from:?}");
        std::fs::write(dir.join("src/flow.bpf.c"), src.replace(from, to)).unwrap();
        self.publish(&dir);
    }

    /// Writes a manifest-only package and publishes it.
    /// A project `app` (in `<sandbox>/app`) depending on `deps`: `(name, requirement)`.
    pub fn app(&self, deps: &[(&str, &str)]) -> PathBuf {
        let dir = self.path("app");
        std::fs::create_dir_all(&dir).unwrap();
        let deps: String = deps.iter().map(|(n, r)| format!("{n} = \"{r}\"\n")).collect();
        std::fs::write(
            dir.join("ebpkg.toml"),
            format!("[package]\nname = \"app\"\nversion = \"0.1.0\"\n\n[dependencies]\n{deps}"),
        )
        .unwrap();
        dir
    }

    /// `ebpkg registry tuf-init` over the sandbox's registry with a root and an
    /// online key (`tuf-root.key`, `tuf-online.key` in the sandbox), then
    /// `ebpkg registry add origin … --root`: the registry is signed and trusted.
    /// Returns tuf-init's run and the two key paths.
    pub fn tuf_init(&self) -> (Run, PathBuf, PathBuf) {
        let (root_key, online_key) = (self.path("tuf-root.key"), self.path("tuf-online.key"));
        let dir = self.dir.path().to_owned();
        let registry = self.path("registry");
        let args = ["registry", "tuf-init", registry.to_str().unwrap(), "--root-key", root_key.to_str().unwrap()];
        let init = self.run(&dir, &[&args[..], &["--online-key", online_key.to_str().unwrap()]].concat()).ok();
        let root = registry.join("tuf/root.json");
        let added =
            self.run(&dir, &["registry", "add", "origin", &self.registry_url(), "--root", root.to_str().unwrap()]).ok();
        assert!(added.stderr.contains("Trusted the TUF root (v1)"), "{}", added.stderr);
        (init, root_key, online_key)
    }

    pub fn publish_manifest(&self, name: &str, version: &str, deps: &[(&str, &str)]) {
        let dir = self.path(&format!("gen/{name}-{version}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = format!("[package]\nname = \"{name}\"\nversion = \"{version}\"\n\n[dependencies]\n");
        for (d, r) in deps {
            text.push_str(&format!("{d} = \"{r}\"\n"));
        }
        std::fs::write(dir.join("ebpkg.toml"), text).unwrap();
        self.publish(&dir);
    }

    /// Uses the registry server at `url`, logged in with `token` (`ebpkg login
    /// --token-stdin`); once logged in, registers the sandbox's signing key there
    /// (`ebpkg owner key add default`), so what it publishes is signed.
    pub fn use_server(&mut self, url: &str, token: &str) -> Run {
        self.registry = Some(url.to_owned());
        let login = self.login(token);
        if login.code == 0 {
            self.run(self.dir.path(), &["owner", "key", "add", "default"]).ok();
        }
        login
    }

    fn login(&self, token: &str) -> Run {
        let mut login = self.cmd(self.dir.path(), &["login", "--token-stdin"]);
        login
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = login.spawn().unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), format!("{token}\n").as_bytes()).unwrap();
        Run::from(child.wait_with_output().unwrap())
    }

    /// Every path under the HIKe root.
    pub fn pins(&self) -> Vec<String> {
        let mut out = Vec::new();
        walk(&self.root, &self.root, &mut out);
        out.sort();
        out
    }

    /// `ebpkg status --json` of the sandbox.
    pub fn status(&self) -> serde_json::Value {
        let run = self.run(self.dir.path(), &["status", "--json"]).ok();
        serde_json::from_str(&run.stdout).unwrap()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // The root goes with `_root`, after the namespace.
        if let Some(ns) = &self.netns {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}

/// The path and flags of an open in a line of `strace -f -z` (`PID
/// openat(AT_FDCWD, "/path", O_RDONLY|O_CLOEXEC) = 3`).
fn traced_open(line: &str) -> Option<(String, String)> {
    let call = ["openat2(", "openat(", "open("].iter().find_map(|c| line.find(c).map(|at| &line[at + c.len()..]))?;
    let (_, rest) = call.split_once('"')?;
    let (path, rest) = rest.split_once('"')?;
    let flags = rest.trim_start_matches([',', ' ', '{']).trim_start_matches("flags=");
    let flags = flags.split([',', ')', ' ', '}']).next().unwrap_or("");
    Some((path.to_owned(), flags.to_owned()))
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        out.push(p.strip_prefix(base).unwrap().display().to_string());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(base, &p, out);
        }
    }
}

/// Ethernet + IPv4 + UDP from 10.0.0.1:1234 to 10.0.0.2:`port`.
pub fn udp4(port: u16) -> Vec<u8> {
    let mut p = vec![0u8; 14 + 20 + 8 + 4];
    p[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    p[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    p[12] = 0x08;
    p[14] = 0x45;
    p[16..18].copy_from_slice(&((20 + 8 + 4) as u16).to_be_bytes());
    p[22] = 64;
    p[23] = 17;
    p[26..30].copy_from_slice(&[10, 0, 0, 1]);
    p[30..34].copy_from_slice(&[10, 0, 0, 2]);
    p[34..36].copy_from_slice(&1234u16.to_be_bytes());
    p[36..38].copy_from_slice(&port.to_be_bytes());
    p[38..40].copy_from_slice(&12u16.to_be_bytes());
    p
}

/// Runs a packet through the deployment's (first) loader instance, as the kernel
/// would on the interface: BPF_PROG_TEST_RUN on the attached program.
pub fn verdict(sb: &Sandbox, packet: &[u8]) -> u32 {
    let status = sb.status();
    let instance = status[0]["loaders"][0]["instance"].as_str().unwrap().to_owned();
    let rt = hike_runtime::Runtime::open(&sb.root).unwrap();
    rt.test_run_loader(&instance, packet, 0).unwrap().verdict
}

pub const XDP_DROP: u32 = 1;
pub const XDP_PASS: u32 = 2;

/// Panics unless `file` (TOML, or JSON when it ends so) is valid under
/// `manifest-spec/schemas/<schema>`, formats asserted: what ebpkg writes is
/// what its published schemas describe.
pub fn assert_schema_valid(schema: &str, file: &Path) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../manifest-spec/schemas");
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(schema)).unwrap()).unwrap();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.enable_format_assertions();
    compiler.add_resource(schema, document).unwrap();
    let index = compiler.compile(schema, &mut schemas).unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    let value: serde_json::Value = if file.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(&text).unwrap()
    } else {
        toml::from_str(&text).unwrap()
    };
    if let Err(e) = schemas.validate(&value, index) {
        panic!("{} is not valid under {schema}: {e:#}\n{text}", file.display());
    }
}
