//! A registry that is a directory: on local disk, a network share, or a mirror copied
//! to an air-gapped site.
//!
//! # Layout
//!
//! ```text
//! <root>/config.json                       {"ebpkg-registry":1}: marks the directory as a registry
//! <root>/index/<index_path(name)>          one JSON line per published version (SPEC.md §6)
//! <root>/archives/<2 hex>/<64 hex>.tar.gz  archives, named by their SHA-256
//! <root>/signatures/<2 hex>/<64 hex>.sigstore.json  Sigstore bundles, by the archive's SHA-256
//! <root>/keys/<64 hex>.pem                 the public keys that signed, by key id
//! <root>/attestations/<index_path(name)>/<version>.json  kernel verification attestations of a version
//! <root>/.lock                             taken (flock) by writers: publish, yank, import
//! ```
//!
//! # Concurrency
//!
//! Writers (publish, yank, import) hold an exclusive lock on `<root>/.lock` for their
//! checks and writes, so they run one at a time, across threads and processes. Readers
//! take no lock and still never see a torn file: every file is written under a
//! temporary name, flushed, and renamed over its final name, and an archive is in place
//! before the index line that names it. A reader therefore sees an index file as it was
//! before or after a write, and every archive an index line names exists.

mod attestations;
mod publish;
mod search;
mod tuf;

use crate::tuf::TufTrust;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use ebpkg_archive::Limits;
use ebpkg_signing::PublicKey;
use ebpkg_spec::cache_layout::{bundle_file, key_file};
use ebpkg_spec::index::{IndexEntry, ParsedIndex, parse_index_file};
use ebpkg_spec::names::normalize;
use ebpkg_spec::types::{KeyId, Sha256Digest};
use ebpkg_spec::{Manifest, PackageName, index_path};
use semver::Version;
use serde::Deserialize;

pub use publish::Imported;

use crate::RegistryId;
use crate::atomic::TEMP_PREFIX;
use crate::content;
use crate::error::{Error, ErrorKind, Result};
use crate::registry::{IndexFingerprint, IndexText, KeyRecord, PublishSignature, Registry, SearchHit, SignedVersion};

/// The file marking a directory as a registry.
pub const CONFIG_FILE: &str = "config.json";
/// The registry format this crate reads and writes (`{"ebpkg-registry":1}`).
pub const REGISTRY_FORMAT: u32 = 1;
const INDEX_DIR: &str = "index";
const LOCK_FILE: &str = ".lock";
/// Largest index file read. Lines are capped at 1 MiB each, and a package with more
/// than a few thousand versions is not a package but an accident.
pub(crate) const MAX_INDEX_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Largest config.json read; today's is 20 bytes.
const MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// A registry in a directory; see the module documentation for its layout.
#[derive(Debug, Clone)]
pub struct FileRegistry {
    root: PathBuf,
    url: RegistryId,
    /// A reader's trusted TUF root, when the user configured one.
    tuf: Option<std::sync::Arc<crate::tuf::TufReader>>,
    /// A writer's online TUF key.
    tuf_online_key: Option<PathBuf>,
    /// A mirror: its TUF metadata is the origin's, copied, never signed here.
    tuf_copied: bool,
    /// Set once config.json was read and checked.
    seen_config: std::sync::OnceLock<()>,
    /// The index directory, opened on the first fingerprint.
    index_dir_fd: std::sync::OnceLock<std::sync::Arc<std::os::fd::OwnedFd>>,
}

#[derive(Deserialize)]
struct Config {
    #[serde(rename = "ebpkg-registry")]
    format: u32,
    /// Refuse unsigned publishes. Off unless set: a directory registry is not a
    /// gatekeeper (whoever can write it can write this file too); what protects
    /// installs is the installing side's trust policy.
    #[serde(rename = "require-signatures", default)]
    require_signatures: bool,
}

/// An exclusive hold on `<root>/.lock`, released when dropped (the file is closed).
struct WriteLock {
    _file: File,
}

impl FileRegistry {
    /// The registry at a `file://` URL. The directory need not exist yet: publishing
    /// creates it; reading a missing registry is an error then.
    pub fn open(url: &RegistryId) -> Result<FileRegistry> {
        let root = url.file_path().ok_or_else(|| ErrorKind::Unsupported {
            url: url.clone(),
            what: "not a file:// URL, so not a directory registry".into(),
        })?;
        Ok(FileRegistry {
            root,
            url: url.clone(),
            tuf: None,
            tuf_online_key: None,
            tuf_copied: false,
            seen_config: Default::default(),
            index_dir_fd: Default::default(),
        })
    }

