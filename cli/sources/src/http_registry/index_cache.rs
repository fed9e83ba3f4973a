//! HTTP index files on disk with their ETag, one directory per registry
//! (`CacheLayout::http_index`), each entry one file written atomically: the ETag
//! on the first line, the body after it, so the two never disagree.

use std::path::PathBuf;

use ebpkg_spec::cache_layout::CacheLayout;

use crate::url::RegistryUrl;

pub struct IndexCache {
    layout: CacheLayout,
    registry: String,
}

pub struct Cached {
    pub etag: Option<String>,
    pub body: Vec<u8>,
}

/// As large as the index file it holds may be, plus its ETag line.
const MAX_ENTRY_BYTES: u64 = super::MAX_INDEX_BYTES + 1024;

impl IndexCache {
    pub fn new(cache_dir: &std::path::Path, registry: &RegistryUrl) -> IndexCache {
        IndexCache { layout: CacheLayout::new(cache_dir), registry: registry.to_string() }
    }

    fn path(&self, index_path: &str) -> PathBuf {
        self.layout.http_index(&self.registry, index_path)
    }

    /// The cached copy; anything unreadable counts as absent (it is fetched again).
    pub fn read(&self, index_path: &str) -> Option<Cached> {
        let bytes = ebpkg_fs::read(&self.path(index_path), MAX_ENTRY_BYTES).ok()?;
        let newline = bytes.iter().position(|b| *b == b'\n')?;
        let etag = std::str::from_utf8(&bytes[..newline]).ok()?.trim().to_owned();
        Some(Cached { etag: (!etag.is_empty()).then_some(etag), body: bytes[newline + 1..].to_vec() })
    }

    /// Stores a copy; a cache that cannot be written only costs a later refetch.
    pub fn write(&self, index_path: &str, etag: Option<&str>, body: &[u8]) {
        let path = self.path(index_path);
        let etag = etag.filter(|e| !e.contains('\n')).unwrap_or("");
        let mut bytes = Vec::with_capacity(etag.len() + 1 + body.len());
        bytes.extend_from_slice(etag.as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(body);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| ebpkg_fs::write_atomic(&path, &bytes, 0o644));
        if let Err(e) = written {
            tracing::warn!("cannot cache {}: {e}", path.display());
        }
    }

    pub fn remove(&self, index_path: &str) {
        let _ = std::fs::remove_file(self.path(index_path));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn entries_round_trip_and_damage_reads_as_absent() {
        let dir = tempfile::tempdir().unwrap();
        let url = RegistryUrl::parse("https://registry.example/").unwrap();
        let cache = IndexCache::new(dir.path(), &url);
        assert!(cache.read("3/n/net").is_none());
        cache.write("3/n/net", Some("\"abc\""), b"{\"line\":1}\n");
        let got = cache.read("3/n/net").unwrap();
        assert_eq!((got.etag.as_deref(), got.body.as_slice()), (Some("\"abc\""), &b"{\"line\":1}\n"[..]));
        cache.write("3/n/net", None, b"x");
        assert_eq!(cache.read("3/n/net").unwrap().etag, None);
        let other = IndexCache::new(dir.path(), &RegistryUrl::parse("https://other.example/").unwrap());
        assert!(other.read("3/n/net").is_none(), "one directory per registry");
        std::fs::write(cache.path("3/n/net"), b"no newline at all").unwrap();
        assert!(cache.read("3/n/net").is_none());
        cache.remove("3/n/net");
        assert!(!cache.path("3/n/net").exists());
    }
}
