//! Writing to a file registry: publishing, yanking, and importing entries published
//! elsewhere (mirrors). Every write happens under the registry's lock, archive first,
//! index line second.

use ebpkg_archive::{Limits, UnpackError, VerifiedArchive};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::types::{KeyId, Sha256Digest};
use ebpkg_spec::{Manifest, PackageName, index_path};
use semver::Version;

use super::FileRegistry;
use crate::RegistryId;
use crate::atomic::write_atomic;
use crate::content;
use crate::error::{ErrorKind, Result};
use crate::registry::PublishSignature;
use ebpkg_spec::cache_layout::{bundle_file, key_file};

/// What [`FileRegistry::import`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Imported {
    /// The entry and its archive were added.
    Added,
    /// The registry held the same version with the same checksum already.
    AlreadyPresent,
}

impl FileRegistry {
    pub(super) fn publish_archive(
        &self,
        archive: &VerifiedArchive,
        manifest: &Manifest,
        signature: Option<&PublishSignature>,
    ) -> Result<IndexEntry> {
        let name = &manifest.package.name;
        let version = &manifest.package.version;
        let cksum = *archive.digest();
        // The expensive checks run before taking the lock, so other writers do not
        // wait for them.
        check_archive_holds(archive, manifest)?;
        match signature {
            Some(s) => self.check_signature(s, name, version, &cksum)?,
            None if self.requires_signatures()? => {
                return Err(ErrorKind::UnsignedRefused {
                    package: name.clone(),
                    version: version.clone(),
                    registry: self.url.clone(),
                }
                .into());
            }
            None => {}
        }

        let tuf_key = self.tuf_signer()?;
        let _lock = self.lock_for_writing()?;
        let (path, text, entries) = self.index_for_writing(name, signature.map(|s| s.key.id()))?;
        if let Some(existing) = entries.iter().find(|e| e.vers.cmp_precedence(version).is_eq()) {
            // `1.0.0+a` and `1.0.0+b` are one version to every resolver: build metadata
            // does not order versions.
            return Err(ErrorKind::VersionExists {
                name: name.clone(),
                version: existing.vers.clone(),
                url: self.url.clone(),
            }
            .into());
        }
        let mut entry = IndexEntry::from_manifest(manifest, cksum);
        write_atomic(&self.archive_path(&cksum), archive.bytes())?;
        if let Some(s) = signature {
            self.store_signature(s, &cksum)?;
            entry.signed_by = Some(*s.key.id());
        }
        // The index line last: a reader that sees it finds its archive, bundle and key.
        let new_text = append_line(&text, &entry.to_line());
        write_atomic(&path, new_text.as_bytes())?;
        self.sign_tuf(tuf_key, &[(&path, new_text.as_bytes())])?;
        tracing::info!(package = %name, %version, %cksum, registry = %self.url, "published");
        Ok(entry)
    }

