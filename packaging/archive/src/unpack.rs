//! Unpacking an archive from the network: checked against its digest first, then
//! extracted entry by entry as untrusted input.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use ebpkg_spec::manifest::MANIFEST_FILE;
use ebpkg_spec::types::Sha256Digest;
use ebpkg_spec::{Diagnostics, Manifest, PackageName};
use semver::Version;
use tar::EntryType;

use crate::error::UnpackError;
use crate::extract::Staging;
use crate::limits::Limits;
use crate::paths::{PathRefusal, archive_prefix, display_bytes, parse_entry_path};
use crate::references::referenced_files;
use crate::stream::{MeteredGunzip, Tripped, Tripwire};
use crate::target::Target;
use crate::verified::{VerifiedArchive, check_digest};

/// A package unpacked by [`unpack`].
#[derive(Debug, Clone)]
pub struct Unpacked {
    /// The package root (the directory holding `ebpkg.toml`): the `dest` given to `unpack`.
    pub root: PathBuf,
    pub manifest: Manifest,
    /// Regular files written.
    pub files: usize,
    /// Bytes of file contents written.
    pub bytes: u64,
}

/// Checks that `bytes` has the digest `expected`, then unpacks the package `name`
/// `version` it holds so that `dest` becomes the package root.
///
/// Nothing is written when the digest differs. Otherwise the archive is extracted into
/// a temporary directory beside `dest` and renamed to `dest` only once every entry has
/// passed the checks (README.md lists them) and its `ebpkg.toml` names `name`
/// `version`; on any error nothing is left behind. When `dest` exists already,
/// [`UnpackError::DestinationExists`] is returned and it is left untouched.
pub fn unpack(
    bytes: &[u8],
    expected: &Sha256Digest,
    name: &PackageName,
    version: &Version,
    dest: &Path,
    limits: &Limits,
) -> Result<Unpacked, UnpackError> {
    check_digest(bytes, expected, limits)?;
    unpack_checked(bytes, name, version, dest, limits)
}

/// [`unpack`] of an archive already checked: not hashed again.
pub fn unpack_verified(
    archive: &VerifiedArchive,
    name: &PackageName,
    version: &Version,
    dest: &Path,
    limits: &Limits,
) -> Result<Unpacked, UnpackError> {
    unpack_checked(archive.bytes(), name, version, dest, limits)
}

fn unpack_checked(
    bytes: &[u8],
    name: &PackageName,
    version: &Version,
    dest: &Path,
    limits: &Limits,
) -> Result<Unpacked, UnpackError> {
    let prefix = archive_prefix(name, version);
    let mut staging = Staging::new(dest)?;
    let contents = extract(bytes, &prefix, &mut staging, limits)?;
    let manifest = check_manifest(&contents, parse_manifest(&contents, &prefix), &prefix, name, version)?;
    let root = staging.commit()?;
    tracing::debug!(package = %prefix, files = contents.files.len(), bytes = contents.bytes, dest = %root.display(), "unpacked");
    Ok(Unpacked { root, manifest, files: contents.files.len(), bytes: contents.bytes })
}

/// What has been extracted so far, to refuse duplicates and conflicts.
#[derive(Default)]
pub(crate) struct Contents {
    pub(crate) files: BTreeSet<String>,
    /// Directories, whether from an entry (`true`) or implied by a deeper path.
    pub(crate) dirs: BTreeMap<String, bool>,
    pub(crate) bytes: u64,
    /// The bytes of `ebpkg.toml`, kept as they went by: the manifest is parsed
    /// from the archive, not read back from where it was written.
    pub(crate) manifest: Option<Vec<u8>>,
}

impl Contents {
    /// Records `rel`, refusing it if it was seen before, if a file sits where it
    /// needs a directory, or (for a file) if a directory has that name.
    fn add(&mut self, rel: &str, is_dir: bool) -> Result<(), UnpackError> {
        let duplicate = || UnpackError::Duplicate { path: rel.to_owned() };
        let mut ancestor = rel;
        while let Some((parent, _)) = ancestor.rsplit_once('/') {
            if self.files.contains(parent) {
                return Err(duplicate());
            }
            ancestor = parent;
        }
        if self.files.contains(rel) {
            return Err(duplicate());
        }
        if is_dir {
            if self.dirs.get(rel) == Some(&true) {
                return Err(duplicate());
            }
            self.dirs.insert(rel.to_owned(), true);
        } else {
            if self.dirs.contains_key(rel) {
                return Err(duplicate());
            }
            self.files.insert(rel.to_owned());
        }
        let mut ancestor = rel;
        while let Some((parent, _)) = ancestor.rsplit_once('/') {
            self.dirs.entry(parent.to_owned()).or_insert(false);
            ancestor = parent;
        }
        Ok(())
    }
}

