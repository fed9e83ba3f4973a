//! A package's index as a resolution reads it, however it was obtained.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use ebpkg_resolver::{Candidate, CandidateList, DepLists, Requirement, SourceError};
use ebpkg_spec::index::{EntryPin, IndexEntry, IndexError};
use semver::{BuildMetadata, Prerelease, Version};

use crate::format::{LINE_BYTES, ListContext, Stored, VersionWidth, read_line, read_version, read_yanked};

/// A package's index as a resolution reads it: the resolver's candidates, and
/// the file's text for the whole entry of the versions it chooses.
///
/// Small: a warm resolution holds one for each of thousands of packages, and a stored
/// record's is a few places in the mapped cache file (see [`StoredRecord`]). A test holds
/// it, with its `Arc`'s counts, to the allocator's 160-byte size.
pub struct LoadedIndex {
    /// What ebpkg.lock pins of usable lines whose whole entry this command found valid
    /// (a stored record's own are read from it), to be kept in the cache.
    pub(crate) learned: Mutex<Vec<(u32, EntryPin)>>,
    pub(crate) body: Body,
}

pub(crate) enum Body {
    Parsed(Box<Parsed>),
    Stored(StoredRecord),
}

/// An index file read and parsed.
pub(crate) struct Parsed {
    /// Where the file was read from, for messages.
    pub(crate) origin: String,
    pub(crate) text: Vec<u8>,
    /// Where the usable lines are in `text`, in file order; `candidates[k]` is read from `lines[k]`.
    pub(crate) lines: Vec<Line>,
    pub(crate) candidates: Vec<Candidate>,
    /// What the candidates depend on (see [`DepLists`]).
    pub(crate) lists: Vec<Box<[Requirement]>>,
    /// Lines left out, to warn about when the resolver uses this package.
    pub(crate) problems: Vec<IndexError>,
    /// See [`LoadedIndex::ascending`].
    pub(crate) ascending: bool,
}

/// A resolution cache record, read where it lies in the mapped cache file (the layout is in
/// the crate documentation):
/// - each version when the resolver asks for it (a warm resolution reads one or two versions
///   of each of thousands of packages: decoding them all was a tenth of its work, and holding
///   them most of its fresh memory);
/// - each dependency list the first time it is asked for;
/// - each pin again for the version locked;
/// - the second part (where the file came from, its line table and text) for the lines not
///   pinned yet and for messages, checked against its checksum the first time: a damaged
///   offset or byte there would otherwise read as another line, or another package's.
///
/// Every place was checked against the file when the record was decoded.
pub(crate) struct StoredRecord {
    pub(crate) file: Arc<Stored>,
    pub(crate) context: Arc<ListContext>,
    /// The record's package (normalized), noted in `context` when a part of it is damaged.
    pub(crate) package: Arc<str>,
    /// `width.entry_bytes()` a version from `versions_at`.
    pub(crate) versions_at: u32,
    pub(crate) n_versions: u32,
    pub(crate) width: VersionWidth,
    /// See [`LoadedIndex::ascending`].
    pub(crate) ascending: bool,
    /// The pre-releases and build metadata of the few versions that have them, by position.
    pub(crate) extras: Box<[(u32, Prerelease, BuildMetadata)]>,
    pub(crate) lists: Box<[StoredList]>,
    /// `n_pins` pins from `pins_at`.
    pub(crate) pins_at: u32,
    pub(crate) n_pins: u32,
    /// The second part, from `cold_at`: `origin_len` bytes of origin, the line table
    /// ([`LINE_BYTES`] a version), `text_len` bytes of text; `cold_crc` its checksum.
    pub(crate) cold_at: u32,
    pub(crate) origin_len: u32,
    pub(crate) text_len: u32,
    pub(crate) cold_crc: u32,
    pub(crate) intact: OnceLock<bool>,
}

impl StoredRecord {
    /// `len` bytes from `at` (every place was checked against the file when the record was
    /// decoded: `None` would be a bug, which the callers take as damage).
    fn bytes(&self, at: usize, len: usize) -> Option<&[u8]> {
        self.file.bytes().get(at..at.checked_add(len)?)
    }

    pub(crate) fn version(&self, i: usize) -> Candidate {
        assert!(i < self.n_versions as usize, "version {i} of {}", self.n_versions);
        let extras = || {
            let at = self.extras.binary_search_by_key(&(i as u32), |(k, _, _)| *k).ok()?;
            self.extras.get(at).map(|(_, pre, build)| (pre.clone(), build.clone()))
        };
        read_version(self.file.bytes(), self.versions_at as usize + i * self.width.entry_bytes(), self.width, extras)
    }

