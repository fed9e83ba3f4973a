//! The interface every kind of registry offers (opening one by URL: `open`).

use ebpkg_archive::VerifiedArchive;
use ebpkg_signing::{PublicKey, SignedAttestation, SignedBundle, SigningKey};
use ebpkg_spec::index::IndexEntry;
pub use ebpkg_spec::registry_api::AttestationAccepted;
pub use ebpkg_spec::registry_api::{
    MatchedOn, NewToken, NewTrustedPublisher, Owner, PublishAllowed, PublisherKey, SearchHit, TokenCreated, TokenInfo,
    TrustedPublisher,
};
use ebpkg_spec::types::{KeyId, Sha256Digest};
use ebpkg_spec::{Manifest, PackageName};
use semver::Version;

use crate::error::{ErrorKind, Result};
use crate::{RegistryId, RegistryKind};

/// A place packages are published to and fetched from.
///
/// Blocking, because the CLI is; implementations are shared between threads (a
/// parallel fetch), hence `Send + Sync`. Nothing here checks archive digests on the
/// way out: [`Registry::download`] returns raw bytes and the caller (the
/// [`Cache`](crate::Cache)) checks them against the digest it trusts.
pub trait Registry: Send + Sync {
    /// The registry's canonical URL, as lockfiles record it.
    fn url(&self) -> &RegistryId;

    /// The index file of a package exactly as served, checked against TUF
    /// metadata when there is a trusted root (and its absence too). The name is
    /// matched in normalized form (`my_pkg` finds `my-pkg`). `None`: no such package.
    fn index_text(&self, name: &PackageName) -> Result<Option<IndexText>>;

    /// What identifies the current contents of `name`'s index file without reading
    /// it, for caches of what was parsed from it: equal fingerprints mean equal
    /// contents. `None` (the default): this registry cannot tell, or not safely
    /// now (a file changed too recently, or index files are checked against TUF
    /// metadata on every read), so the file must be read.
    fn index_fingerprint(&self, name: &PackageName) -> Result<Option<IndexFingerprint>> {
        let _ = name;
        Ok(None)
    }

    /// How many index files this registry has asked a server for so far in this
    /// command (0 for a directory). Reading ahead keeps many reads in flight only
    /// once reads wait on a network: a warm resolution answered from the cache
    /// under signed metadata reads locally, where threads beyond the CPUs only
    /// compete with the resolver.
    fn index_requests(&self) -> u64 {
        0
    }

    /// Every published version of a package, in publication order, yanked ones
    /// included; the entries carry the name as published. A damaged line costs
    /// only itself, with a warning. `None`: no such package.
    fn index(&self, name: &PackageName) -> Result<Option<Vec<IndexEntry>>> {
        let Some(text) = self.index_text(name)? else { return Ok(None) };
        let parsed = ebpkg_spec::index::parse_index_file(name.as_str(), &text.bytes);
        for problem in &parsed.problems {
            warn_skipped_line(self.url(), &text.origin, problem);
        }
        Ok(Some(parsed.entries))
    }

    /// The names of all packages, as published, sorted.
    fn names(&self) -> Result<Vec<PackageName>>;

    /// The archive an entry names, as stored: not yet checked against `entry.cksum`.
    fn download(&self, entry: &IndexEntry) -> Result<Vec<u8>>;

    /// Publishes `archive`, the packed form of `manifest`, signed by `signature`
    /// (unsigned when `None`), and returns its new index entry. Refused when the
    /// version exists (even yanked), the name collides with a differently spelled
    /// package, or the registry refuses the signature or its absence. The
    /// archive's digest is the one it comes with (the packer's): not computed again.
    fn publish(
        &self,
        archive: &VerifiedArchive,
        manifest: &Manifest,
        signature: Option<&PublishSignature>,
    ) -> Result<IndexEntry>;

    /// The Sigstore bundle of a signed version, as stored (not yet verified; at
    /// most [`ebpkg_signing::MAX_BUNDLE_BYTES`]).
    fn bundle(&self, version: &SignedVersion) -> Result<Vec<u8>>;

    /// The attestation file of a published version
    /// ([`AttestationFile`](ebpkg_spec::attestation::AttestationFile)), exactly as
    /// served and not yet parsed, checked against TUF metadata when there is a
    /// trusted root (and so is its absence). `None`: nobody attested the version.
    /// The attestations in it are the caller's to verify.
    fn attestations(&self, name: &PackageName, version: &Version) -> Result<Option<Vec<u8>>> {
        let _ = (name, version);
        Ok(None)
    }

    /// Attaches a kernel verification attestation to a published version. The
    /// registry refuses one that does not name the version's archive, or that is
    /// not signed by a key it knows for the package.
    fn add_attestation(
        &self,
        name: &PackageName,
        version: &Version,
        attestation: &SignedAttestation,
    ) -> Result<AttestationAccepted> {
        let _ = (name, version, attestation);
        Err(ErrorKind::Unsupported { url: self.url().clone(), what: "attestations cannot be added here".into() }.into())
    }

