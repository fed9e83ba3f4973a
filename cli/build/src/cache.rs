//! The build cache's layout and its only way of writing: a temporary file in the
//! destination directory renamed over the final name, so a reader never sees a
//! half-written file and concurrent builders of the same entry both succeed.
//!
//! ```text
//! <cache>/sdk/<sdk digest>/include/hike/*.h     the SDK headers this ebpkg carries
//! <cache>/vmlinux/<btf digest>/vmlinux.h         bpftool's C dump of one BTF
//! <cache>/objects/<2 hex>/<key hex>.o            one compiled unit
//! <cache>/objects/<2 hex>/<key hex>.o.sha256     its digest record (cache_record.rs)
//! <cache>/objects/<2 hex>/<key hex>.warnings     clang's warnings for it, when any
//! ```

use std::path::{Path, PathBuf};

use ebpkg_spec::types::Sha256Digest;

/// `<cache>/objects/<first 2 hex>/<key hex>.o`: the 256-way split keeps
/// directories small on hosts that build many packages.
pub fn object_path(cache_dir: &Path, key: &Sha256Digest) -> PathBuf {
    ebpkg_spec::cache_layout::CacheLayout::new(cache_dir).object(key)
}

/// Where clang's warnings for a cached object are kept, so a cache hit reports
/// them again (as cargo replays warnings of cached crates).
pub fn warnings_path(object: &Path) -> PathBuf {
    object.with_extension("warnings")
}

/// The mode of every file in the cache: a cache is one user's (the CLI refuses
/// anyone else's), so its directories are 0700 and its files 0600.
pub use ebpkg_fs::private::FILE_MODE;

/// Writes `bytes` to `path` atomically and durably, mode 0600 (its missing
/// directories made 0700).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    ebpkg_fs::private::write_private(path, bytes)
}

/// Creates `dir` and its missing parents, mode 0700.
pub fn create_dirs(dir: &Path) -> std::io::Result<()> {
    ebpkg_fs::private::create_private_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let key = Sha256Digest([0xab; 32]);
        let p = object_path(Path::new("/c"), &key);
        assert_eq!(p, Path::new("/c/objects/ab").join(format!("{}.o", "ab".repeat(32))));
        assert_eq!(warnings_path(&p).extension().unwrap(), "warnings");
    }

    #[test]
    fn atomic_write_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left behind");
    }

    #[test]
    fn digest() {
        assert_eq!(
            Sha256Digest::of(b"abc").to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
