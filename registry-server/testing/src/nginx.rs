//! nginx from Debian's packages with a configuration of the test's own, in its
//! own prefix directory: for load-balancer tests and benchmarks.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rustix::process::Signal;

use crate::spawn::{scratch_dir, spawn_guarded, stop_child, wait_ready};
use crate::{Error, Result, io};

const BIN: &str = "/usr/sbin/nginx";
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// A running nginx (master and workers), stopped on drop (and with the test
/// process); its prefix directory removed.
pub struct Nginx {
    dir: PathBuf,
    child: Option<Child>,
}

impl Nginx {
    /// Starts nginx with `http_block` as the inside of `http { }` (upstreams,
    /// servers). The harness adds the temporary paths inside the prefix,
    /// `access_log off` and the pid file; the error log is `error.log` in the
    /// prefix. Waits until every `listen HOST:PORT` / `listen PORT` of the block
    /// accepts connections.
    pub fn start(http_block: &str) -> Result<Nginx> {
        if !Path::new(BIN).exists() {
            return Err(Error::Missing(format!("{BIN} is missing (Debian's nginx)")));
        }
        let dir = scratch_dir("nginx")?;
        let mut nginx = Nginx { dir, child: None };
        nginx.run(http_block)?;
        Ok(nginx)
    }

    fn run(&mut self, http_block: &str) -> Result<()> {
        let d = self.dir.display();
        let mut conf = String::new();
        if rustix::process::geteuid().is_root() {
            // Workers as root: no other user needs to reach the prefix.
            conf.push_str("user root;\n");
        }
        let _ = write!(
            conf,
            "worker_processes 2;\n\
             pid {d}/nginx.pid;\n\
             error_log {d}/error.log warn;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n\
             access_log off;\n\
             default_type application/octet-stream;\n\
             client_body_temp_path {d}/client_body;\n\
             proxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\n\
             uwsgi_temp_path {d}/uwsgi;\n\
             scgi_temp_path {d}/scgi;\n\
             {http_block}\n\
             }}\n"
        );
        let conf_path = self.dir.join("nginx.conf");
        std::fs::write(&conf_path, conf).map_err(io(format!("writing {}", conf_path.display())))?;
        let log = self.dir.join("error.log");
        let stderr = std::fs::File::create(self.dir.join("stderr.log")).map_err(io("creating nginx's stderr.log"))?;
        let mut command = Command::new(BIN);
        command
            .arg("-p")
            .arg(format!("{d}/"))
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(&log)
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        // SIGTERM: a fast shutdown, in which the master stops its workers
        // (SIGKILL would leave them serving).
        let child = self.child.insert(spawn_guarded(command, Signal::TERM, "nginx")?);
        let listens = listen_addrs(http_block);
        let pid_file = self.dir.join("nginx.pid");
        // The pid file is written after every socket is bound.
        wait_ready("nginx", child, &log, START_TIMEOUT, || {
            pid_file.exists() && listens.iter().all(|a| TcpStream::connect_timeout(a, Duration::from_secs(1)).is_ok())
        })
    }

    /// The prefix directory: `nginx.conf`, `error.log`, `nginx.pid`, temp paths.
    pub fn prefix(&self) -> &Path {
        &self.dir
    }

    /// nginx's error log (level `warn`).
    pub fn error_log(&self) -> PathBuf {
        self.dir.join("error.log")
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop_child(&mut child, Signal::TERM, Duration::from_secs(10));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The TCP addresses of the `listen` directives (unix sockets and names left
/// out; a bare port or `*:port` is reached on 127.0.0.1).
fn listen_addrs(http_block: &str) -> Vec<SocketAddr> {
    let mut addrs = Vec::new();
    for statement in http_block.split([';', '{', '}']) {
        let mut words = statement.split_whitespace();
        if words.next() != Some("listen") {
            continue;
        }
        let Some(target) = words.next() else { continue };
        if let Ok(addr) = target.parse::<SocketAddr>() {
            addrs.push(addr);
        } else if let Ok(port) = target.parse::<u16>() {
            addrs.push(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
        } else if let Some(port) = target.strip_prefix("*:").and_then(|p| p.parse::<u16>().ok()) {
            addrs.push(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
        } else if let Some(port) = target.strip_prefix("localhost:").and_then(|p| p.parse::<u16>().ok()) {
            addrs.push(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
        }
    }
    addrs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_directives_are_found() {
        let block = "upstream u { server 127.0.0.1:1; }\n\
                     server { listen 127.0.0.1:8080; location / { proxy_pass http://u; } }\n\
                     server { listen 9090 reuseport; listen unix:/tmp/x.sock; listen *:7070; }";
        let ports: Vec<u16> = listen_addrs(block).iter().map(SocketAddr::port).collect();
        assert_eq!(ports, [8080, 9090, 7070]);
    }
}
