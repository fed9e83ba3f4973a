//! The check that the cache is private before any command reads from it.
//!
//! What the cache holds reaches the kernel (objects, native chains, IR modules,
//! unpacked packages), so a cache another user can write would let them choose
//! what root loads. As the state directory is (ebpkg-deploy's safety), the cache
//! root, every directory above it, every directory of its layout and every file
//! in those must be the caller's and writable by no one else (`ebpkg_fs::private`,
//! the one check); a missing root is created 0700. What was planted deeper while
//! a directory was writable by others is removed by `ebpkg doctor --fix`, which
//! sweeps the whole tree it repairs.

use std::path::{Path, PathBuf};

use ebpkg_fs::private::NotPrivate;

/// How deep the check looks into the cache: every directory of the layout
/// (`sdk/<digest>/include/hike` is the deepest) and every file in them (the
/// SDK headers, `vmlinux.h`, objects, index and TUF files, archives, the top of
/// unpacked trees, which are also compared with their archive on every use).
/// Below, only the cache's owner can have made an entry. Cost: one `stat` per
/// entry: 0.7 ms for a 373-entry cache (cli/build/README.md).
const CHECK_DEPTH: usize = 4;
/// Most entries the check inspects.
const MAX_CHECKED_ENTRIES: usize = 100_000;

/// A cache another user could have written: nothing in it is used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the cache {} cannot be trusted, so nothing in it is used: {cause}", root.display())]
pub struct UnsafeCache {
    pub root: PathBuf,
    pub cause: NotPrivate,
}

/// Checks the cache directory `root`, creating it 0700 when it does not exist.
pub fn check(root: &Path) -> std::result::Result<(), UnsafeCache> {
    let unsafe_cache = |cause| UnsafeCache { root: root.to_owned(), cause };
    if std::fs::symlink_metadata(root).is_err() {
        // A cache that cannot be created is the writers' error to report.
        if let Err(e) = ebpkg_fs::private::create_private_dir(root) {
            tracing::debug!(root = %root.display(), "cannot create the cache: {e}");
            return Ok(());
        }
    }
    ebpkg_fs::private::check_tree(root, CHECK_DEPTH, MAX_CHECKED_ENTRIES).map_err(unsafe_cache)
}
