//! `ebpkg.lock`: the exact set of packages a resolution chose.
//!
//! The file is written by [`Lockfile::to_toml_string`] only, in one canonical form:
//! packages sorted by (name, version, source), dependencies sorted, fixed key order.
//! Parsing that text and writing it again gives the same bytes, so a lockfile only
//! changes in version control when the resolution changed.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use schemars::JsonSchema;
use semver::Version;
use serde::Deserialize;
use toml::Spanned;

mod canonical;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::manifest::{ManifestError, read_capped};
use crate::names::PackageName;
use crate::registry_id::RegistryId;
use crate::toml_input;
use crate::types::{KeyId, Sha256Digest};

/// The file name of a lockfile.
pub const LOCK_FILE: &str = "ebpkg.lock";

/// The format version this crate reads and writes.
pub const LOCK_VERSION: u32 = 1;

const HEADER: &str = "# This file is written by ebpkg; do not edit it by hand.\n";

/// A parsed lockfile. `packages` is kept in canonical order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lockfile {
    packages: Vec<LockedPackage>,
}

/// How lockfile text is read (see [`canonical`]).
#[derive(Clone, Copy)]
enum Read {
    /// In the layout ebpkg writes when it is in it, else as a TOML document.
    LayoutFirst,
    Toml,
}

/// One resolved package.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LockedPackage {
    pub name: PackageName,
    pub version: Version,
    /// The registry it came from (read once per registry: a lock names one or two
    /// registries for thousands of packages).
    pub source: RegistryId,
    /// SHA-256 of the package archive.
    pub checksum: Sha256Digest,
    /// The key that signed the archive, as the registry's index line named it
    /// and its bundle proved when the package was first fetched. A later
    /// install that finds another key for this version is refused.
    pub signer: Option<KeyId>,
    /// The packages it depends on, as resolved; sorted.
    pub dependencies: Vec<LockedDependency>,
}

impl LockedPackage {
    /// `name@version`, typed.
    pub fn id(&self) -> crate::PackageId {
        crate::PackageId::new(self.name.clone(), self.version.clone())
    }
}

/// A reference from one locked package to another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LockedDependency {
    pub name: PackageName,
    pub version: Version,
}

impl std::fmt::Display for LockedDependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.name, self.version)
    }
}

/// The shape of `ebpkg.lock` as serde reads it; the JSON Schema is generated from it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "ebpkg.lock", rename = "Lockfile")]
pub(crate) struct RawLockfile {
    /// Format version; this is version 1.
    #[schemars(with = "u32")]
    pub version: Spanned<u32>,
    /// Resolved packages, sorted by name, version and source.
    #[serde(default, rename = "package")]
    pub packages: Vec<RawLockedPackage>,
}

/// A `[[package]]` of the lockfile.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "LockedPackage")]
pub(crate) struct RawLockedPackage {
    /// Package name.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Exact version.
    #[schemars(with = "String")]
    pub version: Spanned<String>,
    /// URL of the registry the archive came from.
    #[schemars(with = "String")]
    pub source: Spanned<String>,
    /// SHA-256 of the package archive, 64 lowercase hex digits.
    #[schemars(with = "Sha256Digest")]
    pub checksum: Spanned<String>,
    /// Id of the key that signed the archive (base64, as cosign's key hint).
    pub signer: Option<KeyId>,
    /// Resolved dependencies as "name version", sorted.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub dependencies: Vec<Spanned<String>>,
}

impl Lockfile {
    /// A lockfile holding `packages`, put in canonical order.
    pub fn new(mut packages: Vec<LockedPackage>) -> Self {
        for p in &mut packages {
            p.dependencies.sort();
            p.dependencies.dedup();
        }
        packages.sort();
        packages.dedup();
        Lockfile { packages }
    }

    /// The packages, in canonical order.
    pub fn packages(&self) -> &[LockedPackage] {
        &self.packages
    }

    /// The locked package with this name and version.
    pub fn get(&self, name: &str, version: &Version) -> Option<&LockedPackage> {
        // Sorted by name, then version: a resolution looks up every package it locks.
        let start = self.packages.partition_point(|p| (p.name.as_str(), &p.version) < (name, version));
        self.packages.get(start).filter(|p| p.name.as_str() == name && p.version == *version)
    }

