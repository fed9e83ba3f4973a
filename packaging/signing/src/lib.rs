//! Publisher signatures: keys in cosign's formats, and Sigstore bundles (v0.3,
//! JSON) holding a signature over a package archive.
//!
//! - [`SigningKey`]: ECDSA P-256, kept as cosign's encrypted PEM (`ENCRYPTED
//!   SIGSTORE PRIVATE KEY`: scrypt and NaCl secretbox), so `cosign` can use an
//!   ebpkg key and ebpkg a cosign key.
//! - [`PublicKey`] and its [`KeyId`]: the base64 of the SHA-256 of the key's
//!   SubjectPublicKeyInfo DER, which cosign writes as a bundle's `publicKey.hint`.
//! - [`SignedBundle`]: a Sigstore bundle whose `messageSignature` signs the
//!   archive's SHA-256, with the key's hint. [`sign`] makes one,
//!   [`SignedBundle::verify`] checks one against a key and the archive.
//!
//! Verification is done here over the archive with sigstore's crypto, not with
//! `sigstore::bundle::verify`, which wants a transparency-log entry and refuses
//! bundles that carry only a public-key hint.

pub mod attestation;
mod bundle;
mod keys;
pub mod policy;
#[cfg(feature = "testing")]
pub mod testing;

pub use attestation::{SignedAttestation, Statement, Subject, attest};
pub use bundle::{BUNDLE_MEDIA_TYPE, MAX_BUNDLE_BYTES, SignedBundle, sign};
pub use ebpkg_spec::types::KeyId;
pub use keys::{MAX_KEY_FILE_BYTES, PublicKey, SigningKey};
pub use policy::{Decision, PrebuiltObjects, TrustPolicy, Unattested};

/// Why a key, a bundle or a signature was refused.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("not a public key in PEM (`-----BEGIN PUBLIC KEY-----`): {0}")]
    PublicKey(String),
    #[error("cannot read the private key: {0} (a wrong passphrase reads as a decryption failure)")]
    PrivateKey(String),
    #[error("only ECDSA P-256 keys are supported; this key is {0}")]
    KeyType(String),
    #[error("signing failed: {0}")]
    Sign(String),
    #[error("not a Sigstore bundle: {0}")]
    BundleFormat(String),
    #[error("the bundle is {len} bytes, more than the {max} a signature bundle may have")]
    BundleTooLarge { len: usize, max: usize },
    #[error("the bundle is for another archive: it signs SHA-256 {signed}, the archive's is {actual}")]
    OtherArchive { signed: String, actual: String },
    #[error("the bundle names key {named}, not {expected}")]
    OtherKey { named: KeyId, expected: KeyId },
    #[error(
        "the signature does not verify with key {key}: the archive or the bundle was changed, or another key signed it"
    )]
    BadSignature { key: KeyId },
    #[error(
        "the attestation's signature does not verify with key {key}: its statement was changed after signing, or another key signed it"
    )]
    BadAttestationSignature { key: KeyId },
    #[error("{0}")]
    Attestation(String),
}

pub type Result<T> = std::result::Result<T, Error>;
