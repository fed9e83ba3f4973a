//! PostgreSQL from Debian's packages, run as the `postgres` user (initdb refuses
//! root), listening only on a unix socket in its own directory, so clusters of
//! parallel test processes never collide on a TCP port.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::process::Signal;

use crate::spawn::{next, scratch_dir, spawn_guarded, stop_child, wait_ready};
use crate::{Error, Result, io};

const BIN: &str = "/usr/lib/postgresql/15/bin";
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A PostgreSQL cluster: a data directory and the unix socket beside it in a
/// fresh temporary directory.
pub struct Postgres {
    dir: PathBuf,
    port: u16,
    uid: u32,
    gid: u32,
    postmaster: Mutex<Option<Child>>,
    /// Private clusters are removed on drop; the shared one dies with the
    /// process and its directory is swept by a later start.
    private: bool,
}

static SHARED: OnceLock<std::result::Result<Postgres, String>> = OnceLock::new();

impl Postgres {
    /// The cluster this test process shares, started on first use.
    pub fn shared() -> Result<&'static Postgres> {
        SHARED
            .get_or_init(|| Postgres::create(false).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| Error::Command { what: "starting the shared PostgreSQL".into(), output: e.clone() })
    }

    /// A cluster of its own (for tests that stop it), stopped and removed on drop.
    pub fn start() -> Result<Postgres> {
        Postgres::create(true)
    }

    fn create(private: bool) -> Result<Postgres> {
        for tool in ["initdb", "postgres", "pg_isready"] {
            if !Path::new(BIN).join(tool).exists() {
                return Err(Error::Missing(format!("{BIN}/{tool} is missing (Debian's postgresql 15)")));
            }
        }
        let (uid, gid) = postgres_ids()?;
        let dir = scratch_dir("postgres")?;
        // The port only names the socket file (`.s.PGSQL.<port>`); no TCP.
        let port = 20000 + u16::try_from((u64::from(std::process::id()) * 7 + next()) % 40000).unwrap_or(0);
        // Removed on drop until it is ready, whichever kind it is.
        let mut pg = Postgres { dir, port, uid, gid, postmaster: Mutex::new(None), private: true };
        rustix::fs::chown(&pg.dir, Some(rustix::fs::Uid::from_raw(uid)), Some(rustix::fs::Gid::from_raw(gid)))
            .map_err(|e| Error::Io { what: format!("chown {}", pg.dir.display()), cause: e.into() })?;
        let out = pg
            .as_postgres(Command::new(Path::new(BIN).join("initdb")))
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale", "C", "-D"])
            .arg(pg.data())
            .output()
            .map_err(io("running initdb"))?;
        if !out.status.success() {
            return Err(Error::Command {
                what: "initdb".into(),
                output: format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
            });
        }
        pg.start_again()?;
        pg.private = private;
        Ok(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log(&self) -> PathBuf {
        self.dir.join("postgres.log")
    }

    /// The directory holding the unix socket (libpq's `host`).
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The port naming the socket file (libpq's `port`); nothing listens on TCP.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn as_postgres(&self, mut command: Command) -> Command {
        command.uid(self.uid).gid(self.gid).current_dir(&self.dir);
        command
    }

    /// Starts the postmaster again after [`Postgres::stop`] (same data, same
    /// socket) and waits until it accepts connections. Does nothing when it runs.
    pub fn start_again(&self) -> Result<()> {
        let mut postmaster = self.postmaster.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(child) = postmaster.as_mut() {
            match child.try_wait() {
                Ok(None) => return Ok(()),
                _ => *postmaster = None,
            }
        }
        let log = std::fs::File::create(self.log()).map_err(io("creating the PostgreSQL log"))?;
        let mut command = self.as_postgres(Command::new(Path::new(BIN).join("postgres")));
        command
            .arg("-D")
            .arg(self.data())
            .arg("-k")
            .arg(&self.dir)
            .args(["-p", &self.port.to_string()])
            .args(["-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // SIGQUIT: an immediate shutdown, the postmaster taking its backends along.
        let child = postmaster.insert(spawn_guarded(command, Signal::QUIT, "postgres")?);
        let ready = wait_ready("PostgreSQL", child, &self.log(), START_TIMEOUT, || {
            Command::new(Path::new(BIN).join("pg_isready"))
                .arg("-h")
                .arg(&self.dir)
                .args(["-p", &self.port.to_string(), "-U", "postgres", "-q"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        });
        if ready.is_err()
            && let Some(mut child) = postmaster.take()
        {
            stop_child(&mut child, Signal::QUIT, Duration::from_secs(10));
        }
        ready
    }

    /// Stops the postmaster as `pg_ctl stop -m fast` does (SIGINT: clients
    /// disconnected, committed data kept), and waits until it is gone.
    pub fn stop(&self) -> Result<()> {
        let child = self.postmaster.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(mut child) = child {
            stop_child(&mut child, Signal::INT, Duration::from_secs(30));
        }
        let socket = self.dir.join(format!(".s.PGSQL.{}", self.port));
        let start = Instant::now();
        while socket.exists() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// A new, empty database with a name unique across processes, dropped
    /// (`WITH (FORCE)`) with the guard.
    pub fn database(&self) -> Result<Database> {
        let name = format!("t_{}_{}_{}", std::process::id(), next(), nanos());
        psql(&self.dir, self.port, "postgres", &format!("CREATE DATABASE {name}"))?;
        Ok(Database { name, socket_dir: self.dir.clone(), port: self.port })
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.private {
            if let Some(mut child) = self.postmaster.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take()
            {
                stop_child(&mut child, Signal::QUIT, Duration::from_secs(10));
            }
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A database of a [`Postgres`] cluster, dropped with the guard.
pub struct Database {
    name: String,
    socket_dir: PathBuf,
    port: u16,
}

impl Database {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A URL sqlx (`PgPool::connect`) and libpq accept, over the unix socket:
    /// `postgres://postgres@localhost/NAME?host=/socket/dir&port=PORT`.
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@localhost/{}?host={}&port={}",
            self.name,
            encode(&self.socket_dir.to_string_lossy()),
            self.port
        )
    }

    /// Runs SQL with psql (`-XAtq`, stopping at the first error); returns its
    /// unaligned, tuples-only output.
    pub fn psql(&self, sql: &str) -> Result<String> {
        psql(&self.socket_dir, self.port, &self.name, sql)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // The cluster may be stopped (a fault test); then nothing outlives it.
        let _ = psql(
            &self.socket_dir,
            self.port,
            "postgres",
            &format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
        );
    }
}

fn psql(socket_dir: &Path, port: u16, database: &str, sql: &str) -> Result<String> {
    let out = Command::new("psql")
        .arg("-h")
        .arg(socket_dir)
        .args(["-p", &port.to_string(), "-U", "postgres", "-d", database, "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::Missing("psql is missing (Debian's postgresql-client)".into())
            } else {
                Error::Io { what: "running psql".into(), cause: e }
            }
        })?;
    if !out.status.success() {
        return Err(Error::Command {
            what: format!("psql `{sql}` on {database}"),
            output: String::from_utf8_lossy(&out.stderr).into(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn postgres_ids() -> Result<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(io("reading /etc/passwd"))?;
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            match f.as_slice() {
                ["postgres", _, uid, gid, ..] => Some((uid.parse().ok()?, gid.parse().ok()?)),
                _ => None,
            }
        })
        .ok_or_else(|| Error::Missing("there is no `postgres` user (Debian's postgresql package makes it)".into()))
}

/// Percent-encodes what a URL query value cannot hold as is.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn nanos() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos())
}
