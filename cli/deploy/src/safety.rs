//! Refusing state another user could have written. Root's next command acts on
//! the state directory (undoing "interrupted" installs, removing what records
//! name), so a file planted there by anyone else would steer root. As ssh does
//! with `~/.ssh` and sudo with its sudoers files, a directory or file is trusted
//! only when the user running ebpkg owns it and no one else can write to it, and
//! every directory above it is owned by root or that user and not writable by
//! others (unless sticky, like /tmp).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::error::{DeployError, Result};

fn unsafe_state(path: &Path, reason: String, fix: String) -> DeployError {
    DeployError::UnsafeState { path: path.to_owned(), reason, fix }
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Checks a file of the state directory, from the metadata of the open file.
pub(crate) fn check_file(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    if !meta.is_file() {
        return Err(unsafe_state(
            path,
            "it is not a regular file".into(),
            format!("remove it: `rm {}`", path.display()),
        ));
    }
    check_owner_and_mode(path, meta)
}

fn check_owner_and_mode(path: &Path, meta: &std::fs::Metadata) -> Result<()> {
    let me = euid();
    if meta.uid() != me {
        return Err(unsafe_state(
            path,
            format!("it is owned by uid {}, but ebpkg runs as uid {me}", meta.uid()),
            format!("if its content is yours, `chown {me} {}`; otherwise remove it", path.display()),
        ));
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(unsafe_state(
            path,
            format!("group or others can write to it (mode {:o})", mode & 0o7777),
            format!("`chmod go-w {}`, after checking that no one else changed it", path.display()),
        ));
    }
    Ok(())
}

/// Checks a directory of the state directory itself.
pub(crate) fn check_dir(dir: &Path) -> Result<()> {
    let meta = std::fs::symlink_metadata(dir).map_err(|cause| DeployError::Io {
        what: "cannot inspect",
        path: dir.to_owned(),
        cause,
    })?;
    if !meta.is_dir() {
        return Err(unsafe_state(
            dir,
            "it is not a directory (a symbolic link is not followed here)".into(),
            "point --state-dir at the real directory".into(),
        ));
    }
    check_owner_and_mode(dir, &meta)
}

/// Checks the state directory and every directory above it.
pub(crate) fn check_dir_and_ancestors(dir: &Path) -> Result<()> {
    let real = std::fs::canonicalize(dir).map_err(|cause| DeployError::Io {
        what: "cannot resolve",
        path: dir.to_owned(),
        cause,
    })?;
    check_dir(&real)?;
    let me = euid();
    for up in real.ancestors().skip(1) {
        let meta = std::fs::metadata(up).map_err(|cause| DeployError::Io {
            what: "cannot inspect",
            path: up.to_owned(),
            cause,
        })?;
        if meta.uid() != 0 && meta.uid() != me {
            return Err(unsafe_state(
                up,
                format!("it is above the state directory {} and owned by uid {}", real.display(), meta.uid()),
                "keep the state directory under directories owned by root (the default is /var/lib/ebpkg)".into(),
            ));
        }
        let mode = meta.permissions().mode();
        let sticky = mode & 0o1000 != 0;
        if mode & 0o022 != 0 && !sticky {
            return Err(unsafe_state(
                up,
                format!(
                    "it is above the state directory {} and group or others can write to it (mode {:o})",
                    real.display(),
                    mode & 0o7777
                ),
                format!("`chmod go-w {}`, or keep the state directory elsewhere", up.display()),
            ));
        }
    }
    Ok(())
}
