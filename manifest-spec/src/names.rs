//! Names of packages and of the things inside them.
//!
//! Package names follow crates.io: ASCII lowercase letters, digits, `-` and `_`,
//! starting with a letter, 1–64 characters. Two names that differ only in case or in
//! `-` versus `_` collide (see [`PackageName::normalized`]), because chain scripts
//! write `from prog.my_pkg import …` for the package `my-pkg`.
//!
//! Item names (programs, loaders, chains, maps, arguments) are called from chain
//! scripts and appear in C, so they are identifiers: `[a-z][a-z0-9_]*`. UPPERCASE is
//! left to chain-script constants.

use std::borrow::Borrow;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Longest package or item name.
pub const MAX_NAME_LEN: usize = 64;

/// Names no package may take, with the reason given to whoever tries.
const RESERVED: &[(&str, &str)] = &[
    ("ebpkg", "it is the name of this tool"),
    ("hike", "it names the HIKe runtime"),
    ("hike_sdk", "it names the HIKe SDK"),
    ("hike_vm", "it names the HIKe VM"),
    ("eclat", "it names the chain language"),
    ("prog", "chain scripts use it as an import prefix (`from prog.<pkg> import …`)"),
    ("programs", "chain scripts use it as an import prefix (`from programs.<pkg> import …`)"),
    ("loaders", "chain scripts use it as an import prefix (`from loaders.<pkg> import …`)"),
    ("chains", "it names a section of every package"),
    ("packet", "it is a built-in object of the chain language"),
    ("scratch", "it is a built-in object of the chain language"),
    ("std", "it is reserved for a future standard library"),
    ("core", "it is reserved for a future standard library"),
    ("test", "it is reserved for `ebpkg test`"),
    ("tests", "it is reserved for `ebpkg test`"),
    ("registry", "it is reserved for registry metadata"),
    ("index", "it is reserved for registry metadata"),
    ("config", "it is reserved for registry metadata"),
    ("api", "it is reserved for registry metadata"),
    ("self", "it is a keyword in package paths"),
    ("super", "it is a keyword in package paths"),
    ("vmlinux", "it names the kernel's BTF"),
    ("kernel", "it names the kernel"),
    ("bpf", "it names the kernel subsystem"),
    ("libbpf", "it names the eBPF loader library"),
    // Windows device names: archives unpacked there must not produce them.
    ("con", "it is a Windows device name"),
    ("prn", "it is a Windows device name"),
    ("aux", "it is a Windows device name"),
    ("nul", "it is a Windows device name"),
    ("com1", "it is a Windows device name"),
    ("com2", "it is a Windows device name"),
    ("com3", "it is a Windows device name"),
    ("com4", "it is a Windows device name"),
    ("lpt1", "it is a Windows device name"),
    ("lpt2", "it is a Windows device name"),
    ("lpt3", "it is a Windows device name"),
];

/// Every package glob [`PackageGlob::new`] refuses for being a reserved name once
/// each `*` stands for `a` (`*s` is `as`): each reserved spelling with any of its
/// `a`s written `*`. What a schema lists as excluded beside the glob's pattern.
pub fn reserved_package_globs() -> Vec<String> {
    let mut out = Vec::new();
    for name in reserved_package_names() {
        let mut globs = vec![String::new()];
        for c in name.chars() {
            let options: &[char] = if c == 'a' { &['a', '*'] } else { &[c] };
            globs = globs.iter().flat_map(|g| options.iter().map(move |o| format!("{g}{o}"))).collect();
        }
        out.extend(globs);
    }
    out
}

/// Every spelling of a name no package may take (the reserved words and the
/// chain language's keywords, each `_` also as `-`): what a schema lists as
/// excluded, since a pattern cannot say it.
pub fn reserved_package_names() -> Vec<String> {
    let words = RESERVED.iter().map(|(word, _)| *word).chain(CHAIN_KEYWORDS.iter().copied());
    let mut out = Vec::new();
    for word in words {
        let mut spellings = vec![String::new()];
        for c in word.chars() {
            let options: &[char] = if c == '_' { &['_', '-'] } else { &[c] };
            spellings = spellings.iter().flat_map(|s| options.iter().map(move |o| format!("{s}{o}"))).collect();
        }
        out.extend(spellings);
    }
    out
}

