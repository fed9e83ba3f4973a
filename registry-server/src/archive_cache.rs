//! Downloads from memory. Both things a download looks up never change once
//! published: which archive `name@version` is (versions are immutable), and an
//! archive's bytes (named by their SHA-256). So they are kept without any
//! invalidation, bounded: the most recent archives up to a byte budget, each at
//! most a size worth keeping.
//!
//! Streaming each archive from the blob store cost a database query and a file
//! open per request: 0.11× nginx's rate at 64 connections in `registry-bench`.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use bytes::Bytes;
use ebpkg_spec::types::Sha256Digest;

/// Archives larger than this are always streamed from the store.
pub const MAX_CACHED_ARCHIVE: usize = 4 * 1024 * 1024;
/// Most `name@version` → archive entries remembered.
const MAX_TARGETS: usize = 100_000;

pub struct ArchiveCache {
    budget: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// `(normalized name, version without build metadata)` → (version id, digest).
    targets: HashMap<(String, String), (i64, Sha256Digest)>,
    archives: HashMap<Sha256Digest, Bytes>,
    /// Insertion order, for eviction.
    order: VecDeque<Sha256Digest>,
    bytes: usize,
}

impl ArchiveCache {
    /// A cache holding at most `budget` bytes of archives.
    pub fn new(budget: usize) -> ArchiveCache {
        ArchiveCache { budget, inner: Mutex::new(Inner::default()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn target(&self, name: &str, version: &str) -> Option<(i64, Sha256Digest)> {
        self.lock().targets.get(&(name.to_owned(), version.to_owned())).copied()
    }

    pub fn remember_target(&self, name: &str, version: &str, target: (i64, Sha256Digest)) {
        let mut inner = self.lock();
        if inner.targets.len() >= MAX_TARGETS {
            inner.targets.clear();
        }
        inner.targets.insert((name.to_owned(), version.to_owned()), target);
    }

    pub fn archive(&self, digest: &Sha256Digest) -> Option<Bytes> {
        self.lock().archives.get(digest).cloned()
    }

    /// Keeps an archive read from the store, after checking it is the one its
    /// name says (a damaged blob is never multiplied).
    pub fn remember_archive(&self, digest: Sha256Digest, bytes: Bytes) {
        if bytes.len() > MAX_CACHED_ARCHIVE || bytes.len() > self.budget || Sha256Digest::of(&bytes) != digest {
            return;
        }
        let mut inner = self.lock();
        if inner.archives.contains_key(&digest) {
            return;
        }
        while inner.bytes + bytes.len() > self.budget {
            let Some(old) = inner.order.pop_front() else { break };
            if let Some(gone) = inner.archives.remove(&old) {
                inner.bytes -= gone.len();
            }
        }
        inner.bytes += bytes.len();
        inner.order.push_back(digest);
        inner.archives.insert(digest, bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archives_are_kept_within_the_budget_and_only_when_they_match() {
        let cache = ArchiveCache::new(10);
        let (a, b, c) = (Bytes::from_static(b"aaaa"), Bytes::from_static(b"bbbb"), Bytes::from_static(b"cccc"));
        cache.remember_archive(Sha256Digest::of(&a), a.clone());
        cache.remember_archive(Sha256Digest::of(&b), b.clone());
        assert_eq!(cache.archive(&Sha256Digest::of(&a)), Some(a.clone()));
        cache.remember_archive(Sha256Digest::of(&c), c.clone());
        assert_eq!(cache.archive(&Sha256Digest::of(&a)), None, "the oldest went");
        assert_eq!(cache.archive(&Sha256Digest::of(&c)), Some(c));
        cache.remember_archive(Sha256Digest::of(b"other"), Bytes::from_static(b"damaged"));
        assert_eq!(cache.archive(&Sha256Digest::of(b"other")), None, "a blob that does not match is not kept");
        cache.remember_target("net", "1.0.0", (7, Sha256Digest::of(&b)));
        assert_eq!(cache.target("net", "1.0.0"), Some((7, Sha256Digest::of(&b))));
    }
}