    /// The same registry, its index files checked against TUF metadata from the
    /// root `trust` names, and its changes signed with `online_key`.
    pub fn with_tuf(mut self, trust: Option<TufTrust>, online_key: Option<PathBuf>) -> FileRegistry {
        self.tuf = trust.map(|t| std::sync::Arc::new(crate::tuf::TufReader::new(t)));
        self.tuf_online_key = online_key;
        self
    }

    /// The registry in directory `root` (absolute or relative to the current directory).
    pub fn at(root: &Path) -> Result<FileRegistry> {
        FileRegistry::open(&RegistryId::from_path(root)?)
    }

    /// The same registry as a mirror: its TUF metadata (if any) is copied from
    /// the origin with its index files, so changes here do not re-sign it.
    pub(crate) fn into_mirror(mut self) -> FileRegistry {
        self.tuf_copied = true;
        self
    }

    /// Writes the index file of `name` exactly as its origin serves it: a mirror
    /// of a registry with TUF metadata must serve the signed bytes.
    pub(crate) fn write_index_verbatim(&self, name: &PackageName, bytes: &[u8]) -> Result<()> {
        let _lock = self.lock_for_writing()?;
        let path = self.index_dir().join(index_path(name.as_str()));
        crate::atomic::write_atomic(&path, bytes)
    }

    /// The registry's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether unsigned publishes are refused (`"require-signatures": true`).
    fn requires_signatures(&self) -> Result<bool> {
        Ok(self.config()?.is_some_and(|c| c.require_signatures))
    }

    /// Where the archive with this digest is stored.
    pub fn archive_path(&self, cksum: &Sha256Digest) -> PathBuf {
        content::archive_path(&self.root, cksum)
    }

    fn index_dir(&self) -> PathBuf {
        self.root.join(INDEX_DIR)
    }

    fn config_path(&self) -> PathBuf {
        self.root.join(CONFIG_FILE)
    }

    /// Checks that the directory is a registry of a format this crate understands.
    /// `Ok(false)`: there is no config.json.
    fn read_config(&self) -> Result<bool> {
        Ok(self.config()?.is_some())
    }

    /// The registry's configuration; `None` when there is no config.json.
    fn config(&self) -> Result<Option<Config>> {
        let path = self.config_path();
        let bytes = match ebpkg_fs::read(&path, MAX_CONFIG_BYTES) {
            Ok(bytes) => bytes,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(self.damaged(e)),
        };
        // It says whether signatures are required: signed metadata covers it too.
        self.check_tuf(&path, &bytes)?;
        let bad = |problem: String| -> Error { ErrorKind::BadRegistryConfig { path: path.clone(), problem }.into() };
        let config: Config = serde_json::from_slice(&bytes).map_err(|e| {
            bad(format!(
                "not an ebpkg registry configuration ({e}); a registry's config.json holds {{\"ebpkg-registry\":{REGISTRY_FORMAT}}}"
            ))
        })?;
        match config.format {
            REGISTRY_FORMAT => Ok(Some(config)),
            n if n > REGISTRY_FORMAT => Err(bad(format!(
                "the registry has format {n}, newer than this ebpkg understands ({REGISTRY_FORMAT}); upgrade ebpkg"
            ))),
            n => Err(bad(format!("registry format {n} does not exist; it should be {REGISTRY_FORMAT}"))),
        }
    }

    /// For readers: the directory must be a registry.
    fn require_registry(&self) -> Result<()> {
        if self.read_config()? { Ok(()) } else { Err(ErrorKind::NoRegistry { path: self.root.clone() }.into()) }
    }

    /// [`Self::require_registry`] for index reads, which a resolution makes by the
    /// thousand: config.json is read and checked by the first only.
    fn require_registry_once(&self) -> Result<()> {
        if self.seen_config.get().is_none() {
            self.require_registry()?;
            let _ = self.seen_config.set(());
        }
        Ok(())
    }

