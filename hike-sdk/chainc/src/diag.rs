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
    /// A loop that cannot fit in the VM's instruction budget.
    LoopTooLong,
    /// A chain longer than the VM holds.
    ChainTooLong,
    /// More variables than registers and stack can hold.
    TooManyVariables,
    /// A chain with more than 4 parameters.
    TooManyParams,
    /// `break`/`continue` outside a loop, `return` outside a chain.
    Misplaced,
    /// Code that can never run (warning).
    Unreachable,
    /// A variable assigned but never read (warning).
    UnusedVariable,
    /// An import never used (warning).
    UnusedImport,
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
            Code::Unreachable => "W001",
            Code::UnusedVariable => "W002",
            Code::UnusedImport => "W003",
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
}

impl<'s> Sink<'s> {
    pub fn new(file: &str, source: &'s str) -> Self {
        Sink { file: file.to_owned(), source, items: Vec::new() }
    }

    /// Reports a problem and returns it for adding help or notes.
    pub fn report(&mut self, code: Code, span: Span, message: impl Into<String>) -> &mut Diagnostic {
        let (line, column) = line_col(self.source, span.start);
        self.items.push(Diagnostic {
            code,
            severity: code.severity(),
            message: message.into(),
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
        self.items.iter().any(|d| d.severity == Severity::Error)
    }

    /// The diagnostics in source order (errors before warnings at the same place).
    pub fn finish(mut self) -> Diagnostics {
        self.items.sort_by_key(|d| (d.span.start, d.severity == Severity::Warning));
        self.items.dedup_by(|a, b| a.span == b.span && a.message == b.message);
        Diagnostics { file: self.file, source: self.source.to_owned(), items: self.items }
    }
}

impl Diagnostic {
    pub fn help(&mut self, text: impl Into<String>) -> &mut Self {
        self.help = Some(text.into());
        self
    }

    pub fn note(&mut self, span: Span, text: impl Into<String>) -> &mut Self {
        self.notes.push((span, text.into()));
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
        let file = SimpleFile::new(self.file.as_str(), self.source.as_str());
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

/// 1-based (line, column in characters) of byte `offset`.
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