/// The length of the longest word of [`RESERVED`] and [`CHAIN_KEYWORDS`]: longer
/// names are none of them.
const LONGEST_RESERVED: usize = {
    let mut longest = 0;
    let mut i = 0;
    while i < RESERVED.len() {
        if RESERVED[i].0.len() > longest {
            longest = RESERVED[i].0.len();
        }
        i += 1;
    }
    let mut i = 0;
    while i < CHAIN_KEYWORDS.len() {
        if CHAIN_KEYWORDS[i].len() > longest {
            longest = CHAIN_KEYWORDS[i].len();
        }
        i += 1;
    }
    longest
};

/// For each length up to [`LONGEST_RESERVED`] and each first letter, the last
/// characters (normalized, see [`last_char`]) of the reserved words and keywords of that
/// shape: a name of no such shape is none of them, which most names show at once.
static RESERVED_SHAPES: [[u64; 26]; LONGEST_RESERVED + 1] = {
    let mut shapes = [[0u64; 26]; LONGEST_RESERVED + 1];
    let mut i = 0;
    while i < RESERVED.len() + CHAIN_KEYWORDS.len() {
        let word = if i < RESERVED.len() { RESERVED[i].0 } else { CHAIN_KEYWORDS[i - RESERVED.len()] }.as_bytes();
        // (Every word starts with a lowercase letter: a `-` or `_` first would panic here, at build time.)
        shapes[word.len()][(word[0] - b'a') as usize] |= 1 << last_char(word[word.len() - 1]);
        i += 1;
    }
    shapes
};

/// A name's last character (lowercase letter, digit, `_` or `-`) as a bit position
/// (`-` as `_`, as names are compared).
const fn last_char(b: u8) -> u32 {
    match b {
        b'a'..=b'z' => (b - b'a') as u32,
        b'0'..=b'9' => 26 + (b - b'0') as u32,
        _ => 36,
    }
}

/// Whether `name` (valid characters, a lowercase letter first) has the shape of a
/// reserved word or keyword (see [`RESERVED_SHAPES`]).
fn may_be_reserved(name: &[u8]) -> bool {
    match (RESERVED_SHAPES.get(name.len()), name.first(), name.last()) {
        (Some(shapes), Some(&first), Some(&last)) if first.is_ascii_lowercase() => {
            shapes[(first - b'a') as usize] & (1 << last_char(last)) != 0
        }
        _ => false,
    }
}

/// Words of the chain language, which cannot name packages (they are path
/// components of imports) nor items (they are called by name).
pub const CHAIN_KEYWORDS: &[&str] = &[
    "and", "as", "break", "continue", "def", "elif", "else", "false", "for", "from", "if", "import", "in", "is",
    "none", "not", "or", "pass", "range", "return", "true", "while", "lambda", "yield", "with", "global", "class",
    "try", "except", "finally", "raise", "del", "assert", "async", "await", "nonlocal",
];

