//! The HIKe SDK headers and its reference kernel types, carried inside the ebpkg
//! binary so an installed ebpkg builds packages without an SDK checkout, and
//! written into the cache under their digest so every ebpkg version keeps its
//! own copy.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ebpkg_spec::digest::FieldHasher;
use ebpkg_spec::types::Sha256Digest;

pub use hike_sdk_headers::{HEADERS, REFERENCE_VMLINUX_H};

/// SHA-256 over the headers' names and contents and the reference kernel types
/// (each length-prefixed, so no two different header sets hash alike).
pub fn digest() -> Sha256Digest {
    static DIGEST: OnceLock<Sha256Digest> = OnceLock::new();
    *DIGEST.get_or_init(|| {
        let mut h = FieldHasher::new();
        for (name, text) in HEADERS {
            h.field(name, text.as_bytes());
        }
        h.field("reference/vmlinux.h", REFERENCE_VMLINUX_H.as_bytes());
        h.finish()
    })
}

/// The SDK in the cache: the directories clang gets with `-I`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledSdk {
    /// `<cache>/sdk/<digest>/include`, holding `hike/*.h`.
    pub include: PathBuf,
    /// `<cache>/sdk/<digest>/reference`, holding the reference `vmlinux.h`.
    pub reference: PathBuf,
}

/// Makes sure `<cache>/sdk/<digest>/include/hike/*.h` holds exactly [`HEADERS`]
/// and `<cache>/sdk/<digest>/reference/vmlinux.h` the reference types, and
/// returns both directories.
///
/// The files are written into a fresh temporary directory that is renamed into
/// place, so a concurrent builder sees either no directory or a complete one. A
/// directory whose contents differ (damaged by hand) is replaced.
pub fn install(cache_dir: &Path) -> std::io::Result<InstalledSdk> {
    let sdk_root = ebpkg_spec::cache_layout::CacheLayout::new(cache_dir).sdk();
    let dir = sdk_root.join(digest().to_hex());
    let installed = InstalledSdk { include: dir.join("include"), reference: dir.join("reference") };
    if is_intact(&installed) {
        return Ok(installed);
    }
    crate::cache::create_dirs(&sdk_root)?;
    let tmp = tempfile::Builder::new().prefix(&crate::temps::prefix()).tempdir_in(&sdk_root)?;
    // Made with the umask's mode: the cache's directories are 0700.
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(ebpkg_fs::private::DIR_MODE))?;
    let hike = tmp.path().join("include").join("hike");
    for (name, text) in HEADERS {
        crate::cache::write_atomic(&hike.join(name), text.as_bytes())?;
    }
    let reference = tmp.path().join("reference");
    crate::cache::write_atomic(&reference.join("vmlinux.h"), REFERENCE_VMLINUX_H.as_bytes())?;
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
            Ok(installed)
        }
        // Lost a race with another builder that installed the same headers.
        Err(_) if is_intact(&installed) => Ok(installed),
        Err(e) => Err(e),
    }
}

fn is_intact(sdk: &InstalledSdk) -> bool {
    let same = |path: &Path, text: &str| ebpkg_fs::read(path, text.len() as u64).is_ok_and(|b| b == text.as_bytes());
    let hike = sdk.include.join("hike");
    HEADERS.iter().all(|(name, text)| same(&hike.join(name), text))
        && same(&sdk.reference.join("vmlinux.h"), REFERENCE_VMLINUX_H)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_once_and_repairs() {
        let cache = tempfile::tempdir().unwrap();
        let sdk = install(cache.path()).unwrap();
        let inc = &sdk.include;
        assert!(inc.ends_with(Path::new(&digest().to_hex()).join("include")));
        assert!(inc.join("hike/program.h").is_file());
        assert_eq!(std::fs::read_to_string(sdk.reference.join("vmlinux.h")).unwrap(), REFERENCE_VMLINUX_H);
        assert_eq!(install(cache.path()).unwrap(), sdk);
        std::fs::write(inc.join("hike/vm.h"), "damaged").unwrap();
        assert_eq!(install(cache.path()).unwrap(), sdk);
        assert!(is_intact(&sdk));
        std::fs::write(sdk.reference.join("vmlinux.h"), "struct damaged;").unwrap();
        assert_eq!(install(cache.path()).unwrap(), sdk);
        assert!(is_intact(&sdk), "damaged reference types are replaced too");
        let leftovers: Vec<_> = std::fs::read_dir(cache.path().join("sdk")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "temporary directories are cleaned up");
    }

    #[test]
    fn headers_are_sorted_and_digest_is_stable() {
        assert!(HEADERS.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(digest(), digest());
    }
}
