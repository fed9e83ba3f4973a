//! Errors that point into a file: `file:line:col: what is wrong; how to fix it`.
//!
//! Every format in this crate is read from a file a person wrote (or may have
//! edited), so every error carries the byte span it is about. Line and column are
//! computed once, when the error is made, so `Display` never needs the source.

use std::fmt;
use std::ops::Range;

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term;

/// One problem found in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file name as it should be shown to the user (usually relative).
    pub file: String,
    /// Byte range in the source the problem is about.
    pub span: Range<usize>,
    /// 1-based line of `span.start`.
    pub line: usize,
    /// 1-based column of `span.start`, counted in characters.
    pub column: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when we know.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic at `span` of `source`.
    pub fn new(file: &str, source: &str, span: Range<usize>, message: impl Into<String>) -> Self {
        let (line, column) = line_col(source, span.start);
        Diagnostic { file: file.to_owned(), span, line, column, message: message.into(), help: None }
    }

    /// Adds the "how to fix it" part.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Renders the diagnostic with the offending source line and a caret under the
    /// span, without colour. `source` must be the text the span refers to.
    pub fn render(&self, source: &str) -> String {
        self.render_in(&SimpleFile::new(self.file.as_str(), source), source)
    }

    /// [`Diagnostic::render`] with `file` (of `source`) built once for many diagnostics:
    /// it indexes the lines of the whole text.
    fn render_in(&self, file: &SimpleFile<&str, &str>, source: &str) -> String {
        let start = floor_char_boundary(source, self.span.start.min(source.len()));
        let end = floor_char_boundary(source, self.span.end.clamp(start, source.len()));
        let mut diag =
            CsDiagnostic::error().with_message(&self.message).with_labels(vec![Label::primary((), start..end)]);
        if let Some(help) = &self.help {
            diag = diag.with_notes(vec![format!("help: {help}")]);
        }
        let mut out = String::new();
        let config = term::Config::default();
        if term::emit_to_string(&mut out, &config, file, &diag).is_err() {
            // Rendering only fails on spans outside the file; the one-line form is
            // always available and says the same thing.
            return format!("{self}\n");
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.column, self.message)?;
        if let Some(help) = &self.help {
            write!(f, "; {help}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

/// All the problems found in one file, in source order. Never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostics(Vec<Diagnostic>);

impl Diagnostics {
    /// Wraps a non-empty list; returns `None` for an empty one.
    pub fn from_vec(mut list: Vec<Diagnostic>) -> Option<Self> {
        if list.is_empty() {
            return None;
        }
        list.sort_by_key(|d| (d.span.start, d.span.end));
        list.dedup();
        Some(Diagnostics(list))
    }

    /// The problems, in source order.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }

    /// The first problem in source order.
    pub fn first(&self) -> &Diagnostic {
        // Invariant: constructed only through `from_vec`/`From<Diagnostic>`, never empty.
        &self.0[0]
    }

    /// How many problems there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false; present because clippy expects it next to `len`.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every problem rendered with its source line, in source order.
    pub fn render(&self, source: &str) -> String {
        let Some(first) = self.0.first() else { return String::new() };
        let file = SimpleFile::new(first.file.as_str(), source);
        self.0.iter().map(|d| d.render_in(&file, source)).collect()
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// 1-based (line, column) of byte `offset`; the column counts characters.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = floor_char_boundary(source, offset.min(source.len()));
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The closest candidate to `unknown`, if one is close enough to be a likely typo.
pub fn did_you_mean<'a>(unknown: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let unknown_lower = unknown.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(&unknown_lower, &c.to_ascii_lowercase()), c))
        .filter(|(distance, c)| {
            let close = *distance <= (c.len().max(unknown.len()) / 3).max(1);
            // An abbreviation of a longer key ("vers" for "version") is a likely typo too.
            let prefix = unknown_lower.len() >= 3 && c.to_ascii_lowercase().starts_with(&unknown_lower);
            close || prefix
        })
        // On a tie, prefer a candidate with the same letters (a transposition typo).
        .min_by_key(|(distance, c)| (*distance, sorted_chars(c) != sorted_chars(&unknown_lower)))
        .map(|(_, c)| c)
}

fn sorted_chars(s: &str) -> Vec<char> {
    let mut v: Vec<char> = s.to_ascii_lowercase().chars().collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters_not_bytes() {
        let src = "a = 1\nname = \"é\" x";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 6), (2, 1));
        // "é" is two bytes; the 'x' after it is the 13th character of line 2.
        let x = src.find('x').unwrap();
        assert_eq!(line_col(src, x), (2, 12));
    }

    #[test]
    fn display_is_one_line_with_help() {
        let d = Diagnostic::new("ebpkg.toml", "a\nversion = \"1.2\"", 12..17, "bad").with_help("fix it");
        assert_eq!(d.to_string(), "ebpkg.toml:2:11: bad; fix it");
    }

    #[test]
    fn render_shows_the_line_and_a_caret() {
        let src = "[package]\nversion = \"1.2\"\n";
        let d = Diagnostic::new("ebpkg.toml", src, 20..25, "not semver").with_help("write \"1.2.0\"");
        let out = d.render(src);
        assert!(out.contains("ebpkg.toml:2:11"), "{out}");
        assert!(out.contains("version = \"1.2\""), "{out}");
        assert!(out.contains("^^^^^"), "{out}");
        assert!(out.contains("help: write \"1.2.0\""), "{out}");
    }

    #[test]
    fn did_you_mean_finds_typos_only() {
        let keys = ["name", "version", "description", "dependencies"];
        assert_eq!(did_you_mean("vresion", keys), Some("version"));
        assert_eq!(did_you_mean("dependancies", keys), Some("dependencies"));
        assert_eq!(did_you_mean("Name", keys), Some("name"));
        assert_eq!(did_you_mean("colour", keys), None);
    }
}
