//! TUF over a directory registry: its metadata lives in `<root>/tuf/`
//! (`ebpkg-tuf`'s layout). Readers that were given a trusted root check every
//! index file they read against it; writers re-sign the changed file's bin, the
//! snapshot and the timestamp after every change, with the online key.

use std::path::{Path, PathBuf};

use ebpkg_tuf::TrustedIndex;

use super::FileRegistry;
use crate::error::{ErrorKind, Result};

/// The TUF target name of a file of the registry.
pub(super) fn target_of(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?;
    let parts: Vec<&str> = rel.components().filter_map(|c| c.as_os_str().to_str()).collect();
    Some(parts.join("/"))
}

impl FileRegistry {
    pub(super) fn tuf_dir(&self) -> PathBuf {
        self.root.join("tuf")
    }

    /// Whether the registry carries TUF metadata (then every change re-signs it).
    pub(super) fn has_tuf(&self) -> bool {
        self.tuf_dir().join("root.json").is_file()
    }

    fn tuf_error(&self, cause: ebpkg_tuf::Error) -> crate::Error {
        ErrorKind::Tuf { registry: self.url.clone(), cause }.into()
    }

    /// The verified metadata, loaded on first use; `None` without a trusted root.
    pub(super) fn trusted(&self) -> Result<Option<&TrustedIndex>> {
        let Some(reader) = &self.tuf else { return Ok(None) };
        let index = reader.index(|trust| {
            let url = url::Url::from_directory_path(self.tuf_dir()).map_err(|()| {
                self.tuf_error(ebpkg_tuf::Error::Metadata {
                    detail: format!("{} is not a path", self.tuf_dir().display()),
                })
            })?;
            // A directory's timestamp is read and compared: a few hundred bytes.
            let probe = |_: Option<&ebpkg_tuf::LastVerified>| match ebpkg_fs::read(
                &self.tuf_dir().join("timestamp.json"),
                MAX_TIMESTAMP_BYTES,
            ) {
                Ok(timestamp) => ebpkg_tuf::Probe::Fetched { timestamp, validators: Vec::new() },
                Err(_) => ebpkg_tuf::Probe::NotAsked,
            };
            crate::tuf::load_trusted(trust, &url, ebpkg_tuf::FilesystemTransport, probe).map_err(|e| self.tuf_error(e))
        })?;
        Ok(Some(index))
    }

    /// Checks an index file (or `config.json`) read from `path` against the
    /// signed metadata, when there is a trusted root.
    pub(super) fn check_tuf(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let Some(index) = self.trusted()? else { return Ok(()) };
        let target = target_of(&self.root, path).unwrap_or_default();
        index.check(&target, bytes).map_err(|e| self.tuf_error(e))
    }

    /// A file that is not there but that signed metadata lists was withheld.
    pub(super) fn check_tuf_absent(&self, path: &Path) -> Result<()> {
        let Some(index) = self.trusted()? else { return Ok(()) };
        let target = target_of(&self.root, path).unwrap_or_default();
        crate::tuf::check_absent(index, &target).map_err(|e| self.tuf_error(e))
    }

    /// Whether signed metadata lists the file (always true without a trusted root).
    pub(super) fn tuf_lists(&self, path: &Path) -> Result<bool> {
        let Some(index) = self.trusted()? else { return Ok(true) };
        Ok(index.lists(&target_of(&self.root, path).unwrap_or_default()))
    }

    /// For writers, before anything is written: the online key a change must be
    /// signed with, when the registry has TUF metadata.
    pub(super) fn tuf_signer(&self) -> Result<Option<&Path>> {
        if !self.has_tuf() || self.tuf_copied {
            return Ok(None);
        }
        match &self.tuf_online_key {
            Some(key) => {
                ebpkg_tuf::repo::check_online_key(&ebpkg_tuf::DirStore::new(self.tuf_dir()), key)
                    .map_err(|e| self.tuf_error(e))?;
                Ok(Some(key))
            }
            None => Err(ErrorKind::TufKeyNeeded { registry: self.url.clone(), dir: self.tuf_dir() }.into()),
        }
    }

    /// Re-signs the metadata after `files` (index files, `config.json`) changed.
    pub(super) fn sign_tuf(&self, key: Option<&Path>, files: &[(&Path, &[u8])]) -> Result<()> {
        let Some(key) = key else { return Ok(()) };
        let changes: Vec<ebpkg_tuf::repo::Change> = files
            .iter()
            .filter_map(|(path, bytes)| target_of(&self.root, path).map(|t| (t, Some(bytes.to_vec()))))
            .collect();
        ebpkg_tuf::repo::update(
            &mut ebpkg_tuf::DirStore::new(self.tuf_dir()),
            key,
            &changes,
            jiff::Timestamp::now(),
            &ebpkg_tuf::Expiry::default(),
        )
        .map_err(|e| self.tuf_error(e))
    }
}

/// Largest timestamp read to compare with the last one verified (`ebpkg-tuf`
/// refuses larger ones).
const MAX_TIMESTAMP_BYTES: u64 = 16 * 1024;

/// Most files a TUF directory may hold (root versions, 16 bins, the rest).
const MAX_TUF_FILES: usize = 1024;
/// Largest TUF metadata file copied.
const MAX_TUF_FILE_BYTES: u64 = 16 << 20;

impl FileRegistry {
    /// Every file of `tuf/`, for a mirror to copy.
    pub(super) fn read_tuf_files(&self) -> Result<Option<crate::registry::TufFiles>> {
        if !self.has_tuf() {
            return Ok(None);
        }
        let dir = self.tuf_dir();
        let mut out = Vec::new();
        let entries = std::fs::read_dir(&dir).map_err(crate::Error::io("list", &dir))?;
        for entry in entries {
            let entry = entry.map_err(crate::Error::io("list", &dir))?;
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            if !name.ends_with(".json") || !entry.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            if out.len() == MAX_TUF_FILES {
                return Err(self.tuf_error(ebpkg_tuf::Error::TooLarge {
                    detail: format!("{} holds more than {MAX_TUF_FILES} files", dir.display()),
                }));
            }
            let bytes = ebpkg_fs::read(&entry.path(), MAX_TUF_FILE_BYTES).map_err(|e| self.damaged(e))?;
            out.push((name, bytes));
        }
        out.sort();
        Ok(Some(out))
    }

    /// Replaces this (mirror) registry's `tuf/` with `files`, the timestamp last:
    /// until then readers see the previous, consistent set.
    pub(crate) fn write_tuf_files(&self, files: &[(String, Vec<u8>)]) -> Result<()> {
        let dir = self.tuf_dir();
        std::fs::create_dir_all(&dir).map_err(crate::Error::io("create", &dir))?;
        let (last, rest): (Vec<_>, Vec<_>) = files.iter().partition(|(name, _)| name == "timestamp.json");
        for (name, bytes) in rest.into_iter().chain(last) {
            if name.contains('/') || name.starts_with('.') {
                continue;
            }
            crate::atomic::write_atomic(&dir.join(name), bytes)?;
        }
        Ok(())
    }
}