    fn yanked(&self, i: usize) -> bool {
        assert!(i < self.n_versions as usize, "version {i} of {}", self.n_versions);
        read_yanked(self.file.bytes(), self.versions_at as usize + i * self.width.entry_bytes(), self.width)
    }

    fn origin(&self) -> &[u8] {
        self.bytes(self.cold_at as usize, self.origin_len as usize).unwrap_or_default()
    }

    fn line_table_at(&self) -> usize {
        self.cold_at as usize + self.origin_len as usize
    }

    fn text_at(&self) -> usize {
        self.line_table_at() + self.n_versions as usize * LINE_BYTES
    }

    fn text(&self) -> &[u8] {
        self.bytes(self.text_at(), self.text_len as usize).unwrap_or_default()
    }

    /// Line `k`, checked to lie within the text.
    fn line(&self, k: usize) -> Option<Line> {
        let at = self.line_table_at().checked_add(k.checked_mul(LINE_BYTES)?)?;
        (k < self.n_versions as usize).then(|| read_line(self.file.bytes().get(at..)?, self.text_len as usize))?
    }

    fn pins(&self) -> impl Iterator<Item = crate::format::RawPin<'_>> {
        crate::format::pins_at(self.file.bytes(), self.pins_at as usize, self.n_pins)
    }

    fn second_part_intact(&self) -> bool {
        *self.intact.get_or_init(|| {
            let len = self.text_at() + self.text_len as usize - self.cold_at as usize;
            let bytes = self.bytes(self.cold_at as usize, len);
            let intact = bytes.is_some_and(|bytes| crc32fast::hash(bytes) == self.cold_crc);
            if !intact {
                crate::lock(&self.context.damaged).push(Arc::clone(&self.package));
            }
            intact
        })
    }

    fn list(&self, k: u32) -> Option<&[Requirement]> {
        let list = self.lists.get(k as usize)?;
        let decode = || {
            let bytes = self.bytes(list.at as usize, list.len as usize);
            let decoded = bytes.and_then(|bytes| crate::format::decode_list(bytes, &self.context));
            if decoded.is_none() {
                crate::lock(&self.context.damaged).push(Arc::clone(&self.package));
            }
            decoded
        };
        list.decoded.get_or_init(decode).as_deref()
    }
}

/// Where a stored list is in its file, and the list once decoded (`None`: damaged).
pub(crate) struct StoredList {
    pub(crate) at: u32,
    pub(crate) len: u32,
    pub(crate) decoded: OnceLock<Option<Box<[Requirement]>>>,
}

impl CandidateList for LoadedIndex {
    fn len(&self) -> usize {
        match &self.body {
            Body::Parsed(parsed) => parsed.candidates.len(),
            Body::Stored(record) => record.n_versions as usize,
        }
    }

    fn get(&self, i: usize) -> Cow<'_, Candidate> {
        match &self.body {
            Body::Parsed(parsed) => Cow::Borrowed(&parsed.candidates[i]),
            Body::Stored(record) => Cow::Owned(record.version(i)),
        }
    }

    /// A stored version's flags byte alone.
    fn yanked(&self, i: usize) -> bool {
        match &self.body {
            Body::Parsed(parsed) => parsed.candidates[i].yanked,
            Body::Stored(record) => record.yanked(i),
        }
    }
}

impl DepLists for LoadedIndex {
    fn pin_of(&self, position: u32, version: &Version) -> Option<Result<EntryPin, ebpkg_resolver::DamagedPin>> {
        let pin = LoadedIndex::pin_of(self, position, version)?;
        Some(pin.map_err(|problem| ebpkg_resolver::DamagedPin { problem, origin: self.origin().to_owned() }))
    }

    fn list(&self, k: u32) -> Result<&[Requirement], SourceError> {
        let found = match &self.body {
            Body::Parsed(parsed) => parsed.lists.get(k as usize).map(|l| &**l),
            Body::Stored(record) => record.list(k),
        };
        found.ok_or_else(|| {
            format!(
                "the resolution cache's record of {} is damaged (dependency list {k}): it is read from the index \
                 file again and the record dropped (`ebpkg cache clean --only indexes` removes the whole cache)",
                self.origin()
            )
            .into()
        })
    }
}

/// Where a usable line is in the file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub bytes: Range<usize>,
    /// Its line number (from 1), for messages.
    pub line_no: usize,
}