    /// A publisher key the registry knows, and whether its owner revoked it. The
    /// caller checks that the key hashes to `id`.
    fn publisher_key(&self, id: &KeyId) -> Result<KeyRecord>;

    /// The caller's publisher keys. Only registry servers have accounts.
    fn my_keys(&self) -> Result<Vec<PublisherKey>> {
        Err(no_accounts(self.url()))
    }

    /// Registers a key's public half to sign the caller's packages with, proving
    /// possession of the private half by signing the registry's proof message.
    fn add_key(&self, key: &SigningKey) -> Result<PublisherKey> {
        let _ = key;
        Err(no_accounts(self.url()))
    }

    /// Revokes one of the caller's keys: publishes signed by it are refused from
    /// then on, and installs are told.
    fn revoke_key(&self, id: &KeyId) -> Result<PublisherKey> {
        let _ = id;
        Err(no_accounts(self.url()))
    }

    /// Whether the caller's token may publish `name@version`, as the publish
    /// itself would answer before its archive (the token's scopes and package
    /// globs, the owners, the names, and the signing key when there is one:
    /// registered, live and an owner's). `None`: the registry has no tokens to ask
    /// about (a directory registry: whoever can write it publishes).
    fn may_publish(
        &self,
        name: &PackageName,
        version: &Version,
        signed: SignedWith<'_>,
    ) -> Result<Option<PublishAllowed>> {
        let _ = (name, version, signed);
        Ok(None)
    }

    /// The caller's live API tokens (never their secrets). Only registry servers have accounts.
    fn tokens(&self) -> Result<Vec<TokenInfo>> {
        Err(no_accounts(self.url()))
    }

    /// Creates an API token for the caller; its secret is in the answer, and only there.
    fn create_token(&self, new: &NewToken) -> Result<TokenCreated> {
        let _ = new;
        Err(no_accounts(self.url()))
    }

    /// Revokes one of the caller's tokens by its id: refused from then on. The registry's answer.
    fn revoke_token(&self, id: i64) -> Result<String> {
        let _ = id;
        Err(no_accounts(self.url()))
    }

    /// The registry's TUF metadata files (name, bytes), when it has any: what a
    /// mirror copies so that its readers check it against the origin's root.
    fn tuf_files(&self) -> Result<Option<crate::registry::TufFiles>> {
        Ok(None)
    }

    /// Yanks (`true`) or un-yanks (`false`) a version; returns the updated entry.
    fn set_yanked(&self, name: &PackageName, version: &Version, yanked: bool) -> Result<IndexEntry>;

    /// Packages matching `query` (case-insensitive substring of the name, a keyword,
    /// a program name or the description), best matches first, at most `limit`.
    /// An empty query lists every package by name.
    fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>>;

    /// The package's owners. Only registry servers have accounts.
    fn owners(&self, name: &PackageName) -> Result<Vec<Owner>> {
        let _ = name;
        Err(no_accounts(self.url()))
    }

    /// Adds owners; returns the registry's message.
    fn add_owners(&self, name: &PackageName, users: &[String]) -> Result<String> {
        let _ = (name, users);
        Err(no_accounts(self.url()))
    }

    /// Removes owners; returns the registry's message.
    fn remove_owners(&self, name: &PackageName, users: &[String]) -> Result<String> {
        let _ = (name, users);
        Err(no_accounts(self.url()))
    }

    /// The CI identities that may publish the package through trusted publishing.
    fn trusted_publishers(&self, name: &PackageName) -> Result<Vec<TrustedPublisher>> {
        let _ = name;
        Err(no_accounts(self.url()))
    }

    /// Lets a CI identity publish the package; returns the package's list.
    fn add_trusted_publisher(&self, name: &PackageName, new: &NewTrustedPublisher) -> Result<Vec<TrustedPublisher>> {
        let _ = (name, new);
        Err(no_accounts(self.url()))
    }

    /// Stops one from publishing; returns the registry's message.
    fn remove_trusted_publisher(&self, name: &PackageName, id: i64) -> Result<String> {
        let _ = (name, id);
        Err(no_accounts(self.url()))
    }
}

/// An index file as a registry serves it.
#[derive(Debug, Clone)]
pub struct IndexText {
    pub bytes: Vec<u8>,
    /// Where it was read from (a path or a URL), for messages about its lines.
    pub origin: String,
    /// The [`IndexFingerprint`] of the file these bytes were read from, taken
    /// after reading, when the registry can tell one ([`Registry::index_fingerprint`]).
    pub fingerprint: Option<IndexFingerprint>,
}

/// What identifies an index file's contents without reading them: equal
/// fingerprints mean equal bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexFingerprint {
    /// The file as a file system tells it: device, inode, size, and modification
    /// and change times. Any write to the file, or its replacement by a rename,
    /// changes the change time (which no user can set back), provided the file
    /// was not written within the file system's timestamp granularity of being
    /// fingerprinted (which [`Registry::index_fingerprint`] refuses).
    File { dev: u64, ino: u64, size: u64, mtime_ns: i128, ctime_ns: i128 },
    /// The SHA-256 and length of the contents, as the registry's signed metadata
    /// (TUF) lists them: whatever file or answer the bytes come from.
    Contents { sha256: [u8; 32], len: u64 },
}

