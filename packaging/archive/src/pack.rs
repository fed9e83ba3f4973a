//! Building the archive of a package directory, byte-for-byte reproducibly.
//!
//! Nothing about the machine or the moment leaks into the bytes: entries are sorted by
//! path, every header has mtime 0, uid/gid 0 and no user or group names, modes are
//! 0644 or 0755, and the gzip header has no time or file name. The files' contents and
//! executable bits are all that matter.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use ebpkg_spec::Manifest;
use ebpkg_spec::manifest::MANIFEST_FILE;
use ebpkg_spec::types::Sha256Digest;
use flate2::{Compression, GzBuilder};

use crate::error::PackError;
use crate::limits::{Limits, PackLimits};
use crate::paths::archive_prefix;
use crate::references::{Reference, referenced_files};
use crate::select::{SourceFile, select};
use crate::stream::{self, Tripped};
use crate::verified::VerifiedArchive;

/// An archive built by [`pack`].
#[derive(Debug, Clone)]
pub struct Packed {
    /// The `.tar.gz` bytes.
    pub bytes: Vec<u8>,
    /// SHA-256 of `bytes`: what is published, signed and locked.
    pub sha256: Sha256Digest,
    /// The packed files in archive order (bytewise by path).
    pub files: Vec<PackedFile>,
    /// The package's manifest, as read from the directory.
    pub manifest: Manifest,
}

/// One file in a [`Packed`] archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedFile {
    /// The path inside the package (`src/a.c`), without the archive prefix.
    pub path: String,
    pub size: u64,
}

impl Packed {
    /// The archive, as one whose digest is known: packing computed it from these
    /// very bytes, so it is not hashed again (to publish it, for one).
    pub fn archive(&self) -> VerifiedArchive {
        VerifiedArchive::packed(self.bytes.clone(), self.sha256)
    }

    /// The conventional file name of the archive, `<name>-<version>.tar.gz`.
    pub fn file_name(&self) -> String {
        format!("{}.tar.gz", archive_prefix(&self.manifest.package.name, &self.manifest.package.version))
    }
}

/// Packs the package in `dir` (the directory holding `ebpkg.toml`) with the default
/// [`PackLimits`].
pub fn pack(dir: &Path) -> Result<Packed, PackError> {
    pack_with_limits(dir, &PackLimits::default())
}

/// Packs the package in `dir`, refusing one larger than `limits`.
pub fn pack_with_limits(dir: &Path, limits: &PackLimits) -> Result<Packed, PackError> {
    let manifest = Manifest::load(&dir.join(MANIFEST_FILE)).map_err(PackError::Manifest)?;
    let refs = referenced_files(&manifest);
    let sources = select(dir, &refs, limits)?;
    let prefix = archive_prefix(&manifest.package.name, &manifest.package.version);

    let mut builder = tar::Builder::new(Vec::new());
    let mut files = Vec::with_capacity(sources.len());
    let mut total = 0u64;
    for (rel, source) in &sources {
        let data = read_within(source, limits.max_total_bytes - total, limits)?;
        total += data.len() as u64;
        check_prebuilt(rel, || Sha256Digest::of(&data), &refs)?;
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(data.len() as u64);
        header.set_mode(if source.executable { 0o755 } else { 0o644 });
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        builder
            .append_data(&mut header, format!("{prefix}/{rel}"), data.as_slice())
            .map_err(|e| PackError::Io { path: source.abs.clone(), cause: e })?;
        files.push(PackedFile { path: rel.clone(), size: data.len() as u64 });
    }
    let tar = builder.into_inner().map_err(|cause| PackError::Io { path: dir.to_path_buf(), cause })?;
    let bytes = gzip(&tar).map_err(|cause| PackError::Io { path: dir.to_path_buf(), cause })?;

    // What `unpack` would refuse must not be published: check with its default limits.
    if let Err((tripped, e)) = stream::check(&bytes, &Limits::default()) {
        let defaults = Limits::default();
        let reason = match tripped {
            Some(Tripped::Ratio) => format!("it expands more than {} times its compressed size", defaults.max_ratio),
            Some(Tripped::TooLarge) => format!("it unpacks to more than {} bytes", defaults.max_total_bytes),
            None => e.to_string(),
        };
        return Err(PackError::Unpackable { reason });
    }
    let sha256 = Sha256Digest::of(&bytes);
    tracing::debug!(package = %prefix, files = files.len(), bytes = bytes.len(), %sha256, "packed");
    Ok(Packed { bytes, sha256, files, manifest })
}

/// Reads a file to pack, failing once it would take the package past its size limit.
fn read_within(source: &SourceFile, budget: u64, limits: &PackLimits) -> Result<Vec<u8>, PackError> {
    let io = |e| PackError::Io { path: source.abs.clone(), cause: e };
    let file = File::open(&source.abs).map_err(io)?;
    let mut data = Vec::new();
    file.take(budget.saturating_add(1)).read_to_end(&mut data).map_err(io)?;
    if data.len() as u64 > budget {
        return Err(PackError::TooLarge { limit: limits.max_total_bytes });
    }
    Ok(data)
}

/// A prebuilt object only used through its digest must match it, or every install of
/// the package would fail; with C source beside it, a stale object is merely ignored.
/// `digest` gives the file's digest, asked for only when the file is a prebuilt object.
pub(crate) fn check_prebuilt(
    rel: &str,
    digest: impl FnOnce() -> Sha256Digest,
    refs: &[Reference],
) -> Result<(), PackError> {
    let mut prebuilt = refs.iter().filter(|r| r.path.as_str() == rel).filter_map(|r| Some((r, r.prebuilt?))).peekable();
    if prebuilt.peek().is_none() {
        return Ok(());
    }
    let actual = digest();
    for (reference, (expected, has_source)) in prebuilt {
        if actual == expected {
            continue;
        }
        if has_source {
            tracing::warn!(item = %reference.item, path = rel, %expected, %actual,
                "prebuilt object does not match its sha256; installs will compile the source instead");
        } else {
            return Err(PackError::PrebuiltMismatch {
                item: reference.item.clone(),
                path: rel.to_owned(),
                expected,
                actual,
            });
        }
    }
    Ok(())
}

/// Gzip with a fixed header (no mtime, no file name, "unknown" OS) and level.
fn gzip(tar: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = GzBuilder::new().mtime(0).operating_system(255).write(Vec::new(), Compression::best());
    encoder.write_all(tar)?;
    encoder.finish()
}
