//! Temporary files of the cache carry the pid of the process writing them
//! (`.tmp-<pid>-…`), so that what a killed build left can be told from what a
//! running one is writing, and removed.

use std::path::{Path, PathBuf};

/// The prefix of this process's temporary files and directories.
pub fn prefix() -> String {
    format!(".tmp-{}-", std::process::id())
}

/// Whether process `pid` is alive (a pid reused by another process counts as
/// alive: its files are left for a later sweep).
fn alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// The pid in a temporary name (`.tmp-<pid>-…`, `.trash-<pid>-…`).
fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(".tmp-").or_else(|| name.strip_prefix(".trash-"))?;
    rest.split_once('-').and_then(|(pid, _)| pid.parse().ok())
}

/// Temporary files and directories in the cache whose process is gone: the
/// object directories (`objects/<xx>/`) and the SDK headers (`sdk/`).
pub fn stale(cache_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![cache_dir.join("sdk")];
    if let Ok(rd) = std::fs::read_dir(cache_dir.join("objects")) {
        dirs.extend(rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let mut out = Vec::new();
    for dir in dirs {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if owner(&name).is_some_and(|pid| !alive(pid)) {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// Removes what [`stale`] finds; returns what was removed.
pub fn remove_stale(cache_dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for p in stale(cache_dir) {
        let ok = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        match ok {
            Ok(()) => removed.push(p),
            Err(e) => tracing::warn!("cannot remove {}: {e}", p.display()),
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_of_dead_processes_are_stale_and_ours_are_not() {
        let cache = tempfile::tempdir().unwrap();
        let objects = cache.path().join("objects").join("ab");
        std::fs::create_dir_all(&objects).unwrap();
        std::fs::create_dir_all(cache.path().join("sdk").join(".trash-999999999-x")).unwrap();
        let dead = objects.join(".tmp-999999999-abc.o");
        let mine = objects.join(format!("{}abc.o", prefix()));
        let kept = objects.join("abcdef.o");
        for p in [&dead, &mine, &kept] {
            std::fs::write(p, b"x").unwrap();
        }
        let stale = stale(cache.path());
        assert_eq!(stale.len(), 2, "{stale:?}");
        assert!(stale.contains(&dead));
        remove_stale(cache.path());
        assert!(!dead.exists() && mine.exists() && kept.exists());
        assert!(!cache.path().join("sdk").join(".trash-999999999-x").exists());
    }
}