/// Why a name was refused. The `Display` text is the message; [`NameError::help`]
/// says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("name is empty")]
    Empty,
    #[error("name `{name}` is {len} characters long; the limit is {MAX_NAME_LEN}")]
    TooLong { name: String, len: usize },
    #[error("name `{name}` must start with a lowercase ASCII letter{}", lookalike_note(name.chars().next()))]
    BadStart { name: String },
    #[error(
        "name `{name}` contains `{ch}`{}; only lowercase ASCII letters, digits, {allowed} are allowed",
        lookalike_note(Some(*ch))
    )]
    BadChar { name: String, ch: char, allowed: &'static str },
    #[error("name `{name}` is reserved: {reason}")]
    Reserved { name: String, reason: &'static str },
}

impl NameError {
    /// A suggestion for a valid name, when one is obvious.
    pub fn help(&self) -> Option<String> {
        match self {
            NameError::Empty => Some("write a name such as `my_program`".into()),
            NameError::TooLong { name, .. } => {
                Some(format!("shorten it, e.g. `{}`", name.chars().take(MAX_NAME_LEN).collect::<String>()))
            }
            NameError::BadStart { name } | NameError::BadChar { name, .. } => {
                let fixed = suggest(name);
                (!fixed.is_empty() && fixed != *name).then(|| format!("write `{fixed}`"))
            }
            NameError::Reserved { name, .. } => Some(format!("choose another name, e.g. `{name}_pkg`")),
        }
    }
}

/// The nearest valid identifier to `name`: lowercased, letters that only look
/// like ASCII ones (Cyrillic `о`, Greek `ο`, fullwidth `ｏ`) replaced by those,
/// other characters as `_`, a leading non-letter dropped.
fn suggest(name: &str) -> String {
    let lowered: String = name
        .chars()
        .map(|c| {
            let c = ascii_lookalike(c).unwrap_or(c).to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' { c } else { '_' }
        })
        .collect();
    lowered.trim_start_matches(|c: char| !c.is_ascii_lowercase()).to_owned()
}

/// For a character that is not ASCII: its code point, and the ASCII letter it
/// looks like, so that a homoglyph in a name is recognised for what it is.
fn lookalike_note(ch: Option<char>) -> String {
    match ch {
        Some(c) if !c.is_ascii() => match ascii_lookalike(c) {
            Some(a) => format!(" (U+{:04X}, which looks like `{a}` but is not ASCII)", u32::from(c)),
            None => format!(" (U+{:04X}, not ASCII)", u32::from(c)),
        },
        _ => String::new(),
    }
}

/// The lowercase ASCII letter a non-ASCII letter is easily mistaken for.
fn ascii_lookalike(c: char) -> Option<char> {
    if ('\u{ff41}'..='\u{ff5a}').contains(&c) || ('\u{ff21}'..='\u{ff3a}').contains(&c) {
        // Fullwidth Latin letters.
        let base = if c >= '\u{ff41}' { 0xff41 } else { 0xff21 };
        return char::from_u32(u32::from('a') + u32::from(c) - base);
    }
    const TABLE: &[(&str, char)] = &[
        ("аАαΑ", 'a'),
        ("вВβΒ", 'b'),
        ("сСϲϹ", 'c'),
        ("ԁ", 'd'),
        ("еЕεΕ", 'e'),
        ("һНηΗ", 'h'),
        ("іІıιΙӏ", 'i'),
        ("јЈ", 'j'),
        ("кКκΚ", 'k'),
        ("ℓ", 'l'),
        ("мМΜ", 'm'),
        ("Ν", 'n'),
        ("оОοΟσ", 'o'),
        ("рРρΡ", 'p'),
        ("ԛ", 'q'),
        ("ѕЅ", 's'),
        ("тТτΤ", 't'),
        ("υ", 'u'),
        ("νѵ", 'v'),
        ("ԝѡ", 'w'),
        ("хХχΧ", 'x'),
        ("уУγΥ", 'y'),
        ("Ζ", 'z'),
    ];
    TABLE.iter().find(|(set, _)| set.contains(c)).map(|&(_, a)| a)
}

fn check_chars(name: &str, allow_dash: bool) -> Result<(), NameError> {
    // One pass over the bytes for the names that pass (index files and caches name
    // hundreds of thousands); the rules are spelled out below for the ones that do not.
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || (allow_dash && b == b'-');
    if name.len() <= MAX_NAME_LEN
        && name.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
        && name.bytes().all(allowed)
    {
        return Ok(());
    }
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    let len = name.chars().count();
    if len > MAX_NAME_LEN {
        return Err(NameError::TooLong { name: name.to_owned(), len });
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(NameError::BadStart { name: name.to_owned() });
    }
    let allowed = if allow_dash { "`-` and `_`" } else { "and `_`" };
    if let Some(ch) =
        name.chars().find(|&c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || (allow_dash && c == '-')))
    {
        return Err(NameError::BadChar { name: name.to_owned(), ch, allowed });
    }
    Ok(())
}

/// The package name rules (see [`PackageName::new`]).
fn check(name: &str) -> Result<(), NameError> {
    check_chars(name, true)?;
    if !may_be_reserved(name.as_bytes()) {
        return Ok(());
    }
    // Compared without building the normalized form: index files name hundreds of
    // thousands of packages, nearly none of them reserved.
    let is =
        |word: &str| word.len() == name.len() && word.bytes().zip(name.bytes()).all(|(w, n)| w == normalize_byte(n));
    if let Some((_, reason)) = RESERVED.iter().find(|(r, _)| is(r)) {
        return Err(NameError::Reserved { name: name.to_owned(), reason });
    }
    if CHAIN_KEYWORDS.iter().any(|k| is(k)) {
        return Err(NameError::Reserved { name: name.to_owned(), reason: "it is a keyword of the chain language" });
    }
    Ok(())
}

