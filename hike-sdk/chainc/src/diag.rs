//! Diagnostics: every error and warning names the script's line and column, shows
//! the line with a caret, and says what to do. Several are reported per run.

use std::fmt;
use std::ops::Range;

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label, Severity as CsSeverity};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term;
use serde::Serialize;

/// A byte range of the script.
pub type Span = Range<usize>;

/// Error or warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// The kinds of diagnostics, each documented in CHAINS.md under its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Code {
    /// A character that starts no token.
    BadChar,
    /// A malformed or too large number.
    BadNumber,
    /// A string without its closing quote.
    BadString,
    /// Indentation that matches no enclosing block, or tabs mixed with spaces.
    BadIndent,
    /// Tokens in an order the grammar does not allow.
    Syntax,
    /// Brackets, operators or blocks nested deeper than the compiler allows.
    TooDeep,
    /// A word the language reserves: a Python keyword it does not have, or
    /// `true`/`false`/`none`.
    ReservedWord,
    /// A name that is not defined.
    UnknownName,
    /// Something defined twice.
    Duplicate,
    /// An import from a package that is not a dependency.
    NotADependency,
    /// An import of something the package does not export.
    NotExported,
    /// A statement that is not allowed outside a `def`.
    TopLevel,
    /// A name that is reserved (type, built-in, keyword).
    Reserved,
    /// A call with the wrong number of arguments.
    ArgCount,
    /// A constant that does not fit its type.
    OutOfRange,
    /// A value that must be known when compiling is not.
    NotConstant,
    /// An UPPERCASE constant assigned twice.
    ConstantReassigned,
    /// A loader map entry that does not match the map's layout.
    BadEntry,
    /// An attach statement with a bad device or mode.
    BadAttach,
    /// Programs or loaders of different hooks in one script.
    HookMismatch,
    /// A chain that calls itself, directly or not.
    Recursion,
    /// A misused built-in (`packet.…`, `scratch.…`, `range`).
    BadBuiltin,
    /// A loop that can never end.
    EndlessLoop,
    /// A loop or chain that cannot finish within the VM's limits (program
    /// calls, continuations, instruction budget).
    LoopTooLong,
    /// A chain longer than the VM holds.
    ChainTooLong,
    /// More variables than registers and stack can hold.
    TooManyVariables,
    /// A chain with more than 4 parameters.
    TooManyParams,
    /// Chain calls nested deeper than the VM's frames.
    CallTooDeep,
    /// `break`/`continue` outside a loop, `return` outside a chain.
    Misplaced,
    /// Code that can never run (warning).
    Unreachable,
    /// A variable assigned but never read (warning).
    UnusedVariable,
    /// An import never used (warning).
    UnusedImport,
    /// A loop the compiler cannot prove fits in the VM's limits (warning).
    UnboundedLoop,
}

impl Code {
    /// The code shown in messages: `E` for errors, `W` for warnings.
    pub fn id(self) -> &'static str {
        match self {
            Code::BadChar => "E001",
            Code::BadNumber => "E002",
            Code::BadString => "E003",
            Code::BadIndent => "E004",
            Code::Syntax => "E005",
            Code::TooDeep => "E006",
            Code::ReservedWord => "E007",
            Code::UnknownName => "E101",
            Code::Duplicate => "E102",
            Code::NotADependency => "E103",
            Code::NotExported => "E104",
            Code::TopLevel => "E105",
            Code::Reserved => "E106",
            Code::ArgCount => "E201",
            Code::OutOfRange => "E202",
            Code::NotConstant => "E203",
            Code::ConstantReassigned => "E204",
            Code::BadEntry => "E205",
            Code::BadAttach => "E206",
            Code::HookMismatch => "E207",
            Code::Recursion => "E208",
            Code::BadBuiltin => "E209",
            Code::Misplaced => "E210",
            Code::EndlessLoop => "E301",
            Code::LoopTooLong => "E302",
            Code::ChainTooLong => "E303",
            Code::TooManyVariables => "E304",
            Code::TooManyParams => "E305",
            Code::CallTooDeep => "E306",
            Code::Unreachable => "W001",
            Code::UnusedVariable => "W002",
            Code::UnusedImport => "W003",
            Code::UnboundedLoop => "W004",
        }
    }

    pub fn severity(self) -> Severity {
        if self.id().starts_with('W') { Severity::Warning } else { Severity::Error }
    }
}

