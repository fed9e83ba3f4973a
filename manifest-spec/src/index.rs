//! Registry index entries: one JSON line per published version, cargo sparse-index
//! style, one file per package at [`index_path`].
//!
//! A line never changes after publication except its `yanked` flag
//! ([`IndexEntry::check_update`]). Lines carry a schema version `v`; readers skip
//! lines of a newer schema than they know, so old clients keep working when new
//! fields appear.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use semver::{Version, VersionReq};
use serde::{Deserialize, Serialize};

use crate::manifest::{Field, KernelReq, Manifest};
use crate::names::{ItemName, PackageName};
use crate::registry_id::RegistryId;
use crate::types::{EndsPacket, Hook, IntType, KeyId, Sha256Digest};

/// The index schema version this crate writes.
pub const INDEX_SCHEMA_VERSION: u32 = 1;

/// Longest index line accepted, in bytes. A line summarizes one version's manifest,
/// which is itself capped at 1 MiB.
pub const MAX_INDEX_LINE: usize = 1024 * 1024;

/// One published version of a package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "ebpkg index entry")]
pub struct IndexEntry {
    /// Schema version of this line; 1.
    pub v: u32,
    /// Package name, exactly as published.
    pub name: PackageName,
    /// The version.
    #[schemars(with = "String")]
    pub vers: Version,
    /// Dependencies, sorted by name.
    pub deps: Vec<IndexDependency>,
    /// SHA-256 of the package archive.
    pub cksum: Sha256Digest,
    /// Whether the version is yanked: kept for existing lockfiles, never chosen anew.
    pub yanked: bool,
    /// The key whose Sigstore bundle signs the archive (served next to it), as
    /// the registry verified it at publication; absent for an unsigned version.
    /// Clients check the bundle themselves: this names the key to check it with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<KeyId>,
    /// The HIKe SDK requirement of the package's C code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub hike_sdk: Option<VersionReq>,
    /// What the package needs from the kernel.
    #[serde(default, skip_serializing_if = "KernelReq::is_empty")]
    pub kernel: KernelReq,
    /// The package's HIKe programs and their signatures.
    #[serde(default)]
    pub programs: Vec<ProgramSummary>,
    /// The package's loaders and their configuration maps.
    #[serde(default)]
    pub loaders: Vec<LoaderSummary>,
    /// The package's chain scripts.
    #[serde(default)]
    pub chains: Vec<ChainSummary>,
    /// Programs of dependencies offered under this package's name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reexports: BTreeMap<PackageName, Vec<ItemName>>,
    /// The manifest's description, so `ebpkg search` can show it without downloading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The manifest's keywords, for `ebpkg search`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
}

/// A dependency as the index records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IndexDependency {
    pub name: PackageName,
    /// The semver requirement.
    #[schemars(with = "String")]
    pub req: VersionReq,
    /// The registry it comes from; `null` means the registry of this index.
    #[schemars(with = "Option<String>")]
    pub registry: Option<RegistryId>,
}

/// A program's calling signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProgramSummary {
    pub name: ItemName,
    pub hook: Hook,
    pub args: Vec<ArgSignature>,
    /// The result's type; `null` when the program has no meaningful result.
    pub returns: Option<IntType>,
    pub ends_packet: EndsPacket,
}

/// One argument of a signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ArgSignature {
    pub name: ItemName,
    #[serde(rename = "type")]
    pub ty: IntType,
}

/// A loader and the layouts of its configuration maps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LoaderSummary {
    pub name: ItemName,
    pub hook: Hook,
    pub maps: Vec<MapLayout>,
}

/// A configuration map's key and value layouts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct MapLayout {
    pub name: ItemName,
    pub key: Vec<Field>,
    pub value: Vec<Field>,
}

/// A chain script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChainSummary {
    pub name: ItemName,
}

/// Why an index line or file was refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum IndexError {
    #[error("line {line}: {message}")]
    Invalid { line: usize, message: String },
    #[error("line {line}: version {version} of `{name}` is listed twice; neither line is used")]
    DuplicateVersion { line: usize, name: String, version: Version },
    #[error("line {line}: entry is for package `{found}`, but this is the index file of `{expected}`")]
    WrongPackage { line: usize, expected: String, found: String },
    #[error(
        "{name}@{version}: published index entries are immutable; only `yanked` may change (field `{field}` differs)"
    )]
    Immutable { name: String, version: Version, field: &'static str },
}

