//! The directory an archive is unpacked into: a fresh temporary directory beside the
//! destination, renamed into place only when everything is in it. Until then the
//! destination does not exist, and dropping the staging area removes all of it.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::error::UnpackError;
use crate::target::Target;

pub(crate) struct Staging {
    dir: TempDir,
    dest: PathBuf,
}

impl Staging {
    /// Creates the staging directory next to `dest` (so the final rename stays on one
    /// file system), after checking that `dest` does not exist.
    pub(crate) fn new(dest: &Path) -> Result<Staging, UnpackError> {
        if fs::symlink_metadata(dest).is_ok() {
            return Err(UnpackError::DestinationExists { path: dest.to_path_buf() });
        }
        let parent = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        fs::create_dir_all(parent).map_err(|cause| UnpackError::Io { path: parent.to_path_buf(), cause })?;
        let dir = tempfile::Builder::new()
            .prefix(".ebpkg-unpack-")
            .tempdir_in(parent)
            .map_err(|cause| UnpackError::Io { path: parent.to_path_buf(), cause })?;
        Ok(Staging { dir, dest: dest.to_path_buf() })
    }

    /// Creates directory `rel` and its missing parents, each mode 0755. Every path
    /// inside the staging directory was made here, by this code, as a real
    /// directory or file; the checks are a second line of defence, not the first.
    fn make_dir(&self, rel: &str) -> Result<(), UnpackError> {
        let mut path = self.dir.path().to_path_buf();
        for part in rel.split('/') {
            path.push(part);
            match DirBuilder::new().mode(0o755).create(&path) {
                Ok(()) => set_mode(&path, 0o755)?,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let is_dir = fs::symlink_metadata(&path).map(|m| m.file_type().is_dir()).unwrap_or(false);
                    if !is_dir {
                        return Err(UnpackError::Duplicate { path: rel.to_owned() });
                    }
                }
                Err(cause) => return Err(UnpackError::Io { path, cause }),
            }
        }
        Ok(())
    }

    /// Creates the new file `rel` (its parents as needed) with mode 0755 or 0644.
    /// `create_new` fails on any existing name, a symbolic link included, so a file
    /// can never be written through a link.
    fn make_file(&self, rel: &str, executable: bool) -> Result<File, UnpackError> {
        if let Some((parent, _)) = rel.rsplit_once('/') {
            self.make_dir(parent)?;
        }
        let path = self.dir.path().join(rel);
        let mode = if executable { 0o755 } else { 0o644 };
        let file = OpenOptions::new().write(true).create_new(true).mode(mode).open(&path).map_err(|source| {
            if source.kind() == io::ErrorKind::AlreadyExists {
                UnpackError::Duplicate { path: rel.to_owned() }
            } else {
                UnpackError::Io { path: path.clone(), cause: source }
            }
        })?;
        // The umask may have cleared bits `mode` asked for; the result must not depend on it.
        file.set_permissions(Permissions::from_mode(mode)).map_err(|cause| UnpackError::Io { path, cause })?;
        Ok(file)
    }

    /// Moves the staging directory to the destination. On failure it is removed.
    pub(crate) fn commit(self) -> Result<PathBuf, UnpackError> {
        set_mode(self.dir.path(), 0o755)?;
        if let Err(source) = fs::rename(self.dir.path(), &self.dest) {
            // Someone else finished unpacking the same archive first.
            if fs::symlink_metadata(&self.dest).is_ok() {
                return Err(UnpackError::DestinationExists { path: self.dest });
            }
            return Err(UnpackError::Io { path: self.dest, cause: source });
        }
        let Staging { dir, dest } = self;
        // Renamed away: there is nothing left for the guard to remove.
        let _ = dir.keep();
        Ok(dest)
    }
}

impl Target for Staging {
    type File = File;
    fn create_dir(&mut self, rel: &str) -> Result<(), UnpackError> {
        self.make_dir(rel)
    }
    fn create_file(&mut self, rel: &str, executable: bool, _size: u64) -> Result<File, UnpackError> {
        self.make_file(rel, executable)
    }
    fn finish_file(&mut self, _rel: &str, _file: File) -> Result<(), UnpackError> {
        Ok(())
    }
    fn path_of(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<(), UnpackError> {
    fs::set_permissions(path, Permissions::from_mode(mode))
        .map_err(|cause| UnpackError::Io { path: path.to_path_buf(), cause })
}
