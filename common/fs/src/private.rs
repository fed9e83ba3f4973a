//! Refusing a directory another user could have written. What root reads from
//! its state directory or its cache steers what it loads into the kernel, so —
//! as ssh does with `~/.ssh` and sudo with its sudoers files — a directory or
//! file is trusted only when the user running ebpkg owns it and no one else can
//! write to it, and every directory above it is owned by root or that user and
//! not writable by others (unless sticky, like /tmp). One definition, for the
//! state directory (ebpkg-deploy) and the cache (the CLI).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What is wrong with one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A directory was expected (symbolic links are not followed).
    NotDirectory,
    /// A regular file was expected.
    NotFile,
    /// Someone else owns it.
    Owner { uid: u32, me: u32 },
    /// Group or others can write to it.
    Writable { mode: u32 },
    /// A directory above it is owned by a user other than root and the caller.
    AncestorOwner { uid: u32 },
    /// A directory above it is writable by group or others and not sticky.
    AncestorWritable { mode: u32 },
    /// It cannot be inspected.
    Io(std::io::ErrorKind, String),
}

/// A path that is not private to the caller, with what is wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {reason}; {fix}", path = path.display(), reason = self.reason(), fix = self.fix())]
pub struct NotPrivate {
    pub path: PathBuf,
    /// The directory being checked, when `path` is above it.
    pub below: Option<PathBuf>,
    pub problem: Problem,
}

impl NotPrivate {
    /// What is wrong, in words.
    pub fn reason(&self) -> String {
        let above = |what: String| match &self.below {
            Some(b) => format!("it is above {} and {what}", b.display()),
            None => what,
        };
        match &self.problem {
            Problem::NotDirectory => "it is not a directory (a symbolic link is not followed here)".into(),
            Problem::NotFile => "it is not a regular file".into(),
            Problem::Owner { uid, me } => format!("it is owned by uid {uid}, but ebpkg runs as uid {me}"),
            Problem::Writable { mode } => format!("group or others can write to it (mode {:o})", mode & 0o7777),
            Problem::AncestorOwner { uid } => above(format!("owned by uid {uid}")),
            Problem::AncestorWritable { mode } => {
                above(format!("group or others can write to it (mode {:o})", mode & 0o7777))
            }
            Problem::Io(_, e) => format!("cannot inspect it: {e}"),
        }
    }

    /// What to do about it. Never "chown it to yourself" for a directory someone
    /// else owns: its content is theirs, not to be trusted.
    pub fn fix(&self) -> String {
        let p = self.path.display();
        match &self.problem {
            Problem::NotDirectory | Problem::NotFile => format!("remove it (`rm {p}`) and run the command again"),
            Problem::Owner { .. } => {
                format!(
                    "someone else made it: check what is in it, then remove it (`rm -r {p}`) and let ebpkg create it"
                )
            }
            Problem::Writable { .. } => {
                format!("`chmod go-w {p}`, after checking that no one else changed what is in it")
            }
            Problem::AncestorOwner { .. } => "keep it under directories owned by root or by you".into(),
            Problem::AncestorWritable { .. } => format!("`chmod go-w {p}`, or keep it elsewhere"),
            Problem::Io(..) => "check the path and its permissions".into(),
        }
    }

    /// Whether `chmod go-w` of the path would repair it: the caller owns it and
    /// only its mode is wrong (never true of someone else's directory).
    pub fn chmod_repairs(&self) -> bool {
        matches!(self.problem, Problem::Writable { .. })
    }
}

fn not_private(path: &Path, problem: Problem) -> NotPrivate {
    NotPrivate { path: path.to_owned(), below: None, problem }
}

fn io_problem(path: &Path, e: &std::io::Error) -> NotPrivate {
    not_private(path, Problem::Io(e.kind(), e.to_string()))
}

/// The effective user id the checks compare owners with.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Owned by the caller and not writable by group or others.
pub fn check_owner_and_mode(path: &Path, meta: &std::fs::Metadata) -> Result<(), NotPrivate> {
    let me = euid();
    if meta.uid() != me {
        return Err(not_private(path, Problem::Owner { uid: meta.uid(), me }));
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(not_private(path, Problem::Writable { mode }));
    }
    Ok(())
}

/// A regular file, owned by the caller and writable by no one else, from the
/// metadata of the open file.
pub fn check_file(path: &Path, meta: &std::fs::Metadata) -> Result<(), NotPrivate> {
    if !meta.is_file() {
        return Err(not_private(path, Problem::NotFile));
    }
    check_owner_and_mode(path, meta)
}

