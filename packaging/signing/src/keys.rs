//! Keys in cosign's formats.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ebpkg_spec::types::{KeyId, Sha256Digest};
use sigstore::crypto::signing_key::SigStoreKeyPair;
use sigstore::crypto::{CosignVerificationKey, SigningScheme};
use zeroize::Zeroizing;

use crate::{Error, Result};

/// Largest key file read (a P-256 PEM is a few hundred bytes).
pub const MAX_KEY_FILE_BYTES: u64 = 16 * 1024;

/// A public key that verifies signatures: ECDSA P-256.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    der: Vec<u8>,
    id: KeyId,
}

impl PublicKey {
    /// From PEM (`cosign.pub`, `ebpkg key export`).
    pub fn from_pem(pem: &str) -> Result<PublicKey> {
        PublicKey::from_der(spki_der(pem)?)
    }

    /// From SubjectPublicKeyInfo DER.
    pub fn from_der(der: Vec<u8>) -> Result<PublicKey> {
        verification_key(&der)?;
        Ok(PublicKey { id: KeyId(Sha256Digest::of(&der).0), der })
    }

    pub fn id(&self) -> &KeyId {
        &self.id
    }

    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// PEM, as cosign writes `cosign.pub`.
    pub fn to_pem(&self) -> String {
        let body = STANDARD.encode(&self.der);
        let mut pem = String::from("-----BEGIN PUBLIC KEY-----\n");
        let mut rest = body.as_str();
        while !rest.is_empty() {
            let (line, tail) = rest.split_at(rest.len().min(64));
            pem.push_str(line);
            pem.push('\n');
            rest = tail;
        }
        pem.push_str("-----END PUBLIC KEY-----\n");
        pem
    }

    pub(crate) fn verification_key(&self) -> Result<CosignVerificationKey> {
        verification_key(&self.der)
    }

    /// Checks that `signature` (ECDSA P-256, ASN.1 DER) signs a message whose
    /// SHA-256 is `digest`: what verifying over the message computes first, taken
    /// from a caller that has it (sigstore keeps its prehash verification to
    /// itself, so aws-lc-rs, which it verifies with, is asked directly).
    pub(crate) fn verify_prehashed(&self, digest: &Sha256Digest, signature: &[u8]) -> Result<()> {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1, UnparsedPublicKey};
        let bad = || Error::BadSignature { key: self.id };
        let CosignVerificationKey::ECDSA_P256_SHA256_ASN1(spki) = self.verification_key()? else {
            return Err(Error::KeyType("another algorithm".into()));
        };
        let digest =
            aws_lc_rs::digest::Digest::import_less_safe(&digest.0, &aws_lc_rs::digest::SHA256).map_err(|_| bad())?;
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, spki.as_slice())
            .verify_digest(&digest, signature)
            .map_err(|_| bad())
    }
}

/// Parses SubjectPublicKeyInfo DER (its algorithm names the curve) and keeps
/// only P-256: the one curve `cosign generate-key-pair` writes.
fn verification_key(der: &[u8]) -> Result<CosignVerificationKey> {
    match CosignVerificationKey::try_from_der(der) {
        Ok(key @ CosignVerificationKey::ECDSA_P256_SHA256_ASN1(_)) => Ok(key),
        Ok(_) => Err(Error::KeyType("another algorithm".into())),
        Err(e) => Err(Error::PublicKey(e.to_string())),
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicKey").field("id", &self.id).finish_non_exhaustive()
    }
}

/// The DER inside a `PUBLIC KEY` PEM block.
fn spki_der(pem: &str) -> Result<Vec<u8>> {
    let begin = "-----BEGIN PUBLIC KEY-----";
    let end = "-----END PUBLIC KEY-----";
    let start =
        pem.find(begin).ok_or_else(|| Error::PublicKey("no `-----BEGIN PUBLIC KEY-----` block".into()))? + begin.len();
    let stop = pem[start..]
        .find(end)
        .ok_or_else(|| Error::PublicKey("the PUBLIC KEY block has no `-----END PUBLIC KEY-----`".into()))?;
    let body: String = pem[start..start + stop].split_whitespace().collect();
    STANDARD.decode(body).map_err(|e| Error::PublicKey(format!("the PEM body is not base64 ({e})")))
}

/// A private key that signs: ECDSA P-256.
pub struct SigningKey {
    pair: SigStoreKeyPair,
    public: PublicKey,
}

impl SigningKey {
    /// A new key from the operating system's random numbers.
    pub fn generate() -> Result<SigningKey> {
        let signer = SigningScheme::ECDSA_P256_SHA256_ASN1.create_signer().map_err(|e| Error::Sign(e.to_string()))?;
        let pair = signer.to_sigstore_keypair().map_err(|e| Error::Sign(e.to_string()))?;
        SigningKey::from_pair(pair)
    }

    /// From cosign's encrypted PEM (`ENCRYPTED SIGSTORE PRIVATE KEY`, or the
    /// older `ENCRYPTED COSIGN PRIVATE KEY`).
    pub fn from_encrypted_pem(pem: &str, passphrase: &[u8]) -> Result<SigningKey> {
        let pair = SigStoreKeyPair::from_encrypted_pem(pem.as_bytes(), passphrase)
            .map_err(|e| Error::PrivateKey(e.to_string()))?;
        SigningKey::from_pair(pair)
    }

    fn from_pair(pair: SigStoreKeyPair) -> Result<SigningKey> {
        if !matches!(pair, SigStoreKeyPair::ECDSA(_)) {
            return Err(Error::KeyType("not ECDSA P-256".into()));
        }
        let pem = pair.public_key_to_pem().map_err(|e| Error::PublicKey(e.to_string()))?;
        let public = PublicKey::from_pem(&pem)?;
        Ok(SigningKey { pair, public })
    }

    /// Cosign's encrypted PEM (scrypt + NaCl secretbox), for the key file.
    pub fn to_encrypted_pem(&self, passphrase: &[u8]) -> Result<Zeroizing<String>> {
        let pem = self.pair.private_key_to_encrypted_pem(passphrase).map_err(|e| Error::PrivateKey(e.to_string()))?;
        Ok(pem)
    }

    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// ECDSA P-256 with SHA-256 over `message`, ASN.1 DER.
    pub(crate) fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        let signer = self
            .pair
            .to_sigstore_signer(&SigningScheme::ECDSA_P256_SHA256_ASN1)
            .map_err(|e| Error::Sign(e.to_string()))?;
        signer.sign(message).map_err(|e| Error::Sign(e.to_string()))
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey").field("id", self.public.id()).finish_non_exhaustive()
    }
}