    /// Takes the writers' lock, creating the registry first when its directory is
    /// missing or empty. A non-empty directory without config.json is refused, so a
    /// mistyped path never scatters registry files over someone's home directory.
    fn lock_for_writing(&self) -> Result<WriteLock> {
        // Refuse before creating `.lock` there: no litter in a directory that is not ours.
        // Entries first, config.json second: a writer creating the registry right now
        // writes config.json before anything else, so entries seen before the config
        // check are explained by it (the other order refused such a registry).
        if has_foreign_entries(&self.root)? && !self.read_config()? {
            return Err(ErrorKind::NotARegistry { path: self.root.clone() }.into());
        }
        crate::atomic::create_dirs(&self.root)?;
        let path = self.root.join(LOCK_FILE);
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(Error::io("open the registry lock", &path))?;
        file.lock().map_err(Error::io("lock", &path))?;
        let lock = WriteLock { _file: file };
        // Checked again under the lock: another writer may have created it meanwhile.
        if !self.read_config()? {
            if has_foreign_entries(&self.root)? {
                return Err(ErrorKind::NotARegistry { path: self.root.clone() }.into());
            }
            let config = format!("{{\"ebpkg-registry\":{REGISTRY_FORMAT}}}\n");
            crate::atomic::write_atomic(&self.config_path(), config.as_bytes())?;
        }
        Ok(lock)
    }

    /// The index file of the package `name` collides with, and that package's name as
    /// published. Files live at the published spelling's path, so a different
    /// spelling (`my_pkg` for `my-pkg`) is looked up among the few directories its
    /// `-`/`_` variants map to.
    fn find_index_file(&self, name: &PackageName) -> Result<Option<(PathBuf, PackageName)>> {
        let index = self.index_dir();
        let exact = index.join(index_path(name.as_str()));
        if is_file(&exact)? {
            return Ok(Some((exact, name.clone())));
        }
        let wanted = name.normalized();
        let rel = index_path(name.as_str());
        let dir = rel.rsplit_once('/').map_or("", |(dir, _)| dir);
        for variant in dash_variants(dir) {
            let dir = index.join(variant);
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(ErrorKind::Io { action: "list", path: dir, cause: e }.into()),
            };
            let mut found = Vec::new();
            for entry in entries {
                let entry = entry.map_err(Error::io("list", &dir))?;
                let Some(file_name) = entry.file_name().to_str().map(str::to_owned) else { continue };
                if normalize(&file_name) != wanted || !entry.file_type().is_ok_and(|t| t.is_file()) {
                    continue;
                }
                if let Ok(published) = PackageName::new(&file_name) {
                    found.push((entry.path(), published));
                }
            }
            found.sort();
            if let Some(hit) = found.into_iter().next() {
                return Ok(Some(hit));
            }
        }
        Ok(None)
    }

    /// The text of an index file and what parsing it gave.
    fn read_index_file(&self, path: &Path, name: &PackageName) -> Result<(Vec<u8>, ParsedIndex)> {
        let bytes = ebpkg_fs::read(path, MAX_INDEX_FILE_BYTES).map_err(|source| self.damaged(source))?;
        let parsed = parse_index_file(name.as_str(), &bytes);
        Ok((bytes, parsed))
    }

    /// For writers: the text and entries of an index file every line of which is
    /// usable. A line a writer cannot read may hold the version it is about to add or
    /// change, so a damaged file is refused until it is repaired.
    pub(super) fn read_index_for_writing(&self, path: &Path, name: &PackageName) -> Result<(String, Vec<IndexEntry>)> {
        let corrupt = |problem: String| ErrorKind::CorruptIndex { path: path.to_owned(), problem };
        let (bytes, parsed) = self.read_index_file(path, name)?;
        let entries = parsed.strict().map_err(|e| corrupt(e.to_string()))?;
        // Every line is UTF-8 once every line parsed.
        let text = String::from_utf8(bytes).map_err(|e| corrupt(e.to_string()))?;
        Ok((text, entries))
    }

    /// A file of the registry that cannot be read as what it should be.
    pub(super) fn damaged(&self, source: ebpkg_fs::ReadError) -> Error {
        ErrorKind::DamagedRegistry { url: self.url.clone(), cause: source }.into()
    }

    /// Every package name in the index, as published. Files whose name is not a
    /// package name or that are not where that name's index file belongs (temporary
    /// files, stray notes) are not packages.
    fn list_names(&self) -> Result<Vec<PackageName>> {
        let index = self.index_dir();
        let mut names = Vec::new();
        let mut dirs = vec![index.clone()];
        while let Some(dir) = dirs.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound && dir == index => break,
                Err(e) => return Err(ErrorKind::Io { action: "list", path: dir, cause: e }.into()),
            };
            for entry in entries {
                let entry = entry.map_err(Error::io("list", &dir))?;
                let Ok(kind) = entry.file_type() else { continue };
                if kind.is_dir() {
                    dirs.push(entry.path());
                    continue;
                }
                let Some(name) = entry.file_name().to_str().and_then(|n| PackageName::new(n).ok()) else { continue };
                if entry.path().strip_prefix(&index).is_ok_and(|rel| rel == Path::new(&index_path(name.as_str())))
                    && self.tuf_lists(&entry.path())?
                {
                    names.push(name);
                }
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Creates the registry if its directory is missing or empty; refuses a directory
    /// that is neither empty nor a registry.
    pub fn create_if_missing(&self) -> Result<()> {
        self.lock_for_writing().map(drop)
    }

    /// Whether the registry holds `name` `version` with checksum `cksum`, archive
    /// included. `false` when the directory is not a registry (yet).
    pub(crate) fn holds_exactly(&self, name: &PackageName, version: &Version, cksum: &Sha256Digest) -> Result<bool> {
        if !self.read_config()? {
            return Ok(false);
        }
        let entries = self.index(name)?.unwrap_or_default();
        let listed = entries.iter().any(|e| e.vers == *version && e.cksum == *cksum);
        Ok(listed && content::holds(&self.archive_path(cksum), cksum)?)
    }

    fn entry_for<'a>(
        &self,
        entries: &'a [IndexEntry],
        name: &PackageName,
        version: &Version,
    ) -> Result<&'a IndexEntry> {
        let entry = entries.iter().find(|e| e.vers == *version).ok_or_else(|| ErrorKind::NoSuchVersion {
            name: name.clone(),
            version: version.clone(),
            url: self.url.clone(),
            available: describe_versions(entries),
        })?;
        Ok(entry)
    }
}

