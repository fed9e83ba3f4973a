//! Temporary files carry the pid of the process writing them (`.tmp-<pid>-…`),
//! so what a killed process left can be told from what a running one is writing,
//! and removed by whoever comes next.

use std::path::Path;

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
}
