//! HTTP index files on disk with their validators, one directory per registry
//! (`CacheLayout::http_index`). Each entry is one file, written atomically: a
//! first line of JSON (`{"etag":…,"last-modified":…}`), then the body exactly as
//! the server sent it, so body and validators never disagree.

use std::path::{Path, PathBuf};

use ebpkg_spec::PackageName;
use ebpkg_spec::cache_layout::CacheLayout;

use super::client::Validators;
use crate::RegistryId;

pub struct IndexCache {
    layout: CacheLayout,
    registry: RegistryId,
}

pub struct Cached {
    pub validators: Validators,
    pub body: Vec<u8>,
}

/// As large as the index file it holds may be, plus its first line.
const MAX_ENTRY_BYTES: u64 = crate::file_registry::MAX_INDEX_FILE_BYTES + MAX_HEADER_BYTES;
/// Largest `config.json` read back.
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Longest first line (validators are short; anything longer is not ours).
const MAX_HEADER_BYTES: u64 = 4096;

impl IndexCache {
    pub fn new(cache_dir: &Path, registry: &RegistryId) -> IndexCache {
        IndexCache { layout: CacheLayout::new(cache_dir), registry: registry.clone() }
    }

    /// Where `name`'s index file is kept: under its normalized name, since the
    /// server answers `my_pkg` and `my-pkg` with the same file.
    pub fn path(&self, name: &PackageName) -> PathBuf {
        self.layout.http_index(&self.registry, &ebpkg_spec::index_path(&name.normalized()))
    }

    /// The cached copy; anything unreadable counts as absent (it is fetched again).
    pub fn read(&self, name: &PackageName) -> Option<Cached> {
        let path = self.path(name);
        let bytes = match ebpkg_fs::read(&path, MAX_ENTRY_BYTES) {
            Ok(bytes) => bytes,
            Err(e) => {
                if !e.is_not_found() {
                    tracing::warn!("ignoring the cached index file {}: {e}", path.display());
                }
                return None;
            }
        };
        let entry = decode(&bytes);
        if entry.is_none() {
            tracing::warn!("ignoring the cached index file {}: it is not one ebpkg wrote", path.display());
        }
        entry
    }

    /// Stores a copy; a cache that cannot be written only costs a later refetch.
    pub fn write(&self, name: &PackageName, validators: &Validators, body: &[u8]) {
        let path = self.path(name);
        let written = path
            .parent()
            .map_or(Ok(()), ebpkg_fs::private::create_private_dir)
            .and_then(|()| ebpkg_fs::write_replacing(&path, &encode(validators, body), ebpkg_fs::private::FILE_MODE));
        if let Err(e) = written {
            tracing::warn!("cannot cache the index file {}: {e}", path.display());
        }
    }

    /// The registry's `config.json` as last fetched (no validators: with TUF, its
    /// signed hash says whether it is current).
    pub fn read_config(&self) -> Option<Vec<u8>> {
        ebpkg_fs::read(&self.config_path(), MAX_CONFIG_BYTES).ok()
    }

    /// Keeps `config.json`; a cache that cannot be written only costs a later fetch.
    pub fn write_config(&self, bytes: &[u8]) {
        let path = self.config_path();
        let written = path
            .parent()
            .map_or(Ok(()), ebpkg_fs::private::create_private_dir)
            .and_then(|()| ebpkg_fs::write_replacing(&path, bytes, ebpkg_fs::private::FILE_MODE));
        if let Err(e) = written {
            tracing::warn!("cannot cache {}: {e}", path.display());
        }
    }

    /// Beside the index files, under a name no index file has (they are one to
    /// four characters deep in directories).
    fn config_path(&self) -> PathBuf {
        self.layout.http_index(&self.registry, "config.json")
    }

    /// Forgets a package the server no longer has.
    pub fn remove(&self, name: &PackageName) {
        let path = self.path(name);
        if let Err(e) = std::fs::remove_file(&path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!("cannot remove the cached index file {}: {e}", path.display());
        }
    }

    /// Every cached index file of this registry (offline, `names` has no server to ask).
    pub fn bodies(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let root = self.layout.http_index(&self.registry, "");
        walk(&root, 0, &mut out);
        out
    }
}

