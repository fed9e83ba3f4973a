//! A package's index as a resolution reads it, however it was obtained.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use ebpkg_resolver::{Candidate, CandidateList, DepLists, Requirement, SourceError};
use ebpkg_spec::index::{EntryPin, IndexEntry, IndexError};
use semver::Version;

/// A package's index as a resolution reads it: the resolver's candidates, and
/// the file's text for the whole entry of the versions it chooses.
pub struct LoadedIndex {
    /// Where the file was read from, for messages: a stored record's is left in
    /// the cache file (a warm resolution decodes thousands of records and says nothing).
    pub(crate) origin: IndexBytes,
    pub(crate) text: IndexBytes,
    /// Where the usable lines are, in file order.
    pub(crate) lines: Lines,
    /// The resolver's view of those lines, in the same order (see [`CandidateList`]).
    pub(crate) versions: VersionTable,
    /// Whether the versions are in strictly ascending order (see
    /// [`ebpkg_resolver::Versions::ascending`]): found out where they are read, off
    /// the resolver's thread.
    pub ascending: bool,
    /// Their dependency lists (see [`DepLists`]).
    pub(crate) lists: Lists,
    /// Lines left out, to warn about when the resolver uses this package. (A boxed slice: one
    /// word less puts the whole index in the allocator's next smaller size, 320 bytes rather
    /// than 384, for each of a large resolution's thousands of packages.)
    pub problems: Box<[IndexError]>,
    /// What ebpkg.lock pins of usable lines (by their index in `lines`) whose
    /// whole entry was found valid: read from the cache record...
    pub(crate) pins: crate::format::StoredPins,
    /// ...or learned by this command, to be kept in the cache.
    pub(crate) learned: Mutex<Vec<(u32, EntryPin)>>,
    /// A stored record's second part: `origin`, `text` and `lines` lie in it.
    pub(crate) second: Option<SecondPart>,
}

/// A stored record's second part (see [`crate::format::Record`]), checked against its
/// checksum the first time it is read: a damaged offset or byte there would otherwise
/// read as another line, or another package's.
pub(crate) struct SecondPart {
    pub(crate) file: Arc<crate::format::Stored>,
    pub(crate) bytes: Range<usize>,
    pub(crate) crc: u32,
    pub(crate) intact: OnceLock<bool>,
}

/// An index's versions: as parsed, or a stored record's table of them, each read
/// when the resolver asks for it (a warm resolution reads one or two versions of
/// each of thousands of packages; decoding all of them was a tenth of its work,
/// and holding them most of its fresh memory).
pub(crate) enum VersionTable {
    Owned(Vec<Candidate>),
    /// [`crate::format::VERSION_BYTES`] per version from `start` in `file`, every
    /// one checked when the record was decoded; the pre-releases and build metadata
    /// of the few versions that have them, by position, decoded then.
    Stored {
        file: Arc<crate::format::Stored>,
        start: usize,
        len: usize,
        extras: Box<[(u32, semver::Prerelease, semver::BuildMetadata)]>,
    },
}

impl VersionTable {
    pub(crate) fn len(&self) -> usize {
        match self {
            VersionTable::Owned(candidates) => candidates.len(),
            VersionTable::Stored { len, .. } => *len,
        }
    }

    pub(crate) fn get(&self, i: usize) -> Cow<'_, Candidate> {
        match self {
            VersionTable::Owned(candidates) => Cow::Borrowed(&candidates[i]),
            VersionTable::Stored { file, start, len, extras } => {
                assert!(i < *len, "version {i} of {len}");
                Cow::Owned(crate::format::read_version(file.bytes(), start + i * crate::format::VERSION_BYTES, || {
                    let at = extras.binary_search_by_key(&(i as u32), |(k, _, _)| *k).ok()?;
                    extras.get(at).map(|(_, pre, build)| (pre.clone(), build.clone()))
                }))
            }
        }
    }

    /// Whether version `i` is yanked: in a stored table, its flags byte alone.
    pub(crate) fn yanked(&self, i: usize) -> bool {
        match self {
            VersionTable::Owned(candidates) => candidates[i].yanked,
            VersionTable::Stored { file, start, len, .. } => {
                assert!(i < *len, "version {i} of {len}");
                crate::format::read_yanked(file.bytes(), start + i * crate::format::VERSION_BYTES)
            }
        }
    }
}