/// A valid package name. Compare with [`PackageName::normalized`] to detect
/// collisions; `Eq`/`Ord` compare the exact spelling.
///
/// Shared, not copied, when cloned: a resolution of thousands of packages names
/// each one in its catalog, its dependents' edges, the lock and the pins.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PackageName(std::sync::Arc<str>);

impl PackageName {
    /// Checks `name` against the package name rules.
    pub fn new(name: &str) -> Result<Self, NameError> {
        check(name)?;
        Ok(PackageName(name.into()))
    }

    /// [`PackageName::new`] of a name already shared, kept rather than copied when valid.
    pub fn from_shared(name: std::sync::Arc<str>) -> Result<Self, NameError> {
        check(&name)?;
        Ok(PackageName(name))
    }

    /// The exact spelling.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form two names are compared in for collisions: lowercase, `-` as `_`.
    /// `my-pkg` and `My_Pkg` have the same normalized form.
    pub fn normalized(&self) -> String {
        normalize(&self.0)
    }

    /// [`PackageName::normalized`], shared with the name when it already is: kept for
    /// every package a resolution touches, where a copy each was fresh memory.
    pub fn normalized_shared(&self) -> std::sync::Arc<str> {
        match self.normalized_key() {
            std::borrow::Cow::Borrowed(_) => std::sync::Arc::clone(&self.0),
            std::borrow::Cow::Owned(normalized) => normalized.into(),
        }
    }

    /// [`PackageName::normalized`], borrowed when the name already is (no `-`,
    /// no uppercase): looked up for every package a resolution touches.
    pub fn normalized_key(&self) -> std::borrow::Cow<'_, str> {
        match self.0.bytes().any(|b| b == b'-' || b.is_ascii_uppercase()) {
            true => std::borrow::Cow::Owned(self.normalized()),
            false => std::borrow::Cow::Borrowed(&self.0),
        }
    }
}

/// Lowercase with `-` replaced by `_`: the collision key of a package name.
pub fn normalize(name: &str) -> String {
    name.chars().map(|c| if c == '-' { '_' } else { c.to_ascii_lowercase() }).collect()
}

/// What a name looks like, for refusing a new name too close to an existing
/// one (`dd0s`, `dd_os`, `ddos_` beside `ddos`; `rneter`, `rn3ter` beside
/// `meter`): lowercase, without `-` and `_`, with the look-alikes made one (see
/// [`LOOK_ALIKES`]). It coarsens the Unicode TR39 confusable skeleton over the
/// characters a name may hold (a test checks it): names that TR39 finds
/// confusable have one skeleton here too. The registry server's
/// `ebpkg_name_skeleton` SQL function is the same mapping (a test compares them).
pub fn skeleton(name: &str) -> String {
    // Each character on its own, to what it decomposes to: no replacement
    // makes a character another replacement starts from, so every spelling of a
    // look-alike (`vvv`, `vw`, `wv`) reaches the same string, in one pass, and
    // a skeleton is its own skeleton.
    let mut out = String::with_capacity(name.len());
    for c in name.chars().filter(|&c| c != '-' && c != '_') {
        let c = c.to_ascii_lowercase();
        match LOOK_ALIKES_OF.iter().find(|(from, _)| *from == c) {
            Some((_, to)) => out.push_str(to),
            None => out.push(c),
        }
    }
    out
}

/// Characters that pass for others in common fonts, each made what it passes
/// for: TR39's `0`→`O`, `1`/`I`→`l` and `m`→`rn` (over lowercase names), with
/// `i`→`l`, `5`→`s`, `3`→`e`, and the letters that pass for two, decomposed
/// as TR39 does `m`: `w`→`vv`, `d`→`cl` (so `c1` is `d` too). No replacement
/// holds a character this table replaces.
const LOOK_ALIKES_OF: &[(char, &str)] =
    &[('0', "o"), ('1', "l"), ('i', "l"), ('5', "s"), ('3', "e"), ('m', "rn"), ('w', "vv"), ('d', "cl")];

