//! Starting servers that die with the test process, and what the servers share:
//! scratch directories named by the owning process (the next start sweeps those
//! of dead processes), waiting until a server is ready, stopping it, a free port
//! and a tiny HTTP client.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::{Error, Result, io};

/// Unique within this process: directory names, database names, ports of sockets.
pub(crate) fn next() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A fresh directory `$TMPDIR/ebpkg-test-<kind>/<pid>-<n>`, after removing those
/// of processes that are gone (killed tests leave theirs behind).
pub(crate) fn scratch_dir(kind: &str) -> Result<PathBuf> {
    let parent = std::env::temp_dir().join(format!("ebpkg-test-{kind}"));
    std::fs::create_dir_all(&parent).map_err(io(format!("creating {}", parent.display())))?;
    // Readable by the `postgres` user when root made it.
    let _ = std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755));
    sweep_stale(&parent);
    let dir = parent.join(format!("{}-{}", std::process::id(), next()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).map_err(io(format!("creating {}", dir.display())))?;
    Ok(dir)
}

fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.split('-').next()).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !alive(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether a process exists and is not a zombie.
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// Spawns `command` so that it gets `signal` when this process dies, however it
/// dies (SIGKILL included).
///
/// `PR_SET_PDEATHSIG` fires when the *thread* that forked exits, so one thread
/// that never exits forks every server. The signal is set in `pre_exec`, which
/// std runs after it has applied `uid`/`gid` (a credential change clears it).
pub fn spawn_guarded(mut command: Command, signal: Signal, what: &str) -> Result<Child> {
    let parent = rustix::process::getpid();
    // SAFETY: only async-signal-safe system calls between fork and exec.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(signal)).map_err(std::io::Error::from)?;
            // The parent died before the prctl: the signal will never come.
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other("the test process is gone"));
            }
            Ok(())
        });
    }
    type Job = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new().name("server-spawner".into()).spawn(move || {
            while let Ok((mut command, reply)) = rx.recv() {
                let _ = reply.send(command.spawn());
            }
            // The sender lives in a static: never reached, but never exit.
            loop {
                std::thread::park();
            }
        });
        // Without the thread, the send below fails and says so.
        drop(spawned);
        Mutex::new(tx)
    });
    let (reply, answer) = mpsc::channel();
    let failed = |output: &str| Error::Command { what: format!("spawning {what}"), output: output.into() };
    sender
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send((command, reply))
        .map_err(|_| failed("the spawner thread is gone"))?;
    answer.recv().map_err(|_| failed("no answer from the spawner thread"))?.map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::Missing(format!("{what} is not installed ({e})"))
        } else {
            Error::Io { what: format!("starting {what}"), cause: e }
        }
    })
}

/// Sends `signal`, waits up to `grace` for the exit, then SIGKILLs and reaps.
pub(crate) fn stop_child(child: &mut Child, signal: Signal, grace: Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let pid = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, signal);
    }
    let start = Instant::now();
    while start.elapsed() < grace {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Polls `ready` until it says yes, failing early (with the log's tail) when the
/// server exits, or after `timeout`.
pub(crate) fn wait_ready(
    what: &str,
    child: &mut Child,
    log: &Path,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<()> {
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::Exited { what: what.into(), status, log: tail(log) });
        }
        if ready() {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(Error::NotReady { what: what.into(), secs: timeout.as_secs(), log: tail(log) });
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The last lines of a log file.
pub(crate) fn tail(path: &Path) -> String {
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => return format!("({} unreadable: {e})", path.display()),
    };
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// A loopback TCP port that was free a moment ago (bound to port 0, read,
/// released): for a server a test starts itself.
pub fn free_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(io("binding 127.0.0.1:0 to find a free port"))?;
    Ok(listener.local_addr().map_err(io("reading the address of 127.0.0.1:0"))?.port())
}

/// Waits until something accepts connections on `127.0.0.1:port`.
pub fn wait_listening(port: u16, what: &str, timeout: Duration) -> Result<()> {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if start.elapsed() > timeout {
            return Err(Error::Command {
                what: what.into(),
                output: format!("nothing listens on 127.0.0.1:{port} after {timeout:?}"),
            });
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Ok(())
}

/// Sends one HTTP/1.1 request (`Connection: close`) to `127.0.0.1:port` and
/// returns the status and the body (at most 64 MiB; one minute at most to answer).
pub fn http(port: u16, method: &str, path: &str, body: &[u8]) -> Result<(u16, Vec<u8>)> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let what = || format!("{method} http://{addr}{path}");
    let timeout = Duration::from_secs(60);
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(io(format!("{}: connecting", what())))?;
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(io(format!("{}: sending", what())))?;
    let mut answer = Vec::new();
    stream.take(64 * 1024 * 1024).read_to_end(&mut answer).map_err(io(format!("{}: reading the answer", what())))?;
    let text = String::from_utf8_lossy(&answer[..answer.len().min(64)]);
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer.windows(4).position(|w| w == b"\r\n\r\n").map_or_else(Vec::new, |at| answer[at + 4..].to_vec());
    Ok((status, body))
}

/// An `ebpkg-registry` binary serving on a free loopback port, killed on drop
/// (the benchmarks run the release binary as a separate process).
pub struct ServedRegistry {
    pub child: Child,
    /// `http://127.0.0.1:<port>/`
    pub url: String,
}

impl ServedRegistry {
    /// Starts `server serve` over `database_url`, blobs in `storage`, no per-IP
    /// rate limit, `extra` arguments before `serve`; returns once it listens.
    pub fn start(server: &Path, database_url: &str, storage: &Path, extra: &[&str]) -> Result<ServedRegistry> {
        let port = free_port()?;
        let child = Command::new(server)
            .args(["--database-url", database_url, "--listen", &format!("127.0.0.1:{port}")])
            .arg("--storage")
            .arg(format!("file://{}", storage.display()))
            .args(["--ip-rate-per-minute", "0"])
            .args(extra)
            .arg("serve")
            .env("EBPKG_REGISTRY_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .map_err(io(format!("starting {}", server.display())))?;
        let served = ServedRegistry { child, url: format!("http://127.0.0.1:{port}/") };
        wait_listening(port, "ebpkg-registry", Duration::from_secs(30))?;
        Ok(served)
    }
}

impl Drop for ServedRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