    /// Adds `entry`, published in the registry `from`, with its `archive`, both exactly
    /// as they are (a yanked entry stays yanked). Used to build mirrors: unlike
    /// publishing, the archive is trusted to match its entry once its digest matches
    /// `entry.cksum`. Importing a version already present with the same checksum does
    /// nothing (its archive is restored if it went missing); with another checksum it
    /// is refused.
    pub fn import(
        &self,
        entry: &IndexEntry,
        archive: &VerifiedArchive,
        signature: Option<&PublishSignature>,
        from: &RegistryId,
    ) -> Result<Imported> {
        let actual = *archive.digest();
        if actual != entry.cksum {
            return Err(ErrorKind::ChecksumMismatch {
                package: entry.name.clone(),
                version: entry.vers.clone(),
                expected: entry.cksum,
                actual,
                registry: from.clone(),
            }
            .into());
        }
        // A signed entry comes with the signature that proves it, or not at all: a
        // mirror must give air-gapped installs what the registry gave.
        match (entry.signed_by, signature) {
            (None, None) => {}
            (Some(id), Some(s)) if *s.key.id() == id => {
                self.check_signature(s, &entry.name, &entry.vers, &entry.cksum)?;
            }
            (signed_by, _) => {
                return Err(ErrorKind::SignerDrift {
                    package: entry.name.clone(),
                    version: entry.vers.clone(),
                    locked: signed_by,
                    index: signature.map(|s| *s.key.id()),
                    registry: from.clone(),
                }
                .into());
            }
        }
        let tuf_key = self.tuf_signer()?;
        let _lock = self.lock_for_writing()?;
        let (path, text, entries) = self.index_for_writing(&entry.name, entry.signed_by.as_ref())?;
        let archive_path = self.archive_path(&entry.cksum);
        if let Some(existing) = entries.iter().find(|e| e.vers.cmp_precedence(&entry.vers).is_eq()) {
            if existing.cksum != entry.cksum || existing.vers != entry.vers {
                return Err(ErrorKind::ImportDiffers {
                    name: entry.name.clone(),
                    version: existing.vers.clone(),
                    url: self.url.clone(),
                    existing: existing.cksum,
                    incoming: entry.cksum,
                }
                .into());
            }
            if !content::holds(&archive_path, &entry.cksum)? {
                write_atomic(&archive_path, archive.bytes())?;
            }
            if let Some(s) = signature {
                self.store_signature(s, &entry.cksum)?;
            }
            return Ok(Imported::AlreadyPresent);
        }
        write_atomic(&archive_path, archive.bytes())?;
        if let Some(s) = signature {
            self.store_signature(s, &entry.cksum)?;
        }
        let new_text = append_line(&text, &entry.to_line());
        write_atomic(&path, new_text.as_bytes())?;
        self.sign_tuf(tuf_key, &[(&path, new_text.as_bytes())])?;
        tracing::info!(package = %entry.name, version = %entry.vers, registry = %self.url, %from, "imported");
        Ok(Imported::Added)
    }

    /// Checks that `signature` signs the archive whose digest is `cksum` (computed
    /// of, or checked against, the bytes held).
    fn check_signature(
        &self,
        signature: &PublishSignature,
        name: &PackageName,
        version: &Version,
        cksum: &Sha256Digest,
    ) -> Result<()> {
        signature.bundle.verify_digest(&signature.key, cksum).map_err(|cause| {
            ErrorKind::BadSignature {
                package: name.clone(),
                version: version.clone(),
                registry: self.url.clone(),
                cause,
            }
            .into()
        })
    }

    /// Writes the bundle (by archive digest) and the key (by id). Call under the lock.
    fn store_signature(&self, signature: &PublishSignature, cksum: &Sha256Digest) -> Result<()> {
        write_atomic(&bundle_file(self.root(), cksum), signature.bundle.json().as_bytes())?;
        let key_path = key_file(self.root(), signature.key.id());
        if !key_path.exists() {
            write_atomic(&key_path, signature.key.to_pem().as_bytes())?;
        }
        Ok(())
    }

    pub(super) fn update_yanked(&self, name: &PackageName, version: &Version, yanked: bool) -> Result<IndexEntry> {
        self.require_registry()?;
        let tuf_key = self.tuf_signer()?;
        let _lock = self.lock_for_writing()?;
        let Some((path, published)) = self.find_index_file(name)? else {
            return Err(ErrorKind::NoSuchPackage { name: name.clone(), url: self.url.clone() }.into());
        };
        let (text, entries) = self.read_index_for_writing(&path, &published)?;
        let old = self.entry_for(&entries, name, version)?;
        if old.yanked == yanked {
            return Ok(old.clone());
        }
        let mut new = old.clone();
        new.yanked = yanked;
        old.check_update(&new).map_err(|e| ErrorKind::CorruptIndex { path: path.clone(), problem: e.to_string() })?;
        // Only the one line changes; the others keep their exact bytes, including
        // lines of newer schemas that this version of ebpkg cannot parse.
        let new_line = new.to_line();
        let mut out = String::with_capacity(text.len() + 1);
        for line in text.lines() {
            let this_version = matches!(IndexEntry::parse_line(line), Ok(Some(e)) if e.vers == *version);
            out.push_str(if this_version { &new_line } else { line });
            out.push('\n');
        }
        write_atomic(&path, out.as_bytes())?;
        self.sign_tuf(tuf_key, &[(&path, out.as_bytes())])?;
        tracing::info!(package = %name, %version, yanked, registry = %self.url, "yank flag changed");
        Ok(new)
    }

