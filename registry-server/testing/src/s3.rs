//! An S3-compatible server: moto's server mode (installed by `ci/setup` into
//! `/opt/ebpkg-ci/moto`), speaking the real S3 protocol over real HTTP. Each
//! guard is a server of its own, with its own state, on its own loopback port.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rustix::process::Signal;

use crate::spawn::{free_port, http, scratch_dir, spawn_guarded, stop_child, tail, wait_ready};
use crate::{Error, Result, io};

const DEFAULT_BINARY: &str = "/opt/ebpkg-ci/moto/bin/moto_server";
/// Overrides [`DEFAULT_BINARY`].
const BINARY_VAR: &str = "EBPKG_TEST_MOTO_SERVER";
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// moto checks no signature, but clients sign, and unsigned (anonymous)
/// requests may not read objects.
const KEY_ID: &str = "test";
const SECRET: &str = "test";
const REGION: &str = "us-east-1";

/// A running S3 server, killed on drop (and with the test process).
pub struct S3Server {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

impl S3Server {
    /// Starts a server on a free loopback port and waits until it answers S3.
    pub fn start() -> Result<S3Server> {
        let binary = std::env::var_os(BINARY_VAR).map_or_else(|| PathBuf::from(DEFAULT_BINARY), PathBuf::from);
        if !binary.exists() {
            return Err(Error::Missing(format!(
                "{} (moto's S3 server) is missing (or point {BINARY_VAR} at one)",
                binary.display()
            )));
        }
        let dir = scratch_dir("s3")?;
        match S3Server::run(&binary, &dir) {
            Ok((port, child)) => Ok(S3Server { child: Some(child), port, dir }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    fn run(binary: &Path, dir: &Path) -> Result<(u16, Child)> {
        let log = dir.join("moto.log");
        // The port is free when chosen but may be taken before moto binds it:
        // then moto exits at once, and another port is tried.
        let mut attempts = 0;
        loop {
            attempts += 1;
            let port = free_port()?;
            let file = std::fs::File::create(&log).map_err(io(format!("creating {}", log.display())))?;
            let stdout = file.try_clone().map_err(io(format!("opening {}", log.display())))?;
            let mut command = Command::new(binary);
            command
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .env("PYTHONUNBUFFERED", "1")
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .stdin(Stdio::null())
                .stdout(stdout)
                .stderr(file);
            let mut child = spawn_guarded(command, Signal::KILL, "moto_server")?;
            // moto answers `GET /` with the (empty) list of buckets: it is moto
            // that listens, not whatever took the port.
            let ready = wait_ready("the S3 server (moto)", &mut child, &log, START_TIMEOUT, || {
                http(port, "GET", "/", b"").is_ok_and(|(status, body)| {
                    status == 200 && String::from_utf8_lossy(&body).contains("ListAllMyBucketsResult")
                })
            });
            match ready {
                Ok(()) => return Ok((port, child)),
                Err(e) => {
                    stop_child(&mut child, Signal::KILL, Duration::from_secs(5));
                    let taken = matches!(e, Error::Exited { .. }) && tail(&log).contains("Address already in use");
                    if !taken || attempts >= 5 {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// `http://127.0.0.1:PORT` (path-style requests).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates a bucket (S3 CreateBucket, `PUT /name`). S3 wants 3 to 63
    /// lower-case letters, digits, dots and hyphens.
    pub fn create_bucket(&self, name: &str) -> Result<()> {
        let (status, body) = http(self.port, "PUT", &format!("/{name}"), b"")?;
        if status != 200 {
            return Err(Error::Command {
                what: format!("creating bucket {name} on {}", self.endpoint()),
                output: format!("HTTP {status}: {}", String::from_utf8_lossy(&body)),
            });
        }
        Ok(())
    }

    /// A `--storage` URL of the registry for `bucket`/`prefix` on this server.
    pub fn storage_url(&self, bucket: &str, prefix: &str) -> String {
        format!(
            "s3://{bucket}/{prefix}?endpoint={}&allow_http=true&region={REGION}&access_key_id={KEY_ID}&secret_access_key={SECRET}",
            self.endpoint()
        )
    }

    /// The variables `object_store`'s `AmazonS3Builder::from_env` (and AWS
    /// SDKs) read to reach this server: for `Command::envs` of a child process.
    /// In-process, hand each to `AmazonS3Builder::with_config(key.to_ascii_lowercase().parse()?, value)`
    /// rather than `std::env::set_var`, which races with other tests' threads.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT", self.endpoint()),
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ACCESS_KEY_ID", KEY_ID.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET.into()),
            ("AWS_REGION", REGION.into()),
            ("AWS_DEFAULT_REGION", REGION.into()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// Kills the server (for "blob store unreachable"); its port then refuses
    /// connections. What it stored is gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop_child(&mut child, Signal::KILL, Duration::from_secs(5));
        }
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
