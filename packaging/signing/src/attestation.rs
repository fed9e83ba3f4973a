//! Attestations: an in-toto Statement v1 in a DSSE envelope, signed with a
//! publisher key, in a Sigstore bundle (v0.3) — what `cosign attest-blob --key`
//! writes and `cosign verify-blob-attestation --key` checks.
//!
//! The signature is over DSSE's pre-authentication encoding (PAE) of the payload
//! type and the payload, never over the JSON as re-serialized: what is verified is
//! exactly the bytes whose statement is then read.

use ebpkg_spec::PackageName;
use ebpkg_spec::attestation::KernelVerification;
use ebpkg_spec::types::{KeyId, Sha256Digest};
use semver::Version;
use serde::{Deserialize, Serialize};
use sigstore::crypto::Signature;
use sigstore_protobuf_specs::dev::sigstore::bundle::v1::{Bundle, bundle};
use sigstore_protobuf_specs::io::intoto::{Envelope, Signature as EnvelopeSignature};

use crate::keys::{PublicKey, SigningKey};
use crate::{BUNDLE_MEDIA_TYPE, Error, Result};

/// DSSE's payload type for an in-toto Statement.
pub const IN_TOTO_PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The Statement's `_type`, version 1: what ebpkg writes.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// v0.1, which has v1's shape (v1 only loosened it) and which `cosign
/// attest-blob` still writes: read as well.
const STATEMENT_TYPE_V01: &str = "https://in-toto.io/Statement/v0.1";
/// Largest attestation bundle read.
pub const MAX_ATTESTATION_BYTES: usize = 1 << 20;

/// An in-toto Statement v1: what is attested (`subject`, by digest) and the
/// predicate, kept as JSON for the caller to read as its type says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Statement {
    #[serde(rename = "_type")]
    pub type_: String,
    pub subject: Vec<Subject>,
    pub predicate_type: String,
    pub predicate: serde_json::Value,
}

/// A subject: a name and its digests (`sha256`, hex).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    pub name: String,
    pub digest: std::collections::BTreeMap<String, String>,
}

impl Subject {
    pub fn sha256(name: impl Into<String>, digest: &Sha256Digest) -> Subject {
        Subject { name: name.into(), digest: [("sha256".to_owned(), digest.to_hex())].into() }
    }

    /// The SHA-256 the subject names, if it names one well-formed.
    pub fn sha256_digest(&self) -> Option<Sha256Digest> {
        self.digest.get("sha256").and_then(|d| Sha256Digest::from_hex(d))
    }
}

impl Statement {
    pub fn new(subject: Vec<Subject>, predicate_type: &str, predicate: serde_json::Value) -> Statement {
        Statement { type_: STATEMENT_TYPE.into(), subject, predicate_type: predicate_type.into(), predicate }
    }

    /// Whether one of the subjects is these bytes' digest.
    pub fn names(&self, digest: &Sha256Digest) -> bool {
        self.subject.iter().any(|s| s.sha256_digest().as_ref() == Some(digest))
    }
}

/// A bundle holding a DSSE envelope over an in-toto Statement: parsed, not yet
/// verified (its statement is readable before, to decide which key to ask for).
#[derive(Debug, Clone, PartialEq)]
pub struct SignedAttestation {
    json: String,
    payload: Vec<u8>,
    signature: Vec<u8>,
    hint: Option<KeyId>,
    statement: Statement,
}

/// DSSE v1's pre-authentication encoding.
fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), payload.len()).into_bytes();
    out.extend_from_slice(payload);
    out
}

impl SignedAttestation {
    /// Reads a bundle (JSON, at most [`MAX_ATTESTATION_BYTES`]).
    pub fn parse(bytes: &[u8]) -> Result<SignedAttestation> {
        if bytes.len() > MAX_ATTESTATION_BYTES {
            return Err(Error::BundleTooLarge { len: bytes.len(), max: MAX_ATTESTATION_BYTES });
        }
        let json = std::str::from_utf8(bytes).map_err(|e| Error::BundleFormat(e.to_string()))?.to_owned();
        let bundle: Bundle = serde_json::from_str(&json).map_err(|e| Error::BundleFormat(e.to_string()))?;
        SignedAttestation::from_bundle(json, &bundle)
    }