/// What [`skeleton`] makes one, as said to a publisher whose name it refuses.
pub const LOOK_ALIKES: &str = "names are compared without `-` and `_`, in lowercase, with `0` as `o`, `1` and `i` \
                               as `l`, `5` as `s`, `3` as `e`, `rn` as `m`, `vv` as `w` and `cl` as `d`";

/// [`normalize`] of one byte of an ASCII name.
fn normalize_byte(b: u8) -> u8 {
    if b == b'-' { b'_' } else { b.to_ascii_lowercase() }
}

/// A package name where `*` matches any run of characters (`hike-*`, `*`), as
/// token scopes and trust policies name sets of packages. Matching compares
/// normalized forms, so `my_*` covers `my-pkg`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PackageGlob(String);

impl PackageGlob {
    /// Checks that `glob` is a package name once each `*` stands for a letter.
    pub fn new(glob: &str) -> Result<PackageGlob, NameError> {
        if glob != "*" {
            // `a` is a valid character anywhere, so this checks everything else.
            PackageName::new(&glob.replace('*', "a"))?;
        }
        Ok(PackageGlob(glob.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the glob covers `name`.
    pub fn matches(&self, name: &str) -> bool {
        let glob = normalize(&self.0);
        let name = normalize(name);
        let parts: Vec<&str> = glob.split('*').collect();
        let [first, middle @ .., last] = parts.as_slice() else { return glob == name };
        if parts.len() == 1 {
            return glob == name;
        }
        let Some(mut rest) = name.strip_prefix(first) else { return false };
        for part in middle {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
        rest.len() >= last.len() && rest.ends_with(last)
    }

    /// Whether the glob names exactly one package (no `*`).
    pub fn is_exact(&self) -> bool {
        !self.0.contains('*')
    }
}

impl std::fmt::Display for PackageGlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A valid item name: a program, loader, chain, map, argument or field.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ItemName(String);

impl ItemName {
    /// Checks `name` against the item name rules.
    pub fn new(name: &str) -> Result<Self, NameError> {
        check_chars(name, false)?;
        if CHAIN_KEYWORDS.contains(&name) {
            return Err(NameError::Reserved { name: name.to_owned(), reason: "it is a keyword of the chain language" });
        }
        Ok(ItemName(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

macro_rules! string_newtype_impls {
    ($ty:ident, $what:literal) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
        impl Borrow<str> for $ty {
            fn borrow(&self) -> &str {
                &self.0
            }
        }
        impl std::str::FromStr for $ty {
            type Err = NameError;
            fn from_str(s: &str) -> Result<Self, NameError> {
                $ty::new(s)
            }
        }
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $ty::new(&s).map_err(serde::de::Error::custom)
            }
        }
        impl JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "description": $what,
                    "minLength": 1,
                    "maxLength": MAX_NAME_LEN,
                })
            }
        }
    };
}

string_newtype_impls!(
    PackageName,
    "A package name: ASCII lowercase letters, digits, `-` and `_`, starting with a letter, at most 64 characters."
);
string_newtype_impls!(
    ItemName,
    "An identifier: ASCII lowercase letters, digits and `_`, starting with a letter, at most 64 characters."
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normalized_key_is_the_normalized_form_borrowed_when_it_can_be() {
        for n in ["net", "alt_mark", "my-pkg", "p4c-gen2", "a-b_c-d"] {
            let name = PackageName::new(n).unwrap();
            let key = name.normalized_key();
            assert_eq!(key, name.normalized(), "{n}");
            assert_eq!(matches!(key, std::borrow::Cow::Borrowed(_)), name.normalized() == n, "{n}");
            // Shared with the name, not copied, when the name is its own normalized form.
            let shared = name.normalized_shared();
            assert_eq!(&*shared, name.normalized(), "{n}");
            assert_eq!(std::ptr::eq(shared.as_ptr(), name.as_str().as_ptr()), name.normalized() == n, "{n}");
        }
    }

    #[test]
    fn a_shared_name_is_checked_as_any_and_kept_rather_than_copied() {
        for n in ["net", "my-pkg", "Bad", "a b", "", "ebpkg", "def"] {
            let shared: std::sync::Arc<str> = n.into();
            let got = PackageName::from_shared(std::sync::Arc::clone(&shared));
            assert_eq!(got, PackageName::new(n), "{n}");
            if let Ok(name) = got {
                assert!(std::ptr::eq(name.as_str().as_ptr(), shared.as_ptr()), "{n} copied");
            }
        }
    }

    #[test]
    fn valid_package_names() {
        for n in ["net", "meter", "alt_mark", "my-pkg", "a", "p4c-gen2", &"a".repeat(64)] {
            assert!(PackageName::new(n).is_ok(), "{n}");
        }
    }

    #[test]
    fn invalid_package_names_say_why() {
        assert_eq!(PackageName::new("").unwrap_err().to_string(), "name is empty");
        assert_eq!(
            PackageName::new("1net").unwrap_err().to_string(),
            "name `1net` must start with a lowercase ASCII letter"
        );
        let e = PackageName::new("Meter").unwrap_err();
        assert_eq!(e.to_string(), "name `Meter` must start with a lowercase ASCII letter");
        assert_eq!(e.help().as_deref(), Some("write `meter`"));
        let e = PackageName::new("net.tools").unwrap_err();
        assert_eq!(
            e.to_string(),
            "name `net.tools` contains `.`; only lowercase ASCII letters, digits, `-` and `_` are allowed"
        );
        assert_eq!(e.help().as_deref(), Some("write `net_tools`"));
        // Homoglyphs: a Cyrillic `о` inside, a Cyrillic `а` first.
        let e = PackageName::new("fl\u{43e}w").unwrap_err();
        assert!(e.to_string().contains("(U+043E, which looks like `o` but is not ASCII)"), "{e}");
        assert_eq!(e.help().as_deref(), Some("write `flow`"));
        let e = PackageName::new("\u{430}pp").unwrap_err();
        assert!(
            e.to_string().contains("must start with a lowercase ASCII letter (U+0430, which looks like `a`"),
            "{e}"
        );
        assert_eq!(e.help().as_deref(), Some("write `app`"));
        assert_eq!(PackageName::new("ｎｅｔ").unwrap_err().help().as_deref(), Some("write `net`"));
        assert!(PackageName::new("n\u{e9}t").unwrap_err().to_string().contains("(U+00E9, not ASCII)"));
        let long = "a".repeat(65);
        assert_eq!(
            PackageName::new(&long).unwrap_err().to_string(),
            format!("name `{long}` is 65 characters long; the limit is 64")
        );
        assert_eq!(
            PackageName::new("hike-sdk").unwrap_err().to_string(),
            "name `hike-sdk` is reserved: it names the HIKe SDK"
        );
        assert_eq!(
            PackageName::new("import").unwrap_err().to_string(),
            "name `import` is reserved: it is a keyword of the chain language"
        );
        assert!(PackageName::new("nul").is_err());
    }

    #[test]
    fn every_reserved_word_and_keyword_is_refused_in_either_spelling() {
        let words = RESERVED.iter().map(|(w, _)| *w).chain(CHAIN_KEYWORDS.iter().copied());
        for word in words {
            for spelling in [word.to_owned(), word.replace('_', "-")] {
                let e = PackageName::new(&spelling).unwrap_err();
                assert!(matches!(e, NameError::Reserved { .. }), "`{spelling}`: {e}");
            }
            // One letter more is another name (the longest words included).
            assert!(PackageName::new(&format!("{word}s")).is_ok() || word == "test", "{word}s");
        }
    }

    /// The pairs [`LOOK_ALIKES`] says are one, as it lists them.
    const DOCUMENTED_PAIRS: &[(&str, &str)] = &[
        ("a-b", "ab"),
        ("a_b", "ab"),
        ("A", "a"),
        ("0", "o"),
        ("1", "l"),
        ("i", "l"),
        ("5", "s"),
        ("3", "e"),
        ("rn", "m"),
        ("vv", "w"),
        ("cl", "d"),
    ];

    #[test]
    fn overlapping_look_alikes_have_one_skeleton() {
        assert_eq!(skeleton("vvv"), skeleton("vw"));
        assert_eq!(skeleton("wv"), skeleton("vvv"));
        assert_eq!(skeleton("rnm"), skeleton("mrn"));
        assert_eq!(skeleton("rnm"), skeleton("mm"));
    }

    #[test]
    fn collisions_ignore_case_and_dash() {
        assert_eq!(PackageName::new("my-pkg").unwrap().normalized(), "my_pkg");
        assert_eq!(normalize("My-Pkg"), normalize("my_pkg"));
        for close in ["dd_os", "ddos_", "dd0s", "DD-0S", "d-d-o-s"] {
            assert_eq!(skeleton(close), skeleton("ddos"), "{close}");
        }
        assert_eq!(skeleton("fl1ters"), skeleton("filter5"));
        for apart in ["ddos2", "dos", "ddoss", "meter"] {
            assert_ne!(skeleton(apart), skeleton("ddos"), "{apart}");
        }
        for close in ["rneter", "rn3ter", "RN-3TER", "m3ter", "rnet3r"] {
            assert_eq!(skeleton(close), skeleton("meter"), "{close}");
        }
        assert_eq!(skeleton("vvatch"), skeleton("watch"));
        assert_eq!(skeleton("c1ock"), skeleton("dock"));
        for apart in ["meters", "neter", "rmeter", "mater"] {
            assert_ne!(skeleton(apart), skeleton("meter"), "{apart}");
        }
    }

    proptest::proptest! {
        /// A skeleton is its own skeleton (so the server may store it and compare
        /// skeletons of skeletons), and it is never finer than TR39's: names TR39
        /// finds confusable (case aside) have one skeleton.
        #[test]
        fn a_skeleton_is_idempotent_and_coarsens_tr39(name in "[a-zA-Z][a-zA-Z0-9_-]{0,20}") {
            let look = skeleton(&name);
            proptest::prop_assert_eq!(skeleton(&look), look.clone());
            let tr39: String = unicode_security::confusable_detection::skeleton(&name).collect();
            proptest::prop_assert_eq!(skeleton(&tr39.to_ascii_lowercase()), look);
        }

        /// Each look-alike pair [`LOOK_ALIKES`] names gives one skeleton wherever
        /// it is written, whatever surrounds it (`vvv`, `vw`, `wv`).
        #[test]
        fn look_alikes_have_one_skeleton_wherever_they_are(
            before in "[a-z0-9_-]{0,8}",
            pair in proptest::sample::select(DOCUMENTED_PAIRS),
            after in "[a-z0-9_-]{0,8}",
        ) {
            let (one, other) = pair;
            proptest::prop_assert_eq!(
                skeleton(&format!("{before}{one}{after}")),
                skeleton(&format!("{before}{other}{after}"))
            );
        }
    }

    #[test]
    fn item_names_are_identifiers() {
        assert!(ItemName::new("ip6_sd_tbmon").is_ok());
        assert!(ItemName::new("format").is_ok());
        assert!(ItemName::new("ip6-sc").is_err());
        assert!(ItemName::new("while").is_err());
        assert!(ItemName::new("DROP").is_err());
    }
}

#[cfg(test)]
mod glob_tests {
    #![allow(clippy::unwrap_used)]
    use super::PackageGlob;

    #[test]
    fn globs_match_normalized_names() {
        let g = |s: &str| PackageGlob::new(s).unwrap();
        assert!(g("*").matches("anything"));
        assert!(g("hike-*").matches("hike_net"));
        assert!(!g("hike-*").matches("hik"));
        assert!(g("*-guard").matches("ddos-guard"));
        assert!(g("a*b*c").matches("axxbyyc"));
        assert!(!g("a*b*c").matches("acb"));
        assert!(g("meter").matches("Meter"));
        assert!(!g("meter").matches("meters"));
        assert!(!g("net-*").matches("net"));
        assert!(!g("ab*ba").matches("aba"), "the prefix and suffix may not overlap");
        assert!(g("a*b*c").matches("abc"));
        assert!(!g("meter").matches("meters"));
        assert!(g("ab*ab").matches("abab") && !g("ab*ab").matches("aba"));
        assert!(PackageGlob::new("../x").is_err());
        assert!(PackageGlob::new("").is_err());
        assert!(g("meter").is_exact() && !g("m*").is_exact());
    }
}