/// A directory itself (not followed when it is a symbolic link).
pub fn check_dir(dir: &Path) -> Result<(), NotPrivate> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| io_problem(dir, &e))?;
    if !meta.is_dir() {
        return Err(not_private(dir, Problem::NotDirectory));
    }
    check_owner_and_mode(dir, &meta)
}

/// Every directory above `dir` (resolved): owned by root or the caller, and not
/// writable by others unless sticky.
pub fn check_ancestors(dir: &Path) -> Result<(), NotPrivate> {
    let me = euid();
    for up in dir.ancestors().skip(1) {
        let meta = std::fs::metadata(up).map_err(|e| io_problem(up, &e))?;
        let below = Some(dir.to_owned());
        if meta.uid() != 0 && meta.uid() != me {
            return Err(NotPrivate { path: up.to_owned(), below, problem: Problem::AncestorOwner { uid: meta.uid() } });
        }
        let mode = meta.permissions().mode();
        if mode & 0o022 != 0 && mode & 0o1000 == 0 {
            return Err(NotPrivate { path: up.to_owned(), below, problem: Problem::AncestorWritable { mode } });
        }
    }
    Ok(())
}

/// `dir` (resolved) and every directory above it.
pub fn check_dir_and_ancestors(dir: &Path) -> Result<PathBuf, NotPrivate> {
    let real = std::fs::canonicalize(dir).map_err(|e| io_problem(dir, &e))?;
    check_dir(&real)?;
    check_ancestors(&real)?;
    Ok(real)
}

/// The mode of every directory ebpkg makes in a private tree (the cache).
pub const DIR_MODE: u32 = 0o700;
/// The mode of every file ebpkg writes in a private tree.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` and missing parents mode 0700, whatever the umask (an existing
/// one is left as it is).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    crate::write::create_dirs(dir, DIR_MODE)
}

/// Writes `path` atomically and durably, mode 0600, its missing directories
/// made 0700: how every file of a private tree is written.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_private_dir(dir)?;
    }
    crate::write::write_atomic(path, bytes, FILE_MODE)
}

/// Takes group and other permissions away from `dir` and everything in it
/// (symbolic links aside): for a tree made elsewhere with the modes it carried
/// (an unpacked archive) and moved into a private tree.
pub fn restrict_tree(dir: &Path) -> std::io::Result<()> {
    let mut todo = vec![dir.to_owned()];
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode & 0o077 != 0 {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & !0o077))?;
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                todo.push(entry?.path());
            }
        }
    }
    Ok(())
}

/// Checks `root`, every directory above it, every directory in it down to
/// `depth` levels and every other entry of those directories (at most
/// `max_entries` in all): the first that is not private. A file is refused as a
/// directory is (someone else's, or writable by group or others); a symbolic
/// link only when someone else owns it (its own mode means nothing). Deeper
/// entries are trusted as the directories above them are, which only their
/// owner can have filled — unless one of them was once writable by others:
/// [`remove_foreign`] is the repair that also clears what was planted then.
pub fn check_tree(root: &Path, depth: usize, max_entries: usize) -> Result<(), NotPrivate> {
    let real = check_dir_and_ancestors(root)?;
    let mut todo = vec![(real, 0usize)];
    let mut seen = 0usize;
    while let Some((dir, level)) = todo.pop() {
        if level > 0 {
            check_dir(&dir)?;
        }
        seen += 1;
        if seen > max_entries {
            continue;
        }
        let entries = std::fs::read_dir(&dir).map_err(|e| io_problem(&dir, &e))?;
        for entry in entries {
            let entry = entry.map_err(|e| io_problem(&dir, &e))?;
            let path = entry.path();
            // Not followed: the metadata of the link itself.
            let meta = entry.metadata().map_err(|e| io_problem(&path, &e))?;
            if meta.is_dir() {
                if level < depth {
                    todo.push((path, level + 1));
                }
            } else {
                seen += 1;
                check_entry(&path, &meta)?;
            }
        }
    }
    Ok(())
}

/// A non-directory entry of a private tree: the caller's, and, unless it is a
/// symbolic link, writable by no one else.
fn check_entry(path: &Path, meta: &std::fs::Metadata) -> Result<(), NotPrivate> {
    if meta.file_type().is_symlink() {
        let me = euid();
        return if meta.uid() == me { Ok(()) } else { Err(not_private(path, Problem::Owner { uid: meta.uid(), me })) };
    }
    check_owner_and_mode(path, meta)
}