impl CandidateList for LoadedIndex {
    fn len(&self) -> usize {
        self.versions.len()
    }

    fn get(&self, i: usize) -> Cow<'_, Candidate> {
        self.versions.get(i)
    }

    fn yanked(&self, i: usize) -> bool {
        self.versions.yanked(i)
    }
}

/// Where a usable line is in the file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub bytes: Range<usize>,
    /// Its line number (from 1), for messages.
    pub line_no: usize,
}

/// An index's dependency lists: as parsed, or in a stored record, each decoded
/// the first time it is asked for (a warm resolution asks for the lists of one
/// or two versions of each package; decoding every list of every version was
/// most of reading a record).
pub(crate) enum Lists {
    Parsed(Vec<Box<[Requirement]>>),
    Stored {
        file: Arc<crate::format::Stored>,
        lists: Box<[StoredList]>,
        context: Arc<crate::format::ListContext>,
        /// The record's package (normalized), noted in `context` when a list is damaged.
        package: Arc<str>,
    },
}

/// Where a stored list is in its file, and the list once decoded (`None`: damaged).
pub(crate) struct StoredList {
    pub(crate) bytes: Range<usize>,
    pub(crate) decoded: OnceLock<Option<Box<[Requirement]>>>,
}

impl Lists {
    pub(crate) fn len(&self) -> usize {
        match self {
            Lists::Parsed(lists) => lists.len(),
            Lists::Stored { lists, .. } => lists.len(),
        }
    }
}

impl DepLists for LoadedIndex {
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn list(&self, k: u32) -> Result<&[Requirement], SourceError> {
        let found = match &self.lists {
            Lists::Parsed(lists) => lists.get(k as usize).map(|l| &**l),
            Lists::Stored { file, lists, context, package } => lists.get(k as usize).and_then(|list| {
                let decode = || {
                    let decoded =
                        file.bytes().get(list.bytes.clone()).and_then(|b| crate::format::decode_list(b, context));
                    if decoded.is_none() {
                        crate::cache::lock(&context.damaged).push(Arc::clone(package));
                    }
                    decoded
                };
                list.decoded.get_or_init(decode).as_deref()
            }),
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

/// Where an index's usable lines are: as parsed, or a stored record's table of
/// them, read only for the few lines a resolution locks (a warm resolution
/// decodes thousands of records and would otherwise copy every line's place).
pub(crate) enum Lines {
    Owned(Vec<Line>),
    /// [`crate::format::LINE_BYTES`] per line from `start` in `file`, each checked
    /// against its record's text (`text_len` bytes) when read.
    Stored {
        file: Arc<crate::format::Stored>,
        start: usize,
        len: usize,
        text_len: usize,
    },
}

impl Lines {
    pub(crate) fn len(&self) -> usize {
        match self {
            Lines::Owned(lines) => lines.len(),
            Lines::Stored { len, .. } => *len,
        }
    }

    pub(crate) fn get(&self, k: usize) -> Option<Line> {
        match self {
            Lines::Owned(lines) => lines.get(k).cloned(),
            Lines::Stored { file, start, len, text_len } => {
                let at = start.checked_add(k.checked_mul(crate::format::LINE_BYTES)?)?;
                (k < *len).then(|| crate::format::read_line(file.bytes().get(at..)?, *text_len))?
            }
        }
    }
}

/// An index file's bytes: as read, or inside a mapped cache file.
pub(crate) enum IndexBytes {
    Owned(Vec<u8>),
    Stored(Arc<crate::format::Stored>, Range<usize>),
}

impl IndexBytes {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            IndexBytes::Owned(bytes) => bytes,
            // The range was checked against the file when the record was decoded.
            IndexBytes::Stored(file, range) => file.bytes().get(range.clone()).unwrap_or_default(),
        }
    }
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
        LoadedIndex {
            origin: IndexBytes::Owned(origin.into_bytes()),
            text: IndexBytes::Owned(text),
            lines: Lines::Owned(lines),
            ascending: ebpkg_resolver::Versions::is_ascending(&candidates),
            versions: VersionTable::Owned(candidates),
            lists: Lists::Parsed(lists),
            problems: problems.into_boxed_slice(),
            pins: crate::format::StoredPins::None,
            learned: Mutex::default(),
            second: None,
        }
    }

