//! A registry's identity: its URL in one canonical spelling, parsed once and interned.
//!
//! The canonical string is what lockfiles record as a package's `source`, so two
//! spellings of the same registry (`./reg`, `/abs/reg`, `file:///abs/reg/`) must give
//! the same string, or a lockfile would change with the way someone typed a flag.
//!
//! As cargo's `SourceId`: the text is parsed where it is read (the configuration, a
//! manifest, the lockfile, an index line, a deployment record) and every stage after
//! that passes the [`RegistryId`] on. One allocation per registry is shared by every
//! handle to it, so a clone is a reference count, equality and hashing are by address,
//! and a lockfile of ten thousand packages from one registry holds its URL once.

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

use url::Url;

/// Why a registry location was refused.
#[derive(Debug, thiserror::Error)]
pub enum RegistryIdError {
    #[error(
        "`{input}` is not a registry location: {reason}. Write a URL such as `https://registry.example.org/` \
         or `file:///srv/ebpkg-registry/`, or the path of a registry directory"
    )]
    Invalid { input: String, reason: String },

    #[error(
        "`{input}` is not a registry URL: {reason}; name a registry by its URL, such as \
         `https://registry.example.org/` or `file:///srv/ebpkg-registry/`"
    )]
    NotAUrl { input: String, reason: String },

    #[error(
        "`{url}` uses the scheme `{scheme}:`, which ebpkg cannot fetch packages from; \
         a registry is reached through `https://`, `http://` or `file://`"
    )]
    UnsupportedScheme { url: String, scheme: String },

    #[error("cannot find the current directory for {}: {cause}", path.display())]
    CurrentDir { path: PathBuf, cause: std::io::Error },
}

type Result<T> = std::result::Result<T, RegistryIdError>;

/// Where a registry lives: a `file://` directory or an `http(s)://` server.
///
/// Always absolute, with a trailing `/`, without credentials, query or fragment.
/// Equal registries are one shared value (see the module's documentation): `==` and
/// `Hash` look at the address, `Ord` at the canonical URL.
#[derive(Clone)]
pub struct RegistryId(Arc<Interned>);

struct Interned {
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

/// The registries alive in this process, by canonical URL. Weak: a registry server
/// parses the registries named by every manifest published to it, and a table that kept
/// each one alive (as cargo's `&'static` interning does) would grow for as long as it runs.
struct Table {
    by_url: HashMap<Box<str>, Weak<Interned>>,
    /// The size at which entries whose registry was dropped are swept out.
    sweep_at: usize,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| Mutex::new(Table { by_url: HashMap::new(), sweep_at: 64 }));

/// The one live [`RegistryId`] of canonical `url`.
fn intern(url: Url) -> RegistryId {
    // (Nothing below leaves the table half-changed, so a poisoned lock is still sound.)
    let mut table = TABLE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(live) = table.by_url.get(url.as_str()).and_then(Weak::upgrade) {
        return RegistryId(live);
    }
    if table.by_url.len() >= table.sweep_at {
        table.by_url.retain(|_, w| w.strong_count() > 0);
        table.sweep_at = (2 * table.by_url.len()).max(64);
    }
    let new = Arc::new(Interned { url });
    table.by_url.insert(new.url.as_str().into(), Arc::downgrade(&new));
    RegistryId(new)
}

impl RegistryId {
    /// Parses what a person writes (a flag, the configuration): a URL
    /// (`file:///srv/reg`, `https://registry.example.org`) or a directory path,
    /// absolute or relative to the current directory, which becomes a `file://` URL.
    /// Paths are normalized lexically (`.` and `..` removed) but symbolic links are not
    /// resolved, and the directory need not exist yet.
    pub fn parse(input: &str) -> Result<RegistryId> {
        let invalid = |reason: &str| RegistryIdError::Invalid { input: input.to_owned(), reason: reason.to_owned() };
        if input.trim().is_empty() {
            return Err(invalid("it is empty"));
        }
        if let Some(rest) = input.strip_prefix("~/") {
            // Shells expand `~`, configuration files do not; expand it the same way.
            let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).ok_or_else(|| invalid("$HOME is not set"))?;
            return RegistryId::from_path(&Path::new(&home).join(rest));
        }
        if input.starts_with('~') {
            return Err(invalid("`~user` paths are not expanded; write the full path"));
        }
        if looks_like_path(input) {
            return RegistryId::from_path(Path::new(input));
        }
        let url = Url::parse(input).map_err(|e| invalid(&e.to_string()))?;
        RegistryId::from_url(url, input)
    }

