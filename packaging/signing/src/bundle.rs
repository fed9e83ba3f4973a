//! Sigstore bundles (v0.3, JSON) with a message signature over an archive.
//!
//! The bundle itself is `sigstore_protobuf_specs`' type, read and written with
//! the protobuf JSON mapping cosign uses, so fields cosign adds (log entries,
//! timestamps) survive a round trip. [`SignedBundle`] is a bundle that has been
//! checked to be of the one shape ebpkg verifies: a public-key hint and a
//! message signature over a SHA-256 digest.

use ebpkg_spec::types::{KeyId, Sha256Digest};
use sigstore_protobuf_specs::dev::sigstore::bundle::v1::{Bundle, VerificationMaterial, bundle, verification_material};
use sigstore_protobuf_specs::dev::sigstore::common::v1::{
    HashAlgorithm, HashOutput, MessageSignature, PublicKeyIdentifier,
};

use crate::keys::{PublicKey, SigningKey};
use crate::{Error, Result};

pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// Largest bundle read: a public-key bundle is a few hundred bytes; a keyless
/// one with a certificate and log entries a few kilobytes.
pub const MAX_BUNDLE_BYTES: usize = 64 * 1024;

/// A bundle holding a message signature over a SHA-256 digest.
#[derive(Debug, Clone, PartialEq)]
pub struct SignedBundle {
    /// The bundle's JSON: as read, byte for byte, or as [`sign`] wrote it.
    json: String,
    bundle: Bundle,
    digest: Sha256Digest,
    signature: Vec<u8>,
    hint: Option<KeyId>,
}

impl SignedBundle {
    /// Reads a bundle (JSON, at most [`MAX_BUNDLE_BYTES`]).
    pub fn parse(bytes: &[u8]) -> Result<SignedBundle> {
        if bytes.len() > MAX_BUNDLE_BYTES {
            return Err(Error::BundleTooLarge { len: bytes.len(), max: MAX_BUNDLE_BYTES });
        }
        let json = std::str::from_utf8(bytes).map_err(|e| Error::BundleFormat(e.to_string()))?.to_owned();
        let bundle: Bundle = serde_json::from_str(&json).map_err(|e| Error::BundleFormat(e.to_string()))?;
        SignedBundle::from_bundle(json, bundle)
    }

    fn from_bundle(json: String, bundle: Bundle) -> Result<SignedBundle> {
        check_media_type(&bundle)?;
        let Some(bundle::Content::MessageSignature(message)) = &bundle.content else {
            return Err(Error::BundleFormat(
                "it holds no message signature (a DSSE envelope signs an attestation, not an archive)".into(),
            ));
        };
        let Some(digest) = &message.message_digest else {
            return Err(Error::BundleFormat("the message signature has no digest".into()));
        };
        if digest.algorithm != HashAlgorithm::Sha2256 as i32 {
            return Err(Error::BundleFormat(format!(
                "digest algorithm {}; only SHA2_256 is accepted",
                HashAlgorithm::try_from(digest.algorithm).map_or("unknown".into(), |a| a.as_str_name().to_owned())
            )));
        }
        let digest = Sha256Digest(
            digest
                .digest
                .as_slice()
                .try_into()
                .map_err(|_| Error::BundleFormat(format!("the digest is {} bytes, not 32", digest.digest.len())))?,
        );
        if message.signature.is_empty() {
            return Err(Error::BundleFormat("the signature is empty".into()));
        }
        let signature = message.signature.clone();
        let hint = key_hint(&bundle)?;
        Ok(SignedBundle { json, bundle, digest, signature, hint })
    }

    /// The bundle as JSON (an owned copy of [`json`](Self::json)).
    pub fn to_json(&self) -> Result<String> {
        Ok(self.json.clone())
    }

    /// The bundle's JSON, exactly as read (or as [`sign`] wrote it).
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The key the bundle says signed it, if it says.
    pub fn key_hint(&self) -> Option<&KeyId> {
        self.hint.as_ref()
    }

    /// The archive digest the bundle signs.
    pub fn signed_digest(&self) -> &Sha256Digest {
        &self.digest
    }

    /// Checks that this bundle signs `archive` with `key`.
    pub fn verify(&self, key: &PublicKey, archive: &[u8]) -> Result<()> {
        self.verify_digest(key, &Sha256Digest::of(archive))
    }

    /// As [`verify`](Self::verify), for a caller that already hashed the archive:
    /// `actual` is the SHA-256 the caller computed of the archive's bytes (or
    /// checked them against). The signature is checked against that digest
    /// (ECDSA over a prehashed message, the SHA-256 that signing computed), so the
    /// archive is not hashed again.
    pub fn verify_digest(&self, key: &PublicKey, actual: &Sha256Digest) -> Result<()> {
        if &self.digest != actual {
            return Err(Error::OtherArchive { signed: self.digest.to_string(), actual: actual.to_string() });
        }
        if let Some(named) = self.hint.as_ref().filter(|named| *named != key.id()) {
            return Err(Error::OtherKey { named: *named, expected: *key.id() });
        }
        key.verify_prehashed(actual, &self.signature)
    }
}

/// Refuses what is not a Sigstore bundle. v0.1 and v0.2 are written
/// `bundle+json;version=0.x`, v0.3 `bundle.v0.3+json`.
pub(crate) fn check_media_type(bundle: &Bundle) -> Result<()> {
    if !bundle.media_type.starts_with("application/vnd.dev.sigstore.bundle") {
        return Err(Error::BundleFormat(format!("media type `{}`", bundle.media_type)));
    }
    Ok(())
}

/// The key a bundle names (`publicKey.hint`), if it names one; a bundle signed
/// with a certificate is refused.
pub(crate) fn key_hint(bundle: &Bundle) -> Result<Option<KeyId>> {
    Ok(match bundle.verification_material.as_ref().and_then(|m| m.content.as_ref()) {
        Some(verification_material::Content::PublicKey(key)) if key.hint.is_empty() => None,
        Some(verification_material::Content::PublicKey(key)) => Some(
            KeyId::parse(&key.hint)
                .ok_or_else(|| Error::BundleFormat(format!("the key hint `{}` is not a key id", key.hint)))?,
        ),
        Some(_) => {
            return Err(Error::BundleFormat(
                "it is signed with a certificate (keyless); ebpkg verifies key-signed bundles".into(),
            ));
        }
        None => None,
    })
}

/// What names `key` in a bundle: its id as the public-key hint, with no
/// transparency-log entry or timestamp (as `cosign --key` writes without a log).
pub(crate) fn key_material(key: &SigningKey) -> VerificationMaterial {
    VerificationMaterial {
        content: Some(verification_material::Content::PublicKey(PublicKeyIdentifier {
            hint: key.public().id().to_string(),
        })),
        tlog_entries: Vec::new(),
        timestamp_verification_data: None,
    }
}

/// Signs `archive` with `key`.
pub fn sign(key: &SigningKey, archive: &[u8]) -> Result<SignedBundle> {
    let signature = key.sign(archive)?;
    let bundle = Bundle {
        media_type: BUNDLE_MEDIA_TYPE.into(),
        verification_material: Some(key_material(key)),
        content: Some(bundle::Content::MessageSignature(MessageSignature {
            message_digest: Some(HashOutput {
                algorithm: HashAlgorithm::Sha2256 as i32,
                digest: Sha256Digest::of(archive).0.to_vec(),
            }),
            signature,
        })),
    };
    let json = serde_json::to_string(&bundle).map_err(|e| Error::BundleFormat(e.to_string()))?;
    SignedBundle::from_bundle(json, bundle)
}
