//! What can go wrong getting packages, said so that a person knows what to do next.

use std::io;
use std::path::PathBuf;

use ebpkg_archive::UnpackError;
use ebpkg_spec::PackageName;
use ebpkg_spec::types::{KeyId, Sha256Digest};
use semver::Version;

use crate::{RegistryId, RegistryIdError};

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a registry, cache or mirror operation failed. The message (`Display`) is for
/// people; [`Error::kind`] tells programs which failure it was. (Boxed: the details
/// are large, and errors travel through every `Result` of the crate.)
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct Error(Box<ErrorKind>);

/// The failures of this crate, with their details.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    #[error("cannot {action} {}: {cause}", path.display())]
    Io {
        /// What was being done, as a verb phrase: "read", "create directory", ….
        action: &'static str,
        path: PathBuf,
        cause: io::Error,
    },

    #[error(transparent)]
    Url(#[from] RegistryIdError),

    #[error("{url}: {what}")]
    Unsupported { url: RegistryId, what: String },

    #[error(
        "there is no ebpkg registry at {}: its config.json is missing. \
         Check the registry URL, or publish a package there to create a registry",
        path.display()
    )]
    NoRegistry { path: PathBuf },

    #[error(
        "{} is not empty and is not an ebpkg registry (it has no config.json); refusing to publish into it. \
         Use an empty or new directory for a registry",
        path.display()
    )]
    NotARegistry { path: PathBuf },

    #[error("{}: {problem}", path.display())]
    BadRegistryConfig { path: PathBuf, problem: String },

    #[error("the registry {url} is damaged: {cause}. Restore the file from a backup or a mirror of the registry")]
    DamagedRegistry { url: RegistryId, cause: ebpkg_fs::ReadError },

    #[error(
        "index file {} is corrupt: {problem}. The registry needs repair: restore the file from a backup \
         (published lines never change except `yanked`)",
        path.display()
    )]
    CorruptIndex { path: PathBuf, problem: String },

    #[error("there is no package `{name}` in the registry {url}; check the name with `ebpkg search`")]
    NoSuchPackage { name: PackageName, url: RegistryId },

    #[error("{name}@{version} is not in the registry {url}; it has {available}")]
    NoSuchVersion {
        name: PackageName,
        version: Version,
        url: RegistryId,
        /// The versions it does have, for the message.
        available: String,
    },

    #[error(
        "{name}@{version} is already published in {url}. Published versions never change, and yanking does not \
         free a version: bump the version in ebpkg.toml and publish again"
    )]
    VersionExists { name: PackageName, version: Version, url: RegistryId },

    #[error(
        "cannot publish `{name}`: the registry {url} already has the package `{existing}`, and names that differ \
         only in case or in `-` versus `_` are the same package. Publish as `{existing}` if it is yours, \
         or choose another name"
    )]
    NameCollision { name: PackageName, existing: PackageName, url: RegistryId },

    #[error(
        "cannot publish `{name}`: it is too close to `{existing}`, which the registry {url} already has ({rules}), so \
         one could pass for the other. Choose another name; if `{existing}` is yours, publish under it (or sign with \
         the key that signed it); to have a name released, ask the registry's operator",
        rules = ebpkg_spec::names::LOOK_ALIKES
    )]
    NameTooClose { name: PackageName, existing: PackageName, url: RegistryId },

    #[error(
        "cannot publish {name}@{version}: {problem}. Pack the package again and publish exactly the archive \
         and manifest that packing produced"
    )]
    ManifestMismatch { name: PackageName, version: Version, problem: String },

    #[error("cannot publish {name}@{version}: its archive would be refused by everyone installing it: {cause}")]
    InvalidArchive { name: PackageName, version: Version, cause: UnpackError },

    #[error(
        "the registry {url} lists {name}@{version}, but its archive {} is missing; the registry is damaged. \
         Restore the archive from a backup or a mirror",
        path.display()
    )]
    ArchiveMissing { name: PackageName, version: Version, url: RegistryId, path: PathBuf },

    #[error(
        "the archive of {package}@{version} from {registry} has sha256 {actual}, but {expected} is pinned \
         (by ebpkg.lock, or by the registry's index when nothing is locked). The archive differs from the one \
         that was locked: it may have been tampered with, or the version was republished. Nothing was stored. \
         Report it to the registry's maintainers; only if you know why the content changed, run \
         `ebpkg update {package}` to lock the new archive"
    )]
    ChecksumMismatch {
        package: PackageName,
        version: Version,
        expected: Sha256Digest,
        actual: Sha256Digest,
        registry: RegistryId,
    },

    #[error(
        "ebpkg.lock and the registry {registry} disagree about {package}@{version}: the lock pins sha256 {locked}, \
         the registry lists {index}. Either ebpkg.lock was edited (see `git diff ebpkg.lock`; restore it with \
         `git checkout ebpkg.lock`), or the version was republished or the registry's index altered (report it to \
         the registry's maintainers). Nothing was installed; only if you know why they differ, run \
         `ebpkg update {package}` to lock the registry's archive"
    )]
    LockDrift {
        package: PackageName,
        version: Version,
        locked: Sha256Digest,
        index: Sha256Digest,
        registry: RegistryId,
    },

    #[error(
        "ebpkg.lock records {package}@{version} as signed by key {}, but the registry {registry} now says {}. \
         A locked version never changes signer: someone re-signed it or altered the index, so it is not installed. \
         If the publisher really re-signed it, check with them, then run `ebpkg update {package}` to lock it anew",
        locked.map_or("(none: unsigned)".to_owned(), |k| k.to_string()),
        index.map_or("it is unsigned".to_owned(), |k| format!("key {k} signed it"))
    )]
    SignerDrift {
        package: PackageName,
        version: Version,
        locked: Option<KeyId>,
        index: Option<KeyId>,
        registry: RegistryId,
    },

    #[error(
        "the signature of {package}@{version} from {registry} does not hold: {cause}. The archive or its bundle was \
         changed after publication; nothing from it is installed. Tell the registry's operators"
    )]
    BadSignature { package: PackageName, version: Version, registry: RegistryId, cause: ebpkg_signing::Error },

    #[error(
        "{package}@{version} is signed by key {key}, which cannot be checked: {what}; the package is not installed"
    )]
    KeyUnavailable { package: PackageName, version: Version, key: KeyId, registry: RegistryId, what: String },

    #[error(
        "{package}@{version} is signed, but the registry {registry} has no bundle for it: the registry is damaged or \
         was tampered with, so the package is not installed. Tell the registry's operators"
    )]
    BundleMissing { package: PackageName, version: Version, registry: RegistryId },

    #[error("{what}: {cause}")]
    Signing { what: String, cause: ebpkg_signing::Error },

    #[error("{registry}: {cause}; nothing from it was used")]
    Tuf { registry: RegistryId, cause: ebpkg_tuf::Error },

    #[error(
        "the registry {registry} has TUF metadata ({}), which every change must re-sign: set EBPKG_TUF_ONLINE_KEY to \
         the registry's online key; nothing was written",
        dir.display()
    )]
    TufKeyNeeded { registry: RegistryId, dir: PathBuf },

    #[error("the registry {registry} refused the attestation of {package}@{version}: {reason}")]
    AttestationRefused { package: PackageName, version: Version, registry: RegistryId, reason: String },

    #[error("the registry {registry} has no publisher key {key}")]
    NoSuchKey { key: KeyId, registry: RegistryId },

    #[error(
        "{registry} requires signed packages (\"require-signatures\" in its config.json), and {package}@{version} \
         is not signed. Create a key with `ebpkg key generate` and publish again (ebpkg signs with it)"
    )]
    UnsignedRefused { package: PackageName, version: Version, registry: RegistryId },

    #[error(
        "{what}: {method} {url} answered {}: {detail}{}",
        status_text(*status),
        hint.as_deref().map(|h| format!(". {h}")).unwrap_or_default()
    )]
    Http {
        /// What was being done: "publishing meter@1.0.0".
        what: String,
        method: &'static str,
        url: String,
        status: u16,
        /// The server's own words (its `{"errors":[{"detail"}]}`).
        detail: String,
        /// What to do, when the server's words do not already say it.
        hint: Option<String>,
        /// How long the server asked to wait (429, 503).
        retry_after: Option<u64>,
    },

    #[error(
        "{what}: {method} {url} failed{}: {cause}. Check the registry URL and the network (proxies come from \
         HTTPS_PROXY, HTTP_PROXY and NO_PROXY), then try again",
        if *attempts > 1 { format!(" {attempts} times") } else { String::new() }
    )]
    Network { what: String, method: &'static str, url: String, cause: String, attempts: u32 },

    #[error(
        "{what}: {method} {url} did not finish within {secs} s (the server kept sending too slowly); try again \
         later or another mirror, or allow more time with ${var}"
    )]
    TooSlow { what: String, method: &'static str, url: String, secs: u64, var: &'static str },

    #[error("{what}: {method} {url} failed: the server's certificate was refused ({cause}). {hint}")]
    Certificate {
        what: String,
        method: &'static str,
        url: String,
        cause: String,
        /// What to do (`crate::cainfo::certificate_hint`): for an unknown issuer, the CA file setting.
        hint: String,
    },

    #[error(transparent)]
    CaInfo(#[from] crate::cainfo::CaInfoError),

    #[error("cannot set up HTTP for {url}: {cause}")]
    HttpClient { url: String, cause: String },

    #[error("{url}: the answer is not what an ebpkg registry sends: {problem}")]
    BadResponse { url: String, problem: String },

    #[error(
        "{url} is not an ebpkg registry server: GET {url}index/config.json answered {}. Check the registry URL \
         (a server's URL is the part before `index/` and `api/`)",
        status_text(*status)
    )]
    NotARegistryServer { url: RegistryId, status: u16 },

    #[error(
        "{what} on {url} needs an API token; log in with `ebpkg login --registry {url}` (or set EBPKG_REGISTRY_TOKEN)"
    )]
    NeedsToken { what: &'static str, url: RegistryId },

    #[error(
        "{what} needs the registry server {url}, and offline mode (--offline, --frozen) forbids reaching it; \
         run without it"
    )]
    OfflineRegistry { what: &'static str, url: RegistryId },

    #[error(
        "the index of `{name}` from {url} is not in the cache, and offline mode forbids fetching it. \
         Run once without --offline (for example `ebpkg fetch`) to fill the cache"
    )]
    OfflineIndex { name: PackageName, url: RegistryId },

    #[error(
        "{package}@{version} is not in the cache, and offline mode forbids downloading it from {registry}. \
         Run once without --offline (for example `ebpkg fetch`) to fill the cache"
    )]
    Offline { package: PackageName, version: Version, registry: RegistryId },

    #[error("cannot unpack {package}@{version} from {}: {cause}", archive.display())]
    Unpack { package: PackageName, version: Version, archive: PathBuf, cause: UnpackError },

    #[error(
        "ebpkg.lock takes {package}@{version} from {registry}, but that registry no longer lists it. \
         Mirror from a registry that still has it, or run `ebpkg update {package}` and mirror the new lockfile"
    )]
    LockedNotInRegistry { package: PackageName, version: Version, registry: RegistryId },

    #[error(
        "ebpkg.lock takes `{name}` from two registries, {first} and {second}; a mirror holds one package per name, \
         so it cannot hold both. Mirror the lockfile's packages of each registry into its own directory"
    )]
    MirrorConflict { name: PackageName, first: RegistryId, second: RegistryId },

    #[error(
        "the lockfile takes packages from {first} and {second}, which both have TUF metadata; a mirror carries one \
         registry's metadata, so make one mirror per registry"
    )]
    MirrorTufConflict { first: RegistryId, second: RegistryId },

    #[error(
        "the registry {url} already holds {name}@{version} with sha256 {existing}, not {incoming}; \
         it was filled from other content. Mirror into a new, empty directory"
    )]
    ImportDiffers {
        name: PackageName,
        version: Version,
        url: RegistryId,
        existing: Sha256Digest,
        incoming: Sha256Digest,
    },
}

impl Error {
    /// Which failure this is.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// The failure's details, by value.
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }

    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |cause| ErrorKind::Io { action, path, cause }.into()
    }
}

/// The reason phrase of a status, for messages: "409 Conflict".
pub fn status_text(status: u16) -> String {
    match reqwest::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()) {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}

impl From<RegistryIdError> for Error {
    fn from(e: RegistryIdError) -> Error {
        ErrorKind::Url(e).into()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error(Box::new(kind))
    }
}