/// One diagnostic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub span: Span,
    /// 1-based line and column (characters) of the span's start.
    pub line: usize,
    pub column: usize,
    /// What to do about it.
    pub help: Option<String>,
    /// Other places worth showing, with what they are.
    pub notes: Vec<(Span, String)>,
}

/// Collects diagnostics for one script.
#[derive(Debug, Clone)]
pub struct Sink<'s> {
    pub file: String,
    pub source: &'s str,
    pub items: Vec<Diagnostic>,
    lines: LineIndex,
    errors: usize,
}

impl<'s> Sink<'s> {
    pub fn new(file: &str, source: &'s str) -> Self {
        Sink { file: file.to_owned(), source, items: Vec::new(), lines: LineIndex::new(source), errors: 0 }
    }

    /// Reports a problem and returns it for adding help or notes. Control
    /// characters in the message are escaped, so what the script holds cannot
    /// garble the terminal.
    pub fn report(&mut self, code: Code, span: Span, message: impl Into<String>) -> &mut Diagnostic {
        let (line, column) = self.lines.line_col(self.source, span.start);
        if code.severity() == Severity::Error {
            self.errors += 1;
        }
        self.items.push(Diagnostic {
            code,
            severity: code.severity(),
            message: escape_controls(&message.into()),
            span,
            line,
            column,
            help: None,
            notes: Vec::new(),
        });
        let last = self.items.len() - 1;
        &mut self.items[last]
    }

    pub fn has_errors(&self) -> bool {
        self.errors > 0
    }

    /// Forgets the diagnostics reported after the first `len` (a parser that
    /// found a better explanation for an error replaces what it reported).
    pub fn truncate(&mut self, len: usize) {
        self.items.truncate(len);
        self.errors = self.items.iter().filter(|d| d.severity == Severity::Error).count();
    }

    /// 1-based (line, column in characters) of byte `offset`, in O(log n).
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        self.lines.line_col(self.source, offset)
    }

    /// The diagnostics in source order (errors before warnings at the same place).
    pub fn finish(mut self) -> Diagnostics {
        self.items.sort_by_key(|d| (d.span.start, d.severity == Severity::Warning));
        self.items.dedup_by(|a, b| a.span == b.span && a.message == b.message);
        Diagnostics { file: self.file, source: self.source.to_owned(), items: self.items }
    }
}

/// Where lines start and where multi-byte characters continue, so that a byte
/// offset's line and column cost O(log n) instead of a scan of the script.
#[derive(Debug, Clone, Default)]
pub struct LineIndex {
    starts: Vec<usize>,
    /// Offsets of UTF-8 continuation bytes (empty for ASCII scripts).
    continuations: Vec<usize>,
}

impl LineIndex {
    pub fn new(source: &str) -> Self {
        let mut starts = vec![0];
        let mut continuations = Vec::new();
        for (i, b) in source.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i + 1);
            } else if b & 0xc0 == 0x80 {
                continuations.push(i);
            }
        }
        LineIndex { starts, continuations }
    }

    /// 1-based (line, column in characters) of byte `offset` of `source` (the
    /// text the index was built from).
    pub fn line_col(&self, source: &str, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(source.len());
        while offset > 0 && !source.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|s| *s <= offset).max(1);
        let start = self.starts[line - 1];
        let inside = |c: &usize| *c < start;
        let before_offset = |c: &usize| *c < offset;
        let continued = self.continuations.partition_point(before_offset) - self.continuations.partition_point(inside);
        (line, offset - start - continued + 1)
    }
}

impl Diagnostic {
    pub fn help(&mut self, text: impl Into<String>) -> &mut Self {
        self.help = Some(escape_controls(&text.into()));
        self
    }

    pub fn note(&mut self, span: Span, text: impl Into<String>) -> &mut Self {
        self.notes.push((span, escape_controls(&text.into())));
        self
    }
}