/// Checks that the unpacked tree `dir` holds exactly what the archive `bytes` (with
/// digest `expected`) holds for package `name` `version`: the same files with the
/// same bytes, the same directories, and nothing else (no added file, no symbolic
/// link). Cached trees are checked this way before each use, so a tree edited or
/// damaged after unpacking is never built from: [`UnpackError::TreeModified`].
/// Returns the package's manifest, parsed from the archive (and checked as
/// [`unpack`] checks it): the tree's `ebpkg.toml` is not read again.
pub fn verify_tree(
    bytes: &[u8],
    expected: &Sha256Digest,
    name: &PackageName,
    version: &Version,
    dir: &Path,
    limits: &Limits,
) -> Result<Manifest, UnpackError> {
    check_digest(bytes, expected, limits)?;
    verify_tree_checked(bytes, name, version, dir, limits)
}

/// [`verify_tree`] against an archive already checked: not hashed again.
pub fn verify_tree_verified(
    archive: &VerifiedArchive,
    name: &PackageName,
    version: &Version,
    dir: &Path,
    limits: &Limits,
) -> Result<Manifest, UnpackError> {
    verify_tree_checked(archive.bytes(), name, version, dir, limits)
}

fn verify_tree_checked(
    bytes: &[u8],
    name: &PackageName,
    version: &Version,
    dir: &Path,
    limits: &Limits,
) -> Result<Manifest, UnpackError> {
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_dir()) {
        return Err(UnpackError::TreeModified { path: dir.to_owned(), problem: "it is not a directory".into() });
    }
    let prefix = archive_prefix(name, version);
    let mut compare = crate::compare::Compare::new(dir);
    let contents = extract(bytes, &prefix, &mut compare, limits)?;
    compare.nothing_else(&contents.files, &contents.dirs)?;
    check_manifest(&contents, parse_manifest(&contents, &prefix), &prefix, name, version)
}

/// Goes through every entry of the archive `bytes` (whose files and directories
/// must all be under `prefix`/), checking each as untrusted input within `limits`
/// and handing it to `staging`: the one pass every reader of an archive makes
/// (unpacking, comparing with a tree, reading in memory).
pub(crate) fn extract<T: Target>(
    bytes: &[u8],
    prefix: &str,
    staging: &mut T,
    limits: &Limits,
) -> Result<Contents, UnpackError> {
    let (reader, tripwire) = MeteredGunzip::new(bytes, limits);
    let stream_error = |e: io::Error| stream_error(e, &tripwire, limits);
    let mut archive = tar::Archive::new(reader);
    let mut contents = Contents::default();
    let mut entries_seen = 0u64;
    for entry in archive.entries().map_err(stream_error)? {
        let mut entry = entry.map_err(stream_error)?;
        entries_seen += 1;
        if entries_seen > limits.max_entries {
            return Err(UnpackError::TooManyEntries { limit: limits.max_entries });
        }
        let raw_path = entry.path_bytes().into_owned();
        let shown = display_bytes(&raw_path);
        let kind = entry.header().entry_type();
        let is_dir = match kind {
            EntryType::Regular => false,
            EntryType::Directory => true,
            other => return Err(UnpackError::UnsupportedEntry { path: shown, kind: describe(other) }),
        };
        let rel = match parse_entry_path(&raw_path, prefix, is_dir) {
            Ok(rel) => rel,
            Err(PathRefusal::Unsafe(problem)) => return Err(UnpackError::UnsafePath { path: shown, problem }),
            Err(PathRefusal::OutsidePrefix) => {
                return Err(UnpackError::OutsidePrefix { path: shown, prefix: prefix.to_owned() });
            }
        };
        let Some(rel) = rel else {
            // The prefix directory itself: the staging root, which exists already.
            continue;
        };
        contents.add(&rel, is_dir)?;
        if is_dir {
            staging.create_dir(&rel)?;
            continue;
        }
        // The header's size is checked now for an early, precise error; the bytes
        // really read are what the limits rest on (the metered stream, and the
        // count below).
        let size = entry.size();
        if size > limits.max_file_bytes {
            return Err(UnpackError::FileTooLarge { path: shown, size, limit: limits.max_file_bytes });
        }
        if contents.bytes.saturating_add(size) > limits.max_total_bytes {
            return Err(UnpackError::TooLarge { limit: limits.max_total_bytes });
        }
        let mode =
            entry.header().mode().map_err(|e| UnpackError::Corrupt { detail: format!("entry `{shown}`: {e}") })?;
        let mut file = staging.create_file(&rel, mode & 0o111 != 0, size)?;
        let path = staging.path_of(&rel);
        let written = if rel == MANIFEST_FILE {
            let mut kept = Tee { inner: &mut file, copy: Vec::new() };
            let written = copy_entry(&mut entry, &mut kept, &path, &stream_error)?;
            contents.manifest = Some(kept.copy);
            written
        } else {
            copy_entry(&mut entry, &mut file, &path, &stream_error)?
        };
        if written != size {
            return Err(UnpackError::Corrupt {
                detail: format!("entry `{shown}` is truncated ({written} of {size} bytes)"),
            });
        }
        staging.finish_file(&rel, file)?;
        if let Some(manifest) = contents.manifest.as_deref().filter(|_| rel == MANIFEST_FILE) {
            staging.manifest_read(manifest);
        }
        contents.bytes += written;
    }
    // Read to the end of the gzip stream so that its checksum and length are checked
    // and the limits apply to all of it, not only to the part the tar reader wanted.
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink()).map_err(stream_error)?;
    Ok(contents)
}