impl LoadedIndex {
    /// An index file read from `origin` and parsed: `lines[k]` is where in `text`
    /// `candidates[k]` was read from, and `lists` are what `candidates` depend on.
    pub fn parsed(
        origin: String,
        text: Vec<u8>,
        lines: Vec<Line>,
        candidates: Vec<Candidate>,
        lists: Vec<Box<[Requirement]>>,
        problems: Vec<IndexError>,
    ) -> LoadedIndex {
        let ascending = ebpkg_resolver::Versions::is_ascending(&candidates);
        let parsed = Parsed { origin, text, lines, candidates, lists, problems, ascending };
        LoadedIndex { learned: Mutex::default(), body: Body::Parsed(Box::new(parsed)) }
    }

    /// Whether the versions are in strictly ascending order (see
    /// [`ebpkg_resolver::Versions::ascending`]): found out where they are read, off
    /// the resolver's thread.
    pub fn ascending(&self) -> bool {
        match &self.body {
            Body::Parsed(parsed) => parsed.ascending,
            Body::Stored(record) => record.ascending,
        }
    }

    /// Lines left out, to warn about when the resolver uses this package (a stored
    /// record's file had none).
    pub fn problems(&self) -> &[IndexError] {
        match &self.body {
            Body::Parsed(parsed) => &parsed.problems,
            Body::Stored(_) => &[],
        }
    }

    /// Whether the index file's text, its line table and origin read as they were
    /// written: always for a parsed file; for a stored record, checked once, a damaged
    /// one noted (its index file is read instead, and the record dropped from the cache file).
    pub(crate) fn second_part_intact(&self) -> bool {
        match &self.body {
            Body::Parsed(_) => true,
            Body::Stored(record) => record.second_part_intact(),
        }
    }

    /// Where the file was read from, for messages.
    pub fn origin(&self) -> &str {
        // A stored record's is checked only here: a warm resolution never says where
        // thousands of records came from.
        const DAMAGED: &str = "(a damaged resolution cache record)";
        match self.second_part_intact() {
            true => std::str::from_utf8(self.origin_bytes()).unwrap_or(DAMAGED),
            false => DAMAGED,
        }
    }

    pub(crate) fn origin_bytes(&self) -> &[u8] {
        match &self.body {
            Body::Parsed(parsed) => parsed.origin.as_bytes(),
            Body::Stored(record) => record.origin(),
        }
    }

    /// The index file's text (a stored record's as it lies in the cache file: see
    /// [`LoadedIndex::second_part_intact`]).
    pub(crate) fn text(&self) -> &[u8] {
        match &self.body {
            Body::Parsed(parsed) => &parsed.text,
            Body::Stored(record) => record.text(),
        }
    }

    /// How many usable lines there are (as many as versions).
    pub(crate) fn n_lines(&self) -> usize {
        match &self.body {
            Body::Parsed(parsed) => parsed.lines.len(),
            Body::Stored(record) => record.n_versions as usize,
        }
    }

    /// Where usable line `k` is in the text.
    pub(crate) fn line(&self, k: usize) -> Option<Line> {
        match &self.body {
            Body::Parsed(parsed) => parsed.lines.get(k).cloned(),
            Body::Stored(record) => record.line(k),
        }
    }

    /// How many dependency lists there are.
    pub(crate) fn n_lists(&self) -> usize {
        match &self.body {
            Body::Parsed(parsed) => parsed.lists.len(),
            Body::Stored(record) => record.lists.len(),
        }
    }