/// What `ebpkg.lock` pins of an index entry: the name as published, and the
/// archive's digest and signer. A resolution reads only this of the versions it
/// chooses, so it can be kept (with the line's validity) where parsing the
/// whole line again would cost more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryPin {
    pub name: PackageName,
    pub cksum: Sha256Digest,
    pub signed_by: Option<KeyId>,
}

impl From<&IndexEntry> for EntryPin {
    fn from(entry: &IndexEntry) -> EntryPin {
        EntryPin { name: entry.name.clone(), cksum: entry.cksum, signed_by: entry.signed_by }
    }
}

impl IndexEntry {
    /// `name@version`, typed.
    pub fn id(&self) -> crate::PackageId {
        crate::PackageId::new(self.name.clone(), self.vers.clone())
    }

    /// The entry for a manifest whose archive has digest `cksum`.
    pub fn from_manifest(manifest: &Manifest, cksum: Sha256Digest) -> Self {
        IndexEntry {
            v: INDEX_SCHEMA_VERSION,
            name: manifest.package.name.clone(),
            vers: manifest.package.version.clone(),
            deps: manifest
                .dependencies
                .iter()
                .map(|(name, d)| IndexDependency {
                    name: name.clone(),
                    req: d.version.clone(),
                    registry: d.registry.clone(),
                })
                .collect(),
            cksum,
            yanked: false,
            signed_by: None,
            hike_sdk: manifest.package.hike_sdk.clone(),
            kernel: manifest.package.kernel.clone(),
            programs: manifest
                .programs
                .iter()
                .map(|p| ProgramSummary {
                    name: p.name.clone(),
                    hook: p.hook,
                    args: p.args.iter().map(|a| ArgSignature { name: a.name.clone(), ty: a.ty }).collect(),
                    returns: p.returns.as_ref().map(|r| r.ty),
                    ends_packet: p.ends_packet,
                })
                .collect(),
            loaders: manifest
                .loaders
                .iter()
                .map(|l| LoaderSummary {
                    name: l.name.clone(),
                    hook: l.hook,
                    maps: l
                        .maps
                        .iter()
                        .map(|m| MapLayout { name: m.name.clone(), key: m.key.clone(), value: m.value.clone() })
                        .collect(),
                })
                .collect(),
            chains: manifest.chains.iter().map(|c| ChainSummary { name: c.name.clone() }).collect(),
            reexports: manifest.reexports.clone(),
            description: manifest.package.description.clone(),
            keywords: manifest.package.keywords.clone(),
        }
    }

