//! An `ebpkg-registry` the TUF benchmark starts itself: with its online TUF key,
//! a public URL of the caller's choice and, for the server whose requests are
//! counted, one JSON log line per request in a file. The server's own request
//! log is what counts the requests of an `ebpkg lock`: it sees every request
//! whatever the client's connections or protocol, and adds nothing on the wire.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use ebpkg_registry_testing::{free_port, spawn_guarded, wait_listening};
use rustix::process::Signal;
use serde::Serialize;

/// The message tower-http's trace layer logs once per answered request.
const ANSWERED: &str = "finished processing request";

/// A running `ebpkg-registry`, killed on drop.
pub struct Served {
    child: Child,
    /// `http://127.0.0.1:<port>/`
    pub url: String,
    pub port: u16,
    /// Its request log, when it keeps one.
    log: Option<PathBuf>,
}

/// How to start one.
pub struct ServeOptions<'a> {
    pub database_url: &'a str,
    pub blobs: &'a Path,
    pub online_key: &'a Path,
    /// What its `index/config.json` names (the default: its own URL). Servers of
    /// one database must say the same: the TUF metadata signs those bytes.
    pub public_url: Option<&'a str>,
    /// Where to write one JSON line per request (info level); none: warnings only.
    pub log: Option<&'a Path>,
}

/// One request a server answered.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub status: u16,
}

impl std::fmt::Display for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} → {}", self.method, self.path, self.status)
    }
}

impl Served {
    /// Starts `binary serve` as `options` say; returns once it listens.
    pub fn start(binary: &Path, options: &ServeOptions<'_>) -> Result<Served> {
        let port = free_port()?;
        let listen = format!("127.0.0.1:{port}");
        let url = format!("http://{listen}/");
        let mut cmd = Command::new(binary);
        cmd.args(["--database-url", options.database_url, "--listen", &listen])
            .arg("--storage")
            .arg(format!("file://{}", options.blobs.display()))
            .args(["--ip-rate-per-minute", "0", "--db-pool", "16"])
            .arg("--tuf-online-key")
            .arg(options.online_key)
            .args(["--public-url", options.public_url.unwrap_or(&url)])
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        match options.log {
            Some(log) => {
                let file = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
                cmd.arg("--log-json").env("EBPKG_REGISTRY_LOG", "info").stderr(file);
            }
            None => {
                cmd.env("EBPKG_REGISTRY_LOG", "warn").stderr(Stdio::inherit());
            }
        }
        cmd.arg("serve");
        let child = spawn_guarded(cmd, Signal::KILL, "ebpkg-registry")?;
        let served = Served { child, url, port, log: options.log.map(Path::to_path_buf) };
        wait_listening(port, "ebpkg-registry", Duration::from_secs(30))?;
        Ok(served)
    }

    /// The CPU time it has used so far, user and system (ms), from
    /// `/proc/PID/stat`: what a measurement shares the machine's CPUs with.
    pub fn cpu_ms(&self) -> Result<f64> {
        let path = format!("/proc/{}/stat", self.child.id());
        let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        // The fields after the command's name, which is in parentheses and may hold spaces.
        let after = stat.rsplit_once(')').map(|(_, rest)| rest).context("no command name in /proc/PID/stat")?;
        let fields: Vec<&str> = after.split_whitespace().collect();
        // utime and stime: fields 14 and 15 of stat(5), 12 and 13 after the name.
        let ticks: u64 = [11usize, 12]
            .iter()
            .map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()).context("a short /proc/PID/stat"))
            .sum::<Result<u64>>()?;
        // SAFETY: sysconf has no preconditions.
        let per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        anyhow::ensure!(per_sec > 0, "sysconf(_SC_CLK_TCK) failed");
        Ok(ticks as f64 * 1000.0 / per_sec as f64)
    }

    /// Where its request log ends now: what [`Served::requests_since`] starts from.
    pub fn log_end(&self) -> Result<u64> {
        let log = self.log.as_deref().context("this server keeps no request log")?;
        Ok(std::fs::metadata(log).with_context(|| format!("{}", log.display()))?.len())
    }

    /// The requests it answered since `offset` of its log, in order. Complete
    /// once the client has its answers: the line is written before the body is sent.
    pub fn requests_since(&self, offset: u64) -> Result<Vec<Request>> {
        let log = self.log.as_deref().context("this server keeps no request log")?;
        let mut file = std::fs::File::open(log).with_context(|| format!("opening {}", log.display()))?;
        file.seek(SeekFrom::Start(offset)).with_context(|| format!("seeking in {}", log.display()))?;
        let mut text = String::new();
        file.read_to_string(&mut text).with_context(|| format!("reading {}", log.display()))?;
        Ok(text.lines().filter_map(answered).collect())
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The request a JSON log line says was answered, if it is such a line:
/// `{"fields":{"message":"finished processing request","status":304,…},
/// "span":{"method":"GET","uri":"/index/…",…},…}`.
fn answered(line: &str) -> Option<Request> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    let fields = v.get("fields")?;
    if fields.get("message")?.as_str()? != ANSWERED {
        return None;
    }
    let span = v.get("span")?;
    Some(Request {
        method: span.get("method")?.as_str()?.to_owned(),
        path: span.get("uri")?.as_str()?.to_owned(),
        status: u16::try_from(fields.get("status")?.as_u64()?).ok()?,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_request_is_read_from_its_log_line_and_other_lines_are_not() {
        let line = r#"{"timestamp":"2026-01-01T00:00:00Z","level":"INFO","fields":{"message":"finished processing request","latency":"120 μs","status":304},"target":"tower_http::trace::on_response","span":{"method":"GET","request_id":"x","uri":"/index/3/p/p00001","name":"request"},"spans":[]}"#;
        let got = super::answered(line);
        assert_eq!(got, Some(super::Request { method: "GET".into(), path: "/index/3/p/p00001".into(), status: 304 }));
        assert_eq!(super::answered(r#"{"fields":{"message":"listening"}}"#), None);
        assert_eq!(super::answered("not json"), None);
    }
}
