//! The local download cache: archives by digest, and their unpacked trees.
//!
//! ```text
//! <root>/archives/<2 hex>/<64 hex>.tar.gz        downloaded archives, named by their SHA-256
//! <root>/src/<name>-<version>-<first 16 hex>/    unpacked packages (the directory holding ebpkg.toml)
//! ```
//!
//! Nothing enters the cache unverified: an archive is stored only after its digest
//! matched the one the caller trusts, and a cached archive is hashed again before
//! every use. Both kinds of entry appear atomically (rename), so an entry that exists
//! is complete, and several processes can fill one cache at once.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use ebpkg_archive::{Limits, UnpackError, VerifiedArchive};
use ebpkg_signing::{PublicKey, SignedBundle};
use ebpkg_spec::cache_layout::{CacheLayout, CachePart};
use ebpkg_spec::index::{EntryPin, IndexEntry};
use ebpkg_spec::types::Sha256Digest;
use ebpkg_spec::{LockedPackage, PackageName};
use semver::Version;

use crate::atomic::write_private;
use crate::content;
use crate::error::{Error, ErrorKind, Result};
use crate::registry::{Registry, SignedVersion};

/// A download cache rooted at a directory.
#[derive(Debug, Clone)]
pub struct Cache {
    layout: CacheLayout,
}

/// A signature [`Cache::fetch_signature`] verified.
#[derive(Debug, Clone)]
pub struct VerifiedSignature {
    pub bundle: SignedBundle,
    pub key: PublicKey,
    /// When the key's owner revoked it, as the registry says.
    pub revoked_at: Option<String>,
    /// False when offline: the key came from the cache and the registry was
    /// not asked whether it was revoked since.
    pub revocation_checked: bool,
}

/// A publisher key [`Cache::publisher_key`] found.
#[derive(Debug, Clone)]
pub struct CachedKey {
    pub key: PublicKey,
    /// When its owner revoked it, as the registry says.
    pub revoked_at: Option<String>,
    /// False when the key came from the cache and the registry was not asked
    /// whether it was revoked since.
    pub revocation_checked: bool,
}

/// Why [`Cache::publisher_key`] has no key.
#[derive(Debug)]
pub enum KeyProblem {
    /// Offline, and not in the cache.
    Offline,
    /// The registry has no such key, serves another, or cannot be reached and it
    /// is not in the cache: what happened.
    Unavailable(String),
    /// Keeping it in the cache failed.
    Io(Error),
}

/// A package unpacked in the cache ([`Cache::unpack`]).
#[derive(Debug, Clone)]
pub struct CachedSource {
    /// The package root (the directory holding `ebpkg.toml`).
    pub root: PathBuf,
    /// Its manifest, as the archive holds it.
    pub manifest: ebpkg_spec::Manifest,
}

/// What [`Cache::clean`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanReport {
    /// Regular files (and symbolic links) removed.
    pub files: u64,
    /// Bytes those files held.
    pub bytes: u64,
}

impl Cache {
    /// A cache in `root`, created on first write.
    pub fn new(root: impl Into<PathBuf>) -> Cache {
        Cache { layout: CacheLayout::new(root) }
    }

    /// The cache's directory.
    pub fn root(&self) -> &Path {
        self.layout.root()
    }

    /// Where the archive with this digest is (or would be) cached.
    pub fn archive_path(&self, digest: &Sha256Digest) -> PathBuf {
        self.layout.archive(digest)
    }

    /// Where the package with this archive digest is (or would be) unpacked. The name
    /// and version are for people browsing the cache; the digest prefix tells apart
    /// two archives of one version from two registries.
    pub fn source_dir(&self, name: &PackageName, version: &Version, digest: &Sha256Digest) -> PathBuf {
        self.layout.source_dir(name, version, digest)
    }

