//! Registry locations in one canonical spelling.
//!
//! The canonical string is what lockfiles record as a package's `source`, so two
//! spellings of the same registry (`./reg`, `/abs/reg`, `file:///abs/reg/`) must give
//! the same string, or a lockfile would change with the way someone typed a flag.

use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;

use url::Url;

/// Why a registry location was refused. Its own type, below the crate's
/// `Error` (which wraps it), since errors name registries by their `RegistryUrl`.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    #[error(
        "`{input}` is not a registry location: {reason}. Write a URL such as `https://registry.example.org/` \
         or `file:///srv/ebpkg-registry/`, or the path of a registry directory"
    )]
    Invalid { input: String, reason: String },

    #[error(
        "`{url}` uses the scheme `{scheme}:`, which ebpkg cannot fetch packages from; \
         a registry is reached through `https://`, `http://` or `file://`"
    )]
    UnsupportedScheme { url: String, scheme: String },

    #[error("cannot find the current directory for {}: {cause}", path.display())]
    CurrentDir { path: PathBuf, cause: std::io::Error },
}

type Result<T> = std::result::Result<T, UrlError>;

/// Where a registry lives: a `file://` directory or an `http(s)://` server.
///
/// Always absolute, with a trailing `/`, without credentials, query or fragment.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RegistryUrl {
    url: Url,
}

/// The kinds of registry, by how they are reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryKind {
    /// A directory on this host (or a mounted share).
    File,
    /// A registry server.
    Http,
}

impl RegistryUrl {
    /// Parses a URL (`file:///srv/reg`, `https://registry.example.org`) or a directory
    /// path, absolute or relative to the current directory, which becomes a `file://`
    /// URL. Paths are normalized lexically (`.` and `..` removed) but symbolic links
    /// are not resolved, and the directory need not exist yet.
    pub fn parse(input: &str) -> Result<RegistryUrl> {
        let invalid = |reason: &str| UrlError::Invalid { input: input.to_owned(), reason: reason.to_owned() };
        if input.trim().is_empty() {
            return Err(invalid("it is empty"));
        }
        if let Some(rest) = input.strip_prefix("~/") {
            // Shells expand `~`, configuration files do not; expand it the same way.
            let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).ok_or_else(|| invalid("$HOME is not set"))?;
            return RegistryUrl::from_path(&Path::new(&home).join(rest));
        }
        if input.starts_with('~') {
            return Err(invalid("`~user` paths are not expanded; write the full path"));
        }
        if looks_like_path(input) {
            return RegistryUrl::from_path(Path::new(input));
        }
        let url = Url::parse(input).map_err(|e| invalid(&e.to_string()))?;
        RegistryUrl::from_url(url, input)
    }

    /// The `file://` URL of the directory `path`, absolute or relative to the current
    /// directory.
    pub fn from_path(path: &Path) -> Result<RegistryUrl> {
        let absolute = if path.is_absolute() {
            path.to_owned()
        } else {
            std::env::current_dir().map_err(|cause| UrlError::CurrentDir { path: path.to_owned(), cause })?.join(path)
        };
        let normalized = normalize_lexically(&absolute);
        let url = Url::from_directory_path(&normalized).map_err(|()| UrlError::Invalid {
            input: path.display().to_string(),
            reason: "it cannot be written as a file:// URL".into(),
        })?;
        Ok(RegistryUrl { url })
    }

    fn from_url(mut url: Url, input: &str) -> Result<RegistryUrl> {
        let invalid = |reason: &str| UrlError::Invalid { input: input.to_owned(), reason: reason.to_owned() };
        match url.scheme() {
            "file" => {
                if url.host_str().is_some_and(|h| !h.is_empty() && h != "localhost") {
                    return Err(invalid("a file:// URL names a directory on this host; remove the host name"));
                }
                if url.query().is_some() || url.fragment().is_some() {
                    return Err(invalid("a registry URL has no `?query` or `#fragment`"));
                }
                let path = url.to_file_path().map_err(|()| invalid("it does not name a local directory"))?;
                RegistryUrl::from_path(&path)
            }
            "https" | "http" => {
                if url.host_str().is_none_or(str::is_empty) {
                    return Err(invalid("it has no host name"));
                }
                if !url.username().is_empty() || url.password().is_some() {
                    return Err(invalid(
                        "it contains credentials, which would be written into ebpkg.lock; \
                         give the registry token in the configuration instead",
                    ));
                }
                if url.query().is_some() || url.fragment().is_some() {
                    return Err(invalid("a registry URL has no `?query` or `#fragment`"));
                }
                if !url.path().ends_with('/') {
                    let path = format!("{}/", url.path());
                    url.set_path(&path);
                }
                Ok(RegistryUrl { url })
            }
            scheme => Err(UrlError::UnsupportedScheme { url: input.to_owned(), scheme: scheme.to_owned() }),
        }
    }

    /// The canonical string, as lockfiles record it.
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// The parsed URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// How the registry is reached.
    pub fn kind(&self) -> RegistryKind {
        if self.url.scheme() == "file" { RegistryKind::File } else { RegistryKind::Http }
    }

    /// Whether the registry is on this host, so reading it needs no network (offline
    /// mode never blocks it).
    pub fn is_local(&self) -> bool {
        self.kind() == RegistryKind::File
    }

    /// The directory of a `file://` registry.
    pub fn file_path(&self) -> Option<PathBuf> {
        match self.kind() {
            RegistryKind::File => self.url.to_file_path().ok(),
            RegistryKind::Http => None,
        }
    }
}

/// Paths are told from URLs by their first characters: `/x`, `./x`, `../x`, `~/x`
/// are paths, and so is anything without a `scheme:`.
fn looks_like_path(input: &str) -> bool {
    if input.starts_with(['/', '.', '~']) {
        return true;
    }
    match input.split_once(':') {
        None => true,
        // A scheme is letters, digits, `+`, `-`, `.`, starting with a letter; a colon
        // after anything else (`dir/a:b`) belongs to a path.
        Some((scheme, _)) => {
            !(scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        }
    }
}

/// Removes `.` components and resolves `..` against the preceding component, without
/// touching the file system (the directory may not exist yet).
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

impl fmt::Display for RegistryUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RegistryUrl {
    type Err = UrlError;
    fn from_str(s: &str) -> Result<Self> {
        RegistryUrl::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_urls_are_told_apart() {
        for path in ["/srv/reg", "./reg", "../reg", "reg", "dir/a:b", "~/reg"] {
            assert!(looks_like_path(path), "{path}");
        }
        for url in ["file:///srv", "https://x.org", "git+ssh://x", "ftp://x"] {
            assert!(!looks_like_path(url), "{url}");
        }
    }

    #[test]
    fn lexical_normalization() {
        assert_eq!(normalize_lexically(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(normalize_lexically(Path::new("/../a")), Path::new("/a"));
    }
}