    /// The entry as one line of JSON (no trailing newline). Field order is fixed, so
    /// the same entry always gives the same bytes.
    pub fn to_line(&self) -> String {
        // Only strings, numbers, booleans, arrays and string-keyed maps: cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses one line. Lines of a newer schema give `Ok(None)`: skip them.
    pub fn parse_line(line: &str) -> Result<Option<IndexEntry>, String> {
        check_shape(line)?;
        #[derive(Deserialize)]
        struct Schema {
            v: u32,
        }
        let schema: Schema = serde_json::from_str(line).map_err(|e| format!("not an index entry: {e}"))?;
        if schema.v > INDEX_SCHEMA_VERSION {
            return Ok(None);
        }
        if schema.v == 0 {
            return Err("schema version `v` must be at least 1".into());
        }
        serde_json::from_str(line).map(Some).map_err(|e| format!("not an index entry: {e}"))
    }

    /// Parses line `line_no` of an index file whose version resolution chose
    /// ([`parse_versions`] read only part of it), every field checked.
    pub fn parse_chosen(line: &str, line_no: usize, vers: &Version) -> Result<IndexEntry, IndexError> {
        let invalid = |message| IndexError::Invalid { line: line_no, message };
        let entry = IndexEntry::parse_line(line).map_err(invalid)?.ok_or_else(|| invalid("a newer schema".into()))?;
        if entry.vers != *vers {
            return Err(invalid(format!("read as version {vers} at first, but as {} in full", entry.vers)));
        }
        Ok(entry)
    }

    /// Checks that `new` may replace `self` in the index: same everything except
    /// `yanked`.
    pub fn check_update(&self, new: &IndexEntry) -> Result<(), IndexError> {
        let mut a = self.clone();
        a.yanked = new.yanked;
        if a == *new {
            return Ok(());
        }
        let field = match () {
            _ if a.name != new.name => "name",
            _ if a.vers != new.vers => "vers",
            _ if a.cksum != new.cksum => "cksum",
            _ if a.deps != new.deps => "deps",
            _ if a.programs != new.programs => "programs",
            _ if a.loaders != new.loaders => "loaders",
            _ if a.chains != new.chains => "chains",
            _ if a.kernel != new.kernel => "kernel",
            _ if a.hike_sdk != new.hike_sdk => "hike_sdk",
            _ if a.reexports != new.reexports => "reexports",
            _ if a.description != new.description => "description",
            _ if a.keywords != new.keywords => "keywords",
            _ => "v",
        };
        Err(IndexError::Immutable { name: self.name.to_string(), version: self.vers.clone(), field })
    }
}

/// An index file as read: the entries that can be used, and the lines that could
/// not, each with why.
#[derive(Debug, Clone, Default)]
pub struct ParsedIndex {
    pub entries: Vec<IndexEntry>,
    pub problems: Vec<IndexError>,
}

impl ParsedIndex {
    /// For writers, who must not add to a file they cannot fully read (a line
    /// they skipped may hold the version they are about to add): the entries
    /// only when every line was usable.
    pub fn strict(self) -> Result<Vec<IndexEntry>, IndexError> {
        match self.problems.into_iter().next() {
            Some(problem) => Err(problem),
            None => Ok(self.entries),
        }
    }
}

/// Parses the index file of package `name`: one entry per line, blank lines
/// ignored, lines of newer schemas skipped.
///
/// A bad line costs only itself: a line that does not parse or is about another
/// package is left out, and a version listed twice is left out entirely (neither
/// line can be trusted over the other). Each is reported in `problems`, so that
/// readers can warn and the other versions stay usable.
pub fn parse_index_file(name: &str, text: &[u8]) -> ParsedIndex {
    let mut out = ParsedIndex::default();
    let entries = walk_lines(name, text, &mut out.problems, |line| {
        let entry = IndexEntry::parse_line(line)?;
        Ok(entry.map(|e| (e.name.to_string(), e.vers.clone(), e)))
    });
    out.entries = entries.into_iter().map(|(_, e)| e).collect();
    out
}

/// What resolution reads of one index line: its version, whether it is yanked,
/// and its dependencies as written; the rest of the line (checksum, programs, …)
/// is read only for the versions chosen ([`VersionLine::entry`]), so resolving
/// against a large registry does not build every field of every version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionLine<'a> {
    pub vers: Version,
    pub yanked: bool,
    /// The `deps` array as written: equal text means equal dependencies, so a
    /// reader can share one parsed list between versions.
    pub deps_text: &'a str,
    /// The whole line.
    pub line: &'a str,
    /// Its line number (from 1), for messages.
    pub line_no: usize,
}

impl VersionLine<'_> {
    /// The dependencies, parsed and checked.
    pub fn deps(&self) -> Result<Vec<IndexDependency>, IndexError> {
        serde_json::from_str(self.deps_text).map_err(|e| IndexError::Invalid {
            line: self.line_no,
            message: format!("not an index entry: `deps`: {e}"),
        })
    }
}