impl Registry for FileRegistry {
    fn url(&self) -> &RegistryId {
        &self.url
    }

    fn tuf_files(&self) -> Result<Option<crate::registry::TufFiles>> {
        self.read_tuf_files()
    }

    fn index_text(&self, name: &PackageName) -> Result<Option<IndexText>> {
        self.require_registry_once()?;
        // The name as spelled is where the file nearly always is: read it at once
        // (a resolution reads thousands), and look for other spellings only if not.
        let exact = self.index_dir().join(index_path(name.as_str()));
        let read = |path: &Path| ebpkg_fs::open(path, MAX_INDEX_FILE_BYTES).and_then(|file| file.read_all_keep());
        let (path, (bytes, file)) = match read(&exact) {
            Ok(read) => (exact, read),
            Err(e) if e.is_not_found() || matches!(e, ebpkg_fs::ReadError::NotRegular { .. }) => {
                let Some((path, _)) = self.find_index_file(name)? else {
                    self.check_tuf_absent(&exact)?;
                    return Ok(None);
                };
                let read = read(&path).map_err(|source| self.damaged(source))?;
                (path, read)
            }
            Err(e) => return Err(self.damaged(e)),
        };
        self.check_tuf(&path, &bytes)?;
        // Of the file read, whatever its path now names: what was parsed from these
        // bytes is cached under exactly this.
        // With TUF, what the bytes are (they matched their signed hash above).
        let fingerprint = match self.tuf {
            Some(_) => Some(IndexFingerprint::of_contents(&bytes)),
            None => statx_fingerprint(&file, "", rustix::fs::AtFlags::EMPTY_PATH),
        };
        Ok(Some(IndexText { bytes, origin: path.display().to_string(), fingerprint }))
    }

    fn index_fingerprint(&self, name: &PackageName) -> Result<Option<IndexFingerprint>> {
        // With TUF, the signed hash of the file: whatever is cached under it is
        // what the metadata says the file is, with nothing read.
        if self.tuf.is_some() {
            let Some(index) = self.trusted()? else { return Ok(None) };
            return Ok(IndexFingerprint::signed(index, name));
        }
        self.require_registry_once()?;
        // Relative to the index directory, opened once: a warm resolution asks for
        // thousands, and walking the whole path each time was most of the cost.
        // (Not opened yet, as in a registry nothing was published to: tried again next time.)
        let dir = match self.index_dir_fd.get() {
            Some(dir) => dir,
            None => {
                use rustix::fs::{Mode, OFlags};
                let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
                let Ok(dir) = rustix::fs::open(self.index_dir(), flags, Mode::empty()) else { return Ok(None) };
                self.index_dir_fd.get_or_init(|| std::sync::Arc::new(dir))
            }
        };
        let path = ebpkg_spec::index::IndexPath::of(name);
        Ok(statx_fingerprint(dir, path.as_str(), rustix::fs::AtFlags::SYMLINK_NOFOLLOW))
    }

