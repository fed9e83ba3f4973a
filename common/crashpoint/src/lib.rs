//! A test hook that makes the process die as `kill -9` would, at a chosen step
//! boundary, so tests can prove that whatever runs next repairs what was left:
//! every operation on a HIKe root (`hike-runtime`), every deployment step built on
//! them (`ebpkg-deploy`), every step of a publish (`ebpkg-registry`). One mechanism
//! for all of them, below every folder (hike-sdk/ may not depend on the rest).
//!
//! `EBPKG_CRASH_AFTER=N` kills the process at the N-th crash point it reaches
//! (counting every point of every operation); `EBPKG_CRASH_AT=NAME` at the first
//! point called NAME. `EBPKG_CRASH_LOG=FILE` appends the name of every point
//! reached, so a test can say where it killed. Unset, a point costs one relaxed
//! atomic load.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

struct Plan {
    after: Option<u64>,
    at: Option<String>,
    log: Option<std::path::PathBuf>,
}

fn plan() -> Option<&'static Plan> {
    static PLAN: OnceLock<Option<Plan>> = OnceLock::new();
    PLAN.get_or_init(|| {
        let var = |n: &str| std::env::var(n).ok().filter(|s| !s.is_empty());
        let plan = Plan {
            after: var("EBPKG_CRASH_AFTER").and_then(|s| s.parse().ok()),
            at: var("EBPKG_CRASH_AT"),
            log: var("EBPKG_CRASH_LOG").map(Into::into),
        };
        (plan.after.is_some() || plan.at.is_some() || plan.log.is_some()).then_some(plan)
    })
    .as_ref()
}

/// A step boundary called `name`: dies here when the test hook says so.
pub fn hit(name: &str) {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let Some(plan) = plan() else { return };
    let n = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
    if let Some(log) = &plan.log
        && let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(log)
    {
        let _ = writeln!(f, "{n} {name}");
    }
    if plan.after == Some(n) || plan.at.as_deref() == Some(name) {
        tracing::warn!(point = name, n, "crash point: killing this process");
        let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, ExitStatus, Stdio};

    /// Passes three points; run by the tests below in a child of their own (the
    /// plan is read once per process).
    #[test]
    #[ignore = "a child process of the tests below"]
    fn child() {
        for point in ["first", "second", "third"] {
            super::hit(point);
        }
    }

    /// The child run with `env`, and the points its log names.
    fn run(env: &[(&str, &str)]) -> (ExitStatus, String) {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("points");
        let status = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "tests::child", "--ignored", "--test-threads=1", "--quiet"])
            .env_remove("EBPKG_CRASH_AT")
            .env_remove("EBPKG_CRASH_AFTER")
            .env("EBPKG_CRASH_LOG", &log)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        (status, std::fs::read_to_string(&log).unwrap_or_default())
    }

    #[test]
    fn a_point_named_or_counted_kills_the_process_there() {
        let (status, log) = run(&[("EBPKG_CRASH_AT", "second")]);
        assert_eq!((status.signal(), log.as_str()), (Some(9), "1 first\n2 second\n"));
        let (status, log) = run(&[("EBPKG_CRASH_AFTER", "3")]);
        assert_eq!((status.signal(), log.as_str()), (Some(9), "1 first\n2 second\n3 third\n"));
        // Logged only: every point passed, and the process lives on.
        let (status, log) = run(&[]);
        assert!(status.success(), "{status}");
        assert_eq!(log, "1 first\n2 second\n3 third\n");
    }
}