    /// The cached archive of the version `entry` is the index line of (the one the
    /// caller resolved and checked: it is not looked up again), downloading it from
    /// `registry` when it is not cached (or the cached copy no longer hashes to
    /// `expected`, in which case that copy is deleted).
    ///
    /// `expected` is the digest the caller trusts: the lockfile's checksum when there
    /// is a lockfile, else the registry index's. A download that does not match it is
    /// refused before anything is stored ([`ErrorKind::ChecksumMismatch`]). With `offline`,
    /// only local (`file://`) registries are read.
    pub fn fetch(
        &self,
        registry: &dyn Registry,
        entry: &IndexEntry,
        expected: &Sha256Digest,
        offline: bool,
    ) -> Result<VerifiedArchive> {
        let (name, version) = (&entry.name, &entry.vers);
        let path = self.archive_path(expected);
        if let Some(archive) = content::read_verified(&path, expected)? {
            tracing::debug!(package = %name, %version, path = %path.display(), "archive cache hit");
            return Ok(archive);
        }
        if path.exists() {
            tracing::warn!(package = %name, %version, path = %path.display(), "cached archive is corrupted; fetching it again");
            content::remove_if_present(&path)?;
        }
        if offline && !registry.url().is_local() {
            return Err(ErrorKind::Offline {
                package: name.clone(),
                version: version.clone(),
                registry: registry.url().clone(),
            }
            .into());
        }
        let bytes = registry.download(entry)?;
        let size = bytes.len();
        let archive = VerifiedArchive::check(bytes, expected, &Limits::default()).map_err(|e| -> Error {
            match e {
                UnpackError::DigestMismatch { actual, .. } => ErrorKind::ChecksumMismatch {
                    package: name.clone(),
                    version: version.clone(),
                    expected: *expected,
                    actual,
                    registry: registry.url().clone(),
                }
                .into(),
                cause => {
                    ErrorKind::Unpack { package: name.clone(), version: version.clone(), archive: path.clone(), cause }
                        .into()
                }
            }
        })?;
        write_private(&path, archive.bytes())?;
        tracing::debug!(package = %name, %version, registry = %registry.url(), bytes = size, "archive downloaded");
        Ok(archive)
    }

    /// The cached archive with digest `expected`, checked, when the cache holds it
    /// (for an offline command, which must not ask a registry).
    pub fn cached_archive(&self, expected: &Sha256Digest) -> Result<Option<VerifiedArchive>> {
        content::read_verified(&self.archive_path(expected), expected)
    }

    /// The signature of a signed version over `archive` (checked against the
    /// digest the caller trusts, the version's), verified: the bundle and
    /// the key come from the cache when there, else from `registry` (and are
    /// cached); the key must hash to the id the index line names, and the bundle
    /// must sign the archive with it. Online, the key's revocation is asked of the
    /// registry every time (a cached key says nothing about it).
    pub fn fetch_signature(
        &self,
        registry: &dyn Registry,
        entry: &SignedVersion,
        archive: &VerifiedArchive,
        offline: bool,
    ) -> Result<VerifiedSignature> {
        let id = entry.key;
        let unavailable = |what: String| -> Error {
            ErrorKind::KeyUnavailable {
                package: entry.name.clone(),
                version: entry.version.clone(),
                key: id,
                registry: registry.url().clone(),
                what,
            }
            .into()
        };
        let bundle_path = self.layout.bundle(&entry.cksum, &id);
        let cached_bundle = match ebpkg_fs::read(&bundle_path, ebpkg_signing::MAX_BUNDLE_BYTES as u64) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.is_not_found() => None,
            Err(e) => {
                tracing::warn!("{e}; fetching the signature again");
                None
            }
        };
        let (bundle_bytes, from_cache) = match cached_bundle {
            Some(bytes) => (bytes, true),
            None if offline && !registry.url().is_local() => {
                return Err(ErrorKind::Offline {
                    package: entry.name.clone(),
                    version: entry.version.clone(),
                    registry: registry.url().clone(),
                }
                .into());
            }
            None => (registry.bundle(entry)?, false),
        };
        let bad = |cause: ebpkg_signing::Error| -> Error {
            ErrorKind::BadSignature {
                package: entry.name.clone(),
                version: entry.version.clone(),
                registry: registry.url().clone(),
                cause,
            }
            .into()
        };
        let bundle = SignedBundle::parse(&bundle_bytes).map_err(bad)?;

