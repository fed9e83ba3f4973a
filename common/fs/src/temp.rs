//! Temporary files carry the pid of the process writing them (`.tmp-<pid>-…`),
//! so what a killed process left can be told from what a running one is writing,
//! and removed by whoever comes next.

use std::path::{Path, PathBuf};

/// The prefix every temporary name starts with; no file a reader looks for does.
pub const TEMP_PREFIX: &str = ".tmp-";

/// The prefix of this process's temporary files and directories.
pub fn prefix() -> String {
    format!("{TEMP_PREFIX}{}-", std::process::id())
}

/// The pid in a temporary name (`.tmp-<pid>-…`, or `.trash-<pid>-…` for what is
/// being removed).
pub fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMP_PREFIX).or_else(|| name.strip_prefix(".trash-"))?;
    rest.split_once('-').and_then(|(pid, _)| pid.parse().ok())
}

/// Whether process `pid` is alive (a pid reused by another process counts as
/// alive: its files are left for a later sweep).
pub fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Whether `name` is a temporary file whose writer is gone.
pub fn is_stale(name: &str) -> bool {
    owner(name).is_some_and(|pid| !alive(pid))
}

/// Removes the temporary files directly in `dir` whose writers are gone (a command
/// killed while replacing a file there); returns what it removed. Directories are
/// left alone, and so is whatever cannot be removed: this is tidying, never a failure.
pub fn remove_stale_files(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let stale = entry.file_name().to_str().is_some_and(is_stale);
        if stale && entry.file_type().is_ok_and(|t| t.is_file()) && std::fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_writer() {
        let mine = format!("{}abc", prefix());
        assert_eq!(owner(&mine), Some(std::process::id()));
        assert!(!is_stale(&mine));
        assert_eq!(owner(".trash-12-x"), Some(12));
        assert_eq!(owner(".tmp-x-1"), None);
        assert_eq!(owner("index.json"), None);
        // pid_max is at most 2^22: this one cannot be running.
        assert!(is_stale(".tmp-4294967-abc"));
    }

    #[test]
    fn only_the_files_of_gone_writers_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(".tmp-4294967-Dus3de");
        let mine = dir.path().join(format!("{}abc", prefix()));
        let kept = dir.path().join("ebpkg.lock");
        let dead_dir = dir.path().join(".tmp-4294968-dir");
        for p in [&dead, &mine, &kept] {
            std::fs::write(p, b"x").unwrap();
        }
        std::fs::create_dir(&dead_dir).unwrap();
        assert_eq!(remove_stale_files(dir.path()), vec![dead.clone()]);
        assert!(!dead.exists() && mine.exists() && kept.exists() && dead_dir.exists());
        assert!(remove_stale_files(&dir.path().join("missing")).is_empty());
    }
}