/// Parses the index file of package `name` for resolution: the [`VersionLine`] of
/// every usable line, with the same rules as [`parse_index_file`] (bad, foreign and
/// duplicated lines left out and reported) except that only `v`, `name`, `vers`,
/// `yanked` and the JSON syntax of the rest are checked here.
pub fn parse_versions<'a>(name: &str, text: &'a [u8], problems: &mut Vec<IndexError>) -> Vec<VersionLine<'a>> {
    use serde_json::value::RawValue;
    // Every field raw first: a line of a newer schema is skipped whatever its other
    // fields look like, as `IndexEntry::parse_line` does.
    #[derive(Deserialize)]
    struct Head<'a> {
        v: u32,
        #[serde(borrow)]
        name: Option<&'a RawValue>,
        #[serde(borrow)]
        vers: Option<&'a RawValue>,
        #[serde(borrow)]
        deps: Option<&'a RawValue>,
        #[serde(borrow)]
        yanked: Option<&'a RawValue>,
    }
    fn field<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>, name: &str) -> Result<T, String> {
        let raw = raw.ok_or_else(|| format!("not an index entry: missing field `{name}`"))?;
        serde_json::from_str(raw.get()).map_err(|e| format!("not an index entry: `{name}`: {e}"))
    }
    walk_lines(name, text, problems, |line| {
        check_shape(line)?;
        let head: Head<'_> = match serde_json::from_str(line) {
            Ok(head) => head,
            // Whatever shape a newer schema takes, its `v` says so (as `parse_line` reads it).
            Err(e) => {
                return match IndexEntry::parse_line(line) {
                    Ok(None) => Ok(None),
                    _ => Err(format!("not an index entry: {e}")),
                };
            }
        };
        if head.v > INDEX_SCHEMA_VERSION {
            return Ok(None);
        }
        if head.v == 0 {
            return Err("schema version `v` must be at least 1".into());
        }
        let name: std::borrow::Cow<'_, str> = field(head.name, "name")?;
        let vers: std::borrow::Cow<'_, str> = field(head.vers, "vers")?;
        let vers = Version::parse(&vers).map_err(|e| format!("not an index entry: `vers`: {e}"))?;
        let yanked: bool = field(head.yanked, "yanked")?;
        let deps = head.deps.ok_or_else(|| "not an index entry: missing field `deps`".to_owned())?;
        let parsed = VersionLine { vers: vers.clone(), yanked, deps_text: deps.get(), line, line_no: 0 };
        Ok(Some((name.into_owned(), vers, parsed)))
    })
    .into_iter()
    .map(|(line_no, mut v)| {
        v.line_no = line_no;
        v
    })
    .collect()
}

/// What every reading of a line checks first: its length, and that it is an object
/// (as lines are written; serde would also take a struct as an array, by position).
fn check_shape(line: &str) -> Result<(), String> {
    if line.len() > MAX_INDEX_LINE {
        return Err(format!("line is longer than {MAX_INDEX_LINE} bytes"));
    }
    if !line.trim_start().starts_with('{') {
        return Err("not an index entry: a line is a JSON object".into());
    }
    Ok(())
}