        let CachedKey { key, revoked_at, revocation_checked } =
            self.publisher_key(registry, &id, offline).map_err(|problem| match problem {
                KeyProblem::Offline => ErrorKind::Offline {
                    package: entry.name.clone(),
                    version: entry.version.clone(),
                    registry: registry.url().clone(),
                }
                .into(),
                KeyProblem::Unavailable(what) => unavailable(what),
                KeyProblem::Io(e) => e,
            })?;
        // The archive's bytes were hashed once, when checked: the signature is
        // verified against that digest, which the version's must be.
        if archive.digest() != &entry.cksum {
            return Err(bad(ebpkg_signing::Error::OtherArchive {
                signed: entry.cksum.to_string(),
                actual: archive.digest().to_string(),
            }));
        }
        bundle.verify_digest(&key, archive.digest()).map_err(bad)?;
        if !from_cache {
            write_private(&bundle_path, bundle.json().as_bytes())?;
        }
        Ok(VerifiedSignature { bundle, key, revoked_at, revocation_checked })
    }

    /// Publisher key `id` as `registry` serves it (and whether its owner revoked
    /// it), kept in the cache; the cached copy when offline or when the registry
    /// cannot be reached (then revocation was not checked). A registry that
    /// answers that it has no such key is believed.
    pub fn publisher_key(
        &self,
        registry: &dyn Registry,
        id: &ebpkg_spec::types::KeyId,
        offline: bool,
    ) -> std::result::Result<CachedKey, KeyProblem> {
        let key_path = self.layout.key(id);
        let cached_key = ebpkg_fs::read_text(&key_path, ebpkg_signing::MAX_KEY_FILE_BYTES)
            .ok()
            .and_then(|pem| PublicKey::from_pem(&pem).ok())
            .filter(|key| key.id() == id);
        let found = if offline && !registry.url().is_local() {
            match cached_key {
                Some(key) => CachedKey { key, revoked_at: None, revocation_checked: false },
                None => return Err(KeyProblem::Offline),
            }
        } else {
            match registry.publisher_key(id) {
                Ok(record) if record.key.id() != id => {
                    return Err(KeyProblem::Unavailable(format!(
                        "the registry {} serves a key whose id is {} instead",
                        registry.url(),
                        record.key.id()
                    )));
                }
                Ok(record) => CachedKey { key: record.key, revoked_at: record.revoked_at, revocation_checked: true },
                Err(e) if matches!(e.kind(), ErrorKind::NoSuchKey { .. }) => {
                    return Err(KeyProblem::Unavailable(e.to_string()));
                }
                // One that cannot be reached says nothing about revocation, and the
                // cached key is still the one asked for: the caller says what could
                // not be checked.
                Err(e) => match cached_key {
                    Some(key) => {
                        tracing::debug!("{e}; using the cached key");
                        CachedKey { key, revoked_at: None, revocation_checked: false }
                    }
                    None => return Err(KeyProblem::Unavailable(e.to_string())),
                },
            }
        };
        if !key_path.exists() {
            write_private(&key_path, found.key.to_pem().as_bytes()).map_err(KeyProblem::Io)?;
        }
        Ok(found)
    }

    /// The package `name` `version` unpacked from `archive` (checked, from
    /// [`Cache::fetch`]), unpacking it on first use: from memory, not read or
    /// hashed again; its manifest is parsed from the archive, not read back from
    /// the tree. Concurrent callers may race to unpack the same package; the first
    /// to finish wins and the others use its tree.
    pub fn unpack(&self, name: &PackageName, version: &Version, archive: &VerifiedArchive) -> Result<CachedSource> {
        let digest = archive.digest();
        let dest = self.source_dir(name, version, digest);
        let path = self.archive_path(digest);
        let limits = Limits::default();
        // Trees appear by rename, complete; but anyone who can write to the cache can
        // edit one afterwards, so a tree is compared with its verified archive before
        // every use and unpacked again when it differs.
        if fs::symlink_metadata(&dest).is_ok() {
            match ebpkg_archive::verify_tree_verified(archive, name, version, &dest, &limits) {
                Ok(manifest) => return Ok(CachedSource { root: dest, manifest }),
                Err(UnpackError::TreeModified { path, problem }) => {
                    tracing::warn!(
                        "the cached source of {name}@{version} was changed after it was unpacked ({}: {problem}); \
                         unpacking it again from its archive",
                        path.display()
                    );
                    remove_tree(&dest)?;
                }
                Err(source) => return Err(self.unpack_error(name, version, &path, source)),
            }
        }
        let parent = self.layout.sources();
        crate::atomic::create_private_dirs(&parent)?;
        match ebpkg_archive::unpack_verified(archive, name, version, &dest, &limits) {
            Ok(unpacked) => {
                // Unpacked with the archive's modes (0755/0644) inside the 0700
                // `src/`; the cache's own are its user's alone. (A tree is compared
                // with its archive by content, not mode, on every use.)
                ebpkg_fs::private::restrict_tree(&dest).map_err(Error::io("restrict", &dest))?;
                Ok(CachedSource { root: unpacked.root, manifest: unpacked.manifest })
            }
            // Another process finished first: its tree is compared like any cached one.
            Err(UnpackError::DestinationExists { .. }) => {
                ebpkg_archive::verify_tree_verified(archive, name, version, &dest, &limits)
                    .map(|manifest| CachedSource { root: dest, manifest })
                    .map_err(|source| self.unpack_error(name, version, &path, source))
            }
            Err(source) => Err(self.unpack_error(name, version, &path, source)),
        }
    }

    // (A digest mismatch cannot reach here: the archive was checked when read.)
    fn unpack_error(&self, name: &PackageName, version: &Version, archive: &Path, source: UnpackError) -> Error {
        ErrorKind::Unpack {
            package: name.clone(),
            version: version.clone(),
            archive: archive.to_owned(),
            cause: source,
        }
        .into()
    }

    /// Deletes these parts of the cache (archives, unpacked packages, builds).
    /// Run it when no `ebpkg` command is using the cache: a package being
    /// installed may be unpacked here.
    pub fn clean(&self, parts: &[CachePart]) -> Result<CleanReport> {
        let mut report = CleanReport::default();
        for dir in parts.iter().flat_map(|p| self.layout.dirs(*p)) {
            measure(&dir, &mut report)?;
            match fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(ErrorKind::Io { action: "remove", path: dir, cause: e }.into()),
            }
        }
        Ok(report)
    }
}