    /// Parses a URL as files record it (a manifest's or an index line's dependency, a
    /// lockfile's `source`, a deployment record): never a path, whose meaning would
    /// depend on the directory the file is read from.
    pub fn parse_url(input: &str) -> Result<RegistryId> {
        let invalid = |reason: &str| RegistryIdError::NotAUrl { input: input.to_owned(), reason: reason.to_owned() };
        if input.trim().is_empty() {
            return Err(invalid("it is empty"));
        }
        let url = Url::parse(input).map_err(|e| invalid(&e.to_string()))?;
        // (What the URL's reason for refusal advises, a path, is no way out here.)
        RegistryId::from_url(url, input).map_err(|e| match e {
            RegistryIdError::Invalid { input, reason } => RegistryIdError::NotAUrl { input, reason },
            other => other,
        })
    }

    /// The `file://` URL of the directory `path`, absolute or relative to the current
    /// directory.
    pub fn from_path(path: &Path) -> Result<RegistryId> {
        let absolute = if path.is_absolute() {
            path.to_owned()
        } else {
            std::env::current_dir()
                .map_err(|cause| RegistryIdError::CurrentDir { path: path.to_owned(), cause })?
                .join(path)
        };
        let normalized = normalize_lexically(&absolute);
        let url = Url::from_directory_path(&normalized).map_err(|()| RegistryIdError::Invalid {
            input: path.display().to_string(),
            reason: "it cannot be written as a file:// URL".into(),
        })?;
        Ok(intern(url))
    }

    fn from_url(mut url: Url, input: &str) -> Result<RegistryId> {
        let invalid = |reason: &str| RegistryIdError::Invalid { input: input.to_owned(), reason: reason.to_owned() };
        match url.scheme() {
            "file" => {
                if url.host_str().is_some_and(|h| !h.is_empty() && h != "localhost") {
                    return Err(invalid("a file:// URL names a directory on this host; remove the host name"));
                }
                if url.query().is_some() || url.fragment().is_some() {
                    return Err(invalid("a registry URL has no `?query` or `#fragment`"));
                }
                let path = url.to_file_path().map_err(|()| invalid("it does not name a local directory"))?;
                RegistryId::from_path(&path)
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
                Ok(intern(url))
            }
            scheme => Err(RegistryIdError::UnsupportedScheme { url: input.to_owned(), scheme: scheme.to_owned() }),
        }
    }

    /// The canonical string, as lockfiles record it.
    pub fn as_str(&self) -> &str {
        self.0.url.as_str()
    }

    /// The parsed URL.
    pub fn url(&self) -> &Url {
        &self.0.url
    }

    /// How the registry is reached.
    pub fn kind(&self) -> RegistryKind {
        if self.0.url.scheme() == "file" { RegistryKind::File } else { RegistryKind::Http }
    }

    /// Whether the registry is on this host, so reading it needs no network (offline
    /// mode never blocks it).
    pub fn is_local(&self) -> bool {
        self.kind() == RegistryKind::File
    }