fn walk(dir: &Path, depth: u32, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    // Index paths are at most three levels deep (`me/te/meter`).
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() && depth < 2 => walk(&path, depth + 1, out),
            Ok(t) if t.is_file() && !entry.file_name().to_string_lossy().starts_with('.') => {
                if let Some(cached) = ebpkg_fs::read(&path, MAX_ENTRY_BYTES).ok().as_deref().and_then(decode) {
                    out.push((path, cached.body));
                }
            }
            _ => {}
        }
    }
}

/// An entry's first line: the validators, and the body's CRC-32 (entries are
/// written without waiting for the disk, so one a power loss cut short must read
/// as absent; entries written before it was kept have none).
#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    #[serde(flatten)]
    validators: Validators,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    crc32: Option<u32>,
}

fn encode(validators: &Validators, body: &[u8]) -> Vec<u8> {
    // Header values are visible ASCII, so the line has no newline in it.
    let header = Header { validators: validators.clone(), crc32: Some(crc32fast::hash(body)) };
    let mut bytes = serde_json::to_vec(&header).unwrap_or_else(|_| b"{}".to_vec());
    bytes.push(b'\n');
    bytes.extend_from_slice(body);
    bytes
}

fn decode(bytes: &[u8]) -> Option<Cached> {
    let newline = bytes.iter().take(MAX_HEADER_BYTES as usize).position(|b| *b == b'\n')?;
    let header: Header = serde_json::from_slice(&bytes[..newline]).ok()?;
    let body = &bytes[newline + 1..];
    if header.crc32.is_some_and(|crc| crc != crc32fast::hash(body)) {
        return None;
    }
    Some(Cached { validators: header.validators, body: body.to_vec() })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn name(n: &str) -> PackageName {
        PackageName::new(n).unwrap()
    }

    #[test]
    fn entries_round_trip_through_real_files() {
        let dir = tempfile::tempdir().unwrap();
        let url = RegistryId::parse("https://registry.example/").unwrap();
        let cache = IndexCache::new(dir.path(), &url);
        assert!(cache.read(&name("meter")).is_none());
        let validators =
            Validators { etag: Some("\"abc\"".into()), last_modified: Some("Wed, 21 Oct 2015 07:28:00 GMT".into()) };
        cache.write(&name("meter"), &validators, b"{\"line\":1}\n");
        let got = cache.read(&name("meter")).unwrap();
        assert_eq!(got.validators, validators);
        assert_eq!(got.body, b"{\"line\":1}\n");
        assert!(cache.path(&name("meter")).ends_with("me/te/meter"));
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(cache.path(&name("meter"))).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600);
        cache.write(&name("meter"), &Validators::default(), b"");
        let bare = cache.read(&name("meter")).unwrap();
        assert_eq!((bare.validators, bare.body), (Validators::default(), Vec::new()));
        assert_eq!(cache.bodies().len(), 1);
    }

    #[test]
    fn spellings_share_an_entry_and_registries_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = IndexCache::new(dir.path(), &RegistryId::parse("https://registry.example/").unwrap());
        cache.write(&name("my-pkg"), &Validators::default(), b"x");
        assert_eq!(cache.read(&name("my_pkg")).unwrap().body, b"x");
        let other = IndexCache::new(dir.path(), &RegistryId::parse("https://other.example/").unwrap());
        assert!(other.read(&name("my_pkg")).is_none(), "one directory per registry");
        cache.remove(&name("my-pkg"));
        assert!(cache.read(&name("my_pkg")).is_none());
        cache.remove(&name("my-pkg")); // already gone: nothing to say
    }

    #[test]
    fn damage_reads_as_absent() {
        let dir = tempfile::tempdir().unwrap();
        let cache = IndexCache::new(dir.path(), &RegistryId::parse("https://registry.example/").unwrap());
        cache.write(&name("net"), &Validators::default(), b"body");
        let path = cache.path(&name("net"));
        // The format before validators were JSON: an ETag on the first line.
        std::fs::write(&path, b"\"abc\"\n{\"line\":1}\n").unwrap();
        assert!(cache.read(&name("net")).is_none());
        std::fs::write(&path, b"no newline at all").unwrap();
        assert!(cache.read(&name("net")).is_none());
        // Cut short (a power loss before the disk had it all): its CRC-32 says so.
        cache.write(&name("net"), &Validators::default(), b"{\"line\":1}\n{\"line\":2}\n");
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, &whole[..whole.len() - 5]).unwrap();
        assert!(cache.read(&name("net")).is_none());
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert!(cache.read(&name("net")).is_none(), "a device is not read");
        assert!(cache.bodies().is_empty());
    }
}
