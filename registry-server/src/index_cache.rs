//! Index files in memory, so the hot path of the sparse index costs no database
//! round trip, kept exactly in step with the database by PostgreSQL's
//! LISTEN/NOTIFY: every transaction that changes a package's index file sends
//! `NOTIFY ebpkg_index, '<normalized name>'`, delivered when it commits, and every
//! replica drops that entry.
//!
//! Served from the database alone, an index file cost a query per request: 0.24×
//! nginx's rate at 64 connections in `registry-bench`. The cache is used only while
//! the listening connection is up; when it drops, notifications may have been
//! missed, so everything is forgotten and requests go to the database until it is
//! back. A fill that raced with a notification is not kept (the epoch check), and
//! the replica that made a change drops its own entry before answering, so its own
//! next read sees the change; another replica sees it when the notification
//! arrives, milliseconds after the commit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgListener;

use crate::db::INDEX_CHANNEL;
use crate::db::packages::IndexFile;

#[derive(Default)]
pub struct IndexCache {
    files: RwLock<HashMap<String, Arc<IndexFile>>>,
    /// Whether the listener is connected (the cache may be trusted).
    live: AtomicBool,
    /// Bumped by every invalidation, so a fill that raced with one is dropped.
    epoch: AtomicU64,
}

impl IndexCache {
    pub fn get(&self, normalized: &str) -> Option<Arc<IndexFile>> {
        if !self.live.load(Ordering::Acquire) {
            return None;
        }
        self.files.read().unwrap_or_else(std::sync::PoisonError::into_inner).get(normalized).cloned()
    }

    /// The epoch to pass to [`IndexCache::fill`], read before the database is.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The epoch, when the cache is trusted (the listener is connected): what
    /// other caches of things derived from packages (the catalog's pages) key
    /// their entries on, to drop them at any change.
    pub fn trusted_epoch(&self) -> Option<u64> {
        self.live.load(Ordering::Acquire).then(|| self.epoch())
    }

    /// Keeps a file read from the database, unless something changed since `epoch`.
    pub fn fill(&self, normalized: &str, file: Arc<IndexFile>, epoch: u64) {
        if !self.live.load(Ordering::Acquire) {
            return;
        }
        let mut files = self.files.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.epoch.load(Ordering::Acquire) == epoch {
            files.insert(normalized.to_owned(), file);
        }
    }

    pub fn forget(&self, normalized: &str) {
        let mut files = self.files.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        files.remove(normalized);
    }

    fn forget_all(&self, live: bool) {
        let mut files = self.files.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.epoch.fetch_add(1, Ordering::AcqRel);
        files.clear();
        self.live.store(live, Ordering::Release);
    }

    /// Listens for changes until the process ends, reconnecting after failures.
    pub async fn listen(self: Arc<Self>, pool: PgPool) {
        loop {
            match PgListener::connect_with(&pool).await {
                Ok(mut listener) => match listener.listen(INDEX_CHANNEL).await {
                    Ok(()) => {
                        // Anything cached before this point may have missed a change.
                        self.forget_all(true);
                        loop {
                            match listener.try_recv().await {
                                Ok(Some(n)) => self.forget(n.payload()),
                                // The connection was lost: changes in between are unknown.
                                Ok(None) => break,
                                Err(e) => {
                                    tracing::warn!(error = %e, "index cache: the listener failed");
                                    break;
                                }
                            }
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "index cache: cannot listen"),
                },
                Err(e) => tracing::debug!(error = %e, "index cache: the database is not reachable"),
            }
            self.forget_all(false);
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Arc<IndexFile> {
        Arc::new(IndexFile { index_file: text.into(), index_sha256: vec![], index_modified_at: chrono::Utc::now() })
    }

    #[test]
    fn only_a_live_cache_answers_and_a_racing_fill_is_dropped() {
        let cache = IndexCache::default();
        cache.fill("net", file("a"), cache.epoch());
        assert!(cache.get("net").is_none(), "not live: nothing kept");
        cache.forget_all(true);
        let epoch = cache.epoch();
        cache.fill("net", file("a"), epoch);
        assert_eq!(cache.get("net").map(|f| f.index_file.clone()).as_deref(), Some("a"));
        let epoch = cache.epoch();
        cache.forget("net");
        cache.fill("net", file("stale"), epoch);
        assert!(cache.get("net").is_none(), "a fill read before a change is not kept");
        cache.fill("net", file("b"), cache.epoch());
        cache.forget_all(false);
        assert!(cache.get("net").is_none(), "the listener dropped: nothing is trusted");
    }
}