    /// The directory of a `file://` registry.
    pub fn file_path(&self) -> Option<PathBuf> {
        match self.kind() {
            RegistryKind::File => self.0.url.to_file_path().ok(),
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

impl PartialEq for RegistryId {
    fn eq(&self, other: &Self) -> bool {
        // One live value per canonical URL (`intern`): the same registry is the same address.
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for RegistryId {}

impl Hash for RegistryId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::ptr::hash(Arc::as_ptr(&self.0), state);
    }
}

impl Ord for RegistryId {
    /// By canonical URL, so that what is sorted by registry (a lockfile) is sorted the
    /// same in every process.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if self == other { std::cmp::Ordering::Equal } else { self.as_str().cmp(other.as_str()) }
    }
}

impl PartialOrd for RegistryId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for RegistryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RegistryId").field(&self.as_str()).finish()
    }
}

impl fmt::Display for RegistryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RegistryId {
    type Err = RegistryIdError;
    /// As [`RegistryId::parse`].
    fn from_str(s: &str) -> Result<Self> {
        RegistryId::parse(s)
    }
}

/// Written as the canonical URL.
impl serde::Serialize for RegistryId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Read as [`RegistryId::parse_url`] reads it: files record registries by URL.
impl<'de> serde::Deserialize<'de> for RegistryId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = RegistryId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a registry URL")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<RegistryId, E> {
                RegistryId::parse_url(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
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

    #[test]
    fn file_urls_and_paths_are_one_registry() {
        let canonical = RegistryId::parse("file:///srv/ebpkg-registry/").unwrap();
        for spelling in [
            "file:///srv/ebpkg-registry",
            "file://localhost/srv/ebpkg-registry",
            "file:///srv/./x/../ebpkg-registry",
            "/srv/ebpkg-registry",
            "/srv/ebpkg-registry/",
            "/srv//ebpkg-registry/.",
        ] {
            let id = RegistryId::parse(spelling).unwrap();
            assert_eq!(id, canonical, "{spelling}");
            assert!(Arc::ptr_eq(&id.0, &canonical.0), "{spelling}: one shared value");
            assert_eq!(id.as_str(), "file:///srv/ebpkg-registry/", "{spelling}");
            assert_eq!(id.kind(), RegistryKind::File);
            assert!(id.is_local());
            assert_eq!(id.file_path().unwrap(), Path::new("/srv/ebpkg-registry"));
        }
        assert_ne!(RegistryId::parse("/srv/other").unwrap(), canonical);
    }

    #[test]
    fn relative_paths_are_made_absolute() {
        let cwd = std::env::current_dir().unwrap();
        let id = RegistryId::parse("some/registry").unwrap();
        assert_eq!(id.file_path().unwrap(), cwd.join("some/registry"));
        assert!(id.as_str().starts_with("file:///") && id.as_str().ends_with("/some/registry/"), "{id}");
        assert_eq!(RegistryId::parse("./some/./registry").unwrap(), id);
    }

    #[test]
    fn paths_with_odd_characters_are_percent_encoded() {
        let id = RegistryId::parse("/srv/my registry#1").unwrap();
        assert_eq!(id.as_str(), "file:///srv/my%20registry%231/");
        assert_eq!(id.file_path().unwrap(), Path::new("/srv/my registry#1"));
        assert_eq!(RegistryId::parse_url(id.as_str()).unwrap(), id);
    }

    #[test]
    fn http_urls_are_canonical() {
        for (spelling, canonical) in [
            ("https://registry.ebpkg.dev", "https://registry.ebpkg.dev/"),
            ("https://Registry.EBPKG.dev/", "https://registry.ebpkg.dev/"),
            ("https://registry.ebpkg.dev:443/", "https://registry.ebpkg.dev/"),
            ("https://example.org/ebpkg", "https://example.org/ebpkg/"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/"),
        ] {
            let id = RegistryId::parse(spelling).unwrap();
            assert_eq!(id.to_string(), canonical, "{spelling}");
            assert_eq!(id.kind(), RegistryKind::Http);
            assert!(!id.is_local());
            assert_eq!(id.file_path(), None);
            assert_eq!(RegistryId::parse_url(spelling).unwrap(), id, "{spelling}");
            assert_eq!(id.as_str().parse::<RegistryId>().unwrap(), id, "canonical form parses to itself");
        }
    }

    #[test]
    fn bad_urls_say_why() {
        let message = |input: &str| RegistryId::parse(input).unwrap_err().to_string();
        let e = RegistryId::parse("git://example.org/reg").unwrap_err();
        assert!(matches!(&e, RegistryIdError::UnsupportedScheme { scheme, .. } if scheme == "git"), "{e}");
        assert!(e.to_string().contains("`https://`, `http://` or `file://`"), "{e}");
        assert!(message("ftp://example.org").contains("scheme `ftp:`"));
        assert!(message("https://user:secret@example.org").contains("credentials"));
        assert!(message("https://example.org/?x=1").contains("query"));
        assert!(message("https://example.org/#x").contains("fragment"));
        assert!(message("file://otherhost/srv").contains("remove the host name"));
        assert!(message("").contains("it is empty"));
        assert!(message("https://").contains("not a registry location"));
    }

    /// A file is read from wherever the command runs: a path in it would name
    /// another registry in each directory.
    #[test]
    fn files_name_registries_by_url_only() {
        for path in ["/srv/reg", "./reg", "reg", "~/reg"] {
            let e = RegistryId::parse_url(path).unwrap_err().to_string();
            assert!(e.contains(&format!("`{path}` is not a registry URL")), "{e}");
        }
        assert_eq!(RegistryId::parse_url("file:///srv/reg").unwrap().as_str(), "file:///srv/reg/");
    }

    #[test]
    fn a_copy_is_the_same_value_and_sorts_by_url() {
        let a = RegistryId::parse("https://b.example/").unwrap();
        let copy = a.clone();
        assert!(Arc::ptr_eq(&a.0, &copy.0), "a clone shares the value");
        let hash = |id: &RegistryId| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            id.hash(&mut h);
            h.finish()
        };
        let again = RegistryId::parse("HTTPS://B.example").unwrap();
        assert_eq!((hash(&a), hash(&again)), (hash(&copy), hash(&copy)));
        let mut ids =
            [RegistryId::parse("https://c.example").unwrap(), a.clone(), RegistryId::parse("/srv/a").unwrap()];
        ids.sort();
        let sorted: Vec<&str> = ids.iter().map(RegistryId::as_str).collect();
        assert_eq!(sorted, ["file:///srv/a/", "https://b.example/", "https://c.example/"]);
    }

    /// Ids no longer held are swept out of the table, and the URL parses to a new
    /// value the next time: a long-running server does not keep every registry it
    /// was ever shown.
    #[test]
    fn dropped_ids_leave_the_table() {
        let url = "https://dropped.example/only-in-this-test/";
        let count = || TABLE.lock().unwrap().by_url.get(url).map_or(0, Weak::strong_count);
        let id = RegistryId::parse_url(url).unwrap();
        assert_eq!(count(), 1);
        drop(id);
        assert_eq!(count(), 0);
        for k in 0..200 {
            drop(RegistryId::parse_url(&format!("https://sweep-{k}.example/")).unwrap());
        }
        let table = TABLE.lock().unwrap();
        assert!(!table.by_url.contains_key(url), "swept");
        assert!(table.by_url.len() < 200, "{} entries", table.by_url.len());
        drop(table);
        assert_eq!(RegistryId::parse_url(url).unwrap().as_str(), url);
    }

    #[test]
    fn serialized_as_the_canonical_text_and_read_as_a_url() {
        let id = RegistryId::parse("https://registry.example.org").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), r#""https://registry.example.org/""#);
        let read: RegistryId = serde_json::from_str(r#""https://registry.example.org/""#).unwrap();
        assert_eq!(read, id);
        assert_eq!(serde_json::to_string(&read).unwrap(), r#""https://registry.example.org/""#);
        let e = serde_json::from_str::<RegistryId>(r#""./reg""#).unwrap_err().to_string();
        assert!(e.contains("`./reg` is not a registry URL") && e.contains("line 1 column 7"), "{e}");
        assert!(serde_json::from_str::<RegistryId>(r#""gopher://x/""#).is_err());
    }
}
