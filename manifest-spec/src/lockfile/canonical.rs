//! Reading `ebpkg.lock` as ebpkg writes it, without a TOML document.
//!
//! A lock of 10,000 packages is 2 MB of TOML. Parsed as a document (every table, key
//! and span built first), it took half of `ebpkg lock` in a project that has one. What
//! ebpkg writes has one layout ([`super::Lockfile::to_toml_string`]); text in exactly
//! that layout is read here into the same [`RawLockfile`], spans included, and checked
//! by the same code. Anything else (a comment, an escape, another order, a lock edited
//! by hand) is `None`, and read as TOML: this reader only decides how fast, never what.

use std::ops::Range;

use toml::Spanned;

use super::{HEADER, RawLockedPackage, RawLockfile};
use crate::types::KeyId;

/// `text` read as [`RawLockfile`] when it is in the layout ebpkg writes.
pub(crate) fn read(text: &str) -> Option<RawLockfile> {
    let mut r = Reader { text, pos: 0 };
    r.literal(HEADER)?;
    r.literal("version = ")?;
    let digits = r.take_while(|b| b.is_ascii_digit());
    // (No leading zero and a u32, as TOML and serde would have it.)
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    let version = Spanned::new(r.pos - digits.len()..r.pos, digits.parse::<u32>().ok()?);
    r.literal("\n")?;
    let mut packages = Vec::new();
    while r.pos < text.len() {
        r.literal("\n[[package]]\nname = ")?;
        let name = r.string()?;
        r.literal("\nversion = ")?;
        let version = r.string()?;
        r.literal("\nsource = ")?;
        let source = r.string()?;
        r.literal("\nchecksum = ")?;
        let checksum = r.string()?;
        r.literal("\n")?;
        let signer = match r.literal("signer = ") {
            Some(()) => {
                let key = KeyId::parse(r.string()?.get_ref())?;
                r.literal("\n")?;
                Some(key)
            }
            None => None,
        };
        let mut dependencies = Vec::new();
        if r.literal("dependencies = [\n").is_some() {
            while r.literal("]\n").is_none() {
                r.literal("    ")?;
                dependencies.push(r.string()?);
                r.literal(",\n")?;
            }
            // (`dependencies = []` is never written: an empty list is left out.)
            if dependencies.is_empty() {
                return None;
            }
        }
        packages.push(RawLockedPackage { name, version, source, checksum, signer, dependencies });
    }
    Some(RawLockfile { version, packages })
}

struct Reader<'t> {
    text: &'t str,
    pos: usize,
}

impl<'t> Reader<'t> {
    fn literal(&mut self, s: &str) -> Option<()> {
        self.text.get(self.pos..)?.starts_with(s).then(|| self.pos += s.len())
    }

    fn take_while(&mut self, keep: impl Fn(u8) -> bool) -> &'t str {
        let rest = &self.text[self.pos..];
        let n = rest.bytes().position(|b| !keep(b)).unwrap_or(rest.len());
        self.pos += n;
        &rest[..n]
    }

    /// A basic string without escapes (printable ASCII but `"` and `\`), spanned as TOML
    /// spans it: from quote to quote.
    fn string(&mut self) -> Option<Spanned<String>> {
        let start = self.pos;
        self.literal("\"")?;
        let value = self.take_while(|b| matches!(b, b' '..=b'~') && b != b'"' && b != b'\\');
        self.literal("\"")?;
        Some(Spanned::new(Range { start, end: self.pos }, value.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lockfile::{LockedDependency, LockedPackage, Lockfile};
    use crate::names::PackageName;
    use crate::types::Sha256Digest;

    fn lock() -> Lockfile {
        let dep = |n: &str, v: &str| LockedDependency {
            name: PackageName::new(n).unwrap(),
            version: semver::Version::parse(v).unwrap(),
        };
        let pkg = |n: &str, v: &str, signer, dependencies| LockedPackage {
            name: PackageName::new(n).unwrap(),
            version: semver::Version::parse(v).unwrap(),
            source: crate::RegistryId::parse_url("file:///srv/registry/").unwrap(),
            checksum: Sha256Digest([7; 32]),
            signer,
            dependencies,
        };
        Lockfile::new(vec![
            pkg("ddos", "1.4.0-rc.1+b7", Some(KeyId([3; 32])), vec![dep("net", "1.0.0"), dep("my-meter", "0.2.0")]),
            pkg("my-meter", "0.2.0", None, vec![]),
            pkg("net", "1.0.0", None, vec![]),
        ])
    }

    #[test]
    fn what_ebpkg_writes_is_read_in_its_layout() {
        let text = lock().to_toml_string();
        let raw = read(&text).expect("ebpkg's own layout");
        assert_eq!(*raw.version.get_ref(), 1);
        assert_eq!(raw.packages.len(), 3);
        let ddos = &raw.packages[0];
        assert_eq!(&text[ddos.name.span()], "\"ddos\"");
        assert_eq!(ddos.signer, Some(KeyId([3; 32])));
        let deps: Vec<&str> = ddos.dependencies.iter().map(|d| d.get_ref().as_str()).collect();
        assert_eq!(deps, ["my-meter 0.2.0", "net 1.0.0"]);
        assert!(read(&Lockfile::default().to_toml_string()).is_some_and(|r| r.packages.is_empty()));
    }

    #[test]
    fn any_other_layout_is_left_to_toml() {
        let text = lock().to_toml_string();
        let other = [
            text.replace('\n', "\r\n"),
            format!("{text}# a comment\n"),
            text.replace("name = \"net\"", "name = \"n\\u0065t\""),
            text.replace("name = \"net\"", "name = 'net'"),
            text.replace("version = 1\n", "version = 01\n"),
            text.replace("    \"net 1.0.0\",\n]", "    \"net 1.0.0\"\n]"),
            text.replacen("\nversion = \"1.0.0\"\nsource", "\nsource", 1),
            format!("{text}\n"),
        ];
        for t in &other {
            assert!(read(t).is_none(), "{t}");
        }
    }
}