    /// Its packages by normalized name (`my-pkg` and `my_pkg` together), each name's in
    /// canonical order: for commands that look up many names, which scanning the lock
    /// for each would make quadratic.
    pub fn by_normalized_name(&self) -> HashMap<String, Vec<&LockedPackage>> {
        let mut by_name: HashMap<String, Vec<&LockedPackage>> = HashMap::new();
        for p in &self.packages {
            by_name.entry(p.name.normalized()).or_default().push(p);
        }
        by_name
    }

    /// The canonical text of the lockfile.
    pub fn to_toml_string(&self) -> String {
        let mut out = String::with_capacity(HEADER.len() + 16 + self.packages.len() * 256);
        // Taking nothing from a string cannot fail.
        let _ = self.write_text(&mut out, |_| Ok(()));
        out
    }

    /// Writes [`Lockfile::to_toml_string`]'s text to `out` a chunk at a time (a
    /// 10,000-package lockfile is ~2 MB, which need not be held whole).
    pub fn write_toml(&self, out: &mut impl io::Write) -> io::Result<()> {
        const CHUNK: usize = 64 * 1024;
        let mut buf = String::with_capacity(CHUNK + 4096);
        let mut flush = |buf: &mut String| {
            out.write_all(buf.as_bytes())?;
            buf.clear();
            Ok(())
        };
        self.write_text(&mut buf, |buf| match buf.len() >= CHUNK {
            true => flush(buf),
            false => Ok(()),
        })?;
        flush(&mut buf)
    }

    /// Appends the text to `out`, calling `chunk` after each package (which may take what
    /// `out` holds so far).
    fn write_text(&self, out: &mut String, mut chunk: impl FnMut(&mut String) -> io::Result<()>) -> io::Result<()> {
        // Written straight into one buffer: a temporary string per value made this a
        // tenth of `ebpkg lock`'s time.
        let mut scratch = String::new();
        out.push_str(HEADER);
        let _ = writeln!(out, "version = {LOCK_VERSION}");
        let mut value = |out: &mut String, value: &dyn std::fmt::Display| {
            scratch.clear();
            let _ = write!(scratch, "{value}");
            push_quoted(out, &scratch);
        };
        for p in &self.packages {
            // Names (`[a-z0-9_-]`), versions (digits, dots, `[0-9A-Za-z.-]` after `-` and `+`) and hex
            // need no escape: written directly, with no formatting machinery (a 10,000-package lock
            // has ~30,000 versions).
            out.push_str("\n[[package]]\nname = \"");
            out.push_str(p.name.as_str());
            out.push_str("\"\nversion = \"");
            push_version(out, &p.version);
            out.push_str("\"\nsource = ");
            push_quoted(out, p.source.as_str());
            out.push_str("\nchecksum = \"");
            push_hex(out, &p.checksum.0);
            out.push_str("\"\n");
            if let Some(signer) = &p.signer {
                out.push_str("signer = ");
                value(out, signer);
                out.push('\n');
            }
            if !p.dependencies.is_empty() {
                out.push_str("dependencies = [\n");
                for d in &p.dependencies {
                    out.push_str("    \"");
                    out.push_str(d.name.as_str());
                    out.push(' ');
                    push_version(out, &d.version);
                    out.push_str("\",\n");
                }
                out.push_str("]\n");
            }
            chunk(out)?;
        }
        Ok(())
    }

    /// Parses lockfile text. `file` is the name used in errors.
    pub fn parse(source: &str, file: &str) -> Result<Lockfile, Diagnostics> {
        Self::parse_read(source, file, Read::LayoutFirst)
    }

    /// [`Lockfile::parse`] reading the text as a TOML document whatever its layout, as
    /// it does for text not laid out as ebpkg writes it: for the tests and the fuzz target
    /// that hold the two readings to the same result.
    #[doc(hidden)]
    pub fn parse_as_toml(source: &str, file: &str) -> Result<Lockfile, Diagnostics> {
        Self::parse_read(source, file, Read::Toml)
    }

