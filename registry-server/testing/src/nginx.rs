//! nginx from Debian's package, with a prefix, configuration and logs of its own.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::spawn::{spawn_tied, wait_listening};
use crate::{Error, Result, io};

pub struct Nginx {
    child: Option<Child>,
    prefix: tempfile::TempDir,
}

impl Nginx {
    /// Starts nginx with `http_block` as the inside of `http { }` (upstreams and
    /// servers) and waits until every `listen 127.0.0.1:PORT` in it accepts.
    pub fn start(http_block: &str) -> Result<Nginx> {
        if !Path::new("/usr/sbin/nginx").exists() {
            return Err(Error::Missing("/usr/sbin/nginx is missing".into()));
        }
        let prefix = tempfile::tempdir().map_err(io("creating nginx's prefix"))?;
        let p = prefix.path().display();
        let conf = format!(
            "daemon off;\nmaster_process on;\nworker_processes 2;\nuser root;\npid {p}/nginx.pid;\nerror_log {p}/error.log warn;\n\
             events {{ worker_connections 4096; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {p}/body;\n  proxy_temp_path {p}/proxy;\n  fastcgi_temp_path {p}/fastcgi;\n  \
             uwsgi_temp_path {p}/uwsgi;\n  scgi_temp_path {p}/scgi;\n  default_type application/octet-stream;\n{http_block}\n}}\n"
        );
        let conf_path = prefix.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).map_err(io("writing nginx.conf"))?;
        let mut command = Command::new("/usr/sbin/nginx");
        command
            .arg("-p")
            .arg(prefix.path())
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let child = spawn_tied(command)?;
        let nginx = Nginx { child: Some(child), prefix };
        for port in listen_ports(http_block) {
            if let Err(e) = wait_listening(port, "nginx", Duration::from_secs(15)) {
                let log = std::fs::read_to_string(nginx.prefix.path().join("error.log")).unwrap_or_default();
                return Err(Error::Command { what: "starting nginx".into(), output: format!("{e}\n{log}") });
            }
        }
        Ok(nginx)
    }

    pub fn prefix(&self) -> &Path {
        self.prefix.path()
    }

    pub fn error_log(&self) -> PathBuf {
        self.prefix.path().join("error.log")
    }
}

fn listen_ports(block: &str) -> Vec<u16> {
    block
        .lines()
        .filter_map(|l| l.trim().strip_prefix("listen "))
        .filter_map(|l| l.trim_end_matches(';').split(':').next_back()?.split_whitespace().next()?.parse().ok())
        .collect()
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SIGQUIT: graceful; then make sure.
            if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX)) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            let _ = child.wait();
        }
    }
}
