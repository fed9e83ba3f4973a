//! Where packages come from: registries, the local download cache, and mirrors.
//!
//! - [`Registry`] is what every registry offers (index, download, publish, yank,
//!   search, owners); [`open_registry`] opens one by [`RegistryId`]:
//!   [`FileRegistry`], a registry in a directory, or [`HttpRegistry`], a client of
//!   a registry server (index cached and revalidated, retries, offline use).
//! - [`Cache`] keeps downloaded archives by digest and their unpacked trees, and never
//!   stores or uses an archive whose digest is not the one the caller trusts.
//! - [`mirror`] copies exactly a lockfile's packages into a file registry.
//!
//! README.md describes the layouts on disk and the concurrency guarantees.

mod atomic;
mod cache;
mod cainfo;
mod content;
mod error;
mod file_registry;
mod http_registry;
mod mirror;
mod open;
mod registry;
mod tuf;

pub use cache::{Cache, CachedKey, CachedSource, CleanReport, KeyProblem, VerifiedSignature, check_locked};
pub use cainfo::{CAINFO_ENV, CaInfo, CaInfoError, CaInfoSetting, MAX_CAINFO_BYTES};
pub use error::{Error, ErrorKind, Result};
pub use file_registry::{CONFIG_FILE, FileRegistry, Imported, REGISTRY_FORMAT};
pub use http_registry::{
    ANSWER_DEADLINE_ENV, ARCHIVE_DEADLINE_ENV, Deadlines, HttpRegistry, OpenOptions, Progress,
    github_actions_oidc_token,
};
pub use mirror::{MirrorReport, mirror};
pub use open::{check_root as check_tuf_root, open_registry};
pub use registry::{
    IndexFingerprint, IndexText, KeyRecord, MatchedOn, NewToken, NewTrustedPublisher, Owner, PublishAllowed,
    PublishSignature, PublisherKey, Registry, SearchHit, SignedVersion, SignedWith, TokenCreated, TokenInfo,
    TrustedPublisher, warn_skipped_line,
};
pub use tuf::TufTrust;
// Every call here names a registry by it: parsed once, where the configuration, a
// manifest or the lockfile is read (ebpkg-spec's `registry_id`).
pub use ebpkg_spec::{RegistryId, RegistryIdError, RegistryKind};
