//! PostgreSQL from Debian's packages, run as the `postgres` user (initdb refuses
//! root), listening only on a unix socket in its own directory, so clusters of
//! parallel test processes never collide on a TCP port.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::{Error, Result, io};

const BIN: &str = "/usr/lib/postgresql/15/bin";
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Directories of clusters live under here, named `<pid>-<n>`.
const PARENT: &str = "ebpkg-test-postgres";

/// A PostgreSQL cluster.
pub struct Postgres {
    dir: PathBuf,
    port: u16,
    uid: u32,
    gid: u32,
    postmaster: Mutex<Option<Child>>,
    /// Private clusters are removed on drop; the shared one when the process ends.
    private: bool,
}

static SHARED: OnceLock<std::result::Result<Postgres, String>> = OnceLock::new();
static NEXT: AtomicU64 = AtomicU64::new(0);

impl Postgres {
    /// The cluster this test process shares, started on first use.
    pub fn shared() -> Result<&'static Postgres> {
        SHARED
            .get_or_init(|| Postgres::create(false).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| Error::Command { what: "starting the shared PostgreSQL".into(), output: e.clone() })
    }

    /// A cluster of its own, stopped and removed on drop.
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
        let parent = std::env::temp_dir().join(PARENT);
        std::fs::create_dir_all(&parent).map_err(io(format!("creating {}", parent.display())))?;
        let _ = std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o755));
        sweep_stale(&parent);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let dir = parent.join(format!("{pid}-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).map_err(io(format!("creating {}", dir.display())))?;
        rustix::fs::chown(&dir, Some(rustix::fs::Uid::from_raw(uid)), Some(rustix::fs::Gid::from_raw(gid)))
            .map_err(|e| Error::Io { what: format!("chown {}", dir.display()), source: e.into() })?;
        // The port only names the socket file; keep it in the user range.
        let port = 20000 + u16::try_from((pid as u64 * 7 + n) % 40000).unwrap_or(0);
        let pg = Postgres { dir, port, uid, gid, postmaster: Mutex::new(None), private };
        let out = pg
            .as_postgres(Command::new(Path::new(BIN).join("initdb")))
            .args(["-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale", "C", "-D"])
            .arg(pg.data())
            .output()
            .map_err(io("running initdb"))?;
        if !out.status.success() {
            return Err(Error::Command { what: "initdb".into(), output: String::from_utf8_lossy(&out.stderr).into() });
        }
        pg.start_again()?;
        Ok(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log(&self) -> PathBuf {
        self.dir.join("postgres.log")
    }

    /// The directory holding the unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    fn as_postgres(&self, mut command: Command) -> Command {
        command.uid(self.uid).gid(self.gid).current_dir(&self.dir);
        command
    }

    /// Starts the postmaster (again, after [`Postgres::stop`]) and waits until it
    /// accepts connections.
    pub fn start_again(&self) -> Result<()> {
        let mut postmaster = self.postmaster.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if postmaster.is_some() {
            return Ok(());
        }
        let log = std::fs::File::create(self.log()).map_err(io("creating the PostgreSQL log"))?;
        let _ = rustix::fs::chown(self.log(), Some(rustix::fs::Uid::from_raw(self.uid)), None);
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
        *postmaster = Some(crate::spawn::spawn_tied(command)?);
        drop(postmaster);
        self.wait_ready()
    }

    fn wait_ready(&self) -> Result<()> {
        let start = Instant::now();
        loop {
            let ok = Command::new(Path::new(BIN).join("pg_isready"))
                .arg("-h")
                .arg(&self.dir)
                .args(["-p", &self.port.to_string(), "-U", "postgres", "-q"])
                .status()
                .map_err(io("running pg_isready"))?
                .success();
            if ok {
                return Ok(());
            }
            if start.elapsed() > START_TIMEOUT {
                return Err(Error::NotReady { secs: START_TIMEOUT.as_secs(), log: tail(&self.log()) });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the postmaster as an operator's restart does (SIGINT: fast
    /// shutdown, clients disconnected, committed data kept).
    pub fn stop(&self) -> Result<()> {
        let child = self.postmaster.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(mut child) = child {
            let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            }
            let _ = child.wait();
        }
        // Backends exit when they notice the postmaster is gone; wait for the socket to go.
        let socket = self.dir.join(format!(".s.PGSQL.{}", self.port));
        let start = Instant::now();
        while socket.exists() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// A new, empty database, dropped when the guard is.
    pub fn database(&self) -> Result<Database> {
        let name = format!("t_{}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed), nanos());
        self.psql("postgres", &format!("CREATE DATABASE {name}"))?;
        Ok(Database { name, socket_dir: self.dir.clone(), port: self.port })
    }

    fn psql(&self, database: &str, sql: &str) -> Result<String> {
        psql(&self.dir, self.port, database, sql)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.private {
            let _ = self.stop();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// A database of a [`Postgres`] cluster.
pub struct Database {
    name: String,
    socket_dir: PathBuf,
    port: u16,
}

impl Database {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A URL sqlx and libpq accept, over the unix socket.
    pub fn url(&self) -> String {
        format!("postgres://postgres@localhost/{}?host={}&port={}", self.name, self.socket_dir.display(), self.port)
    }

    /// Runs SQL with psql; returns its unaligned output.
    pub fn psql(&self, sql: &str) -> Result<String> {
        psql(&self.socket_dir, self.port, &self.name, sql)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // The cluster may be stopped (a fault test); then there is nothing to drop
        // that outlives it.
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
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::Missing("psql is missing".into())
            } else {
                Error::Io { what: "running psql".into(), source: e }
            }
        })?;
    if !out.status.success() {
        return Err(Error::Command {
            what: format!("psql `{sql}`"),
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
            (f.first() == Some(&"postgres") && f.len() > 3).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
        })
        .ok_or_else(|| Error::Missing("there is no `postgres` user (Debian's postgresql package makes it)".into()))
}

/// Removes clusters left by test processes that were killed.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.split('-').next()).and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        let alive = Path::new(&format!("/proc/{pid}")).exists();
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

fn nanos() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos())
}
