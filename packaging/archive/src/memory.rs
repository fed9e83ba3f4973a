//! Reading a checked archive in memory, without unpacking it: the one pass over
//! its entries that [`unpack`](crate::unpack) makes, with the same checks of every
//! entry and of the manifest, keeping only the files the caller asks for (as
//! crates.io's `process_tarball` reads a crate). A registry checks a publish this
//! way, with no scratch directory to write and read back.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

use ebpkg_spec::manifest::MANIFEST_FILE;
use ebpkg_spec::{Diagnostics, Manifest, PackageName};
use semver::Version;

use crate::error::UnpackError;
use crate::limits::Limits;
use crate::paths::archive_prefix;
use crate::target::Target;
use crate::unpack::{check_manifest, extract};
use crate::verified::VerifiedArchive;

/// A package read from its archive by [`read_verified`]: its manifest, and the
/// bytes of the files the caller kept.
#[derive(Debug, Clone)]
pub struct PackageFiles {
    pub manifest: Manifest,
    manifest_bytes: Vec<u8>,
    kept: BTreeMap<String, Vec<u8>>,
    /// Regular files in the archive.
    pub files: usize,
    /// Bytes of file contents in the archive.
    pub bytes: u64,
}

impl PackageFiles {
    /// `ebpkg.toml` exactly as the archive holds it.
    pub fn manifest_bytes(&self) -> &[u8] {
        &self.manifest_bytes
    }

    /// The bytes of the file at package path `rel` (`README.md`), when the
    /// archive holds it and the caller kept it.
    pub fn file(&self, rel: &str) -> Option<&[u8]> {
        self.kept.get(rel).map(Vec::as_slice)
    }
}

/// Reads the package `name` `version` from `archive` in memory, with every check
/// [`unpack`](crate::unpack) makes (entries, limits, the manifest naming the
/// package, every file it names present), keeping the files for which `keep`
/// (given the manifest and a package path) says yes. Files that come before
/// `ebpkg.toml` in the archive are held until it is read, then only those kept:
/// at most the archive's unpacked size is held, as unpacking would have written.
pub fn read_verified(
    archive: &VerifiedArchive,
    name: &PackageName,
    version: &Version,
    limits: &Limits,
    keep: impl Fn(&Manifest, &str) -> bool,
) -> Result<PackageFiles, UnpackError> {
    let prefix = archive_prefix(name, version);
    let mut memory = Memory { prefix: &prefix, keep: &keep, held: BTreeMap::new(), manifest: None };
    let contents = extract(archive.bytes(), &prefix, &mut memory, limits)?;
    let manifest = check_manifest(&contents, memory.manifest.take(), &prefix, name, version)?;
    let manifest_bytes = contents.manifest.unwrap_or_default();
    let mut kept = memory.held;
    kept.retain(|rel, _| keep(&manifest, rel));
    Ok(PackageFiles { manifest, manifest_bytes, kept, files: contents.files.len(), bytes: contents.bytes })
}

/// Where [`read_verified`] puts the archive's entries: the files in memory, until
/// the manifest says which to keep.
struct Memory<'a, K> {
    prefix: &'a str,
    keep: &'a K,
    held: BTreeMap<String, Vec<u8>>,
    /// `ebpkg.toml`, parsed as soon as it is read.
    manifest: Option<Result<Manifest, Diagnostics>>,
}

/// One file's bytes, or nothing for a file not kept (its bytes are still read
/// through, and checked, by the pass).
enum Held {
    Kept(Vec<u8>),
    Dropped,
}

impl Write for Held {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if let Held::Kept(bytes) = self {
            bytes.extend_from_slice(data);
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Room made for a file at first: its header's size, within reason (the header
/// may lie; the bytes read are what the limits count).
const FIRST_ROOM: u64 = 64 * 1024;

impl<K: Fn(&Manifest, &str) -> bool> Target for Memory<'_, K> {
    type File = Held;
    fn create_dir(&mut self, _rel: &str) -> Result<(), UnpackError> {
        Ok(())
    }
    fn create_file(&mut self, rel: &str, _executable: bool, size: u64) -> Result<Held, UnpackError> {
        let wanted = match &self.manifest {
            // Not known yet: held until it is.
            None => true,
            Some(Ok(manifest)) => (self.keep)(manifest, rel),
            // The archive will be refused: nothing is needed.
            Some(Err(_)) => false,
        };
        if rel == MANIFEST_FILE || !wanted {
            // (The manifest is kept by the pass itself.)
            return Ok(Held::Dropped);
        }
        Ok(Held::Kept(Vec::with_capacity(usize::try_from(size.min(FIRST_ROOM)).unwrap_or(0))))
    }
    fn finish_file(&mut self, rel: &str, file: Held) -> Result<(), UnpackError> {
        if let Held::Kept(bytes) = file {
            self.held.insert(rel.to_owned(), bytes);
        }
        Ok(())
    }
    fn manifest_read(&mut self, bytes: &[u8]) {
        let parsed = Manifest::parse_bytes(bytes, &format!("{}/{MANIFEST_FILE}", self.prefix));
        if let Ok(manifest) = &parsed {
            let keep = self.keep;
            self.held.retain(|rel, _| keep(manifest, rel));
        } else {
            self.held.clear();
        }
        self.manifest = Some(parsed);
    }
    fn path_of(&self, rel: &str) -> PathBuf {
        // Nothing is written anywhere: errors name the file inside the archive.
        PathBuf::from(format!("{}/{rel}", self.prefix))
    }
}