    fn parse_read(source: &str, file: &str, read: Read) -> Result<Lockfile, Diagnostics> {
        let (packages, diags) = Self::parse_parts(source, file, read)?;
        match Diagnostics::from_vec(diags) {
            Some(d) => Err(d),
            None => Ok(Lockfile::new(packages)),
        }
    }

    /// What can still be used of lockfile text that [`Lockfile::parse`] refuses, as
    /// preferences for resolving again (what cargo does with a damaged Cargo.lock):
    /// the well-formed packages listed once, without dependencies on packages the
    /// file does not list. Text that is not a lockfile at all gives an empty one.
    pub fn salvage(source: &str, file: &str) -> Lockfile {
        let Ok((packages, _)) = Self::parse_parts(source, file, Read::LayoutFirst) else { return Lockfile::default() };
        let mut seen = BTreeSet::new();
        let mut kept: Vec<LockedPackage> =
            packages.into_iter().filter(|p| seen.insert((p.name.clone(), p.version.clone()))).collect();
        let present: BTreeSet<(PackageName, Version)> = seen;
        for p in &mut kept {
            p.dependencies.retain(|d| present.contains(&(d.name.clone(), d.version.clone())));
        }
        Lockfile::new(kept)
    }

    /// The well-formed packages of lockfile text and the problems found; `Err` when
    /// the text is not a lockfile of this format at all.
    fn parse_parts(source: &str, file: &str, read: Read) -> Result<(Vec<LockedPackage>, Vec<Diagnostic>), Diagnostics> {
        let source = toml_input::decode(source.as_bytes(), file, toml_input::MAX_LOCK_BYTES)?;
        let canonical = match read {
            Read::LayoutFirst => canonical::read(source),
            Read::Toml => None,
        };
        let raw: RawLockfile = match canonical {
            Some(raw) => raw,
            None => toml_input::from_str(source, file)?,
        };
        let mut diags = Problems::default();
        let err = |span: std::ops::Range<usize>, m: String, h: &str| {
            Diagnostic::new(file, source, span, m).with_help(h.to_owned())
        };
        if *raw.version.get_ref() != LOCK_VERSION {
            let v = *raw.version.get_ref();
            let help = if v > LOCK_VERSION {
                "this lockfile was written by a newer ebpkg; upgrade ebpkg"
            } else {
                "delete ebpkg.lock and run `ebpkg lock` to write a new one"
            };
            return Err(err(
                raw.version.span(),
                format!("lockfile format version {v} is not supported (this ebpkg reads version {LOCK_VERSION})"),
                help,
            )
            .into());
        }
        let mut packages = Vec::new();
        let mut sources: HashMap<String, RegistryId> = HashMap::new();
        let mut dep_refs = Vec::new();
        // A set, not a search of the packages so far: a lock may list 100,000 packages.
        let mut listed: BTreeSet<(PackageName, Version)> = BTreeSet::new();
        for p in raw.packages {
            let name = PackageName::new(p.name.get_ref())
                .map_err(|e| {
                    diags.push(|| {
                        err(p.name.span(), format!("package {e}"), "regenerate the lockfile with `ebpkg lock`")
                    })
                })
                .ok();
            let version = Version::parse(p.version.get_ref())
                .map_err(|e| {
                    diags.push(|| {
                        err(
                            p.version.span(),
                            format!("version \"{}\" is not semver: {e}", p.version.get_ref()),
                            "regenerate the lockfile with `ebpkg lock`",
                        )
                    })
                })
                .ok();
            let checksum = Sha256Digest::from_canonical_hex(p.checksum.get_ref())
                .ok_or_else(|| {
                    diags.push(|| {
                        err(
                            p.checksum.span(),
                            format!(
                                "checksum \"{}\" is not a SHA-256 digest (64 lowercase hex digits)",
                                p.checksum.get_ref()
                            ),
                            "regenerate the lockfile with `ebpkg lock`",
                        )
                    })
                })
                .ok();
            // Each registry's text parsed once (cargo's lockfile reader decodes each
            // `SourceId` once): a lock names one or two for thousands of packages.
            let source = match sources.get(p.source.get_ref().as_str()) {
                Some(id) => Some(RegistryId::clone(id)),
                None => match RegistryId::parse_url(p.source.get_ref()) {
                    Ok(id) => {
                        sources.insert(p.source.get_ref().clone(), id.clone());
                        Some(id)
                    }
                    Err(e) => {
                        diags.push(|| {
                            err(p.source.span(), format!("source {e}"), "regenerate the lockfile with `ebpkg lock`")
                        });
                        None
                    }
                },
            };
            let mut dependencies = Vec::new();
            for d in &p.dependencies {
                match parse_dep_ref(d.get_ref()) {
                    Some(dep) => {
                        dep_refs.push((d.span(), dep.clone()));
                        dependencies.push(dep);
                    }
                    None => diags.push(|| {
                        err(
                            d.span(),
                            format!("dependency \"{}\" is not \"<name> <version>\"", d.get_ref()),
                            "regenerate the lockfile with `ebpkg lock`",
                        )
                    }),
                }
            }
            // Only a package whose every field is well-formed is kept (salvage
            // hands them on as they are).
            if let (Some(name), Some(version), Some(checksum), Some(source)) = (name, version, checksum, source) {
                if !listed.insert((name.clone(), version.clone())) {
                    diags.push(|| {
                        err(
                            p.name.span(),
                            format!("package {name} {version} is listed twice"),
                            "regenerate the lockfile with `ebpkg lock`",
                        )
                    });
                }
                packages.push(LockedPackage { name, version, source, checksum, signer: p.signer, dependencies });
            }
        }
        for (span, dep) in dep_refs {
            if !listed.contains(&(dep.name.clone(), dep.version.clone())) {
                diags.push(|| {
                    err(
                        span,
                        format!("dependency \"{dep}\" is not a package of this lockfile"),
                        "the lockfile is incomplete; regenerate it with `ebpkg lock`",
                    )
                });
            }
        }
        Ok((packages, diags.finish(file, source)))
    }