/// Writes to `inner` and keeps a copy of what it wrote.
struct Tee<'a, W> {
    inner: &'a mut W,
    copy: Vec<u8>,
}

impl<W: Write> Write for Tee<'_, W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(data)?;
        self.copy.extend_from_slice(&data[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Copies an entry's data, telling errors of the archive from errors of the disk.
fn copy_entry(
    entry: &mut impl Read,
    file: &mut impl Write,
    path: &Path,
    stream_error: &dyn Fn(io::Error) -> UnpackError,
) -> Result<u64, UnpackError> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut written = 0u64;
    loop {
        let n = match entry.read(&mut buf) {
            Ok(0) => return Ok(written),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(stream_error(e)),
        };
        file.write_all(&buf[..n]).map_err(|source| match crate::compare::differs(&source) {
            Some(problem) => UnpackError::TreeModified { path: path.to_path_buf(), problem },
            None => UnpackError::Io { path: path.to_path_buf(), cause: source },
        })?;
        written += n as u64;
    }
}

fn stream_error(e: io::Error, tripwire: &Tripwire, limits: &Limits) -> UnpackError {
    match tripwire.tripped() {
        Some(Tripped::TooLarge) => UnpackError::TooLarge { limit: limits.max_total_bytes },
        Some(Tripped::Ratio) => UnpackError::CompressionRatio { limit: limits.max_ratio },
        None => UnpackError::Corrupt { detail: e.to_string() },
    }
}

fn describe(kind: EntryType) -> String {
    match kind {
        EntryType::Symlink => "symbolic link".to_owned(),
        EntryType::Link => "hard link".to_owned(),
        EntryType::Char => "character device".to_owned(),
        EntryType::Block => "block device".to_owned(),
        EntryType::Fifo => "named pipe".to_owned(),
        EntryType::Continuous => "contiguous file".to_owned(),
        EntryType::GNUSparse => "sparse file".to_owned(),
        EntryType::GNULongName | EntryType::GNULongLink => "misplaced GNU long-name record".to_owned(),
        EntryType::XGlobalHeader | EntryType::XHeader => "pax extended header".to_owned(),
        other => format!("entry of unknown type {:?}", other.as_byte() as char),
    }
}

/// The archive's `ebpkg.toml` parsed, when the archive holds one (the errors
/// name it inside the archive).
pub(crate) fn parse_manifest(contents: &Contents, prefix: &str) -> Option<Result<Manifest, Diagnostics>> {
    let bytes = contents.manifest.as_deref()?;
    Some(Manifest::parse_bytes(bytes, &format!("{prefix}/{MANIFEST_FILE}")))
}

/// Checks that the archive held an `ebpkg.toml` (`parsed`, from [`parse_manifest`])
/// that describes the package asked for, and that every file it names was in the
/// archive.
pub(crate) fn check_manifest(
    contents: &Contents,
    parsed: Option<Result<Manifest, Diagnostics>>,
    prefix: &str,
    name: &PackageName,
    version: &Version,
) -> Result<Manifest, UnpackError> {
    let Some(parsed) = parsed.filter(|_| contents.files.contains(MANIFEST_FILE)) else {
        return Err(UnpackError::MissingManifest { prefix: prefix.to_owned() });
    };
    let manifest = parsed.map_err(UnpackError::InvalidManifest)?;
    let package = &manifest.package;
    if package.name != *name || package.version != *version {
        return Err(UnpackError::WrongPackage {
            expected: format!("{} {}", name.as_str(), version),
            found: format!("{} {}", package.name.as_str(), package.version),
        });
    }
    for reference in referenced_files(&manifest) {
        if !contents.files.contains(reference.path.as_str()) {
            return Err(UnpackError::MissingReferenced {
                item: reference.item,
                path: reference.path.as_str().to_owned(),
            });
        }
    }
    Ok(manifest)
}
