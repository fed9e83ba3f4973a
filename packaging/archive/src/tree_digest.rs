//! The digest of a package directory's contents as [`pack`](crate::pack) would
//! pack them, computed without packing: each file streamed through SHA-256 once,
//! no tar, no gzip. What a project is known by to the build cache and to
//! deployment records before it is published.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use ebpkg_spec::Manifest;
use ebpkg_spec::digest::{FieldHasher, Hasher};
use ebpkg_spec::manifest::MANIFEST_FILE;
use ebpkg_spec::types::Sha256Digest;

use crate::error::PackError;
use crate::limits::PackLimits;
use crate::pack::check_prebuilt;
use crate::paths::archive_prefix;
use crate::references::referenced_files;
use crate::select::{SourceFile, select};

/// Tells this digest apart from every other over the same fields (an archive's
/// checksum is not one: it is a digest of gzip's output).
const FORMAT: &[u8] = b"ebpkg package tree 1";

/// The digest of the package in `dir` (whose `ebpkg.toml`, already read, is
/// `manifest_bytes` and parses to `manifest`): over exactly what its archive
/// would hold (the package's name and version, and each file [`pack`](crate::pack)
/// selects: its path, whether it is executable, its bytes), so two directories
/// have the same digest exactly when they pack to the same archive. Refuses what
/// `pack` refuses of the files (a link, a special file, a file the manifest names
/// missing, a prebuilt object that does not match its `sha256`, too much).
/// `ebpkg.toml` is hashed from `manifest_bytes`, not read again.
pub fn tree_digest(dir: &Path, manifest: &Manifest, manifest_bytes: &[u8]) -> Result<Sha256Digest, PackError> {
    let limits = PackLimits::default();
    let refs = referenced_files(manifest);
    let sources = select(dir, &refs, &limits)?;
    let mut digest = FieldHasher::new();
    digest.field("format", FORMAT);
    digest.field("prefix", archive_prefix(&manifest.package.name, &manifest.package.version).as_bytes());
    let mut total = 0u64;
    for (rel, source) in &sources {
        let budget = limits.max_total_bytes - total;
        let (sha256, len) = if rel == MANIFEST_FILE {
            (Sha256Digest::of(manifest_bytes), manifest_bytes.len() as u64)
        } else {
            hash_within(source, budget)?
        };
        if len > budget {
            return Err(PackError::TooLarge { limit: limits.max_total_bytes });
        }
        total += len;
        check_prebuilt(rel, || sha256, &refs)?;
        digest.field("path", rel.as_bytes());
        digest.field("mode", if source.executable { b"755" } else { b"644" });
        digest.field("sha256", &sha256.0);
    }
    Ok(digest.finish())
}

/// The SHA-256 and length of a file, read in blocks; reading stops once it is
/// longer than `budget` (the caller refuses it).
fn hash_within(source: &SourceFile, budget: u64) -> Result<(Sha256Digest, u64), PackError> {
    let io = |cause| PackError::Io { path: source.abs.clone(), cause };
    let mut file = File::open(&source.abs).map_err(io)?.take(budget.saturating_add(1));
    let mut hasher = Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(cause) => return Err(io(cause)),
        };
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((hasher.finish(), len))
}
