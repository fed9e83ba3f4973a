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

/// GNU time: the command's parent for its peak RSS (see [`run`]).
const TIME: &str = "/usr/bin/time";
/// What GNU time prints last on stderr: the command's peak RSS, in KiB.
const PEAK_MARK: &str = "ebpkg-bench-peak-rss-kib=";

/// Runs `cmd` to completion, its output captured. Its peak RSS is what GNU time,
/// a small process that forks it, is told: the peak the kernel reports to a
/// parent starts from what that parent held when it started the child (an exec
/// records the peak of the address space it leaves, which a spawned child
/// shares with its parent until then), so a benchmark holding a 10,000-package
/// registry in memory would count it in every command it measures.
pub fn run(cmd: &mut Command) -> Result<Measured> {
    let mut timed = Command::new(TIME);
    timed.arg("-f").arg(format!("{PEAK_MARK}%M")).arg(cmd.get_program()).args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => timed.env(key, value),
            None => timed.env_remove(key),
        };
    }
    let mut measured = run_direct(&mut timed).with_context(|| format!("{TIME} (apt-get install time)"))?;
    let (rest, peak) = split_peak(&measured.stderr).with_context(|| format!("{TIME} said no peak RSS"))?;
    measured.peak_rss_kib = peak;
    measured.stderr = rest;
    Ok(measured)
}

/// The stderr of a command GNU time ran, without what time added, and the peak RSS it printed.
fn split_peak(stderr: &str) -> Option<(String, u64)> {
    let at = stderr.rfind(PEAK_MARK)?;
    let peak = stderr[at + PEAK_MARK.len()..].trim().parse().ok()?;
    let mut rest = &stderr[..at];
    // Time says how the command ended when it failed, on a line of its own.
    if let Some(line) = rest.trim_end_matches('\n').rsplit('\n').next()
        && (line.starts_with("Command exited with non-zero status") || line.starts_with("Command terminated by signal"))
    {
        rest = &rest[..rest.trim_end_matches('\n').len() - line.len()];
    }
    Some((rest.to_owned(), peak))
}

/// Runs `cmd` to completion, its output captured, measured by `wait4`.
fn run_direct(cmd: &mut Command) -> Result<Measured> {
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

#[cfg(test)]
mod tests {
    #[test]
    fn what_time_adds_is_taken_off() {
        let ok = "warning: x\nebpkg-bench-peak-rss-kib=2048\n";
        assert_eq!(super::split_peak(ok), Some(("warning: x\n".to_owned(), 2048)));
        let failed = "error: y\nCommand exited with non-zero status 10\nebpkg-bench-peak-rss-kib=77\n";
        assert_eq!(super::split_peak(failed), Some(("error: y\n".to_owned(), 77)));
        assert_eq!(super::split_peak("no mark"), None);
    }

    #[test]
    fn a_commands_peak_is_its_own_not_its_parents() {
        // This test process holds 64 MiB; a shell run by it holds a few.
        let ballast = vec![1u8; 64 << 20];
        let run = super::run(std::process::Command::new("sh").args(["-c", "echo hi >&2"])).unwrap();
        assert!(run.status.success());
        assert_eq!(run.stderr, "hi\n");
        assert!(run.peak_rss_kib < 32 << 10, "{} KiB", run.peak_rss_kib);
        drop(ballast);
    }
}
