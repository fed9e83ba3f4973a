//! Temporary files of the cache carry the pid of the process writing them
//! (`.tmp-<pid>-…`), so that what a killed build left can be told from what a
//! running one is writing, and removed.

use std::path::{Path, PathBuf};

use ebpkg_fs::temp::is_stale;
pub use ebpkg_fs::temp::prefix;
use ebpkg_spec::cache_layout::CacheLayout;

/// Temporary files and directories in the cache whose process is gone: the
/// object directories (`objects/<xx>/`) and the SDK headers (`sdk/`).
pub fn stale(cache_dir: &Path) -> Vec<PathBuf> {
    let layout = CacheLayout::new(cache_dir);
    let mut dirs = vec![layout.sdk()];
    if let Ok(rd) = std::fs::read_dir(layout.objects()) {
        dirs.extend(rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let mut out = Vec::new();
    for dir in dirs {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if is_stale(&name) {
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
