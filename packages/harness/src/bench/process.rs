//! Running a command the way a benchmark measures it: wall time, and the peak
//! resident memory, CPU time and page faults of that one process (from `wait4`'s
//! resource usage, which covers the process until it exits, unlike sampling /proc).

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// What one run of a command gave.
pub struct Measured {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// Peak resident set size, in KiB.
    pub peak_rss_kib: u64,
    /// CPU time, user and system, of all its threads.
    pub cpu: Duration,
    /// Page faults served without reading a disk: mostly the fresh memory it touched.
    /// Nearly the same from run to run, where the time each costs is not (see
    /// `bench/resolve.md`), so a change's effect on it shows through a noisy machine.
    pub minor_faults: u64,
}

/// Runs `cmd` to completion, its output captured.
pub fn run(cmd: &mut Command) -> Result<Measured> {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {cmd:?}"))?;
    let mut stdout_pipe = child.stdout.take().context("stdout")?;
    let mut stderr_pipe = child.stderr.take().context("stderr")?;
    // Both pipes drained at once: a child filling one while we wait on the other would stall.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout_pipe.read_to_end(&mut out).map(|_| out)
    });
    let mut stderr = Vec::new();
    stderr_pipe.read_to_end(&mut stderr)?;
    let stdout = reader.join().map_err(|_| anyhow::anyhow!("the stdout reader panicked"))??;
    let pid = i32::try_from(child.id())?;
    let mut status = 0;
    // SAFETY: rusage is plain data the kernel fills; wait4 reaps the child
    // std spawned, whose `Child` is then never waited on again.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if reaped != pid {
        bail!("waiting for {cmd:?}: {}", std::io::Error::last_os_error());
    }
    let elapsed = started.elapsed();
    drop(child);
    Ok(Measured {
        status: std::os::unix::process::ExitStatusExt::from_raw(status),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        elapsed,
        peak_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        cpu: duration(usage.ru_utime) + duration(usage.ru_stime),
        minor_faults: u64::try_from(usage.ru_minflt).unwrap_or(0),
    })
}

fn duration(t: libc::timeval) -> Duration {
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
}
