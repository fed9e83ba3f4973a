//! A package's index as a resolution reads it, however it was obtained.

use std::ops::Range;
use std::sync::Arc;

use ebpkg_resolver::Candidate;
use ebpkg_spec::index::{IndexEntry, IndexError};
use semver::Version;

/// A package's index as a resolution reads it: the resolver's candidates, and
/// the file's text for the whole entry of the versions it chooses.
pub struct LoadedIndex {
    pub(crate) origin: String,
    pub(crate) text: IndexBytes,
    /// The usable lines, in file order.
    pub(crate) lines: Vec<Line>,
    /// The resolver's view of those lines, in the same order.
    pub candidates: Arc<[Candidate]>,
    /// Lines left out, to warn about when the resolver uses this package.
    pub problems: Vec<IndexError>,
}

/// Where a usable line is in the file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub bytes: Range<usize>,
    /// Its line number (from 1), for messages.
    pub line_no: usize,
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
    /// `candidates[k]` was read from.
    pub fn parsed(
        origin: String,
        text: Vec<u8>,
        lines: Vec<Line>,
        candidates: Arc<[Candidate]>,
        problems: Vec<IndexError>,
    ) -> LoadedIndex {
        LoadedIndex { origin, text: IndexBytes::Owned(text), lines, candidates, problems }
    }

    /// Where the file was read from, for messages.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The whole entry of `version`, every field checked. `None`: no usable line
    /// has that version; `Some(Err)`: its line is damaged beyond what resolution read.
    pub fn entry(&self, version: &Version) -> Option<Result<IndexEntry, IndexError>> {
        let k = self.candidates.iter().position(|c| c.version == *version)?;
        let line = self.lines.get(k)?;
        let text = std::str::from_utf8(self.line_bytes(line))
            .map_err(|e| IndexError::Invalid { line: line.line_no, message: e.to_string() });
        Some(text.and_then(|text| IndexEntry::parse_chosen(text, line.line_no, version)))
    }

    fn line_bytes(&self, line: &Line) -> &[u8] {
        self.text.as_slice().get(line.bytes.clone()).unwrap_or_default()
    }

    /// The text of the `k`th usable line, if it is UTF-8.
    #[cfg(test)]
    pub(crate) fn line_text(&self, k: usize) -> Option<&str> {
        std::str::from_utf8(self.line_bytes(self.lines.get(k)?)).ok()
    }
}
