//! The build cache key: a SHA-256 over everything that decides an object's bytes.
//!
//! Location-dependent arguments (the package root, the cache's SDK and vmlinux
//! directories) enter the key as placeholders (`<root>`, `<sdk>`, `<vmlinux>`):
//! what they point at is covered by the package, SDK and BTF digests, and leaving
//! the paths out lets the same package unpacked elsewhere hit the cache.

use std::path::Path;

use ebpkg_spec::digest::FieldHasher;
use ebpkg_spec::types::{Hook, Sha256Digest};

/// Bumped whenever this crate changes how it builds in a way the other inputs do
/// not show (new flags policy, different post-processing, cache layout), so old
/// cache entries are never reused by a newer ebpkg.
pub const FORMAT_VERSION: u32 = 1;

/// Everything a cached object depends on.
#[derive(Debug, Clone, Copy)]
pub struct CacheKeyInput<'a> {
    /// The package archive's digest: stands for the content of every file.
    pub package_digest: Sha256Digest,
    /// The unit's source path inside the package.
    pub source: &'a str,
    pub hook: Hook,
    pub clang: &'a Path,
    /// The full first line of `clang --version`.
    pub clang_version: &'a str,
    /// The exact compiler arguments, with location-dependent paths as placeholders.
    pub flags: &'a [String],
    pub sdk_digest: Sha256Digest,
    pub btf_digest: Sha256Digest,
}

/// The key. Every field is length-prefixed so no two different inputs can
/// produce the same byte stream.
pub fn cache_key(input: &CacheKeyInput<'_>) -> Sha256Digest {
    let mut h = FieldHasher::new();
    let mut field = |tag: &str, bytes: &[u8]| {
        h.field(tag, bytes);
    };
    field("format", &FORMAT_VERSION.to_le_bytes());
    field("package", &input.package_digest.0);
    field("source", input.source.as_bytes());
    field("hook", input.hook.name().as_bytes());
    field("clang", input.clang.as_os_str().as_encoded_bytes());
    field("clang-version", input.clang_version.as_bytes());
    field("flags", &(input.flags.len() as u64).to_le_bytes());
    for flag in input.flags {
        field("flag", flag.as_bytes());
    }
    field("sdk", &input.sdk_digest.0);
    field("btf", &input.btf_digest.0);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_changes_the_key() {
        let flags = vec!["-O2".to_owned(), "-g".to_owned()];
        let base = CacheKeyInput {
            package_digest: Sha256Digest([1; 32]),
            source: "src/a.bpf.c",
            hook: Hook::Xdp,
            clang: Path::new("/usr/bin/clang"),
            clang_version: "Debian clang version 14.0.6",
            flags: &flags,
            sdk_digest: Sha256Digest([2; 32]),
            btf_digest: Sha256Digest([3; 32]),
        };
        let k = cache_key(&base);
        assert_eq!(k, cache_key(&base.clone()));

        let mut one_byte = base.package_digest;
        one_byte.0[31] ^= 1;
        let other_flags = vec!["-O2".to_owned(), "-g".to_owned(), "-DX".to_owned()];
        let split_flags = vec!["-O2-g".to_owned()];
        let variants = [
            CacheKeyInput { package_digest: one_byte, ..base },
            CacheKeyInput { source: "src/b.bpf.c", ..base },
            CacheKeyInput { hook: Hook::Tc, ..base },
            CacheKeyInput { clang: Path::new("/usr/bin/clang-14"), ..base },
            CacheKeyInput { clang_version: "Debian clang version 14.0.7", ..base },
            CacheKeyInput { flags: &other_flags, ..base },
            CacheKeyInput { flags: &split_flags, ..base },
            CacheKeyInput { sdk_digest: Sha256Digest([9; 32]), ..base },
            CacheKeyInput { btf_digest: Sha256Digest([9; 32]), ..base },
        ];
        let mut seen = vec![k];
        for v in &variants {
            let kv = cache_key(v);
            assert!(!seen.contains(&kv), "{v:?} collides");
            seen.push(kv);
        }
    }
}