    /// Reads the lockfile at `path`.
    pub fn load(path: &Path) -> Result<Lockfile, ManifestError> {
        let bytes = read_capped(path, toml_input::MAX_LOCK_BYTES)?;
        let file = path.display().to_string();
        let invalid = |diagnostics, source_text| ManifestError::Invalid { diagnostics, source_text };
        let text = toml_input::decode(&bytes, &file, toml_input::MAX_LOCK_BYTES)
            .map_err(|d| invalid(d.into(), String::new()))?;
        Lockfile::parse(text, &file).map_err(|d| invalid(d, text.to_owned()))
    }
}

/// The problems found in a lockfile, the first [`Problems::SHOWN`] of them made
/// into diagnostics: each finds its line by scanning the text up to it, and a
/// hostile lock (64 MiB of references to missing packages) could otherwise ask for
/// millions of scans.
#[derive(Default)]
struct Problems {
    shown: Vec<Diagnostic>,
    more: usize,
}

impl Problems {
    const SHOWN: usize = 20;

    fn push(&mut self, diagnostic: impl FnOnce() -> Diagnostic) {
        match self.shown.len() < Self::SHOWN {
            true => self.shown.push(diagnostic()),
            false => self.more += 1,
        }
    }

    fn finish(mut self, file: &str, source: &str) -> Vec<Diagnostic> {
        if self.more > 0 {
            let at = self.shown.last().map_or(0..0, |d| d.span.clone());
            let message = format!("and {} more problems (only the first {} are shown)", self.more, Self::SHOWN);
            let help = "the lockfile is damaged; regenerate it with `ebpkg lock`";
            self.shown.push(Diagnostic::new(file, source, at, message).with_help(help));
        }
        self.shown
    }
}

fn parse_dep_ref(s: &str) -> Option<LockedDependency> {
    let (name, version) = s.split_once(' ')?;
    Some(LockedDependency { name: PackageName::new(name).ok()?, version: Version::parse(version).ok()? })
}

/// Appends `s` as a TOML string, exactly as the `toml` crate writes it.
/// `v` as semver displays it.
fn push_version(out: &mut String, v: &Version) {
    push_decimal(out, v.major);
    out.push('.');
    push_decimal(out, v.minor);
    out.push('.');
    push_decimal(out, v.patch);
    if !v.pre.is_empty() {
        out.push('-');
        out.push_str(v.pre.as_str());
    }
    if !v.build.is_empty() {
        out.push('+');
        out.push_str(v.build.as_str());
    }
}

fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}

/// Lowercase hex, as `Sha256Digest` displays it.
fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
}

fn push_quoted(out: &mut String, s: &str) {
    // What lockfiles hold (names, versions, URLs, hex) needs no escape and is written
    // as a basic string by `toml`; anything else is left to `toml` itself.
    if s.bytes().all(|b| matches!(b, b' '..=b'~') && !matches!(b, b'"' | b'\\' | b'\'')) {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&toml::Value::String(s.to_owned()).to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_in_chunks_it_is_the_same_text() {
        let packages = (0..3000)
            .map(|i| {
                let mut p = pkg(&format!("p{i:05}"), "1.2.3-rc.1+b", &[("dep-a", "0.1.0"), ("dep_b", "2.0.0")]);
                p.signer = (i % 7 == 0).then_some(KeyId([i as u8; 32]));
                p
            })
            .collect();
        let lock = Lockfile::new(packages);
        let mut written = Vec::new();
        lock.write_toml(&mut written).unwrap();
        let text = lock.to_toml_string();
        assert!(text.len() > 4 * 64 * 1024, "several chunks");
        assert_eq!(String::from_utf8(written).unwrap(), text);
    }

    #[test]
    fn versions_and_digests_are_written_as_they_display() {
        for text in ["0.0.0", "1.2.3", "18446744073709551615.10.9", "1.0.0-rc.1", "2.0.0+build.5", "3.1.4-a-b.0+x.y-z"]
        {
            let v = Version::parse(text).unwrap();
            let mut out = String::new();
            push_version(&mut out, &v);
            assert_eq!(out, v.to_string());
        }
        let digest = Sha256Digest(std::array::from_fn(|i| (i * 37) as u8));
        let mut out = String::new();
        push_hex(&mut out, &digest.0);
        assert_eq!(out, digest.to_string());
    }

    fn pkg(name: &str, version: &str, deps: &[(&str, &str)]) -> LockedPackage {
        LockedPackage {
            name: PackageName::new(name).unwrap(),
            version: Version::parse(version).unwrap(),
            source: RegistryId::parse_url("file:///srv/registry").unwrap(),
            checksum: Sha256Digest([7; 32]),
            signer: None,
            dependencies: deps
                .iter()
                .map(|(n, v)| LockedDependency {
                    name: PackageName::new(n).unwrap(),
                    version: Version::parse(v).unwrap(),
                })
                .collect(),
        }
    }

    /// A large project's lock is larger than a manifest may be, and is read back
    /// whole; one larger than any lock ebpkg writes is refused before parsing.
    #[test]
    fn the_lock_of_ten_thousand_packages_reads_back_and_a_hostile_size_does_not() {
        let names: Vec<String> = (0..10_000).map(|i| format!("package-{i:05}")).collect();
        let packages = (0..10_000)
            .map(|i| {
                let deps: Vec<(&str, &str)> = (1..=2).filter(|d| i >= *d).map(|d| (&*names[i - d], "1.2.3")).collect();
                pkg(&names[i], "1.2.3", &deps)
            })
            .collect();
        let lock = Lockfile::new(packages);
        let text = lock.to_toml_string();
        assert!(text.len() > crate::MAX_TOML_BYTES, "{} bytes", text.len());
        assert_eq!(Lockfile::parse(&text, "ebpkg.lock").as_ref(), Ok(&lock));
        let hostile = format!("{text}{}", "#".repeat(crate::MAX_LOCK_BYTES));
        let e = Lockfile::parse(&hostile, "ebpkg.lock").unwrap_err().to_string();
        assert!(e.contains("file is larger than 67108864 bytes (64 MiB)"), "{e}");
    }

    /// Each problem shown finds its line by scanning the text: a lock of thousands
    /// of problems shows the first ones and counts the rest.
    #[test]
    fn a_lock_of_many_problems_shows_the_first_and_counts_the_rest() {
        let deps: Vec<(String, &str)> = (0..10_000).map(|i| (format!("missing{i}"), "1.0.0")).collect();
        let deps: Vec<(&str, &str)> = deps.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        let text = Lockfile::new(vec![pkg("meter", "1.0.0", &deps)]).to_toml_string();
        let e = Lockfile::parse(&text, "ebpkg.lock").unwrap_err();
        assert_eq!(e.iter().count(), Problems::SHOWN + 1);
        let last = e.iter().map(|d| d.message.as_str()).find(|m| m.starts_with("and ")).unwrap();
        assert_eq!(last, "and 9980 more problems (only the first 20 are shown)");
        assert!(e.render(&text).contains("missing0 1.0.0\" is not a package of this lockfile"));
        assert_eq!(Lockfile::salvage(&text, "ebpkg.lock").packages()[0].dependencies.len(), 0);
    }

    #[test]
    fn a_package_listed_twice_is_refused_and_salvaged_once() {
        let text = Lockfile::new(vec![pkg("meter", "1.0.0", &[])]).to_toml_string();
        let block = &text[text.find("[[package]]").unwrap()..];
        let twice = format!("{text}\n{block}");
        let e = Lockfile::parse(&twice, "ebpkg.lock").unwrap_err().to_string();
        assert!(e.contains("package meter 1.0.0 is listed twice"), "{e}");
        assert_eq!(Lockfile::salvage(&twice, "ebpkg.lock").packages().len(), 1);
    }

    proptest::proptest! {
        /// The fast path writes what `toml` writes, whatever the string.
        #[test]
        fn strings_are_quoted_as_toml_quotes_them(s in "\\PC*|[ -~]*|[a-z0-9:/._'\"\\\\-]*") {
            let mut out = String::new();
            push_quoted(&mut out, &s);
            proptest::prop_assert_eq!(&out, &toml::Value::String(s.clone()).to_string());
            let parsed: toml::Table = toml::from_str(&format!("k = {out}")).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            proptest::prop_assert_eq!(parsed.get("k").and_then(|v| v.as_str()), Some(s.as_str()));
        }
    }

    proptest::proptest! {
        /// Looked up by binary search: the same as the first match in order.
        #[test]
        fn get_finds_what_a_scan_finds(
            entries in proptest::collection::vec((0u8..6, 0u64..4, 0u8..2), 0..40),
            name in 0u8..7,
            minor in 0u64..5,
        ) {
            let packages: Vec<LockedPackage> = entries
                .iter()
                .map(|(n, m, source)| {
                    let mut p = pkg(&format!("p{n}"), &format!("1.{m}.0"), &[]);
                    p.source = RegistryId::parse_url(&format!("file:///srv/registry{source}")).unwrap();
                    p
                })
                .collect();
            let lock = Lockfile::new(packages);
            let (name, version) = (format!("p{name}"), Version::new(1, minor, 0));
            let scanned = lock.packages().iter().find(|p| p.name.as_str() == name && p.version == version);
            proptest::prop_assert_eq!(lock.get(&name, &version), scanned);
        }
    }

    #[test]
    fn checksums_display_as_lowercase_hex() {
        let d = Sha256Digest([0xab; 32]);
        assert_eq!(d.to_string(), "ab".repeat(32));
        assert_eq!(d.to_string(), d.to_hex());
    }

    #[test]
    fn canonical_text() {
        let lock = Lockfile::new(vec![pkg("net", "1.0.0", &[]), pkg("ddos", "1.4.0", &[("net", "1.0.0")])]);
        let text = lock.to_toml_string();
        let digest = "07".repeat(32);
        assert_eq!(
            text,
            format!(
                "# This file is written by ebpkg; do not edit it by hand.\nversion = 1\n\n[[package]]\nname = \"ddos\"\nversion = \"1.4.0\"\nsource = \"file:///srv/registry/\"\nchecksum = \"{digest}\"\ndependencies = [\n    \"net 1.0.0\",\n]\n\n[[package]]\nname = \"net\"\nversion = \"1.0.0\"\nsource = \"file:///srv/registry/\"\nchecksum = \"{digest}\"\n"
            )
        );
        assert_eq!(Lockfile::parse(&text, "ebpkg.lock").unwrap(), lock);
    }

    #[test]
    fn newer_format_asks_for_upgrade() {
        let e = Lockfile::parse("version = 2\n", "ebpkg.lock").unwrap_err();
        assert_eq!(
            e.to_string(),
            "ebpkg.lock:1:11: lockfile format version 2 is not supported (this ebpkg reads version 1); this lockfile was written by a newer ebpkg; upgrade ebpkg"
        );
    }

    #[test]
    fn dangling_dependency_is_refused() {
        let mut lock = Lockfile::new(vec![pkg("ddos", "1.4.0", &[("net", "1.0.0")])]).to_toml_string();
        lock.push('\n');
        let e = Lockfile::parse(&lock, "ebpkg.lock").unwrap_err();
        assert!(e.to_string().contains("dependency \"net 1.0.0\" is not a package of this lockfile"), "{e}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = Lockfile::parse("version = 1\n[[package]]\nnme = \"x\"\n", "ebpkg.lock").unwrap_err();
        assert!(e.to_string().starts_with("ebpkg.lock:3:1: unknown key `nme`; did you mean `name`?"), "{e}");
    }

    #[test]
    fn packages_of_one_registry_share_its_id_when_read() {
        let mut other = pkg("meter", "1.0.0", &[]);
        other.source = RegistryId::parse_url("file:///srv/other").unwrap();
        let lock = Lockfile::new(vec![pkg("ddos", "1.4.0", &[]), pkg("net", "1.0.0", &[]), other]);
        let read = Lockfile::parse(&lock.to_toml_string(), "ebpkg.lock").unwrap();
        assert_eq!(read, lock);
        let [ddos, meter, net] = read.packages() else { panic!("{read:?}") };
        assert_eq!(ddos.source, net.source);
        assert_ne!(ddos.source, meter.source);
        assert_eq!(meter.source.as_str(), "file:///srv/other/");
    }

    /// A source is a registry URL by the rules every registry named anywhere follows
    /// (RegistryId): one that is not is an error at its place in the file.
    #[test]
    fn a_bad_source_is_refused_where_it_is_written() {
        let text = Lockfile::new(vec![pkg("net", "1.0.0", &[])]).to_toml_string();
        for (bad, why) in [
            ("https://user:secret@registry.example/", "credentials"),
            ("gopher://registry.example/", "scheme `gopher:`"),
            ("/srv/registry/", "relative URL without a base"),
        ] {
            let text = text.replace("file:///srv/registry/", bad);
            for e in [
                Lockfile::parse(&text, "ebpkg.lock").unwrap_err(),
                Lockfile::parse_as_toml(&text, "ebpkg.lock").unwrap_err(),
            ] {
                let e = e.to_string();
                assert!(e.starts_with(&format!("ebpkg.lock:7:10: source `{bad}`")), "{e}");
                assert!(e.contains(why) && e.ends_with("regenerate the lockfile with `ebpkg lock`"), "{e}");
            }
        }
    }

    /// Another spelling of a registry (written by hand) reads as the registry, and
    /// is written back in the one canonical spelling.
    #[test]
    fn a_source_is_read_in_its_canonical_spelling() {
        let text = Lockfile::new(vec![pkg("net", "1.0.0", &[])]).to_toml_string();
        let spelled = text.replace("file:///srv/registry/", "file://localhost/srv/./registry");
        let read = Lockfile::parse(&spelled, "ebpkg.lock").unwrap();
        assert_eq!(read.packages()[0].source, RegistryId::parse("/srv/registry").unwrap());
        assert_eq!(read.to_toml_string(), text);
    }

    /// Found by the lockfile fuzzer: a package whose source is not a URL was kept
    /// by salvage, so the salvaged lockfile did not parse.
    #[test]
    fn salvage_drops_packages_with_a_bad_source_and_what_depends_on_them() {
        let good = pkg("net", "1.0.3", &[]);
        let text = Lockfile::new(vec![pkg("meter", "1.2.4", &[("net", "1.0.3")]), good.clone()])
            .to_toml_string()
            .replacen("file:///srv/registry", "htt#s://registry", 1);
        assert!(Lockfile::parse(&text, "ebpkg.lock").is_err());
        let salvaged = Lockfile::salvage(&text, "ebpkg.lock");
        assert_eq!(salvaged, Lockfile::new(vec![good]));
        assert_eq!(Lockfile::parse(&salvaged.to_toml_string(), "ebpkg.lock").as_ref(), Ok(&salvaged));
    }
}
