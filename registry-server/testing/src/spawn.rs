//! Starting servers that die with the test process.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::{Mutex, OnceLock, mpsc};

use crate::{Error, Result, io};

/// Spawns `command` so that it gets SIGQUIT when this process dies, even by
/// SIGKILL: `PR_SET_PDEATHSIG`, set after std applied the command's uid/gid
/// (which would clear it).
///
/// PDEATHSIG fires when the *thread* that forked exits; a thread that never
/// exits forks the servers, so they die with the process and only then.
pub fn spawn_tied(mut command: Command) -> Result<Child> {
    // SAFETY: only an async-signal-safe prctl between fork and exec.
    unsafe {
        command.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::QUIT))
                .map_err(std::io::Error::from)
        });
    }
    type Job = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("server-spawner".into())
            .spawn(move || {
                while let Ok((mut command, reply)) = rx.recv() {
                    let _ = reply.send(command.spawn());
                }
                // The channel's sender lives in a static: never reached.
                loop {
                    std::thread::park();
                }
            })
            .ok();
        Mutex::new(tx)
    });
    let (reply, answer) = mpsc::channel();
    sender.lock().unwrap_or_else(std::sync::PoisonError::into_inner).send((command, reply)).map_err(|_| {
        Error::Command { what: "spawning a server".into(), output: "the spawner thread is gone".into() }
    })?;
    answer
        .recv()
        .map_err(|_| Error::Command { what: "spawning a server".into(), output: "no answer from the spawner".into() })?
        .map_err(io("starting a server"))
}

/// A free TCP port on loopback (bound, read, released).
pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(io("binding a loopback port"))?;
    Ok(listener.local_addr().map_err(io("reading a bound port"))?.port())
}

/// Waits until something accepts connections on `127.0.0.1:port`.
pub fn wait_listening(port: u16, what: &str, timeout: std::time::Duration) -> Result<()> {
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if start.elapsed() > timeout {
            return Err(Error::Command {
                what: what.into(),
                output: format!("nothing listens on port {port} after {timeout:?}"),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(())
}

/// Sends one HTTP/1.1 request on loopback and returns the status and body.
pub fn http(port: u16, method: &str, path: &str, body: &[u8]) -> Result<(u16, Vec<u8>)> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(io("connecting"))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body)).map_err(io("sending a request"))?;
    let mut answer = Vec::new();
    stream.take(64 * 1024 * 1024).read_to_end(&mut answer).map_err(io("reading an answer"))?;
    let text = String::from_utf8_lossy(&answer);
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = answer.windows(4).position(|w| w == b"\r\n\r\n").map_or_else(Vec::new, |at| answer[at + 4..].to_vec());
    Ok((status, body))
}
