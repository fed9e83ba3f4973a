//! A package's index as a resolution reads it, however it was obtained.

use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use ebpkg_resolver::{Candidate, DepLists, Requirement, SourceError};
use ebpkg_spec::index::{EntryPin, IndexEntry, IndexError};
use semver::Version;

/// A package's index as a resolution reads it: the resolver's candidates, and
/// the file's text for the whole entry of the versions it chooses.
pub struct LoadedIndex {
    /// Where the file was read from (UTF-8), for messages: a stored record's is left in
    /// the cache file (a warm resolution decodes thousands of records and says nothing).
    pub(crate) origin: IndexBytes,
    pub(crate) text: IndexBytes,
    /// Where the usable lines are, in file order.
    pub(crate) lines: Lines,
    /// The resolver's view of those lines, in the same order.
    pub candidates: Arc<[Candidate]>,
    /// Whether `candidates` are in strictly ascending version order (see
    /// [`ebpkg_resolver::Versions::ascending`]): found out where they are read, off
    /// the resolver's thread.
    pub ascending: bool,
    /// Their dependency lists (see [`DepLists`]).
    pub(crate) lists: Lists,
    /// Lines left out, to warn about when the resolver uses this package.
    pub problems: Vec<IndexError>,
    /// What ebpkg.lock pins of usable lines (by their index in `lines`) whose
    /// whole entry was found valid: read from the cache record...
    pub(crate) pins: Vec<(u32, EntryPin)>,
    /// ...or learned by this command, to be kept in the cache.
    pub(crate) learned: Mutex<Vec<(u32, EntryPin)>>,
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
        candidates: Arc<[Candidate]>,
        lists: Vec<Box<[Requirement]>>,
        problems: Vec<IndexError>,
    ) -> LoadedIndex {
        LoadedIndex {
            origin: IndexBytes::Owned(origin.into_bytes()),
            text: IndexBytes::Owned(text),
            lines: Lines::Owned(lines),
            ascending: ebpkg_resolver::Versions::is_ascending(&candidates),
            candidates,
            lists: Lists::Parsed(lists),
            problems,
            pins: Vec::new(),
            learned: Mutex::default(),
        }
    }

    /// Where the file was read from, for messages.
    pub fn origin(&self) -> &str {
        // Checked when the record was decoded.
        std::str::from_utf8(self.origin.as_slice()).unwrap_or_default()
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
        match self.ascending {
            true => self.candidates.binary_search_by(|c| c.version.cmp(version)).ok(),
            false => self.candidates.iter().position(|c| c.version == *version),
        }
    }

    /// The whole entry on usable line `k`, which has `version`.
    fn entry_at(&self, k: usize, version: &Version) -> Option<Result<IndexEntry, IndexError>> {
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

    /// [`LoadedIndex::pin`] of the version at `position` in [`LoadedIndex::candidates`]
    /// (a resolver's [`ebpkg_resolver::Origin`]), which should be `version`.
    pub fn pin_of(&self, position: u32, version: &Version) -> Option<Result<EntryPin, IndexError>> {
        match self.candidates.get(position as usize) {
            // The line, if the first with its version (always, when the versions ascend).
            Some(c) if self.ascending && c.version == *version => self.pin_at(position as usize, version),
            _ => self.pin(version),
        }
    }

    fn pin_at(&self, k: usize, version: &Version) -> Option<Result<EntryPin, IndexError>> {
        let k32 = u32::try_from(k).ok()?;
        if let Some((_, pin)) = self.pins.iter().find(|(at, _)| *at == k32) {
            return Some(Ok(pin.clone()));
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
        let mut all = self.pins.clone();
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
