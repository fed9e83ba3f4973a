//! Writing files so that readers never see them half-written and a crash never
//! leaves them torn: the bytes go to a temporary file in the final directory,
//! which is flushed, renamed over the final name (atomic within one file
//! system), and the directory flushed so the rename itself survives a power
//! cut. Modes are explicit: what root writes must not depend on its umask.

use std::fs::{self, File, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Replaces (or creates) `path` with `bytes`, mode `mode`, atomically and
/// durably. A crash leaves the old file or the new one, and at worst a
/// temporary file named by [`crate::temp::prefix`].
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    write_atomic_with(path, mode, |file| file.write_all(bytes))
}

/// [`write_atomic`] of what `write` writes to the new file (for contents made as
/// they are written, never held whole).
pub fn write_atomic_with(path: &Path, mode: u32, write: impl FnOnce(&mut File) -> io::Result<()>) -> io::Result<()> {
    replace(path, mode, write, Durability::Synced)
}

/// Replaces `path` with `bytes` by a rename, as [`write_atomic`] does, but without
/// waiting for the disk: for caches whose reader checks what it reads. Readers
/// see the old file or the new one; after a power loss the new name may hold an
/// empty or partial file, which such a reader refuses. Two `fsync`s per file were
/// most of the time a cold resolution spent caching thousands of index files.
pub fn write_replacing(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace(path, mode, |file| file.write_all(bytes), Durability::Unsynced)
}

/// Whether a replacement waits for the disk.
#[derive(PartialEq, Eq)]
enum Durability {
    Synced,
    Unsynced,
}

/// Writes a temporary file in `path`'s directory and renames it over `path`.
fn replace(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut File) -> io::Result<()>,
    durability: Durability,
) -> io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    // O_EXCL under a fresh name: a link planted at a guessable name is never followed.
    let mut temp = tempfile::Builder::new().prefix(&crate::temp::prefix()).tempfile_in(dir)?;
    temp.as_file().set_permissions(Permissions::from_mode(mode))?;
    write(temp.as_file_mut())?;
    let synced = durability == Durability::Synced;
    if synced {
        // Data before rename: otherwise a crash right after the rename can leave
        // the new name pointing at an empty file on some file systems.
        temp.as_file().sync_all()?;
    }
    temp.persist(path).map_err(|e| e.error)?;
    if synced { sync_dir(dir) } else { Ok(()) }
}

/// Creates `dir` and its missing parents with mode `mode`, whatever the umask.
pub fn create_dirs(dir: &Path, mode: u32) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dirs(parent, mode)?;
    }
    match fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => fs::set_permissions(dir, Permissions::from_mode(mode)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Makes a rename or creation in `dir` durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn replaces_with_the_mode_asked_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, "old").unwrap();
        fs::set_permissions(&p, Permissions::from_mode(0o600)).unwrap();
        write_atomic(&p, b"new", 0o644).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new");
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o7777, 0o644);
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["f"]);
    }

    #[test]
    fn a_link_at_the_final_name_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        fs::write(&target, "keep").unwrap();
        let p = dir.path().join("f");
        std::os::unix::fs::symlink(&target, &p).unwrap();
        write_atomic(&p, b"new", 0o600).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"keep");
        assert!(fs::symlink_metadata(&p).unwrap().is_file());
    }

    #[test]
    fn directories_get_their_mode_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        create_dirs(&deep, 0o755).unwrap();
        for d in [dir.path().join("a"), dir.path().join("a/b"), deep.clone()] {
            assert_eq!(fs::metadata(&d).unwrap().mode() & 0o7777, 0o755, "{}", d.display());
        }
        create_dirs(&deep, 0o755).unwrap();
    }
}
