//! Tokens of a chain script, Python-style: indentation becomes INDENT/DEDENT, a
//! backslash at the end of a line joins it to the next, and newlines inside
//! brackets do not end a statement. Keywords are whole words: `ifindex` is a name.

use crate::diag::{Code, Sink, Span};

/// A token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    Name(String),
    Int(u64),
    Str(String),
    Kw(Kw),
    /// A word the language reserves without using it (see [`RESERVED`]).
    Reserved(&'static str),
    /// Operators and punctuation: `+`, `<<=`, `(`, `:`, `;`, …
    Op(&'static str),
    Newline,
    Indent,
    Dedent,
    Eof,
}

/// Keywords.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kw {
    Def,
    If,
    Elif,
    Else,
    While,
    For,
    In,
    Return,
    Pass,
    Break,
    Continue,
    From,
    Import,
    And,
    Or,
    Not,
    True,
    False,
    None,
}

const KEYWORDS: &[(&str, Kw)] = &[
    ("def", Kw::Def),
    ("if", Kw::If),
    ("elif", Kw::Elif),
    ("else", Kw::Else),
    ("while", Kw::While),
    ("for", Kw::For),
    ("in", Kw::In),
    ("return", Kw::Return),
    ("pass", Kw::Pass),
    ("break", Kw::Break),
    ("continue", Kw::Continue),
    ("from", Kw::From),
    ("import", Kw::Import),
    ("and", Kw::And),
    ("or", Kw::Or),
    ("not", Kw::Not),
    ("True", Kw::True),
    ("False", Kw::False),
    ("None", Kw::None),
];

/// Words the language reserves without using them: the Python keywords it does
/// not have, and `true`, `false`, `none` (easily written for `True`, `False`,
/// `None`). They cannot name anything (SPEC.md §2.3), and writing one gets an
/// error that says what to write instead: `(word, message, help)`.
pub const RESERVED: &[(&str, &str, &str)] = &[
    ("true", "`true` is reserved: the constant is written `True`", "write `True`"),
    ("false", "`false` is reserved: the constant is written `False`", "write `False`"),
    ("none", "`none` is reserved: the constant is written `None`", "write `None`"),
    (
        "class",
        "`class` is a Python keyword the chain language does not have",
        "chains are functions: define them with `def`",
    ),
    (
        "lambda",
        "`lambda` is a Python keyword the chain language does not have",
        "define a chain with `def` and call it",
    ),
    (
        "try",
        "`try` is a Python keyword the chain language does not have",
        "there are no exceptions: test a program's result with `if`",
    ),
    (
        "except",
        "`except` is a Python keyword the chain language does not have",
        "there are no exceptions: test a program's result with `if`",
    ),
    (
        "finally",
        "`finally` is a Python keyword the chain language does not have",
        "there are no exceptions: test a program's result with `if`",
    ),
    (
        "raise",
        "`raise` is a Python keyword the chain language does not have",
        "to stop the packet, call a program that drops it (such as `hike_drop()`)",
    ),
    (
        "assert",
        "`assert` is a Python keyword the chain language does not have",
        "test with `if` and call a program that drops the packet",
    ),
    (
        "with",
        "`with` is a Python keyword the chain language does not have",
        "call programs directly; there are no context managers",
    ),
    ("yield", "`yield` is a Python keyword the chain language does not have", "a chain gives one result with `return`"),
    (
        "global",
        "`global` is a Python keyword the chain language does not have",
        "chains share data through the scratch bank (`scratch.write_u64`) or constants",
    ),
    (
        "nonlocal",
        "`nonlocal` is a Python keyword the chain language does not have",
        "chains share data through the scratch bank (`scratch.write_u64`) or constants",
    ),
    (
        "del",
        "`del` is a Python keyword the chain language does not have",
        "variables need no deleting; assign a new value",
    ),
    (
        "async",
        "`async` is a Python keyword the chain language does not have",
        "chains run to completion for each packet; remove it",
    ),
    (
        "await",
        "`await` is a Python keyword the chain language does not have",
        "call programs directly: `x = monitor(1)`",
    ),
    (
        "is",
        "`is` is a Python keyword the chain language does not have",
        "compare values with `==` (and `is not` with `!=`)",
    ),
    (
        "as",
        "`as` is a Python keyword the chain language does not have",
        "import names as they are: `from prog.<package> import name`",
    ),
];

