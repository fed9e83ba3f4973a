//! Path rules shared by packing and unpacking, so that every path `pack` writes is one
//! `unpack` accepts.

use ebpkg_spec::PackageName;
use semver::Version;

/// Longest path accepted in an archive, prefix included (Linux's `PATH_MAX`).
pub(crate) const MAX_PATH_BYTES: usize = 4096;
/// Longest name of one file or directory (Linux's `NAME_MAX`).
pub(crate) const MAX_COMPONENT_BYTES: usize = 255;

/// The directory every entry of the archive of `name` `version` lives under:
/// `<name>-<version>`, without a trailing slash.
pub fn archive_prefix(name: &PackageName, version: &Version) -> String {
    format!("{}-{}", name.as_str(), version)
}

/// Why one file or directory name cannot be in an archive, if it cannot.
pub(crate) fn component_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("has an empty component (`//`)")
    } else if name == "." || name == ".." {
        Some("has a `.` or `..` component")
    } else if name.contains('\\') {
        Some("contains a backslash")
    } else if name.chars().any(char::is_control) {
        Some("contains a control character")
    } else if name.len() > MAX_COMPONENT_BYTES {
        Some("has a component longer than 255 bytes")
    } else {
        None
    }
}

/// An archive path, checked: `None` for the prefix directory itself, otherwise the
/// path below it (`src/a.c`).
pub(crate) fn parse_entry_path(raw: &[u8], prefix: &str, is_dir: bool) -> Result<Option<String>, PathRefusal> {
    let text = std::str::from_utf8(raw).map_err(|_| PathRefusal::Unsafe("is not valid UTF-8"))?;
    if text.len() > MAX_PATH_BYTES {
        return Err(PathRefusal::Unsafe("is longer than 4096 bytes"));
    }
    if text.starts_with('/') {
        return Err(PathRefusal::Unsafe("is absolute"));
    }
    // Directories conventionally end in `/`; a file name never does.
    let text = match text.strip_suffix('/') {
        Some(t) if is_dir => t,
        Some(_) => return Err(PathRefusal::Unsafe("ends with `/` but is not a directory")),
        None => text,
    };
    let mut parts = text.split('/');
    let first = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    // `..` anywhere is refused before the prefix is compared, so that the error says
    // what is dangerous about `pkg-1.0.0/../../x` rather than only "wrong directory".
    for part in std::iter::once(first).chain(rest.iter().copied()) {
        if let Some(problem) = component_problem(part) {
            return Err(PathRefusal::Unsafe(problem));
        }
    }
    if first != prefix {
        return Err(PathRefusal::OutsidePrefix);
    }
    if rest.is_empty() {
        return if is_dir { Ok(None) } else { Err(PathRefusal::Unsafe("is a file in place of the package directory")) };
    }
    Ok(Some(rest.join("/")))
}

/// Why [`parse_entry_path`] refused a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathRefusal {
    Unsafe(&'static str),
    OutsidePrefix,
}

/// A path from an archive, printable whatever bytes it holds.
pub(crate) fn display_bytes(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).escape_debug().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_paths_under_the_prefix() {
        assert_eq!(parse_entry_path(b"p-1.0.0/src/a.c", "p-1.0.0", false), Ok(Some("src/a.c".to_owned())));
        assert_eq!(parse_entry_path(b"p-1.0.0/src/", "p-1.0.0", true), Ok(Some("src".to_owned())));
        assert_eq!(parse_entry_path(b"p-1.0.0/", "p-1.0.0", true), Ok(None));
        assert_eq!(parse_entry_path(b"p-1.0.0", "p-1.0.0", true), Ok(None));
    }

    #[test]
    fn refuses_escapes_and_odd_names() {
        let unsafe_ = |raw: &[u8], dir| matches!(parse_entry_path(raw, "p-1.0.0", dir), Err(PathRefusal::Unsafe(_)));
        assert!(unsafe_(b"/etc/passwd", false));
        assert!(unsafe_(b"../x", false));
        assert!(unsafe_(b"p-1.0.0/../../x", false));
        assert!(unsafe_(b"p-1.0.0/./x", false));
        assert!(unsafe_(b"p-1.0.0//x", false));
        assert!(unsafe_(b"p-1.0.0/a\\b", false));
        assert!(unsafe_(b"p-1.0.0/a\0b", false));
        assert!(unsafe_(b"p-1.0.0/a\nb", false));
        assert!(unsafe_(b"p-1.0.0/\xff", false));
        assert!(unsafe_(b"p-1.0.0/a/", false));
        assert!(unsafe_(b"p-1.0.0", false));
        assert!(unsafe_(b"", false));
        assert_eq!(parse_entry_path(b"q-1.0.0/x", "p-1.0.0", false), Err(PathRefusal::OutsidePrefix));
        assert_eq!(parse_entry_path(b"x", "p-1.0.0", false), Err(PathRefusal::OutsidePrefix));
    }
}