    /// Whether the index file's text, its line table and origin read as they were
    /// written: always for a parsed file; for a stored record, checked once, a damaged
    /// one noted (its index file is read instead, and the record dropped from the cache file).
    pub(crate) fn second_part_intact(&self) -> bool {
        let Some(second) = &self.second else { return true };
        *second.intact.get_or_init(|| {
            let bytes = second.file.bytes().get(second.bytes.clone());
            let intact = bytes.is_some_and(|b| crc32fast::hash(b) == second.crc);
            if let (false, Lists::Stored { context, package, .. }) = (intact, &self.lists) {
                crate::cache::lock(&context.damaged).push(Arc::clone(package));
            }
            intact
        })
    }

    /// Where the file was read from, for messages.
    pub fn origin(&self) -> &str {
        // A stored record's is checked only here: a warm resolution never says where
        // thousands of records came from.
        const DAMAGED: &str = "(a damaged resolution cache record)";
        match self.second_part_intact() {
            true => std::str::from_utf8(self.origin.as_slice()).unwrap_or(DAMAGED),
            false => DAMAGED,
        }
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
        let n = self.versions.len();
        match self.ascending {
            true => {
                let (mut low, mut high) = (0, n);
                while low < high {
                    let mid = low + (high - low) / 2;
                    match self.versions.get(mid).version.cmp(version) {
                        std::cmp::Ordering::Less => low = mid + 1,
                        std::cmp::Ordering::Greater => high = mid,
                        std::cmp::Ordering::Equal => return Some(mid),
                    }
                }
                None
            }
            false => (0..n).find(|&k| self.versions.get(k).version == *version),
        }
    }

    /// The whole entry on usable line `k`, which has `version`.
    fn entry_at(&self, k: usize, version: &Version) -> Option<Result<IndexEntry, IndexError>> {
        // A damaged second part has no line: the index file is read instead.
        if !self.second_part_intact() {
            return None;
        }
        let line = self.lines.get(k)?;
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
        match self.ascending && at < self.versions.len() && self.versions.get(at).version == *version {
            true => self.pin_at(at, version),
            false => self.pin(version),
        }
    }

    /// Every version, in the order of the usable lines.
    pub fn candidates(&self) -> impl DoubleEndedIterator<Item = Cow<'_, Candidate>> {
        (0..self.versions.len()).map(|k| self.versions.get(k))
    }

    /// The newest version that is not yanked, if any.
    pub fn newest(&self) -> Option<Cow<'_, Candidate>> {
        let all = self.candidates();
        match self.ascending {
            true => all.rev().find(|c| !c.yanked),
            false => all.filter(|c| !c.yanked).max_by(|a, b| a.version.cmp(&b.version)),
        }
    }

    fn pin_at(&self, k: usize, version: &Version) -> Option<Result<EntryPin, IndexError>> {
        let k32 = u32::try_from(k).ok()?;
        if let Some(stored) = self.pins.get(k32) {
            return Some(Ok(stored));
        }
        let mut learned = crate::cache::lock(&self.learned);
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
        !crate::cache::lock(&self.learned).is_empty()
    }

    /// Every pin known, stored or learned, by line.
    pub(crate) fn all_pins(&self) -> Vec<(u32, EntryPin)> {
        let mut all: Vec<(u32, EntryPin)> = self.pins.iter().collect();
        all.extend(crate::cache::lock(&self.learned).iter().cloned());
        all.sort_unstable_by_key(|(k, _)| *k);
        all.dedup_by_key(|(k, _)| *k);
        all
    }

    fn line_bytes(&self, line: &Line) -> &[u8] {
        self.text.as_slice().get(line.bytes.clone()).unwrap_or_default()
    }

    /// The text of the `k`th usable line, if it is UTF-8.
    #[cfg(test)]
    pub(crate) fn line_text(&self, k: usize) -> Option<&str> {
        std::str::from_utf8(self.line_bytes(&self.lines.get(k)?)).ok()
    }
}

#[cfg(test)]
mod tests {
    /// An index with its `Arc`'s two counts fits the allocator's 320-byte size: each word
    /// past it costs a large resolution 64 bytes of fresh memory a package.
    #[test]
    fn an_index_fits_in_320_bytes_with_its_counts() {
        assert!(std::mem::size_of::<super::LoadedIndex>() + 2 * std::mem::size_of::<usize>() <= 320);
    }
}
