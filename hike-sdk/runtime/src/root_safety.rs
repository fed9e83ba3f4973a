//! Refusing a HIKe root another user could have changed. bpffs is often mounted
//! mode 1777 (the kernel's default), so anyone can create `/sys/fs/bpf/hike`
//! before root installs into it and then rename, remove or plant entries inside:
//! root's next command would act on them. As ssh does with `~/.ssh`, a root is
//! used only when the user running the runtime owns it and every directory in it
//! and no one else can write to any of them; a new root is created mode 0700.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use crate::error::{IoContext, Result, RuntimeError};

/// How deep a root's directories go (root/packages/<pkg>/<version>/maps is 4).
const MAX_DEPTH: usize = 8;
/// Most directories inspected in one root: far more than any deployment makes.
const MAX_DIRS: usize = 100_000;

fn unsafe_root(root: &Path, path: &Path, reason: String, fix: String) -> RuntimeError {
    RuntimeError::UnsafeRoot { root: root.to_owned(), path: path.to_owned(), reason, fix }
}

/// Creates `root` (and missing parents) mode 0700, when it does not exist.
pub(crate) fn create_root(root: &Path) -> Result<()> {
    match std::fs::DirBuilder::new().recursive(true).mode(0o700).create(root) {
        Ok(()) => Ok(()),
        Err(e) => Err(e).io("cannot create the HIKe root", root),
    }
}

/// Checks `root` and every directory in it.
pub(crate) fn check_root(root: &Path) -> Result<()> {
    let me = rustix::process::geteuid().as_raw();
    let mut todo = vec![(root.to_owned(), 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = todo.pop() {
        let meta = std::fs::symlink_metadata(&dir).io("cannot inspect", &dir)?;
        if !meta.is_dir() {
            return Err(unsafe_root(
                root,
                &dir,
                "it is not a directory (a symbolic link is not followed here)".into(),
                format!("remove it (`rm {}`) and run the command again", dir.display()),
            ));
        }
        if meta.uid() != me {
            return Err(unsafe_root(
                root,
                &dir,
                format!("it is owned by uid {}, but this runs as uid {me}", meta.uid()),
                format!(
                    "someone else made it: check what is in it, then remove it (`rm -r {}`) and let ebpkg create it",
                    dir.display()
                ),
            ));
        }
        let mode = meta.permissions().mode();
        if mode & 0o022 != 0 {
            return Err(unsafe_root(
                root,
                &dir,
                format!("group or others can write to it (mode {:o})", mode & 0o7777),
                format!("`chmod go-w {}`, after checking that no one else changed what is in it", dir.display()),
            ));
        }
        seen += 1;
        if seen > MAX_DIRS || depth >= MAX_DEPTH {
            continue;
        }
        for entry in std::fs::read_dir(&dir).io("cannot list", &dir)? {
            let entry = entry.io("cannot list", &dir)?;
            if entry.file_type().io("cannot inspect", &entry.path())?.is_dir() {
                todo.push((entry.path(), depth + 1));
            }
        }
    }
    Ok(())
}