/// All diagnostics of a compilation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostics {
    pub file: String,
    #[serde(skip)]
    pub source: String,
    pub items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| d.severity == Severity::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter().filter(|d| d.severity == Severity::Warning)
    }

    /// Every diagnostic with its source line and a caret, without colour.
    pub fn render(&self) -> String {
        // The source lines shown are the script's, with control characters made
        // visible (same byte lengths, so spans still point at the right place).
        let shown = visible_source(&self.source);
        let file = SimpleFile::new(self.file.as_str(), shown.as_str());
        let config = term::Config::default();
        let mut out = String::new();
        for d in &self.items {
            let severity = match d.severity {
                Severity::Error => CsSeverity::Error,
                Severity::Warning => CsSeverity::Warning,
            };
            let clamp = |s: &Span| {
                let start = s.start.min(self.source.len());
                start..s.end.clamp(start, self.source.len())
            };
            let mut labels = vec![Label::primary((), clamp(&d.span))];
            labels.extend(d.notes.iter().map(|(s, m)| Label::secondary((), clamp(s)).with_message(m)));
            let mut cs =
                CsDiagnostic::new(severity).with_code(d.code.id()).with_message(&d.message).with_labels(labels);
            if let Some(h) = &d.help {
                cs = cs.with_notes(vec![format!("help: {h}")]);
            }
            if term::emit_to_string(&mut out, &config, &file, &cs).is_err() {
                out.push_str(&format!("{}\n", OneLine(&self.file, d)));
            }
        }
        out
    }
}

struct OneLine<'a>(&'a str, &'a Diagnostic);

impl fmt::Display for OneLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.1;
        let kind = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{}:{}:{}: {kind}[{}]: {}", self.0, d.line, d.column, d.code.id(), d.message)?;
        if let Some(h) = &d.help {
            write!(f, "; {h}")?;
        }
        Ok(())
    }
}

/// One line per diagnostic: `file:line:col: error[E101]: message; help`.
impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.items.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}", OneLine(&self.file, d))?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// `text` with control characters (other than tab) written as Rust escapes:
/// `\0`, `\u{1b}`, `\n`.
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(|c| c.is_control() && c != '\t') {
        return text.to_owned();
    }
    text.chars()
        .map(|c| if c.is_control() && c != '\t' { c.escape_debug().to_string() } else { c.to_string() })
        .collect()
}

/// The script as diagnostics show it: every control character except tab, line
/// feed and the carriage return of a CRLF is replaced by characters of the same
/// UTF-8 length (`?`, or `¿` for the two-byte C1 controls), so byte offsets
/// and columns stay put and nothing reaches the terminal raw.
fn visible_source(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    for (i, c) in source.char_indices() {
        let keep = !c.is_control() || c == '\t' || c == '\n' || (c == '\r' && bytes.get(i + 1) == Some(&b'\n'));
        if keep {
            out.push(c);
        } else if c.len_utf8() == 2 {
            out.push('¿');
        } else {
            out.push('?');
        }
    }
    out
}

/// Checks that a script's bytes are UTF-8. When they are not, the diagnostic
/// (E001) names the line and column of the first byte that is not, and its
/// byte offset.
pub fn source_text<'a>(bytes: &'a [u8], file: &str) -> Result<&'a str, Diagnostics> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text),
        Err(e) => {
            let at = e.valid_up_to();
            // Shown with the bad bytes replaced; up to `at` the text is the same.
            let shown = String::from_utf8_lossy(bytes).into_owned();
            let mut sink = Sink::new(file, &shown);
            let width = '\u{fffd}'.len_utf8();
            let bad: Vec<String> = bytes[at..]
                .iter()
                .take(e.error_len().unwrap_or(bytes.len() - at))
                .map(|b| format!("0x{b:02x}"))
                .collect();
            sink.report(
                Code::BadChar,
                at..at + width,
                format!("the script is not UTF-8: byte {} at offset {at} is not valid UTF-8", bad.join(" ")),
            )
            .help("save the script as UTF-8; chain scripts are ASCII outside strings and comments");
            Err(sink.finish())
        }
    }
}

/// 1-based (line, column in characters) of byte `offset` (a scan of the text;
/// [`Sink::line_col`] answers in O(log n)).
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while offset > 0 && !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// The closest candidate to `name`, when one is close enough to be a typo.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|(d, c)| *d <= (c.len().max(name.len()) / 3).max(1) && *d < name.len().max(1))
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}
