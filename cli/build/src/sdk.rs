//! The HIKe SDK headers, carried inside the ebpkg binary so an installed ebpkg
//! builds packages without an SDK checkout, and written into the cache under
//! their digest so every ebpkg version keeps its own copy.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ebpkg_spec::digest::FieldHasher;
use ebpkg_spec::types::Sha256Digest;

pub use hike_sdk_headers::HEADERS;

/// SHA-256 over the headers' names and contents (each length-prefixed, so no two
/// different header sets hash alike).
pub fn digest() -> Sha256Digest {
    static DIGEST: OnceLock<Sha256Digest> = OnceLock::new();
    *DIGEST.get_or_init(|| {
        let mut h = FieldHasher::new();
        for (name, text) in HEADERS {
            h.field(name, text.as_bytes());
        }
        h.finish()
    })
}

/// Makes sure `<cache>/sdk/<digest>/include/hike/*.h` holds exactly [`HEADERS`]
/// and returns `<cache>/sdk/<digest>/include`, the directory for `-I`.
///
/// The headers are written into a fresh temporary directory that is renamed into
/// place, so a concurrent builder sees either no directory or a complete one. A
/// directory whose contents differ (damaged by hand) is replaced.
pub fn install(cache_dir: &Path) -> std::io::Result<PathBuf> {
    let sdk_root = ebpkg_spec::cache_layout::CacheLayout::new(cache_dir).sdk();
    let dir = sdk_root.join(digest().to_hex());
    let include = dir.join("include");
    if is_intact(&include) {
        return Ok(include);
    }
    std::fs::create_dir_all(&sdk_root)?;
    let tmp = tempfile::Builder::new().prefix(&crate::temps::prefix()).tempdir_in(&sdk_root)?;
    let hike = tmp.path().join("include").join("hike");
    std::fs::create_dir_all(&hike)?;
    for (name, text) in HEADERS {
        std::fs::write(hike.join(name), text)?;
    }
    if dir.exists() {
        // Damaged: move it aside first (a rename cannot replace a non-empty
        // directory), then drop it.
        let trash =
            tempfile::Builder::new().prefix(&format!(".trash-{}-", std::process::id())).tempdir_in(&sdk_root)?;
        let aside = trash.path().join("old");
        // Another builder may have just repaired or moved it: fine either way.
        let _ = std::fs::rename(&dir, &aside);
    }
    match std::fs::rename(tmp.path(), &dir) {
        Ok(()) => {
            // The directory is in place; nothing left for the TempDir to delete.
            let _ = tmp.keep();
            Ok(include)
        }
        // Lost a race with another builder that installed the same headers.
        Err(_) if is_intact(&include) => Ok(include),
        Err(e) => Err(e),
    }
}

fn is_intact(include: &Path) -> bool {
    let hike = include.join("hike");
    HEADERS
        .iter()
        .all(|(name, text)| ebpkg_fs::read(&hike.join(name), text.len() as u64).is_ok_and(|b| b == text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_once_and_repairs() {
        let cache = tempfile::tempdir().unwrap();
        let inc = install(cache.path()).unwrap();
        assert!(inc.ends_with(Path::new(&digest().to_hex()).join("include")));
        assert!(inc.join("hike/program.h").is_file());
        assert_eq!(install(cache.path()).unwrap(), inc);
        std::fs::write(inc.join("hike/vm.h"), "damaged").unwrap();
        assert_eq!(install(cache.path()).unwrap(), inc);
        assert!(is_intact(&inc));
        let leftovers: Vec<_> = std::fs::read_dir(cache.path().join("sdk")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "temporary directories are cleaned up");
    }

    #[test]
    fn headers_are_sorted_and_digest_is_stable() {
        assert!(HEADERS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(digest(), digest());
    }
}