    fn names(&self) -> Result<Vec<PackageName>> {
        self.require_registry()?;
        self.list_names()
    }

    fn download(&self, entry: &IndexEntry) -> Result<Vec<u8>> {
        let path = self.archive_path(&entry.cksum);
        match ebpkg_fs::read(&path, Limits::default().max_archive_bytes) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.is_not_found() => {
                self.require_registry()?;
                Err(ErrorKind::ArchiveMissing {
                    name: entry.name.clone(),
                    version: entry.vers.clone(),
                    url: self.url.clone(),
                    path,
                }
                .into())
            }
            Err(e) => Err(self.damaged(e)),
        }
    }

    fn publish(
        &self,
        archive: &ebpkg_archive::VerifiedArchive,
        manifest: &Manifest,
        signature: Option<&PublishSignature>,
    ) -> Result<IndexEntry> {
        self.publish_archive(archive, manifest, signature)
    }

    fn bundle(&self, entry: &SignedVersion) -> Result<Vec<u8>> {
        let path = bundle_file(&self.root, &entry.cksum);
        match ebpkg_fs::read(&path, ebpkg_signing::MAX_BUNDLE_BYTES as u64) {
            Ok(bytes) => Ok(bytes),
            Err(e) if e.is_not_found() => Err(ErrorKind::BundleMissing {
                package: entry.name.clone(),
                version: entry.version.clone(),
                registry: self.url.clone(),
            }
            .into()),
            Err(e) => Err(self.damaged(e)),
        }
    }

    fn attestations(&self, name: &PackageName, version: &Version) -> Result<Option<Vec<u8>>> {
        self.read_attestations(name, version)
    }

    fn add_attestation(
        &self,
        name: &PackageName,
        version: &Version,
        attestation: &ebpkg_signing::SignedAttestation,
    ) -> Result<crate::registry::AttestationAccepted> {
        self.attach_attestation(name, version, attestation)
    }

    fn publisher_key(&self, id: &KeyId) -> Result<KeyRecord> {
        // A registry that is not there has no say about any key.
        self.require_registry()?;
        let path = key_file(&self.root, id);
        let pem = match ebpkg_fs::read_text(&path, ebpkg_signing::MAX_KEY_FILE_BYTES) {
            Ok(pem) => pem,
            Err(e) if e.is_not_found() => {
                return Err(ErrorKind::NoSuchKey { key: *id, registry: self.url.clone() }.into());
            }
            Err(e) => return Err(self.damaged(e)),
        };
        let key = PublicKey::from_pem(&pem)
            .map_err(|e| ErrorKind::CorruptIndex { path: path.clone(), problem: e.to_string() })?;
        Ok(KeyRecord { key, revoked_at: None })
    }

    fn set_yanked(&self, name: &PackageName, version: &Version, yanked: bool) -> Result<IndexEntry> {
        self.update_yanked(name, version, yanked)
    }

    fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        self.require_registry()?;
        self.search_index(query, limit)
    }
}

/// "versions 1.0.0, 1.1.0" or "no versions", for error messages.
pub(crate) fn describe_versions(entries: &[IndexEntry]) -> String {
    if entries.is_empty() {
        return "no versions".into();
    }
    let list: Vec<String> = entries.iter().map(|e| e.vers.to_string()).collect();
    format!("versions {}", list.join(", "))
}

/// Whether something that is not a directory is at `path`. Not only regular files:
/// a device or FIFO left where an index file belongs is found here and refused
/// when read, rather than passed over as "no such package".
fn is_file(path: &Path) -> Result<bool> {
    match fs::metadata(path) {
        Ok(meta) => Ok(!meta.is_dir()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ErrorKind::Io { action: "inspect", path: path.to_owned(), cause: e }.into()),
    }
}