impl IndexFingerprint {
    /// The size of [`IndexFingerprint::to_bytes`]: a kind, then 56 bytes.
    pub const BYTES: usize = 57;

    /// The fingerprint of `name`'s index file that signed metadata gives: its
    /// listed hash and length (`None`: not listed).
    pub fn signed(index: &ebpkg_tuf::TrustedIndex, name: &PackageName) -> Option<IndexFingerprint> {
        let (sha256, len) = index.target(&ebpkg_spec::index_target(name.as_str()))?;
        Some(IndexFingerprint::Contents { sha256, len })
    }

    /// The fingerprint of `bytes` as TUF metadata would list them.
    pub fn of_contents(bytes: &[u8]) -> IndexFingerprint {
        use sha2::Digest;
        IndexFingerprint::Contents { sha256: sha2::Sha256::digest(bytes).into(), len: bytes.len() as u64 }
    }

    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut out = [0; Self::BYTES];
        match self {
            IndexFingerprint::File { dev, ino, size, mtime_ns, ctime_ns } => {
                out[1..9].copy_from_slice(&dev.to_le_bytes());
                out[9..17].copy_from_slice(&ino.to_le_bytes());
                out[17..25].copy_from_slice(&size.to_le_bytes());
                out[25..41].copy_from_slice(&mtime_ns.to_le_bytes());
                out[41..].copy_from_slice(&ctime_ns.to_le_bytes());
            }
            IndexFingerprint::Contents { sha256, len } => {
                out[0] = 1;
                out[1..33].copy_from_slice(sha256);
                out[33..41].copy_from_slice(&len.to_le_bytes());
            }
        }
        out
    }

    /// What [`IndexFingerprint::to_bytes`] wrote; `None` for anything else.
    pub fn from_bytes(b: &[u8; Self::BYTES]) -> Option<IndexFingerprint> {
        let u64_at = |i: usize| Some(u64::from_le_bytes(b[i..i + 8].try_into().ok()?));
        let i128_at = |i: usize| Some(i128::from_le_bytes(b[i..i + 16].try_into().ok()?));
        match b[0] {
            0 => Some(IndexFingerprint::File {
                dev: u64_at(1)?,
                ino: u64_at(9)?,
                size: u64_at(17)?,
                mtime_ns: i128_at(25)?,
                ctime_ns: i128_at(41)?,
            }),
            1 if b[41..].iter().all(|x| *x == 0) => {
                Some(IndexFingerprint::Contents { sha256: b[1..33].try_into().ok()?, len: u64_at(33)? })
            }
            _ => None,
        }
    }
}

/// How the version a publish check asks about will be signed: what the check can
/// answer for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignedWith<'a> {
    /// With this publisher key: checked as the publish checks it (registered,
    /// live, an owner's).
    Key(&'a KeyId),
    /// Elsewhere (the archive written out to sign with cosign, say): the key is
    /// not known, so not checked.
    Elsewhere,
    /// Not at all: refused as the publish refuses it where signatures are required.
    Unsigned,
}

/// Says that a line of an index file is left out, and what to do about it.
pub fn warn_skipped_line(url: &RegistryId, origin: &str, problem: &ebpkg_spec::index::IndexError) {
    let repair = match url.kind() {
        RegistryKind::File => "needs repair: restore the file from a backup",
        RegistryKind::Http => "needs repair; tell its operator",
    };
    tracing::warn!("{origin}: {problem}; that line is skipped (the registry {url} {repair})");
}

fn no_accounts(url: &RegistryId) -> crate::Error {
    ErrorKind::Unsupported {
        url: url.clone(),
        what: "a directory registry has no accounts, so no owners: whoever can write the directory publishes. \
               Owners exist on registry servers (`ebpkg-registry`)"
            .into(),
    }
    .into()
}

/// A publish's signature: the bundle and the key it verifies with (checked by
/// the publishing side before anything is sent).
#[derive(Debug, Clone)]
pub struct PublishSignature {
    pub bundle: SignedBundle,
    pub key: PublicKey,
}

/// A registry's TUF metadata files: name (in `tuf/`) and bytes.
pub type TufFiles = Vec<(String, Vec<u8>)>;

/// A version whose index line (or lockfile entry) names a signing key: what
/// fetching and checking its signature needs.
#[derive(Debug, Clone)]
pub struct SignedVersion {
    pub name: PackageName,
    pub version: Version,
    pub cksum: Sha256Digest,
    pub key: KeyId,
}

/// A publisher key as a registry serves it.
#[derive(Debug, Clone)]
pub struct KeyRecord {
    pub key: PublicKey,
    /// When its owner revoked it, if they did.
    pub revoked_at: Option<String>,
}
