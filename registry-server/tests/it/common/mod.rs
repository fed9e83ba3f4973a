//! What the server's tests share: a blocking HTTP client and request shorthands.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ebpkg_registry::testing::TestRegistry;
use ebpkg_registry_testing::Database;
use reqwest::StatusCode;
use reqwest::blocking::{Client, Response};

pub fn http() -> Client {
    Client::builder().timeout(std::time::Duration::from_secs(60)).build().unwrap()
}

pub fn get(reg: &TestRegistry, path: &str) -> Response {
    http().get(format!("{}{path}", reg.url())).send().unwrap()
}

pub fn publish(reg: &TestRegistry, token: &str, body: &[u8]) -> Response {
    http()
        .put(format!("{}api/v1/packages/new", reg.url()))
        .header("Authorization", token)
        .body(body.to_vec())
        .send()
        .unwrap()
}

pub fn send(
    reg: &TestRegistry,
    method: reqwest::Method,
    path: &str,
    token: &str,
    json: Option<serde_json::Value>,
) -> Response {
    let mut request = http().request(method, format!("{}{path}", reg.url())).header("Authorization", token);
    if let Some(json) = json {
        request = request.json(&json);
    }
    request.send().unwrap()
}

/// A u32 LE length and the bytes.
pub fn frame(bytes: &[u8]) -> Vec<u8> {
    let mut out = (bytes.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(bytes);
    out
}

fn gzip(tar: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(tar).unwrap();
    gz.finish().unwrap()
}

/// A tar holding one file at `path` (written raw, so any path can be made).
fn tar_with(path: &str, contents: &[u8]) -> Vec<u8> {
    let mut header = [0u8; 512];
    header[..path.len()].copy_from_slice(path.as_bytes());
    header[100..108].copy_from_slice(b"0000644\0");
    header[108..116].copy_from_slice(b"0000000\0");
    header[116..124].copy_from_slice(b"0000000\0");
    header[124..136].copy_from_slice(format!("{:011o}\0", contents.len()).as_bytes());
    header[136..148].copy_from_slice(b"00000000000\0");
    header[156] = b'0';
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut tar = header.to_vec();
    tar.extend_from_slice(contents);
    tar.resize(tar.len().div_ceil(512) * 512 + 1024, 0);
    tar
}

/// Archives the server must refuse, each with a word of the refusal.
pub fn hostile_archives() -> Vec<(Vec<u8>, &'static str)> {
    let manifest = b"[package]\nname = \"my-pkg\"\nversion = \"4.0.0\"\n";
    vec![
        (b"not gzip at all".to_vec(), "refused"),
        (gzip(&tar_with("../../etc/cron.d/x", b"boom")), "refused"),
        (gzip(&tar_with("/etc/passwd", b"boom")), "refused"),
        (gzip(&tar_with("my-pkg-4.0.0/ebpkg.toml", b"[package]\nname = 3\n")), "refused"),
        (gzip(&tar_with("my-pkg-4.0.0/../ebpkg.toml", manifest)), "refused"),
        (gzip(&vec![0u8; 8 * 1024 * 1024]), "refused"),
    ]
}

/// The real binary, serving a database and a blob directory.
/// Registers `key` for `login` (whose token this is) with the server at `url`.
pub fn register_key_at(url: &str, token: &str, login: &str, key: &ebpkg_signing::SigningKey) {
    let registration = ebpkg_registry::testing::key_registration(login, key).unwrap();
    let r =
        http().post(format!("{url}api/v1/me/keys")).header("Authorization", token).json(&registration).send().unwrap();
    assert_eq!(r.status(), StatusCode::OK, "registering a key: {}", r.text().unwrap_or_default());
}

pub struct Binary {
    pub child: Child,
    pub url: String,
    pub port: u16,
}

impl Binary {
    pub fn serve(db: &Database, blobs: &Path, crash_at: Option<&str>) -> Binary {
        Binary::serve_storage(db, &format!("file://{}", blobs.display()), crash_at)
    }

    pub fn serve_storage(db: &Database, storage: &str, crash_at: Option<&str>) -> Binary {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ebpkg-registry"));
        cmd.args(["--database-url", &db.url(), "--listen", &format!("127.0.0.1:{port}")])
            .args(["--storage", storage])
            .args(["serve", "--migrate"])
            .env("EBPKG_REGISTRY_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(point) = crash_at {
            cmd.env("EBPKG_CRASH_AT", point);
        }
        let child = cmd.spawn().unwrap();
        let url = format!("http://127.0.0.1:{port}/");
        let deadline = Instant::now() + Duration::from_secs(30);
        while http().get(format!("{url}readyz")).send().map(|r| r.status()).ok() != Some(StatusCode::OK) {
            assert!(Instant::now() < deadline, "the server did not become ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        Binary { child, url, port }
    }

    pub fn get(&self, path: &str) -> reqwest::blocking::Response {
        http().get(format!("{}{path}", self.url)).send().unwrap()
    }
}

impl Binary {
    /// SIGTERM: the server stops accepting, finishes what is in flight, exits.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs an admin command of the binary (`migrate`, `user create`, `token create`).
pub fn admin(db: &Database, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ebpkg-registry"))
        .args(["--database-url", &db.url(), "--storage", "file:///nonexistent-unused"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}