    fn from_bundle(json: String, bundle: &Bundle) -> Result<SignedAttestation> {
        crate::bundle::check_media_type(bundle)?;
        let Some(bundle::Content::DsseEnvelope(envelope)) = &bundle.content else {
            return Err(Error::BundleFormat(
                "it holds no DSSE envelope (a message signature signs an archive, not an attestation)".into(),
            ));
        };
        if envelope.payload_type != IN_TOTO_PAYLOAD_TYPE {
            return Err(Error::BundleFormat(format!(
                "its payload type is `{}`, not an in-toto Statement ({IN_TOTO_PAYLOAD_TYPE})",
                envelope.payload_type
            )));
        }
        // One signature: a second one, by a key not checked, must not ride along
        // looking verified.
        let [one] = envelope.signatures.as_slice() else {
            return Err(Error::BundleFormat(format!(
                "its envelope has {} signatures; ebpkg reads envelopes with exactly one",
                envelope.signatures.len()
            )));
        };
        if one.sig.is_empty() {
            return Err(Error::BundleFormat("the signature is empty".into()));
        }
        let statement: Statement = serde_json::from_slice(&envelope.payload)
            .map_err(|e| Error::BundleFormat(format!("its payload is not an in-toto Statement: {e}")))?;
        if statement.type_ != STATEMENT_TYPE && statement.type_ != STATEMENT_TYPE_V01 {
            return Err(Error::BundleFormat(format!(
                "its statement is of type `{}`, not {STATEMENT_TYPE}",
                statement.type_
            )));
        }
        Ok(SignedAttestation {
            json,
            payload: envelope.payload.clone(),
            signature: one.sig.clone(),
            hint: crate::bundle::key_hint(bundle)?,
            statement,
        })
    }

    /// The bundle's JSON, exactly as read (or as [`attest`] wrote it).
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The key the bundle says signed it, if it says.
    pub fn key_hint(&self) -> Option<&KeyId> {
        self.hint.as_ref()
    }

    /// The statement, as signed (read before verifying: check [`verify`](Self::verify)
    /// before believing it).
    pub fn statement(&self) -> &Statement {
        &self.statement
    }

    /// Checks that `key` signed the envelope.
    pub fn verify(&self, key: &PublicKey) -> Result<()> {
        if let Some(named) = self.hint.as_ref().filter(|named| *named != key.id()) {
            return Err(Error::OtherKey { named: *named, expected: *key.id() });
        }
        key.verification_key()?
            .verify_signature(Signature::Raw(&self.signature), &pae(IN_TOTO_PAYLOAD_TYPE, &self.payload))
            .map_err(|_| Error::BadAttestationSignature { key: *key.id() })
    }
}

impl SignedAttestation {
    /// The kernel verification this attestation states about `name@version`,
    /// whose archive is `archive`: refused unless it is of that predicate type,
    /// one of its subjects is the archive, and its predicate is about that
    /// version and archive and within bounds. The signature is
    /// [`verify`](Self::verify)'s to check.
    pub fn kernel_verification(
        &self,
        name: &PackageName,
        version: &Version,
        archive: &Sha256Digest,
    ) -> Result<KernelVerification> {
        let statement = &self.statement;
        if statement.predicate_type != ebpkg_spec::attestation::PREDICATE_TYPE {
            return Err(Error::Attestation(format!(
                "its predicate type is `{}`, not {}",
                statement.predicate_type,
                ebpkg_spec::attestation::PREDICATE_TYPE
            )));
        }
        if !statement.names(archive) {
            return Err(Error::Attestation(format!(
                "it is for another archive: none of its subjects is {name}@{version}'s archive (SHA-256 {archive})"
            )));
        }
        KernelVerification::from_value(&statement.predicate, name, version, archive)
            .map_err(|e| Error::Attestation(e.to_string()))
    }

    /// The rebuild this attestation states about `name@version`, whose archive
    /// is `archive`: checked as [`kernel_verification`](Self::kernel_verification)
    /// checks its predicate.
    pub fn rebuild(
        &self,
        name: &PackageName,
        version: &Version,
        archive: &Sha256Digest,
    ) -> Result<ebpkg_spec::attestation::rebuild::Rebuild> {
        use ebpkg_spec::attestation::rebuild::{REBUILD_PREDICATE_TYPE, Rebuild};
        let statement = &self.statement;
        if statement.predicate_type != REBUILD_PREDICATE_TYPE {
            return Err(Error::Attestation(format!(
                "its predicate type is `{}`, not {REBUILD_PREDICATE_TYPE}",
                statement.predicate_type
            )));
        }
        if !statement.names(archive) {
            return Err(Error::Attestation(format!(
                "it is for another archive: none of its subjects is {name}@{version}'s archive (SHA-256 {archive})"
            )));
        }
        Rebuild::from_value(&statement.predicate, name, version, archive).map_err(|e| Error::Attestation(e.to_string()))
    }
}

/// Signs `statement` with `key` into a bundle.
pub fn attest(key: &SigningKey, statement: &Statement) -> Result<SignedAttestation> {
    let payload = serde_json::to_vec(statement).map_err(|e| Error::BundleFormat(e.to_string()))?;
    let sig = key.sign(&pae(IN_TOTO_PAYLOAD_TYPE, &payload))?;
    let bundle = Bundle {
        media_type: BUNDLE_MEDIA_TYPE.into(),
        verification_material: Some(crate::bundle::key_material(key)),
        content: Some(bundle::Content::DsseEnvelope(Envelope {
            payload,
            payload_type: IN_TOTO_PAYLOAD_TYPE.into(),
            signatures: vec![EnvelopeSignature { sig, keyid: String::new() }],
        })),
    };
    let json = serde_json::to_string(&bundle).map_err(|e| Error::BundleFormat(e.to_string()))?;
    SignedAttestation::from_bundle(json, &bundle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_is_dsse_v1s() {
        // The example of the DSSE v1 specification's protocol document.
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }
}
