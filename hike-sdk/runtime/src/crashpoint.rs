//! A test hook that makes the process die as `kill -9` would, at a chosen step
//! boundary, so tests can prove that every operation on a root (and every
//! deployment step built on them) is repaired by whatever runs next.
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
