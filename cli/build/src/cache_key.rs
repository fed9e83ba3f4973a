//! The build cache key: a SHA-256 over everything that decides an object's bytes.
//!
//! Location-dependent arguments (the package root, the cache's SDK and vmlinux
//! directories) enter the key as placeholders (`<root>`, `<sdk>`, `<vmlinux>`):
//! what they point at is covered by the package, SDK and BTF digests, and leaving
//! the paths out lets the same package unpacked elsewhere hit the cache.
//!
//! A portable object's key has no kernel and no compiler in it: it is compiled
//! against the SDK's reference types (part of the SDK digest), and whichever
//! clang built it first, on whichever machine, made an object every kernel loads
//! (libbpf relocates it). That is what lets a node without clang, or a guest
//! kernel, use an object built elsewhere. A local-kernel object's key names the
//! kernel's BTF and the exact clang, as before.

use std::path::Path;

use ebpkg_spec::digest::FieldHasher;
use ebpkg_spec::types::{Hook, Sha256Digest};

/// Bumped whenever this crate changes how it builds in a way the other inputs do
/// not show (new flags policy, different post-processing, cache layout), so old
/// cache entries are never reused by a newer ebpkg.
pub const FORMAT_VERSION: u32 = 2;

/// Everything a cached object depends on.
#[derive(Debug, Clone, Copy)]
pub struct CacheKeyInput<'a> {
    /// The package archive's digest: stands for the content of every file.
    pub package_digest: Sha256Digest,
    /// The unit's source path inside the package.
    pub source: &'a str,
    pub hook: Hook,
    /// The exact compiler arguments, with location-dependent paths as placeholders.
    pub flags: &'a [String],
    /// The SDK headers' digest, reference kernel types included.
    pub sdk_digest: Sha256Digest,
    pub kernel: KeyKernel<'a>,
}

/// Which kernel types the object is compiled against, as the key sees it.
#[derive(Debug, Clone, Copy)]
pub enum KeyKernel<'a> {
    /// The SDK's reference types: in the SDK digest already.
    Portable,
    /// One kernel's own `vmlinux.h`, generated from its BTF, by one clang.
    Local {
        clang: &'a Path,
        /// The full first line of `clang --version`.
        clang_version: &'a str,
        btf_digest: Sha256Digest,
    },
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
    field("flags", &(input.flags.len() as u64).to_le_bytes());
    for flag in input.flags {
        field("flag", flag.as_bytes());
    }
    field("sdk", &input.sdk_digest.0);
    match input.kernel {
        KeyKernel::Portable => field("kernel", b"portable"),
        KeyKernel::Local { clang, clang_version, btf_digest } => {
            field("kernel", b"local");
            field("clang", clang.as_os_str().as_encoded_bytes());
            field("clang-version", clang_version.as_bytes());
            field("btf", &btf_digest.0);
        }
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_changes_the_key() {
        let flags = vec!["-O2".to_owned(), "-g".to_owned()];
        let local = KeyKernel::Local {
            clang: Path::new("/usr/bin/clang"),
            clang_version: "Debian clang version 14.0.6",
            btf_digest: Sha256Digest([3; 32]),
        };
        let base = CacheKeyInput {
            package_digest: Sha256Digest([1; 32]),
            source: "src/a.bpf.c",
            hook: Hook::Xdp,
            flags: &flags,
            sdk_digest: Sha256Digest([2; 32]),
            kernel: local,
        };
        let k = cache_key(&base);
        assert_eq!(k, cache_key(&base.clone()));

        let mut one_byte = base.package_digest;
        one_byte.0[31] ^= 1;
        let other_flags = vec!["-O2".to_owned(), "-g".to_owned(), "-DX".to_owned()];
        let split_flags = vec!["-O2-g".to_owned()];
        let with_local = |clang: &'static str, clang_version: &'static str, btf: u8| CacheKeyInput {
            kernel: KeyKernel::Local { clang: Path::new(clang), clang_version, btf_digest: Sha256Digest([btf; 32]) },
            ..base
        };
        let portable = CacheKeyInput { kernel: KeyKernel::Portable, ..base };
        let variants = [
            CacheKeyInput { package_digest: one_byte, ..base },
            CacheKeyInput { source: "src/b.bpf.c", ..base },
            CacheKeyInput { hook: Hook::Tc, ..base },
            with_local("/usr/bin/clang-14", "Debian clang version 14.0.6", 3),
            with_local("/usr/bin/clang", "Debian clang version 14.0.7", 3),
            with_local("/usr/bin/clang", "Debian clang version 14.0.6", 9),
            CacheKeyInput { flags: &other_flags, ..base },
            CacheKeyInput { flags: &split_flags, ..base },
            CacheKeyInput { sdk_digest: Sha256Digest([9; 32]), ..base },
            portable,
            CacheKeyInput { hook: Hook::Tc, ..portable },
            CacheKeyInput { sdk_digest: Sha256Digest([9; 32]), ..portable },
        ];
        let mut seen = vec![k];
        for v in &variants {
            let kv = cache_key(v);
            assert!(!seen.contains(&kv), "{v:?} collides");
            seen.push(kv);
        }
    }
}