/// The lines of an index file, each given to `parse` (which returns the line's
/// package name, version and parsed form, or `None` for a newer schema), with the
/// rules every reader shares: UTF-8, blank lines ignored, lines about another
/// package and versions listed twice left out. Returns `(line number, parsed)`.
fn walk_lines<'a, T>(
    name: &str,
    text: &'a [u8],
    problems: &mut Vec<IndexError>,
    mut parse: impl FnMut(&'a str) -> Result<Option<(String, Version, T)>, String>,
) -> Vec<(usize, T)> {
    let mut out: Vec<(usize, Version, T)> = Vec::new();
    let mut duplicated: Vec<Version> = Vec::new();
    let wanted = crate::names::normalize(name);
    let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    for (i, line) in lines.into_iter().enumerate() {
        let line_no = i + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = match std::str::from_utf8(line) {
            Ok(line) => line,
            Err(e) => {
                let message = format!("not UTF-8 text (byte {} of the line)", e.valid_up_to() + 1);
                problems.push(IndexError::Invalid { line: line_no, message });
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let (found, vers, parsed) = match parse(line) {
            Ok(Some(parsed)) => parsed,
            Ok(None) => continue,
            Err(message) => {
                problems.push(IndexError::Invalid { line: line_no, message });
                continue;
            }
        };
        if crate::names::normalize(&found) != wanted {
            problems.push(IndexError::WrongPackage { line: line_no, expected: name.to_owned(), found });
            continue;
        }
        if out.iter().any(|(_, v, _)| *v == vers) || duplicated.contains(&vers) {
            problems.push(IndexError::DuplicateVersion { line: line_no, name: name.to_owned(), version: vers.clone() });
            out.retain(|(_, v, _)| *v != vers);
            duplicated.push(vers);
            continue;
        }
        out.push((line_no, vers, parsed));
    }
    out.into_iter().map(|(line_no, _, parsed)| (line_no, parsed)).collect()
}

/// [`index_path`] of a package's name, built on the stack: a warm resolution
/// asks for the path of thousands of packages.
pub struct IndexPath {
    bytes: [u8; 6 + crate::names::MAX_NAME_LEN],
    len: usize,
}

impl IndexPath {
    pub fn of(name: &crate::PackageName) -> IndexPath {
        let name = name.as_str().as_bytes();
        let mut path = IndexPath { bytes: [0; 6 + crate::names::MAX_NAME_LEN], len: 0 };
        match name {
            [_] => path.push(b"1/"),
            [_, _] => path.push(b"2/"),
            [first, _, _] => {
                path.push(b"3/");
                path.push(&[*first, b'/']);
            }
            [a, b, c, d, ..] => path.push(&[*a, *b, b'/', *c, *d, b'/']),
            [] => {}
        }
        path.push(name);
        path.bytes[..path.len].make_ascii_lowercase();
        path
    }

    /// Names are at most `MAX_NAME_LEN` bytes, so a path always fits.
    fn push(&mut self, bytes: &[u8]) {
        debug_assert!(self.len + bytes.len() <= self.bytes.len(), "a package name longer than MAX_NAME_LEN");
        if let Some(to) = self.bytes.get_mut(self.len..self.len + bytes.len()) {
            to.copy_from_slice(bytes);
            self.len += bytes.len();
        }
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

/// The path of a package's index file inside the index, as cargo's sparse index
/// lays it out: `1/a`, `2/ab`, `3/a/abc`, `me/te/meter`. Names are lowercased.
/// Package names are ASCII; any other text has no index path (empty), rather than
/// one cut inside a character.
pub fn index_path(name: &str) -> String {
    if !name.is_ascii() {
        return String::new();
    }
    let name = name.to_ascii_lowercase();
    match name.len() {
        0 => String::new(),
        1 => format!("1/{name}"),
        2 => format!("2/{name}"),
        3 => format!("3/{}/{name}", &name[..1]),
        _ => format!("{}/{}/{name}", &name[..2], &name[2..4]),
    }
}

/// The name a registry's TUF metadata lists a package's index file under: its
/// path from the registry's root, `index/me/te/meter`.
pub fn index_target(name: &str) -> String {
    format!("index/{}", index_path(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_is_not_ascii_has_no_index_path() {
        for text in ["🦁", "é", "aé", "abé", "ab🦁cd", "\u{80}bcd"] {
            assert_eq!(index_path(text), "", "{text}");
        }
    }

    #[test]
    fn index_paths_built_on_the_stack_are_the_same() {
        for n in ["a", "ab", "net", "meter", "my-pkg", "p4c_gen2", &"a1-".repeat(21), &"z".repeat(64)] {
            let name = crate::PackageName::new(n).unwrap();
            assert_eq!(IndexPath::of(&name).as_str(), index_path(n), "{n}");
        }
    }

    #[test]
    fn index_paths_follow_cargo() {
        assert_eq!(index_path("a"), "1/a");
        assert_eq!(index_path("ab"), "2/ab");
        assert_eq!(index_path("net"), "3/n/net");
        assert_eq!(index_path("Meter"), "me/te/meter");
    }

    #[test]
    fn search_metadata_comes_from_the_manifest_and_is_immutable() {
        let manifest = Manifest::parse(
            "[package]\nname = \"net\"\nversion = \"1.0.0\"\ndescription = \"Verdicts\"\nkeywords = [\"xdp\"]\n",
            "ebpkg.toml",
        )
        .unwrap();
        let entry = IndexEntry::from_manifest(&manifest, Sha256Digest([1; 32]));
        assert_eq!(entry.description.as_deref(), Some("Verdicts"));
        assert_eq!(entry.keywords, ["xdp"]);
        assert!(entry.to_line().ends_with(r#""chains":[],"description":"Verdicts","keywords":["xdp"]}"#));

        let mut changed = entry.clone();
        changed.description = Some("Something else".into());
        let e = entry.check_update(&changed).unwrap_err();
        assert!(e.to_string().contains("field `description` differs"), "{e}");
        changed = entry.clone();
        changed.keywords.clear();
        let e = entry.check_update(&changed).unwrap_err();
        assert!(e.to_string().contains("field `keywords` differs"), "{e}");
    }

    #[test]
    fn lines_without_search_metadata_still_parse() {
        let mut entry = IndexEntry::from_manifest(
            &Manifest::parse("[package]\nname = \"net\"\nversion = \"1.0.0\"\n", "ebpkg.toml").unwrap(),
            Sha256Digest([1; 32]),
        );
        let line = entry.to_line();
        assert!(!line.contains("description") && !line.contains("keywords"), "{line}");
        assert_eq!(IndexEntry::parse_line(&line).unwrap(), Some(entry.clone()));
        entry.yanked = true;
        assert!(IndexEntry::parse_line(&entry.to_line()).unwrap().unwrap().yanked);
    }

    #[test]
    fn newer_schema_lines_are_skipped() {
        assert!(IndexEntry::parse_line(r#"{"v":99,"whatever":true}"#).unwrap().is_none());
        assert!(IndexEntry::parse_line(r#"{"v":0}"#).is_err());
        assert!(IndexEntry::parse_line("not json").is_err());
    }

    fn line(version: &str, digest: u8) -> String {
        let manifest =
            Manifest::parse(&format!("[package]\nname = \"net\"\nversion = \"{version}\"\n"), "ebpkg.toml").unwrap();
        IndexEntry::from_manifest(&manifest, Sha256Digest([digest; 32])).to_line()
    }

    fn versions(parsed: &ParsedIndex) -> Vec<String> {
        parsed.entries.iter().map(|e| e.vers.to_string()).collect()
    }

    #[test]
    fn a_bad_line_costs_only_itself() {
        let upper = line("1.2.0", 0xab).replace(&"ab".repeat(32), &"AB".repeat(32));
        let other = line("9.0.0", 1).replace("\"net\"", "\"other\"");
        let mut text = [line("1.0.0", 1), "{not json".into(), line("1.1.0", 2), upper, other].join("\n");
        text.push_str("\n\u{0}\n");
        let parsed = parse_index_file("net", text.as_bytes());
        assert_eq!(versions(&parsed), ["1.0.0", "1.1.0"]);
        let problems: Vec<String> = parsed.problems.iter().map(|p| p.to_string()).collect();
        let parsed_bad = parse_index_file("net", &[line("1.0.0", 1).as_bytes(), b"\n\xff\xfe\n"].concat());
        assert_eq!(versions(&parsed_bad), ["1.0.0"]);
        assert_eq!(parsed_bad.problems[0].to_string(), "line 2: not UTF-8 text (byte 1 of the line)");
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].starts_with("line 2: "), "{problems:?}");
        assert!(problems[1].starts_with("line 4: ") && problems[1].contains("64 lowercase hex digits"), "{problems:?}");
        assert!(problems[2].starts_with("line 5: entry is for package `other`"), "{problems:?}");
        assert!(parsed.strict().is_err());
    }

    #[test]
    fn a_version_listed_twice_is_not_used_at_all() {
        let text = [line("1.0.0", 1), line("2.0.0", 2), line("1.0.0", 3), line("1.0.0", 4)].join("\n");
        let parsed = parse_index_file("net", text.as_bytes());
        assert_eq!(versions(&parsed), ["2.0.0"]);
        assert_eq!(parsed.problems.len(), 2);
        assert!(parsed.problems[0].to_string().contains("listed twice; neither line is used"));
        let clean = parse_index_file("net", [line("1.0.0", 1), line("2.0.0", 2)].join("\n").as_bytes());
        assert!(clean.problems.is_empty());
        assert_eq!(clean.strict().unwrap().len(), 2);
    }

    #[test]
    fn resolution_reads_part_of_each_line_with_the_same_rules() {
        let bad_cksum = line("1.1.0", 2).replace(&"02".repeat(32), "zz");
        let text = [
            line("1.0.0", 1),
            bad_cksum.clone(),
            r#"{"v":2,"name":{"new":"shape"},"deps":7}"#.to_owned(),
            "not json".to_owned(),
            line("1.2.0", 3).replace("\"net\"", "\"other\""),
            line("1.3.0", 4),
            line("1.3.0", 5),
            String::new(),
        ]
        .join("\n");
        let full = parse_index_file("net", text.as_bytes());
        let mut problems = Vec::new();
        let light = parse_versions("net", text.as_bytes(), &mut problems);
        // The newer schema is skipped silently by both; the rest left out by both.
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert_eq!(full.problems.len(), 4, "{:?}", full.problems);
        assert_eq!(light.iter().map(|l| l.vers.to_string()).collect::<Vec<_>>(), ["1.0.0", "1.1.0"]);
        assert_eq!(versions(&full), ["1.0.0"]);
        // The line whose checksum is damaged fails once chosen, naming its line.
        let e = IndexEntry::parse_chosen(light[1].line, light[1].line_no, &light[1].vers).unwrap_err();
        assert!(e.to_string().starts_with("line 2: not an index entry"), "{e}");
        let chosen = IndexEntry::parse_chosen(light[0].line, light[0].line_no, &light[0].vers).unwrap();
        assert_eq!(chosen, full.entries[0]);
        assert_eq!(light[0].deps().unwrap(), chosen.deps);
        assert!(IndexEntry::parse_chosen(light[0].line, 1, &Version::new(9, 0, 0)).is_err());
    }
}
