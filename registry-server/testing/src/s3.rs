//! An S3-compatible server: moto's server mode (installed by `ci/setup` into
//! `/opt/ebpkg-ci/moto`), speaking the real S3 protocol over real HTTP.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::spawn::{free_port, http, spawn_tied, wait_listening};
use crate::{Error, Result};

const DEFAULT_BINARY: &str = "/opt/ebpkg-ci/moto/bin/moto_server";

pub struct S3Server {
    child: Option<Child>,
    port: u16,
}

impl S3Server {
    /// Starts a server on a free loopback port and waits until it answers.
    pub fn start() -> Result<S3Server> {
        let binary =
            std::env::var_os("EBPKG_TEST_MOTO_SERVER").map_or_else(|| PathBuf::from(DEFAULT_BINARY), PathBuf::from);
        if !binary.exists() {
            return Err(Error::Missing(format!("{} (moto's S3 server) is missing", binary.display())));
        }
        let port = free_port()?;
        let mut command = Command::new(&binary);
        command
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = spawn_tied(command)?;
        let server = S3Server { child: Some(child), port };
        wait_listening(port, "moto_server", Duration::from_secs(30))?;
        Ok(server)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates a bucket (S3 CreateBucket).
    pub fn create_bucket(&self, name: &str) -> Result<()> {
        let (status, body) = http(self.port, "PUT", &format!("/{name}"), b"")?;
        if status != 200 {
            return Err(Error::Command {
                what: format!("creating bucket {name}"),
                output: String::from_utf8_lossy(&body).into(),
            });
        }
        Ok(())
    }

    /// A `--storage` URL for `bucket`/`prefix` on this server.
    pub fn storage_url(&self, bucket: &str, prefix: &str) -> String {
        format!(
            "s3://{bucket}/{prefix}?endpoint={}&allow_http=true&region=us-east-1&access_key_id=test&secret_access_key=test",
            self.endpoint()
        )
    }

    /// Stops the server (for "blob store unreachable").
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.stop();
    }
}
