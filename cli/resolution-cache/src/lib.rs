//! What resolutions parsed of a registry's index files, kept between commands so
//! that a warm resolution reads no JSON.
//!
//! Reading and parsing the index files is most of a resolution against a large
//! registry (10,000 packages: about 50 MB of JSON), and it is the same work every
//! time nothing was published. So the first resolution keeps what it parsed of
//! each file — versions, yanked flags, dependency lists, the file's text, and
//! what ebpkg.lock pins of the versions chosen (their [`EntryPin`](ebpkg_spec::index::EntryPin):
//! a line is parsed whole once, not on every resolution) — with the file's [`IndexFingerprint`](ebpkg_sources::IndexFingerprint), in one file
//! per registry; later ones take a package from it when the index file's
//! fingerprint is unchanged, and parse the file otherwise.
//!
//! The file is memory-mapped: a warm resolution touches only the records it uses
//! and copies no text. Nothing in it is trusted: every length and offset is
//! checked, every name and version validated, and anything that does not check
//! out is a miss (the index file is read as if there were no cache). Dependency
//! lists are checked to lie within their record but decoded only when the
//! resolver asks for one ([`ebpkg_resolver::DepLists`]); one that does not decode
//! then is noted ([`ResolutionCaches::damaged`]) for the loader to read that index
//! file instead and resolve again, and its record is dropped from the file. ebpkg only
//! ever replaces the file by a rename, so a mapping never sees it change; a file
//! truncated in place by hand while a command runs can crash that command
//! (SIGBUS), never mislead it. A registry with TUF metadata fingerprints an index file
//! by the SHA-256 its signed metadata lists ([`IndexFingerprint::Contents`](ebpkg_sources::IndexFingerprint::Contents)),
//! so a record is used only for the file the registry signs now; index files with damaged
//! lines are never cached (their warnings are given by every resolution that uses them).
//!
//! Layout (little-endian; `str` is a u32 length and UTF-8 bytes). A record is in two parts: what every
//! resolution reads (lists, versions, pins), with the first parts of all records together in the order
//! the command that wrote the file read them, and what only errors and lines not pinned yet read (the
//! index file's text), after all of them. A warm resolution then touches a few megabytes, several
//! records to a page, rather than a page per record between texts of several KiB. Versions have a
//! fixed size within a record (its numbers each in the narrowest of 2, 4 or 8 bytes that holds all
//! of them: most are small), so that the resolver reads the one it asks for where it is
//! ([`ebpkg_resolver::CandidateList`]) rather than every version of every package being decoded:
//!
//! ```text
//! magic "EBPKGRES" | stamp: str | records: u32 | slots: u32 (a power of two, at least twice the
//!                        records) | seed: u64 (random, each file its own)
//! table, per slot: u32 (0: none; else where a directory entry is: the entries whose name's
//!                        FxHash with the seed is `hash % slots` at that slot or the 31 after it)
//! directory, per record: name (normalized): str | fingerprint: 57 bytes (kind 0: file system
//!                        identity; 1: SHA-256 and length)
//!                        | first part offset, length: u32 | second part offset, length: u32
//! first parts, per record:
//!   lists: u32, each: deps: u32, each: name: str | registry: u8 (0: the package's own) [str] | requirement: str
//!   versions: u32 | width: u8 (2, 4 or 8) | each: major, minor, patch, list: width bytes each
//!                        | flags: u8 (1: yanked, 2: pre-release, 4: build)
//!   then, for each version with a pre-release or build metadata, in order: [pre: str] | [build: str]
//!   pins: u32, each (by increasing index): version (its index above): u32 | that version again: str | name: str
//!                        | cksum: 32 bytes | signer: u8 (1: present) [32 bytes]
//!   origin length, text length: u32 | second part's CRC-32: u32 | CRC-32 of this part up to here: u32
//! second parts, per record (laid out from the lengths above; read only when used):
//!   origin: bytes (UTF-8, checked when shown)
//!   lines, one per version (fixed size, read and checked only for the versions locked):
//!                        line start, line end, line number: u32
//!   text: the index file's bytes (line offsets are into it)
//! ```

mod cache;
mod format;
mod loaded;

pub use cache::{CacheRef, RegistryCache, ResolutionCaches};
pub use loaded::{Line, LoadedIndex};

use std::sync::{Mutex, MutexGuard};

/// The lists every module of the cache shares between the resolver's threads.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A thread that panicked holding it left a list of records, still whole.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Every record of a cache file given as bytes that decodes, as a command whose
/// default registry is the records' own would read it: what the fuzz target
/// feeds arbitrary bytes to.
pub fn read_records(bytes: Vec<u8>) -> Vec<LoadedIndex> {
    format::read_records(bytes)
}

/// Makes the checksums of every record in a cache file's `bytes` hold, for the fuzz
/// target and tests: damaged contents then reach the decoding past the checksums
/// (which would otherwise turn nearly all of them into misses at once).
pub fn reseal(bytes: &mut [u8]) {
    format::reseal(bytes)
}