    /// The index file `name` is to be written to, its text and entries, refusing a
    /// name that collides with a differently spelled package, or a new name that
    /// looks like a package `signer` did not sign (a directory registry has no
    /// accounts: whoever signed a version of a package is its publisher, and may
    /// publish look-alikes of it). Call under the lock.
    fn index_for_writing(
        &self,
        name: &PackageName,
        signer: Option<&KeyId>,
    ) -> Result<(std::path::PathBuf, String, Vec<IndexEntry>)> {
        match self.find_index_file(name)? {
            Some((_, existing)) if existing != *name => {
                Err(ErrorKind::NameCollision { name: name.clone(), existing, url: self.url.clone() }.into())
            }
            Some((path, existing)) => {
                let (text, entries) = self.read_index_for_writing(&path, &existing)?;
                Ok((path, text, entries))
            }
            None => {
                // A new package: not one that could pass for someone else's.
                let look = ebpkg_spec::names::skeleton(name.as_str());
                for existing in
                    self.list_names()?.into_iter().filter(|n| ebpkg_spec::names::skeleton(n.as_str()) == look)
                {
                    if !self.signed_some_version(&existing, signer)? {
                        return Err(
                            ErrorKind::NameTooClose { name: name.clone(), existing, url: self.url.clone() }.into()
                        );
                    }
                }
                Ok((self.index_dir().join(index_path(name.as_str())), String::new(), Vec::new()))
            }
        }
    }

    /// Whether `signer` signed a version of the package `name`.
    fn signed_some_version(&self, name: &PackageName, signer: Option<&KeyId>) -> Result<bool> {
        let Some(signer) = signer else { return Ok(false) };
        let Some((path, published)) = self.find_index_file(name)? else { return Ok(false) };
        let (_, entries) = self.read_index_for_writing(&path, &published)?;
        Ok(entries.iter().any(|e| e.signed_by.as_ref() == Some(signer)))
    }
}

fn append_line(text: &str, line: &str) -> String {
    let mut out = String::with_capacity(text.len() + line.len() + 2);
    out.push_str(text);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(line);
    out.push('\n');
    out
}

/// Reads the archive in memory with every check an installer's unpacking makes: an
/// archive every installer would refuse, or whose `ebpkg.toml` is not `manifest` (so
/// the index entry would describe other contents), is refused at the door.
fn check_archive_holds(archive: &VerifiedArchive, manifest: &Manifest) -> Result<()> {
    let name = &manifest.package.name;
    let version = &manifest.package.version;
    let unpacked =
        ebpkg_archive::read_verified(archive, name, version, &Limits::default(), |_, _| false).map_err(|source| {
            match source {
                UnpackError::WrongPackage { found, .. } => ErrorKind::ManifestMismatch {
                    name: name.clone(),
                    version: version.clone(),
                    problem: format!("the archive holds {found}, not the package of the manifest given"),
                },
                source => ErrorKind::InvalidArchive { name: name.clone(), version: version.clone(), cause: source },
            }
        })?;
    let (a, b) = (&unpacked.manifest, manifest);
    let differing = match () {
        _ if a.package != b.package => "[package]",
        _ if a.dependencies != b.dependencies => "[dependencies]",
        _ if a.reexports != b.reexports => "[reexports]",
        _ if a.programs != b.programs => "[[program]]",
        _ if a.loaders != b.loaders => "[[loader]]",
        _ if a.chains != b.chains => "[[chain]]",
        _ => return Ok(()),
    };
    Err(ErrorKind::ManifestMismatch {
        name: name.clone(),
        version: version.clone(),
        problem: format!("the manifest given differs from the archive's ebpkg.toml in {differing}"),
    }
    .into())
}