/// Removes a cached tree, or whatever was left in its place (a link, a file).
fn remove_tree(path: &Path) -> Result<()> {
    let is_dir = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_dir());
    let removed = if is_dir { fs::remove_dir_all(path) } else { fs::remove_file(path) };
    match removed {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(ErrorKind::Io { action: "remove", path: path.to_owned(), cause: e }.into()),
    }
}

/// Adds up the files under `dir` without following symbolic links.
fn measure(dir: &Path, report: &mut CleanReport) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(ErrorKind::Io { action: "list", path: dir.to_owned(), cause: e }.into()),
    };
    for entry in entries {
        let entry = entry.map_err(Error::io("list", dir))?;
        let meta = entry.metadata().map_err(Error::io("inspect", entry.path()))?;
        if meta.is_dir() {
            measure(&entry.path(), report)?;
        } else {
            report.files += 1;
            report.bytes += meta.len();
        }
    }
    Ok(())
}

/// Checks that a registry's index still pins the archive a lockfile locked: `entry` is
/// what the registry's current line pins for `locked`'s package and version. A difference means
/// the version was republished or the index was altered, and installing would not give
/// the locked bytes.
pub fn check_locked(entry: &EntryPin, locked: &LockedPackage) -> Result<()> {
    // A lock written before signatures existed names no signer; one that names a
    // signer holds the registry to it, absence included.
    if locked.signer.is_some() && entry.signed_by != locked.signer {
        return Err(ErrorKind::SignerDrift {
            package: locked.name.clone(),
            version: locked.version.clone(),
            locked: locked.signer,
            index: entry.signed_by,
            registry: locked.source.clone(),
        }
        .into());
    }
    if entry.cksum == locked.checksum {
        return Ok(());
    }
    Err(ErrorKind::LockDrift {
        package: locked.name.clone(),
        version: locked.version.clone(),
        locked: locked.checksum,
        index: entry.cksum,
        registry: locked.source.clone(),
    }
    .into())
}