/// The statement keywords, for "did you mean" when a statement starts with a
/// misspelling of one (`whlie`, `retrun`, `esle`).
pub const STATEMENT_KEYWORDS: &[&str] =
    &["def", "if", "elif", "else", "while", "for", "return", "pass", "break", "continue", "from", "import"];

/// Indentation levels a script may nest (Python's limit too).
pub const MAX_INDENT_LEVELS: usize = 100;

// Longest first, so `<<=` wins over `<<` and `<`.
const OPS: &[&str] = &[
    "**=", "//=", "<<=", ">>=", "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "+=", "-=", "*=", "/=", "%=", "&=",
    "|=", "^=", "->", "+", "-", "*", "/", "%", "&", "|", "^", "~", "<", ">", "=", "(", ")", "[", "]", "{", "}", ",",
    ":", ".", ";",
];

/// A token with its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// Splits `source` into tokens, reporting malformed ones and continuing.
pub fn lex(source: &str, sink: &mut Sink<'_>) -> Vec<Token> {
    Lexer {
        src: source,
        bytes: source.as_bytes(),
        pos: 0,
        out: Vec::new(),
        indents: vec![(0, 0)],
        depth: 0,
        too_deep: false,
        tab_error: false,
    }
    .run(sink)
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    out: Vec<Token>,
    /// Open blocks' indentation: (width with tabs to the next multiple of 8,
    /// width with tabs counted as 1), as Python compares them.
    indents: Vec<(usize, usize)>,
    /// Open brackets: newlines inside them are not statement ends.
    depth: usize,
    /// Reported once: more indentation levels than allowed.
    too_deep: bool,
    /// Reported once: tabs and spaces used inconsistently.
    tab_error: bool,
}

