//! SHA-256, the one way ebpkg digests anything: archives, objects, BTF, cache
//! keys, deployment inputs.

use sha2::{Digest, Sha256};

use crate::types::Sha256Digest;

impl Sha256Digest {
    /// The SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Sha256Digest {
        counted(Sha256Digest(Sha256::digest(bytes).into()))
    }
}

/// Every digest computed passes here: with the `testing` feature, it is counted
/// ([`testing::times_computed`]).
fn counted(digest: Sha256Digest) -> Sha256Digest {
    #[cfg(feature = "testing")]
    testing::count(&digest);
    digest
}

/// For tests of "read once, hashed once" (feature `testing`): how many times this
/// process computed each digest. Counted by value, so tests running in parallel
/// do not disturb one another as long as they hash different bytes (an archive
/// of their own).
#[cfg(feature = "testing")]
pub mod testing {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock, PoisonError};

    use crate::types::Sha256Digest;

    fn counts() -> &'static Mutex<HashMap<Sha256Digest, u64>> {
        static COUNTS: OnceLock<Mutex<HashMap<Sha256Digest, u64>>> = OnceLock::new();
        COUNTS.get_or_init(Default::default)
    }

    pub(super) fn count(digest: &Sha256Digest) {
        *counts().lock().unwrap_or_else(PoisonError::into_inner).entry(*digest).or_default() += 1;
    }

    /// How many times a SHA-256 that came out as `digest` was computed (by
    /// [`Sha256Digest::of`] or a [`Hasher`](super::Hasher)): how many times the
    /// bytes with that digest were hashed.
    pub fn times_computed(digest: &Sha256Digest) -> u64 {
        counts().lock().unwrap_or_else(PoisonError::into_inner).get(digest).copied().unwrap_or(0)
    }
}

/// A SHA-256 fed piece by piece (a file read in blocks).
#[derive(Default, Clone)]
pub struct Hasher(Sha256);

impl Hasher {
    pub fn new() -> Hasher {
        Hasher::default()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    pub fn finish(self) -> Sha256Digest {
        counted(Sha256Digest(self.0.finalize().into()))
    }
}

/// A SHA-256 over tagged fields, tag and value each prefixed with its length
/// (u64, little endian), so no two different sets of fields hash alike.
#[derive(Default, Clone)]
pub struct FieldHasher(Hasher);

impl FieldHasher {
    pub fn new() -> FieldHasher {
        FieldHasher::default()
    }

    pub fn field(&mut self, tag: &str, value: &[u8]) -> &mut FieldHasher {
        for part in [tag.as_bytes(), value] {
            self.0.update(&(part.len() as u64).to_le_bytes());
            self.0.update(part);
        }
        self
    }

    pub fn finish(self) -> Sha256Digest {
        self.0.finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn known_answers() {
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(Sha256Digest::of(b"abc").to_hex(), abc);
        let mut h = Hasher::new();
        h.update(b"a");
        h.update(b"bc");
        assert_eq!(h.finish().to_hex(), abc);
    }

    #[test]
    fn fields_are_delimited() {
        let one = |t: &str, v: &[u8]| {
            let mut h = FieldHasher::new();
            h.field(t, v);
            h.finish()
        };
        assert_ne!(one("ab", b"c"), one("a", b"bc"));
        let mut bytes = Vec::new();
        for p in [&b"ab"[..], b"c"] {
            bytes.extend((p.len() as u64).to_le_bytes());
            bytes.extend(p);
        }
        assert_eq!(one("ab", b"c"), Sha256Digest::of(&bytes));
    }
}
