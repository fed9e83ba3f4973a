//! Refusing state another user could have written. Root's next command acts on
//! the state directory (undoing "interrupted" installs, removing what records
//! name), so a file planted there by anyone else would steer root. The check is
//! ebpkg-fs's (`ebpkg_fs::private`), shared with the cache; this names the
//! state directory's fixes.

use std::path::Path;

use ebpkg_fs::private::{self, NotPrivate, Problem};

use crate::error::{DeployError, Result};

fn unsafe_state(e: NotPrivate) -> DeployError {
    let fix = match &e.problem {
        Problem::NotDirectory => "point --state-dir at the real directory".into(),
        Problem::NotFile => format!("remove it: `rm {}`", e.path.display()),
        Problem::Owner { me, .. } => {
            format!("if its content is yours, `chown {me} {}`; otherwise remove it", e.path.display())
        }
        Problem::Writable { .. } => {
            format!("`chmod go-w {}`, after checking that no one else changed it", e.path.display())
        }
        Problem::AncestorOwner { .. } => {
            "keep the state directory under directories owned by root (the default is /var/lib/ebpkg)".into()
        }
        Problem::AncestorWritable { .. } => {
            format!("`chmod go-w {}`, or keep the state directory elsewhere", e.path.display())
        }
        Problem::Io(..) => e.fix(),
    };
    let reason = match (&e.problem, &e.below) {
        (Problem::AncestorOwner { .. } | Problem::AncestorWritable { .. }, Some(_)) => {
            e.reason().replacen("it is above ", "it is above the state directory ", 1)
        }
        _ => e.reason(),
    };
    DeployError::UnsafeState { path: e.path, reason, fix }
}

/// Checks a file of the state directory, from the metadata of the open file.
pub(crate) fn check_file(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    private::check_file(path, meta).map_err(unsafe_state)
}

/// Checks a directory of the state directory itself.
pub(crate) fn check_dir(dir: &Path) -> Result<()> {
    match private::check_dir(dir) {
        Err(NotPrivate { path, problem: Problem::Io(kind, msg), .. }) => {
            Err(DeployError::Io { what: "cannot inspect", path, cause: std::io::Error::new(kind, msg) })
        }
        other => other.map_err(unsafe_state),
    }
}

/// Checks the state directory and every directory above it.
pub(crate) fn check_dir_and_ancestors(dir: &Path) -> Result<()> {
    match private::check_dir_and_ancestors(dir) {
        Ok(_) => Ok(()),
        Err(NotPrivate { path, problem: Problem::Io(kind, msg), .. }) => {
            Err(DeployError::Io { what: "cannot inspect", path, cause: std::io::Error::new(kind, msg) })
        }
        Err(e) => Err(unsafe_state(e)),
    }
}