    /// The pins a stored record holds, with their lines, by line.
    pub(crate) fn stored_pins(&self) -> impl Iterator<Item = (u32, EntryPin)> + '_ {
        let record = match &self.body {
            Body::Parsed(_) => None,
            Body::Stored(record) => Some(record),
        };
        record
            .into_iter()
            .flat_map(|r| r.pins().map(|p| (p, &r.package)))
            .filter_map(|(p, package)| Some((p.line, p.pin(package)?)))
    }

    /// The whole entry of `version`, every field checked. `None`: no usable line
    /// has that version; `Some(Err)`: its line is damaged beyond what resolution read.
    pub fn entry(&self, version: &Version) -> Option<Result<IndexEntry, IndexError>> {
        self.entry_at(self.line_of(version)?, version)
    }

    /// Which usable line has `version` (the first, if the file lists it twice).
    fn line_of(&self, version: &Version) -> Option<usize> {
        // A resolution asks for every package it locks, long after reading it: a search reads
        // a few of its versions back into the cache, a scan all of them.
        let n = self.len();
        match self.ascending() {
            true => {
                let (mut low, mut high) = (0, n);
                while low < high {
                    let mid = low + (high - low) / 2;
                    match self.get(mid).version.cmp(version) {
                        std::cmp::Ordering::Less => low = mid + 1,
                        std::cmp::Ordering::Greater => high = mid,
                        std::cmp::Ordering::Equal => return Some(mid),
                    }
                }
                None
            }
            false => (0..n).find(|&k| self.get(k).version == *version),
        }
    }

    /// The whole entry on usable line `k`, which has `version`.
    fn entry_at(&self, k: usize, version: &Version) -> Option<Result<IndexEntry, IndexError>> {
        // A damaged second part has no line: the index file is read instead.
        if !self.second_part_intact() {
            return None;
        }
        let line = self.line(k)?;
        let text = std::str::from_utf8(self.line_bytes(&line))
            .map_err(|e| IndexError::Invalid { line: line.line_no, message: e.to_string() });
        Some(text.and_then(|text| IndexEntry::parse_chosen(text, line.line_no, version)))
    }

    /// What ebpkg.lock pins of `version`'s entry, every field of its line checked:
    /// as [`LoadedIndex::entry`], but the whole line is parsed only the first time
    /// (the cache keeps the result while the file is unchanged).
    pub fn pin(&self, version: &Version) -> Option<Result<EntryPin, IndexError>> {
        self.pin_at(self.line_of(version)?, version)
    }

    /// [`LoadedIndex::pin`] of the version at `position` in the candidates
    /// (a resolver's [`ebpkg_resolver::Origin`]), which should be `version`.
    pub fn pin_of(&self, position: u32, version: &Version) -> Option<Result<EntryPin, IndexError>> {
        let at = position as usize;
        // The line, if the first with its version (always, when the versions ascend).
        match self.ascending() && at < self.len() && self.get(at).version == *version {
            true => self.pin_at(at, version),
            false => self.pin(version),
        }
    }

    /// Every version, in the order of the usable lines.
    pub fn candidates(&self) -> impl DoubleEndedIterator<Item = Cow<'_, Candidate>> {
        (0..self.len()).map(|k| self.get(k))
    }

    /// The newest version that is not yanked, if any.
    pub fn newest(&self) -> Option<Cow<'_, Candidate>> {
        let all = self.candidates();
        match self.ascending() {
            true => all.rev().find(|c| !c.yanked),
            false => all.filter(|c| !c.yanked).max_by(|a, b| a.version.cmp(&b.version)),
        }
    }

    fn pin_at(&self, k: usize, version: &Version) -> Option<Result<EntryPin, IndexError>> {
        let k32 = u32::try_from(k).ok()?;
        if let Body::Stored(record) = &self.body
            // (Stored by line, ascending.)
            && let Some(stored) = record.pins().take_while(|p| p.line <= k32).find(|p| p.line == k32)
        {
            return stored.pin(&record.package).map(Ok);
        }
        let mut learned = crate::lock(&self.learned);
        if let Some((_, pin)) = learned.iter().find(|(at, _)| *at == k32) {
            return Some(Ok(pin.clone()));
        }
        let pin = self.entry_at(k, version)?.map(|entry| EntryPin::from(&entry));
        if let Ok(pin) = &pin {
            learned.push((k32, pin.clone()));
        }
        Some(pin)
    }

    /// Whether this command learned pins the cache does not hold.
    pub(crate) fn learned_pins(&self) -> bool {
        !crate::lock(&self.learned).is_empty()
    }

    /// Every pin known, stored or learned, by line.
    pub(crate) fn all_pins(&self) -> Vec<(u32, EntryPin)> {
        let mut all: Vec<(u32, EntryPin)> = self.stored_pins().collect();
        all.extend(crate::lock(&self.learned).iter().cloned());
        all.sort_unstable_by_key(|(k, _)| *k);
        all.dedup_by_key(|(k, _)| *k);
        all
    }

    fn line_bytes(&self, line: &Line) -> &[u8] {
        self.text().get(line.bytes.clone()).unwrap_or_default()
    }

    /// The text of the `k`th usable line, if it is UTF-8.
    #[cfg(test)]
    pub(crate) fn line_text(&self, k: usize) -> Option<&str> {
        std::str::from_utf8(self.line_bytes(&self.line(k)?)).ok()
    }
}

#[cfg(test)]
mod tests {
    /// An index with its `Arc`'s two counts fits the allocator's 160-byte size: each word
    /// past it costs a large resolution 32 bytes of fresh memory a package.
    #[test]
    fn an_index_fits_in_160_bytes_with_its_counts() {
        assert!(std::mem::size_of::<super::LoadedIndex>() + 2 * std::mem::size_of::<usize>() <= 160);
    }
}
