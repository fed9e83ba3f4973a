//! An archive checked once against the digest its caller trusts (a lockfile's
//! checksum, an index line's): read once, hashed once, then signed-checked and
//! unpacked from memory without being read or hashed again.

use ebpkg_spec::types::Sha256Digest;

use crate::error::UnpackError;
use crate::limits::Limits;

/// An archive's bytes whose SHA-256 is known to be `digest`: made only by
/// [`VerifiedArchive::check`].
#[derive(Debug, Clone)]
pub struct VerifiedArchive {
    bytes: Vec<u8>,
    digest: Sha256Digest,
}

impl VerifiedArchive {
    /// Refuses `bytes` larger than the limit or whose digest is not `expected`.
    pub fn check(bytes: Vec<u8>, expected: &Sha256Digest, limits: &Limits) -> Result<VerifiedArchive, UnpackError> {
        check_digest(&bytes, expected, limits)?;
        Ok(VerifiedArchive { bytes, digest: *expected })
    }

    /// The archive `pack` made, with the digest it computed of `bytes`.
    pub(crate) fn packed(bytes: Vec<u8>, digest: Sha256Digest) -> VerifiedArchive {
        VerifiedArchive { bytes, digest }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn digest(&self) -> &Sha256Digest {
        &self.digest
    }

    /// The bytes, to keep or send once nothing more is read from them.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// The size limit, then the digest: what every unpack of untrusted bytes checks first.
pub(crate) fn check_digest(bytes: &[u8], expected: &Sha256Digest, limits: &Limits) -> Result<(), UnpackError> {
    if bytes.len() as u64 > limits.max_archive_bytes {
        return Err(UnpackError::ArchiveTooLarge { size: bytes.len() as u64, limit: limits.max_archive_bytes });
    }
    let actual = Sha256Digest::of(bytes);
    if actual != *expected {
        return Err(UnpackError::DigestMismatch { expected: *expected, actual });
    }
    Ok(())
}
