//! Where everything lives in ebpkg's cache directory: one definition, used by the
//! download cache (ebpkg-sources), the build cache (ebpkg-build) and `ebpkg cache`.
//!
//! ```text
//! <root>/archives/<2 hex>/<64 hex>.tar.gz       downloaded archives, by SHA-256
//! <root>/signatures/<2 hex>/<64 hex>.sigstore.json  their Sigstore bundles, by archive SHA-256
//! <root>/keys/<64 hex>.pem                       publisher keys, by key id (checked on every use)
//! <root>/src/<name>-<version>-<16 hex>/          unpacked packages
//! <root>/objects/<2 hex>/<64 hex>.o              built objects, by cache key
//! <root>/vmlinux/<btf sha256>/vmlinux.h          headers generated from a kernel's BTF
//! <root>/sdk/<sdk sha256>/include/hike/*.h       the HIKe SDK headers builds include
//! <root>/index/<16 hex of the URL>/<index path>   HTTP registries' index files, with their ETag
//! <root>/index/<16 hex of the URL>.resolution      directory registries' index files as resolutions parsed them
//! ```

use std::path::{Path, PathBuf};

use semver::Version;

use crate::PackageName;
use crate::registry_id::RegistryId;
use crate::types::{KeyId, Sha256Digest};

/// A registry's name in cache paths: its canonical URL's digest, shortened.
fn registry_dir(registry: &RegistryId) -> String {
    let mut digest = Sha256Digest::of(registry.as_str().as_bytes()).to_hex();
    digest.truncate(16);
    digest
}

/// The layout of one cache directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheLayout {
    root: PathBuf,
}

/// The parts of a cache, as `ebpkg cache clean --only` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CachePart {
    /// Downloaded archives.
    Archives,
    /// Unpacked packages.
    Sources,
    /// Built objects, generated `vmlinux.h` files and SDK headers.
    Builds,
    /// Index files of HTTP registries, and what resolutions parsed of directory registries' ones.
    Indexes,
}

impl CacheLayout {
    pub fn new(root: impl Into<PathBuf>) -> CacheLayout {
        CacheLayout { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directories that hold `part`.
    pub fn dirs(&self, part: CachePart) -> Vec<PathBuf> {
        match part {
            CachePart::Archives => vec![self.archives(), self.root.join("signatures"), self.root.join("keys")],
            CachePart::Sources => vec![self.sources()],
            CachePart::Builds => vec![self.objects(), self.root.join("vmlinux"), self.sdk()],
            CachePart::Indexes => vec![self.root.join("index")],
        }
    }

    /// The cached index file at `index_path` of the HTTP registry `registry`: one
    /// directory per registry, named by its canonical URL's digest.
    pub fn http_index(&self, registry: &RegistryId, index_path: &str) -> PathBuf {
        self.root.join("index").join(registry_dir(registry)).join(index_path)
    }

    /// The parsed index files of the directory registry `registry`, kept for later
    /// resolutions.
    pub fn resolution_cache(&self, registry: &RegistryId) -> PathBuf {
        self.root.join("index").join(format!("{}.resolution", registry_dir(registry)))
    }

    pub fn archives(&self) -> PathBuf {
        self.root.join("archives")
    }

    /// The Sigstore bundle of the archive with this digest.
    ///
    /// Unlike a registry, a cache is shared by every registry a user reads, and
    /// two registries may serve one archive signed with different keys: the
    /// cached bundle is kept by archive digest *and* key.
    pub fn bundle(&self, digest: &Sha256Digest, key: &KeyId) -> PathBuf {
        let hex = digest.to_hex();
        self.root.join("signatures").join(&hex[..2]).join(format!("{hex}.{}.sigstore.json", key.to_hex()))
    }

    /// The publisher key with this id.
    pub fn key(&self, id: &KeyId) -> PathBuf {
        key_file(&self.root, id)
    }

    /// The archive with this digest.
    pub fn archive(&self, digest: &Sha256Digest) -> PathBuf {
        archive_file(&self.root, digest)
    }

    pub fn sources(&self) -> PathBuf {
        self.root.join("src")
    }

    /// Where `name` `version` with archive `digest` is unpacked.
    pub fn source_dir(&self, name: &PackageName, version: &Version, digest: &Sha256Digest) -> PathBuf {
        let hex = digest.to_hex();
        self.sources().join(format!("{name}-{version}-{}", &hex[..16]))
    }

    pub fn objects(&self) -> PathBuf {
        self.root.join("objects")
    }

    /// The object built under `key` (the 256-way split keeps directories small
    /// on hosts that build many packages).
    pub fn object(&self, key: &Sha256Digest) -> PathBuf {
        let hex = key.to_hex();
        self.objects().join(&hex[..2]).join(format!("{hex}.o"))
    }

    /// The directory of the `vmlinux.h` generated from BTF with this digest.
    pub fn vmlinux_dir(&self, btf: &Sha256Digest) -> PathBuf {
        self.root.join("vmlinux").join(btf.to_hex())
    }

    pub fn sdk(&self) -> PathBuf {
        self.root.join("sdk")
    }
}

/// Where a directory registry or a cache keeps the Sigstore bundle of an
/// archive, by the archive's digest (what the bundle signs).
pub fn bundle_file(root: &Path, digest: &Sha256Digest) -> PathBuf {
    let hex = digest.to_hex();
    root.join("signatures").join(&hex[..2]).join(format!("{hex}.sigstore.json"))
}

/// Where a directory registry or a cache keeps a publisher key, by its id.
pub fn key_file(root: &Path, id: &KeyId) -> PathBuf {
    root.join("keys").join(format!("{}.pem", id.to_hex()))
}

/// `<root>/archives/<2 hex>/<64 hex>.tar.gz`: how a cache and a file:// registry
/// both keep archives.
pub fn archive_file(root: &Path, digest: &Sha256Digest) -> PathBuf {
    let hex = digest.to_hex();
    root.join("archives").join(&hex[..2]).join(format!("{hex}.tar.gz"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn paths() {
        let l = CacheLayout::new("/c");
        let d = Sha256Digest([0xab; 32]);
        let hex = "ab".repeat(32);
        assert_eq!(l.archive(&d), Path::new("/c/archives/ab").join(format!("{hex}.tar.gz")));
        assert_eq!(l.object(&d), Path::new("/c/objects/ab").join(format!("{hex}.o")));
        let name = PackageName::new("net").unwrap();
        let v = Version::new(1, 2, 3);
        assert_eq!(l.source_dir(&name, &v, &d), Path::new("/c/src/net-1.2.3-abababababababab"));
        assert_eq!(l.vmlinux_dir(&d), Path::new("/c/vmlinux").join(&hex));
        let all: Vec<_> =
            [CachePart::Archives, CachePart::Sources, CachePart::Builds].into_iter().flat_map(|p| l.dirs(p)).collect();
        assert_eq!(all.len(), 7);
        let key = crate::types::KeyId([0xcd; 32]);
        let key_hex = "cd".repeat(32);
        assert_eq!(l.bundle(&d, &key), Path::new("/c/signatures/ab").join(format!("{hex}.{key_hex}.sigstore.json")));
        assert_eq!(l.key(&crate::types::KeyId([0xab; 32])), Path::new("/c/keys").join(format!("{hex}.pem")));
        assert!(all.iter().all(|p| p.starts_with("/c")));
    }
}