impl Lexer<'_> {
    fn push(&mut self, tok: Tok, span: Span) {
        self.out.push(Token { tok, span });
    }

    fn run(mut self, sink: &mut Sink<'_>) -> Vec<Token> {
        let mut at_line_start = true;
        while self.pos < self.bytes.len() {
            if at_line_start && self.depth == 0 {
                at_line_start = false;
                if self.indentation(sink) {
                    continue;
                }
            }
            let c = self.bytes[self.pos];
            let start = self.pos;
            match c {
                b' ' | b'\t' | b'\r' | b'\x0c' => self.pos += 1,
                b'#' => {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'\\' => {
                    // A line continuation: backslash, optional spaces, newline.
                    let mut p = self.pos + 1;
                    while p < self.bytes.len() && matches!(self.bytes[p], b' ' | b'\t' | b'\r') {
                        p += 1;
                    }
                    if p < self.bytes.len() && self.bytes[p] == b'\n' {
                        self.pos = p + 1;
                    } else if p >= self.bytes.len() {
                        self.pos = p;
                    } else {
                        sink.report(
                            Code::BadChar,
                            start..start + 1,
                            "a backslash is only allowed at the end of a line",
                        )
                        .help("remove it, or end the line after it to continue the statement on the next line");
                        self.pos += 1;
                    }
                }
                b'\n' => {
                    self.pos += 1;
                    if self.depth == 0 {
                        let last_is_sep = matches!(self.out.last(), None | Some(Token { tok: Tok::Newline, .. }));
                        if !last_is_sep {
                            self.push(Tok::Newline, start..start + 1);
                        }
                        at_line_start = true;
                    }
                }
                b'0'..=b'9' => self.number(sink),
                b'\'' | b'"' if self.src[self.pos..].starts_with(if c == b'"' { "\"\"\"" } else { "'''" }) => {
                    self.docstring(sink)
                }
                b'\'' | b'"' => self.string(sink),
                c if c.is_ascii_alphabetic() || c == b'_' => self.name(),
                _ => {
                    if let Some(op) = OPS.iter().find(|op| self.src[self.pos..].starts_with(**op)) {
                        self.pos += op.len();
                        match *op {
                            "(" | "[" | "{" => self.depth += 1,
                            ")" | "]" | "}" => self.depth = self.depth.saturating_sub(1),
                            _ => {}
                        }
                        self.push(Tok::Op(op), start..self.pos);
                    } else {
                        let ch = self.src[self.pos..].chars().next().unwrap_or('?');
                        let span = start..start + ch.len_utf8();
                        if ch.is_control() {
                            sink.report(
                                Code::BadChar,
                                span,
                                format!("unexpected control character U+{:04X} (`{}`)", ch as u32, ch.escape_debug()),
                            )
                            .help("remove it: chain scripts are plain text");
                        } else {
                            sink.report(Code::BadChar, span, format!("unexpected character `{ch}`"))
                                .help("chain scripts use ASCII Python-like syntax");
                        }
                        self.pos += ch.len_utf8();
                    }
                }
            }
        }
        let end = self.bytes.len();
        if !matches!(self.out.last(), None | Some(Token { tok: Tok::Newline, .. })) {
            self.push(Tok::Newline, end..end);
        }
        while self.indents.len() > 1 {
            self.indents.pop();
            self.push(Tok::Dedent, end..end);
        }
        self.push(Tok::Eof, end..end);
        self.out
    }

    /// Measures the indentation of a line and emits INDENT/DEDENT. Returns true when
    /// the line is blank or a comment (nothing emitted, position moved past it).
    ///
    /// Like Python, the width is measured twice — tabs to the next multiple of 8,
    /// and tabs as 1 — and the two must order the line the same way against its
    /// block; otherwise the indentation depends on the tab size (a TabError).
    fn indentation(&mut self, sink: &mut Sink<'_>) -> bool {
        let start = self.pos;
        let (mut width, mut alt) = (0, 0);
        let (mut spaces, mut tabs) = (false, false);
        while self.pos < self.bytes.len() {
            match self.bytes[self.pos] {
                b' ' => {
                    width += 1;
                    spaces = true;
                }
                b'\t' => {
                    width = (width / 8 + 1) * 8;
                    tabs = true;
                }
                _ => break,
            }
            alt += 1;
            self.pos += 1;
        }
        match self.bytes.get(self.pos) {
            None | Some(b'\n') | Some(b'#') | Some(b'\r') => return true,
            _ => {}
        }
        let mixed = spaces && tabs;
        if mixed {
            sink.report(Code::BadIndent, start..self.pos, "indentation mixes tabs and spaces")
                .help("indent with spaces only");
        }
        let (current, current_alt) = self.indents.last().copied().unwrap_or((0, 0));
        let consistent = if width > current {
            alt > current_alt
        } else if width < current {
            match self.indents.iter().rev().find(|(w, _)| *w <= width) {
                Some((w, a)) => *w != width || *a == alt,
                None => true,
            }
        } else {
            alt == current_alt
        };
        // One report: the same inconsistency tends to repeat on every line.
        if !(consistent || mixed || self.tab_error) {
            self.tab_error = true;
            sink.report(
                Code::BadIndent,
                start..self.pos,
                "inconsistent use of tabs and spaces: this line's indentation depends on the tab size",
            )
            .help("indent every line with spaces only (a tab counts up to the next multiple of 8)");
        }
        if width > current {
            if self.indents.len() > MAX_INDENT_LEVELS {
                if !self.too_deep {
                    self.too_deep = true;
                    sink.report(
                        Code::TooDeep,
                        start..self.pos,
                        format!("too many levels of indentation: blocks nest at most {MAX_INDENT_LEVELS} deep"),
                    )
                    .help("move the inner part into a chain of its own and call it");
                }
                // Kept in its block: the one report, not one per deeper line.
                return false;
            }
            self.indents.push((width, alt));
            self.push(Tok::Indent, start..self.pos);
        } else if width < current {
            if !self.indents.iter().any(|(w, _)| *w == width) {
                // Python refuses this; keeping the line in its block reports the
                // one mistake without making everything after it an error too.
                sink.report(
                    Code::BadIndent,
                    start..self.pos,
                    "this line is indented less than its block but matches no outer block",
                )
                .help("indent it like one of the enclosing lines");
                return false;
            }
            while self.indents.last().is_some_and(|(w, _)| *w > width) {
                self.indents.pop();
                self.push(Tok::Dedent, self.pos..self.pos);
            }
        }
        false
    }

    /// A triple-quoted string: Python's docstrings, which chain scripts do not
    /// have. Reported at its opening quotes and skipped to its closing ones.
    fn docstring(&mut self, sink: &mut Sink<'_>) {
        let start = self.pos;
        let quotes = &self.src[start..start + 3];
        sink.report(
            Code::BadString,
            start..start + 3,
            "triple-quoted strings (docstrings) are not part of the chain language",
        )
        .help("write comments with `#` at the start of each line");
        let body = start + 3;
        self.pos = match self.src[body..].find(quotes) {
            Some(end) => body + end + 3,
            None => self.bytes.len(),
        };
    }

    fn number(&mut self, sink: &mut Sink<'_>) {
        let start = self.pos;
        while self.pos < self.bytes.len()
            && (self.bytes[self.pos].is_ascii_alphanumeric() || self.bytes[self.pos] == b'_')
        {
            self.pos += 1;
        }
        let text = &self.src[start..self.pos];
        let digits = text.replace('_', "");
        let (radix, body) = match digits.get(..2) {
            Some("0x") | Some("0X") => (16, &digits[2..]),
            Some("0o") | Some("0O") => (8, &digits[2..]),
            Some("0b") | Some("0B") => (2, &digits[2..]),
            _ => (10, digits.as_str()),
        };
        let leading_zero = radix == 10 && body.len() > 1 && body.starts_with('0');
        match u128::from_str_radix(body, radix) {
            Ok(v) if v <= u128::from(u64::MAX) && !leading_zero && !text.ends_with('_') => {
                self.push(Tok::Int(v as u64), start..self.pos);
            }
            Ok(_) if leading_zero => {
                sink.report(Code::BadNumber, start..self.pos, format!("`{text}` has a leading zero"))
                    .help("write the number without it, or use 0o for octal");
                self.push(Tok::Int(0), start..self.pos);
            }
            Ok(v) if v > u128::from(u64::MAX) => {
                sink.report(Code::BadNumber, start..self.pos, format!("`{text}` does not fit in 64 bits"))
                    .help("values are 64-bit: at most 18446744073709551615 (0xffffffffffffffff)");
                self.push(Tok::Int(0), start..self.pos);
            }
            _ => {
                sink.report(Code::BadNumber, start..self.pos, format!("`{text}` is not a number"))
                    .help("write decimal (42), hexadecimal (0x2a), octal (0o52) or binary (0b101010)");
                self.push(Tok::Int(0), start..self.pos);
            }
        }
    }

    fn string(&mut self, sink: &mut Sink<'_>) {
        let start = self.pos;
        let quote = self.bytes[self.pos];
        self.pos += 1;
        let mut value = String::new();
        loop {
            let Some(&c) = self.bytes.get(self.pos) else {
                sink.report(Code::BadString, start..self.pos, "this string has no closing quote")
                    .help(format!("end it with {}", quote as char));
                break;
            };
            if c == b'\n' {
                sink.report(
                    Code::BadString,
                    start..self.pos,
                    "this string has no closing quote before the end of the line",
                )
                .help(format!("end it with {} on the same line", quote as char));
                break;
            }
            if c == quote {
                self.pos += 1;
                break;
            }
            if c == b'\\' {
                let esc = self.bytes.get(self.pos + 1).copied().unwrap_or(b'\\');
                value.push(match esc {
                    b'n' => '\n',
                    b't' => '\t',
                    b'0' => '\0',
                    other => other as char,
                });
                self.pos += 2;
                continue;
            }
            let ch = self.src[self.pos..].chars().next().unwrap_or('?');
            if ch.is_control() && ch != '\t' {
                sink.report(
                    Code::BadChar,
                    self.pos..self.pos + ch.len_utf8(),
                    format!("a string holds the control character U+{:04X} (`{}`)", ch as u32, ch.escape_debug()),
                )
                .help("remove it: chain scripts are plain text (`\\n`, `\\t` and `\\0` write those characters)");
            }
            value.push(ch);
            self.pos += ch.len_utf8();
        }
        self.push(Tok::Str(value), start..self.pos.min(self.bytes.len()));
    }

    fn name(&mut self) {
        let start = self.pos;
        while self.pos < self.bytes.len()
            && (self.bytes[self.pos].is_ascii_alphanumeric() || self.bytes[self.pos] == b'_')
        {
            self.pos += 1;
        }
        let text = &self.src[start..self.pos];
        let tok = match KEYWORDS.iter().find(|(k, _)| *k == text) {
            Some((_, kw)) => Tok::Kw(*kw),
            None => match RESERVED.iter().find(|(w, _, _)| *w == text) {
                Some((w, _, _)) => Tok::Reserved(w),
                None => Tok::Name(text.to_owned()),
            },
        };
        self.push(tok, start..self.pos);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        let mut sink = Sink::new("t", src);
        let t = lex(src, &mut sink);
        assert!(sink.items.is_empty(), "{:?}", sink.items);
        t.into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn keywords_are_whole_words() {
        let t = toks("format ifindex not_ok form if not");
        assert_eq!(
            t,
            vec![
                Tok::Name("format".into()),
                Tok::Name("ifindex".into()),
                Tok::Name("not_ok".into()),
                Tok::Name("form".into()),
                Tok::Kw(Kw::If),
                Tok::Kw(Kw::Not),
                Tok::Newline,
                Tok::Eof
            ]
        );
    }

    #[test]
    fn indentation_continuations_and_brackets() {
        let src = "def f():\n    x = (1 +\n  2)\n    y = 3 \\\n      + 4\n\n    # comment\nz = 1\n";
        let t = toks(src);
        let indents = t.iter().filter(|t| **t == Tok::Indent).count();
        let dedents = t.iter().filter(|t| **t == Tok::Dedent).count();
        let newlines = t.iter().filter(|t| **t == Tok::Newline).count();
        assert_eq!((indents, dedents, newlines), (1, 1, 4));
    }

    #[test]
    fn numbers_and_strings() {
        assert_eq!(
            toks("0x2a 0o52 0b101010 1_000 'eth0' \"x\\ty\"")[..6],
            [
                Tok::Int(42),
                Tok::Int(42),
                Tok::Int(42),
                Tok::Int(1000),
                Tok::Str("eth0".into()),
                Tok::Str("x\ty".into())
            ]
        );
    }

    #[test]
    fn bad_tokens_are_reported_and_skipped() {
        let src = "x = 18446744073709551616 $ 'open";
        let mut sink = Sink::new("t", src);
        lex(src, &mut sink);
        let codes: Vec<Code> = sink.items.iter().map(|d| d.code).collect();
        assert_eq!(codes, vec![Code::BadNumber, Code::BadChar, Code::BadString]);
    }
}