/// What [`remove_foreign`] did to one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swept {
    /// Removed (with everything in it): someone else's, or a file others could write.
    Removed { path: PathBuf, problem: Problem },
    /// A directory of the caller's that others could write, now `go-w`.
    Restricted { path: PathBuf, mode: u32 },
}

/// Makes the tree under `dir` (a directory of the caller's, already private)
/// private at every depth by removing what may have been planted while it or a
/// directory in it was writable by others: every entry another user owns, and
/// every file of the caller's that others could write (its content may have
/// been changed). Directories of the caller's that others could write are made
/// `go-w` and swept in turn. Only for directories whose content can be made
/// again, such as a cache.
pub fn remove_foreign(dir: &Path) -> std::io::Result<Vec<Swept>> {
    let me = euid();
    let mut swept = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            let meta = entry.metadata()?;
            let mode = meta.permissions().mode();
            let problem = if meta.uid() != me {
                Some(Problem::Owner { uid: meta.uid(), me })
            } else if !meta.is_dir() && !meta.file_type().is_symlink() && mode & 0o022 != 0 {
                Some(Problem::Writable { mode })
            } else {
                None
            };
            if let Some(problem) = problem {
                if meta.is_dir() {
                    std::fs::remove_dir_all(&path)?
                } else {
                    std::fs::remove_file(&path)?
                }
                swept.push(Swept::Removed { path, problem });
            } else if meta.is_dir() {
                if mode & 0o022 != 0 {
                    let mode = mode & 0o7777 & !0o022;
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
                    swept.push(Swept::Restricted { path: path.clone(), mode });
                }
                todo.push(path);
            }
        }
    }
    Ok(swept)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn group_writable_directories_are_refused_at_any_level() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("c");
        create_private_dir(&root.join("objects/ab")).unwrap();
        assert_eq!(std::fs::metadata(&root).unwrap().permissions().mode() & 0o777, 0o700);
        check_tree(&root, 3, 1000).unwrap();
        let deep = root.join("objects/ab");
        std::fs::set_permissions(&deep, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = check_tree(&root, 3, 1000).unwrap_err();
        assert_eq!(e.path, std::fs::canonicalize(&deep).unwrap());
        assert!(e.chmod_repairs());
        assert!(e.to_string().contains("mode 1777") && e.to_string().contains("chmod go-w"), "{e}");
        // Below the depth checked, it is not looked at.
        check_tree(&root, 1, 1000).unwrap();
    }

    #[test]
    fn files_others_own_or_can_write_are_refused_and_swept() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("c");
        create_private_dir(&root.join("vmlinux/ab/deep")).unwrap();
        let header = root.join("vmlinux/ab/vmlinux.h");
        std::fs::write(&header, "struct x;").unwrap();
        std::fs::set_permissions(&header, std::fs::Permissions::from_mode(0o600)).unwrap();
        check_tree(&root, 2, 1000).unwrap();
        std::fs::set_permissions(&header, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = check_tree(&root, 2, 1000).unwrap_err();
        assert_eq!(e.path, std::fs::canonicalize(&header).unwrap());
        assert!(matches!(e.problem, Problem::Writable { .. }), "{e}");
        // A file one level below the deepest directory checked is still checked.
        std::fs::set_permissions(&header, std::fs::Permissions::from_mode(0o600)).unwrap();
        let planted = root.join("vmlinux/ab/deep/planted.h");
        std::fs::write(&planted, "evil").unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o600)).unwrap();
        check_tree(&root, 2, 1000).unwrap();
        if euid() == 0 {
            std::os::unix::fs::chown(&header, Some(65534), None).unwrap();
            let e = check_tree(&root, 2, 1000).unwrap_err();
            assert_eq!(e.problem, Problem::Owner { uid: 65534, me: 0 });
            std::os::unix::fs::chown(&planted, Some(65534), None).unwrap();
        }
        let open = root.join("vmlinux");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let swept = remove_foreign(&root).unwrap();
        assert!(swept.contains(&Swept::Restricted { path: open.clone(), mode: 0o755 }), "{swept:?}");
        assert_eq!(!header.exists() && !planted.exists(), euid() == 0, "{swept:?}");
        check_tree(&root, 3, 1000).unwrap();
    }

    #[test]
    fn a_symbolic_link_is_not_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("c");
        create_private_dir(&root).unwrap();
        std::os::unix::fs::symlink(tmp.path(), root.join("objects")).unwrap();
        // Links are not followed by the walk: it only descends into real directories.
        check_tree(&root, 3, 1000).unwrap();
        assert_eq!(check_dir(&root.join("objects")).unwrap_err().problem, Problem::NotDirectory);
    }
}