/// Whether `dir` holds anything but what a registry being created by another writer
/// may hold already (its lock, a temporary config.json); a missing directory holds
/// nothing.
fn has_foreign_entries(dir: &Path) -> Result<bool> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(ErrorKind::Io { action: "list", path: dir.to_owned(), cause: e }.into()),
    };
    for entry in entries {
        let entry = entry.map_err(Error::io("list", dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name != LOCK_FILE && !name.starts_with(TEMP_PREFIX) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Every spelling of `s` with each `-` or `_` taken either way. Index directories are
/// at most five characters (`my/-p`), so this is at most eight strings.
fn dash_variants(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for c in s.chars() {
        let choices: &[char] = if c == '-' || c == '_' { &['-', '_'] } else { &[] };
        if choices.is_empty() {
            out.iter_mut().for_each(|v| v.push(c));
        } else {
            out = out
                .into_iter()
                .flat_map(|v| {
                    choices.iter().map(move |alt| {
                        let mut v = v.clone();
                        v.push(*alt);
                        v
                    })
                })
                .collect();
        }
    }
    out
}

/// How long after its last change a file's fingerprint is trusted: a write within
/// the file system's timestamp granularity (2 s on the coarsest, FAT) of the last
/// one could leave every timestamp as it was.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// The settled fingerprint of `path` under `dir` (with `flags`), now; `None` if it
/// cannot be had. One `statx` for both the file a fingerprint is asked of and
/// the file just read, so that the two compare field for field.
pub(crate) fn statx_fingerprint(
    dir: impl std::os::fd::AsFd,
    path: impl rustix::path::Arg,
    flags: rustix::fs::AtFlags,
) -> Option<IndexFingerprint> {
    let stat = rustix::fs::statx(dir, path, flags, rustix::fs::StatxFlags::BASIC_STATS).ok()?;
    settled_fingerprint(&stat, std::time::SystemTime::now())
}

/// The fingerprint of a regular file last changed at least [`SETTLE`] before `now`.
fn settled_fingerprint(stat: &rustix::fs::Statx, now: std::time::SystemTime) -> Option<IndexFingerprint> {
    let basic = rustix::fs::StatxFlags::TYPE
        | rustix::fs::StatxFlags::INO
        | rustix::fs::StatxFlags::SIZE
        | rustix::fs::StatxFlags::MTIME
        | rustix::fs::StatxFlags::CTIME;
    let regular = rustix::fs::FileType::from_raw_mode(stat.stx_mode.into()) == rustix::fs::FileType::RegularFile;
    if !regular || stat.stx_mask & basic.bits() != basic.bits() {
        return None;
    }
    let ns = |t: rustix::fs::StatxTimestamp| i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec);
    let ctime_ns = ns(stat.stx_ctime);
    let now_ns = now.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    let settled_before = i128::try_from(now_ns.checked_sub(SETTLE.as_nanos())?).ok()?;
    (ctime_ns <= settled_before).then(|| IndexFingerprint::File {
        dev: rustix::fs::makedev(stat.stx_dev_major, stat.stx_dev_minor),
        ino: stat.stx_ino,
        size: stat.stx_size,
        mtime_ns: ns(stat.stx_mtime),
        ctime_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_is_given_only_once_a_file_settled_and_changes_with_any_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        fs::write(&path, b"one").unwrap();
        let stat = |path: &Path| {
            let flags = rustix::fs::AtFlags::SYMLINK_NOFOLLOW;
            rustix::fs::statx(rustix::fs::CWD, path, flags, rustix::fs::StatxFlags::BASIC_STATS).unwrap()
        };
        let meta = stat(&path);
        let now = std::time::SystemTime::now();
        assert_eq!(settled_fingerprint(&meta, now), None, "changed just now: not trusted yet");
        let later = now + SETTLE + std::time::Duration::from_millis(10);
        let first = settled_fingerprint(&meta, later).unwrap();
        assert!(matches!(first, IndexFingerprint::File { size: 3, .. }));
        assert_eq!(IndexFingerprint::from_bytes(&first.to_bytes()), Some(first));
        let contents = IndexFingerprint::of_contents(b"one");
        assert_eq!(IndexFingerprint::from_bytes(&contents.to_bytes()), Some(contents));
        assert_ne!(contents.to_bytes(), first.to_bytes());
        let mut unknown = contents.to_bytes();
        unknown[0] = 2;
        assert_eq!(IndexFingerprint::from_bytes(&unknown), None);
        std::thread::sleep(std::time::Duration::from_millis(20));
        // Same size, written in place: the change time moves.
        fs::write(&path, b"two").unwrap();
        let meta = stat(&path);
        let second = settled_fingerprint(&meta, later + std::time::Duration::from_secs(1)).unwrap();
        assert_ne!(first, second);
        let dir_meta = stat(dir.path());
        assert_eq!(settled_fingerprint(&dir_meta, later), None, "not a regular file");
    }

    #[test]
    fn dash_variants_cover_both_spellings() {
        assert_eq!(dash_variants("ne"), ["ne"]);
        let mut v = dash_variants("m-/_p");
        v.sort();
        assert_eq!(v, ["m-/-p", "m-/_p", "m_/-p", "m_/_p"]);
    }
}
