//! The project: the package whose `ebpkg.toml` is in the current directory or one
//! of its parents, and its `ebpkg.lock` beside it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_spec::manifest::MANIFEST_FILE;
use ebpkg_spec::{Lockfile, Manifest, ManifestError};

use crate::exit::{Failure, fail};

/// The lockfile's name.
pub const LOCK_FILE: &str = "ebpkg.lock";

#[derive(Debug, Clone)]
pub struct Project {
    /// The directory holding ebpkg.toml.
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// ebpkg.toml as it was read (and parsed into `manifest`): what the project's
    /// digest hashes and an edit starts from, so that the file is read once.
    pub manifest_text: String,
}

/// What is found where ebpkg.lock belongs.
pub enum LockState {
    Missing,
    Valid(Lockfile),
    /// It does not parse or is inconsistent (a package missing that another depends
    /// on, a checksum that is not one): `salvaged` keeps what is still usable.
    Damaged {
        salvaged: Lockfile,
        problems: String,
    },
}

/// A manifest or lockfile error as the user should see it (diagnostics with source lines).
pub fn manifest_error(e: ManifestError) -> anyhow::Error {
    fail(Failure::Input, e.render().trim_end())
}

impl Project {
    /// The digest of the project's files as they would be packed (what the build
    /// cache and deployment records know it by): `ebpkg_archive::tree_digest`,
    /// each file streamed through SHA-256 once (ebpkg.toml from `manifest_text`),
    /// with no archive made. Two states of the project have the same digest
    /// exactly when they pack to the same archive; the value is not the archive's
    /// checksum (that is a digest of gzip's output), so objects built here are
    /// found in the build cache by this project's builds, and an install of the
    /// published archive compiles under the archive's own checksum. (`publish
    /// --with-objects` builds under the archive's checksum itself.)
    pub fn digest(&self) -> Result<ebpkg_spec::types::Sha256Digest> {
        ebpkg_archive::tree_digest(&self.dir, &self.manifest, self.manifest_text.as_bytes())
            .map_err(|e| fail(Failure::Input, e.render().trim_end()))
    }

    /// Finds and loads the project: `manifest_path` when given, else the nearest
    /// ebpkg.toml from the current directory up.
    pub fn find(manifest_path: Option<&Path>) -> Result<Project> {
        let path = match manifest_path {
            Some(p) => p.to_owned(),
            None => {
                let cwd = std::env::current_dir().context("cannot read the current directory")?;
                cwd.ancestors().map(|d| d.join(MANIFEST_FILE)).find(|p| p.is_file()).ok_or_else(|| {
                    fail(
                        Failure::Input,
                        format!(
                            "no {MANIFEST_FILE} in {} or any parent directory; create one with `ebpkg init`",
                            cwd.display()
                        ),
                    )
                })?
            }
        };
        Project::load(&path)
    }

    pub fn load(manifest_path: &Path) -> Result<Project> {
        let (manifest, bytes) = Manifest::load_with_bytes(manifest_path).map_err(manifest_error)?;
        // (Parsing decoded it as UTF-8 already.)
        let manifest_text = String::from_utf8(bytes)
            .map_err(|e| fail(Failure::Input, format!("{}: not UTF-8: {e}", manifest_path.display())))?;
        let dir = manifest_path.parent().map_or_else(|| PathBuf::from("."), Path::to_owned);
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        Ok(Project { dir, manifest, manifest_text })
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join(MANIFEST_FILE)
    }

    pub fn lock_path(&self) -> PathBuf {
        self.dir.join(LOCK_FILE)
    }

    /// The lockfile as it is on disk: missing, valid, or damaged (with what can
    /// still be used of it). Only a file that cannot be read at all is an error.
    pub fn read_lock(&self) -> Result<LockState> {
        let path = self.lock_path();
        let bytes = match ebpkg_fs::read(&path, ebpkg_spec::MAX_LOCK_BYTES as u64) {
            Ok(bytes) => bytes,
            Err(e) if e.is_not_found() => return Ok(LockState::Missing),
            Err(e) => return Err(e.into()),
        };
        let Ok(text) = String::from_utf8(bytes) else {
            let problems = format!("{} is not UTF-8 text", path.display());
            return Ok(LockState::Damaged { salvaged: Lockfile::default(), problems });
        };
        let file = path.display().to_string();
        Ok(match Lockfile::parse(&text, &file) {
            Ok(lock) => LockState::Valid(lock),
            Err(diagnostics) => LockState::Damaged {
                salvaged: Lockfile::salvage(&text, &file),
                problems: diagnostics.render(&text).trim_end().to_owned(),
            },
        })
    }

    /// Writes the lockfile when its text changes. Returns whether it did.
    pub fn write_lockfile(&self, lock: &Lockfile) -> Result<bool> {
        let path = self.lock_path();
        let Ok(old) = ebpkg_fs::read_text(&path, ebpkg_spec::MAX_LOCK_BYTES as u64) else {
            // Nothing (usable) to compare with: written as it is made, never held whole.
            ebpkg_fs::write_atomic_with(&path, 0o644, |file| lock.write_toml(file))
                .with_context(|| format!("cannot write {}", path.display()))?;
            tidy(&path);
            return Ok(true);
        };
        let text = lock.to_toml_string();
        if old == text {
            return Ok(false);
        }
        write_atomic(&path, text.as_bytes())?;
        Ok(true)
    }
}

/// Replaces a project file (ebpkg.toml, ebpkg.lock) atomically and durably.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    ebpkg_fs::write_atomic(path, bytes, 0o644).with_context(|| format!("cannot write {}", path.display()))?;
    tidy(path);
    Ok(())
}

/// Removes the temporary files that commands killed while replacing a file in
/// `path`'s directory left there: in a project, they would stay beside ebpkg.toml
/// until someone committed them.
fn tidy(path: &Path) {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    for removed in ebpkg_fs::temp::remove_stale_files(dir) {
        tracing::info!("removed {}, left by a command that was killed while writing", removed.display());
    }
}
