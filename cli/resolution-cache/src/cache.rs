//! One command's caches, one per directory registry it reads: looked up as the
//! resolver asks for packages, written back at the end with what was parsed afresh.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ebpkg_sources::{IndexFingerprint, RegistryId};
use ebpkg_spec::PackageName;

use crate::format::{Directory, Encoded, ListContext, RecordBytes, Stored, decode, encode, read_directory, write_file};
use crate::loaded::LoadedIndex;
use crate::lock;

/// Larger files are neither read nor written: a registry that big is read
/// directly (records kept from earlier commands are dropped first).
const MAX_FILE_BYTES: u64 = 1 << 30;

/// The file is rewritten once more than 1/this of its packages were parsed afresh.
const REWRITE_AT_PERCENT: usize = 100;

/// The caches of every directory registry one command reads.
pub struct ResolutionCaches {
    layout: ebpkg_spec::cache_layout::CacheLayout,
    /// The command's default registry, which requirements name as `None`.
    default: RegistryId,
    /// The default registry's, looked up without a lock: a resolution asks for it for
    /// every package it reads, from every thread reading.
    of_default: std::sync::OnceLock<RegistryCache>,
    /// The others'.
    by_registry: Mutex<HashMap<RegistryId, Arc<RegistryCache>>>,
}

/// One registry's cache, as [`ResolutionCaches::registry`] hands it out.
pub enum CacheRef<'a> {
    Default(&'a RegistryCache),
    Other(Arc<RegistryCache>),
}

impl std::ops::Deref for CacheRef<'_> {
    type Target = RegistryCache;
    fn deref(&self) -> &RegistryCache {
        match self {
            CacheRef::Default(cache) => cache,
            CacheRef::Other(cache) => cache,
        }
    }
}

impl ResolutionCaches {
    pub fn new(cache_dir: &Path, default: RegistryId) -> ResolutionCaches {
        ResolutionCaches {
            layout: ebpkg_spec::cache_layout::CacheLayout::new(cache_dir),
            default,
            of_default: std::sync::OnceLock::new(),
            by_registry: Mutex::default(),
        }
    }

    /// The cache of the registry at `url`, opened on first use.
    pub fn registry(&self, url: &RegistryId) -> CacheRef<'_> {
        let open = || RegistryCache::open(self.layout.resolution_cache(url), url.clone(), self.default.clone());
        if *url == self.default {
            return CacheRef::Default(self.of_default.get_or_init(open));
        }
        let mut by_registry = lock(&self.by_registry);
        CacheRef::Other(Arc::clone(by_registry.entry(url.clone()).or_insert_with(|| Arc::new(open()))))
    }

    /// Every registry's cache opened so far.
    fn opened(&self) -> Vec<CacheRef<'_>> {
        let others = lock(&self.by_registry).values().map(|c| CacheRef::Other(Arc::clone(c))).collect::<Vec<_>>();
        self.of_default.get().map(CacheRef::Default).into_iter().chain(others).collect()
    }

    /// The packages whose records turned out damaged (a dependency list that does
    /// not decode), by registry: to be read from their index files again. Each
    /// is dropped from the cache file when it is next written, which is then at once.
    pub fn damaged(&self) -> Vec<(RegistryId, Arc<str>)> {
        let opened = self.opened();
        let each = opened.iter().flat_map(|c| lock(&c.context.damaged).clone().into_iter().map(|n| (c.url.clone(), n)));
        each.collect()
    }

    /// Writes the cache of each registry whose index files were parsed afresh.
    pub fn save(&self) {
        for cache in self.opened() {
            cache.save();
        }
    }
}

/// One registry's cache: what was read of its file, and what this command parsed
/// afresh (to be written back by [`ResolutionCaches::save`]).
pub struct RegistryCache {
    path: PathBuf,
    url: RegistryId,
    default: RegistryId,
    /// Shared by every record decoded (see [`ListContext`]).
    context: Arc<ListContext>,
    file: Option<CacheFile>,
    fresh: Mutex<Vec<Fresh>>,
    /// The records this command used (their fingerprints are in the file's directory).
    used: Mutex<Vec<(Arc<str>, Arc<LoadedIndex>)>>,
}

struct Fresh {
    /// Shared with the directory's key: a warm resolution uses thousands of records.
    name: Arc<str>,
    fingerprint: IndexFingerprint,
    index: Arc<LoadedIndex>,
}

/// A cache file, mapped, with its directory.
struct CacheFile {
    stored: Arc<Stored>,
    records: Directory,
}

impl RegistryCache {
    fn open(path: PathBuf, url: RegistryId, default: RegistryId) -> RegistryCache {
        let file = match CacheFile::open(&path) {
            Ok(file) => file,
            Err(why) => {
                tracing::debug!("resolution cache {}: not used ({why})", path.display());
                None
            }
        };
        let context = Arc::new(ListContext::new(&url, &default));
        // Room for every record at once (up to 65,536: the count comes from the file): a warm
        // resolution uses thousands, one per package read, and a growing list would be copied
        // under its lock.
        let used = Mutex::new(Vec::with_capacity(file.as_ref().map_or(0, |f| f.records.len().min(1 << 16))));
        RegistryCache { path, url, default, context, file, fresh: Mutex::default(), used }
    }

    /// How many records its file holds.
    pub fn records(&self) -> usize {
        self.file.as_ref().map_or(0, |f| f.records.len())
    }

    /// `name`'s index as cached, if its file's fingerprint is still `fingerprint`.
    pub fn get(&self, name: &PackageName, fingerprint: &IndexFingerprint) -> Option<Arc<LoadedIndex>> {
        let file = self.file.as_ref()?;
        let key = name.normalized_key();
        let record = file.records.get(file.stored.bytes(), &key)?;
        if record.fingerprint != *fingerprint {
            return None;
        }
        let key = name.normalized_shared();
        let Some(decoded) = decode(&file.stored, &key, &record, &self.context).map(Arc::new) else {
            tracing::debug!("resolution cache {}: the record of `{name}` is damaged", self.path.display());
            return None;
        };
        // Kept to see, when saving, whether the command learned pins the record lacks.
        lock(&self.used).push((key, Arc::clone(&decoded)));
        Some(decoded)
    }

    /// Keeps `index`, parsed from a file with `fingerprint`, for the next command.
    pub fn remember(&self, name: &PackageName, fingerprint: IndexFingerprint, index: Arc<LoadedIndex>) {
        lock(&self.fresh).push(Fresh { name: name.normalized().into(), fingerprint, index });
    }

    fn save(&self) {
        let mut fresh = std::mem::take(&mut *lock(&self.fresh));
        // Records this command learned pins for count as fresh: the versions a
        // project chooses change seldom, and the first lock choosing them learns them.
        let used = std::mem::take(&mut *lock(&self.used));
        let learned = used.into_iter().filter(|(_, index)| index.learned_pins());
        fresh.extend(learned.filter_map(|(name, index)| {
            let file = self.file.as_ref()?;
            let fingerprint = file.records.get(file.stored.bytes(), &name)?.fingerprint;
            Some(Fresh { name, fingerprint, index })
        }));
        let kept = self.file.as_ref().map_or(0, |f| f.records.len());
        let damaged: HashSet<Arc<str>> = lock(&self.context.damaged).iter().cloned().collect();
        // The file is rewritten whole (10,000 packages: ~50 MB). For a few new or
        // changed index files — a publish — that costs more than parsing them on
        // each command, until they are 1% of the registry. A damaged record goes at once.
        if damaged.is_empty() && (fresh.is_empty() || fresh.len() * REWRITE_AT_PERCENT < kept) {
            return;
        }
        let encoded: Vec<(Arc<str>, IndexFingerprint, Encoded)> = fresh
            .into_iter()
            .filter_map(|f| Some((f.name, f.fingerprint, encode(&f.index, &self.url, &self.default)?)))
            .collect();
        // In the order this command read them, the rest after: the next resolution of the
        // same project reads the records' first parts nearly in file order.
        let mut records: Vec<RecordBytes<'_>> = encoded
            .iter()
            .map(|(name, fingerprint, e)| RecordBytes { name, fingerprint: *fingerprint, hot: &e.hot, cold: &e.cold })
            .collect();
        let mut size: u64 = records.iter().map(|r| (r.hot.len() + r.cold.len()) as u64).sum();
        // What earlier commands kept, unless parsed afresh now, while it fits.
        if let Some(file) = &self.file {
            let mut seen: HashSet<&str> = records.iter().map(|r| r.name).collect();
            let map = file.stored.bytes();
            for (name, record) in file.records.iter(map) {
                let (Some(hot), Some(cold)) = (map.get(record.hot.clone()), map.get(record.cold.clone())) else {
                    continue;
                };
                let len = (hot.len() + cold.len()) as u64;
                if !damaged.contains(name) && seen.insert(name) && size + len <= MAX_FILE_BYTES {
                    size += len;
                    records.push(RecordBytes { name, fingerprint: record.fingerprint, hot, cold });
                }
            }
        }
        let bytes = write_file(&records);
        if bytes.len() as u64 > MAX_FILE_BYTES {
            tracing::debug!("resolution cache {}: {} bytes, too large to keep", self.path.display(), bytes.len());
            return;
        }
        let written = self
            .path
            .parent()
            .map_or(Ok(()), |dir| ebpkg_fs::create_dirs(dir, 0o700))
            .and_then(|()| ebpkg_fs::write_atomic(&self.path, &bytes, 0o600));
        match written {
            Ok(()) => {
                tracing::debug!("resolution cache {}: {} packages written", self.path.display(), records.len());
                // (A command killed while writing one left its whole temporary file.)
                let dir = self.path.parent().map(ebpkg_fs::temp::remove_stale_files).unwrap_or_default();
                for removed in dir {
                    tracing::debug!("removed {}, left by a command that was killed", removed.display());
                }
            }
            // A cache that cannot be written only costs the next command the reading.
            Err(e) => tracing::warn!("could not write the resolution cache {}: {e}", self.path.display()),
        }
    }
}

impl CacheFile {
    /// `Ok(None)`: there is no cache yet.
    fn open(path: &Path) -> Result<Option<CacheFile>, String> {
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let meta = file.metadata().map_err(|e| e.to_string())?;
        if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
            return Err(format!("not a regular file of at most {MAX_FILE_BYTES} bytes"));
        }
        // SAFETY: the file is private to its user and ebpkg only ever replaces it
        // by a rename, never writes it in place; every byte read from the mapping
        // is checked as untrusted input (see the module comment).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
        let records = read_directory(&map).ok_or("not a resolution cache of this ebpkg, or damaged")?;
        Ok(Some(CacheFile { stored: Arc::new(Stored::Mapped(map)), records }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{MAGIC, STAMP};
    use crate::loaded::{Body, Line};
    use ebpkg_resolver::{Candidate, DepLists, QualifiedName, Requirement};
    use semver::{Version, VersionReq};

    fn stored_pins(index: &LoadedIndex) -> Vec<(u32, ebpkg_spec::index::EntryPin)> {
        index.stored_pins().collect()
    }

    /// Makes the checksum of `name`'s first part in cache file `bytes` hold again.
    fn reseal(bytes: &mut [u8], name: &str) {
        let key = [&(name.len() as u32).to_le_bytes()[..], name.as_bytes()].concat();
        let entry = bytes.windows(key.len()).position(|w| w == key).unwrap() + key.len() + IndexFingerprint::BYTES;
        let number = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let (start, len) = (number(entry), number(entry + 4));
        let crc = crc32fast::hash(&bytes[start..start + len - 4]);
        bytes[start + len - 4..start + len].copy_from_slice(&crc.to_le_bytes());
    }

    fn url(s: &str) -> RegistryId {
        RegistryId::parse(s).unwrap()
    }

    fn name(s: &str) -> PackageName {
        PackageName::new(s).unwrap()
    }

    fn fingerprint(n: u64) -> IndexFingerprint {
        IndexFingerprint::File { dev: 1, ino: n, size: 10 * n, mtime_ns: 7, ctime_ns: -3 }
    }

    fn req(pkg: &str, registry: Option<&str>, text: &str) -> Requirement {
        Requirement::parse(QualifiedName::in_registry(name(pkg), registry.map(url)), text).unwrap()
    }

    /// An index of `own` (not the default registry `default`) with three lines: two
    /// versions sharing one dependency list (one dependency in `own`, one in the
    /// default registry, one elsewhere) and a yanked pre-release with none.
    fn index() -> LoadedIndex {
        let text = "{\"vers\":\"1.0.0\"}\n{\"vers\":\"1.1.0+b7\"}\n{\"vers\":\"2.0.0-rc.1\"}\n";
        let shared: Box<[Requirement]> = Box::from(vec![
            req("same_reg", Some("file:///own/"), "^1.2"),
            req("in-default", None, ">=1, <3"),
            req("elsewhere", Some("file:///other/"), "=0.1.0-pre"),
        ]);
        let v = |s: &str| Version::parse(s).unwrap();
        let candidates = vec![
            Candidate { version: v("1.0.0"), yanked: false, deps: 0 },
            Candidate { version: v("1.1.0+b7"), yanked: false, deps: 0 },
            Candidate { version: v("2.0.0-rc.1"), yanked: true, deps: 1 },
        ];
        let lines = vec![
            Line { bytes: 0..16, line_no: 1 },
            Line { bytes: 17..36, line_no: 2 },
            Line { bytes: 37..59, line_no: 3 },
        ];
        let index = LoadedIndex::parsed(
            "/own/index/3/p/pkg".into(),
            text.as_bytes().to_vec(),
            lines,
            candidates,
            vec![shared, Box::from([])],
            Vec::new(),
        );
        assert!(index.ascending());
        index
    }

    /// Writes `index` as package `pkg` of `file:///own/` into a cache in `dir`,
    /// for a command whose default registry is `default`.
    fn save(dir: &Path, default: &str, pkg: &str, fp: IndexFingerprint) {
        let caches = ResolutionCaches::new(dir, url(default));
        caches.registry(&url("file:///own/")).remember(&name(pkg), fp, Arc::new(index()));
        caches.save();
    }

    fn cache_file(dir: &Path) -> PathBuf {
        ebpkg_spec::cache_layout::CacheLayout::new(dir).resolution_cache(&url("file:///own/"))
    }

    #[test]
    fn a_requirement_is_parsed_once_for_all_the_records_of_a_registry_that_state_it() {
        let dir = tempfile::tempdir().unwrap();
        let caches = ResolutionCaches::new(dir.path(), url("file:///own/"));
        caches.registry(&url("file:///own/")).remember(&name("first"), fingerprint(1), Arc::new(index()));
        caches.registry(&url("file:///own/")).remember(&name("second"), fingerprint(2), Arc::new(index()));
        caches.save();
        let caches = ResolutionCaches::new(dir.path(), url("file:///own/"));
        let own = caches.registry(&url("file:///own/"));
        let (first, second) = (own.get(&name("first"), &fingerprint(1)), own.get(&name("second"), &fingerprint(2)));
        let (first, second) = (first.unwrap(), second.unwrap());
        let (a, b) = (first.list(0).unwrap(), second.list(0).unwrap());
        assert_eq!(a.len(), 3);
        for (x, y) in a.iter().zip(b) {
            assert_eq!(x, y);
            // The same text in two records: one requirement, shared.
            assert!(std::ptr::eq(x.req.text(), y.req.text()), "`{}` parsed twice", x.req.text());
        }
        assert!(!std::ptr::eq(a[0].req.text(), a[1].req.text()));
    }

    #[test]
    fn a_record_reads_back_as_it_was_written_whatever_the_commands_default_registry() {
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), "file:///default/", "my_pkg", fingerprint(1));
        let original = index();
        // Read by a command whose default registry is the package's own.
        let caches = ResolutionCaches::new(dir.path(), url("file:///own/"));
        let got = caches.registry(&url("file:///own/")).get(&name("my-pkg"), &fingerprint(1)).unwrap();
        assert_eq!(got.origin(), original.origin());
        assert_eq!(got.text(), original.text());
        // Every field of every version, the pre-release and the build metadata included.
        assert!(got.candidates().eq(original.candidates()));
        assert_eq!(got.candidates().map(|c| c.deps).collect::<Vec<_>>(), [0, 0, 1], "shared lists stay shared");
        // A yanked flag read alone is the version's.
        use ebpkg_resolver::CandidateList;
        assert_eq!((0..3).map(|i| got.yanked(i)).collect::<Vec<_>>(), [false, false, true]);
        assert!(got.list(1).unwrap().is_empty());
        assert!(got.list(2).is_err());
        let deps = got.list(0).unwrap();
        let described: Vec<(&str, Option<&str>, &str)> = deps
            .iter()
            .map(|d| (d.pkg.name.as_str(), d.pkg.registry.as_ref().map(RegistryId::as_str), d.req.text()))
            .collect();
        assert_eq!(
            described,
            [
                ("same_reg", None, "^1.2"),
                ("in-default", Some("file:///default/"), ">=1, <3"),
                ("elsewhere", Some("file:///other/"), "=0.1.0-pre"),
            ]
        );
        assert_eq!(*deps[2].req, VersionReq::parse("=0.1.0-pre").unwrap());
        assert_eq!(got.n_lines(), 3);
        for k in 0..3 {
            assert_eq!(got.line(k), original.line(k));
        }
        assert_eq!(got.line(3), None);
        assert_eq!(got.line_text(1), Some("{\"vers\":\"1.1.0+b7\"}"));
        // Another fingerprint: the file changed, the record is not used.
        assert!(caches.registry(&url("file:///own/")).get(&name("my_pkg"), &fingerprint(2)).is_none());
        assert!(caches.registry(&url("file:///own/")).get(&name("other"), &fingerprint(1)).is_none());
    }

    #[test]
    fn a_stored_list_is_decoded_when_asked_for_and_a_damaged_record_is_reported_and_dropped() {
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), "file:///own/", "pkg", fingerprint(1));
        let path = cache_file(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        // A requirement text that is no requirement, of the right length: the record's checksum
        // no longer holds, and it is a miss...
        let at = bytes.windows(4).position(|w| w == b"^1.2").unwrap();
        bytes[at..at + 4].copy_from_slice(b"^1.!");
        std::fs::write(&path, &bytes).unwrap();
        let caches = ResolutionCaches::new(dir.path(), url("file:///own/"));
        assert!(caches.registry(&url("file:///own/")).get(&name("pkg"), &fingerprint(1)).is_none());
        // ...and when the checksum is made to hold (a writer's bug, not a disk's), the record
        // still decodes: the list is checked when it is read.
        reseal(&mut bytes, "pkg");
        std::fs::write(&path, &bytes).unwrap();
        let caches = ResolutionCaches::new(dir.path(), url("file:///own/"));
        let got = caches.registry(&url("file:///own/")).get(&name("pkg"), &fingerprint(1)).unwrap();
        assert_eq!(got.candidates().count(), 3);
        let Body::Stored(record) = &got.body else { panic!("a stored record is stored") };
        let lists = &record.lists;
        assert!(lists.iter().all(|l| l.decoded.get().is_none()), "nothing decoded before it is asked for");
        assert!(caches.damaged().is_empty());
        let err = got.list(0).unwrap_err().to_string();
        assert!(err.contains("/own/index/3/p/pkg") && err.contains("read from the index file again"), "{err}");
        assert!(got.list(0).is_err(), "damaged every time");
        assert!(got.list(1).unwrap().is_empty(), "the other list is whole");
        let damaged: Vec<(String, String)> =
            caches.damaged().into_iter().map(|(u, n)| (u.to_string(), n.to_string())).collect();
        assert_eq!(
            damaged,
            [("file:///own/".to_owned(), "pkg".to_owned())],
            "noted once, for the loader to read again"
        );
        // Nothing else changed, and still the record is dropped from the file at once.
        caches.save();
        let caches = ResolutionCaches::new(dir.path(), url("file:///own/"));
        assert!(caches.registry(&url("file:///own/")).get(&name("pkg"), &fingerprint(1)).is_none());
    }

    #[test]
    fn a_save_keeps_earlier_records_and_replaces_reparsed_ones() {
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), "file:///default/", "a", fingerprint(1));
        save(dir.path(), "file:///default/", "b", fingerprint(2));
        save(dir.path(), "file:///default/", "a", fingerprint(3));
        let caches = ResolutionCaches::new(dir.path(), url("file:///default/"));
        let cache = caches.registry(&url("file:///own/"));
        assert!(cache.get(&name("a"), &fingerprint(1)).is_none());
        assert!(cache.get(&name("a"), &fingerprint(3)).is_some());
        assert!(cache.get(&name("b"), &fingerprint(2)).is_some());
        // Nothing parsed afresh: nothing written.
        let before = std::fs::metadata(cache_file(dir.path())).unwrap().modified().unwrap();
        caches.save();
        assert_eq!(std::fs::metadata(cache_file(dir.path())).unwrap().modified().unwrap(), before);
    }

    /// An index of `versions` whose lines are whole entries (the last one signed),
    /// plus a line damaged beyond what resolution reads (its checksum).
    fn whole_index(versions: &[&str]) -> LoadedIndex {
        let mut text = String::new();
        let (mut lines, mut candidates) = (Vec::new(), Vec::new());
        for (k, v) in versions.iter().enumerate() {
            let line = format!(
                "{{\"v\":1,\"name\":\"my-pkg\",\"vers\":\"{v}\",\"deps\":[],\"cksum\":\"{}\",\"yanked\":false}}",
                format!("{k:02x}").repeat(32)
            );
            let mut entry = ebpkg_spec::index::IndexEntry::parse_line(&line).unwrap().unwrap();
            if k + 1 == versions.len() {
                entry.signed_by = Some(ebpkg_spec::types::KeyId([k as u8; 32]));
            }
            let line = entry.to_line();
            lines.push(Line { bytes: text.len()..text.len() + line.len(), line_no: k + 1 });
            text.push_str(&line);
            text.push('\n');
            candidates.push(Candidate { version: Version::parse(v).unwrap(), yanked: false, deps: 0 });
        }
        let damaged =
            "{\"v\":1,\"name\":\"my-pkg\",\"vers\":\"9.0.0\",\"deps\":[],\"cksum\":\"nothex\",\"yanked\":false}";
        lines.push(Line { bytes: text.len()..text.len() + damaged.len(), line_no: versions.len() + 1 });
        text.push_str(damaged);
        candidates.push(Candidate { version: Version::new(9, 0, 0), yanked: false, deps: 0 });
        let lists = vec![Box::from([])];
        LoadedIndex::parsed("/own/index/my/_p/my-pkg".into(), text.into_bytes(), lines, candidates, lists, Vec::new())
    }

    #[test]
    fn each_version_s_line_is_found_whatever_the_file_s_order() {
        for (versions, ascending) in [
            (&["1.0.0", "1.1.0", "2.0.0-rc.1", "2.0.0"][..], true),
            (&["2.0.0", "1.0.0", "1.1.0"][..], false),
            (&["1.0.0", "1.1.0", "1.0.0"][..], false),
            (&["1.0.0", "1.1.0", "1.1.0"][..], false),
            // Pre-releases and build metadata, compared as semver does.
            (&["1.0.0-rc.1", "1.0.0", "1.0.1-rc.1", "1.0.1-rc.2"][..], true),
            (&["1.0.0", "1.0.0-rc.1"][..], false),
            (&["1.0.0+b1", "1.0.0+b2", "1.0.0-rc.1+b3"][..], false),
            (&["1.0.0-rc.1+b3", "1.0.0+b1", "1.0.0+b2"][..], true),
            (&["2.0.0-rc.1", "1.9.0"][..], false),
            (&["2.0.0-rc.1", "2.0.0-rc.1"][..], false),
            // Numbers stored in two, four and eight bytes (the narrowest that holds a record's).
            // (Each before the 9.0.0 that `whole_index` adds.)
            (&["0.0.65535", "1.65535.0"][..], true),
            (&["1.0.65535", "2.65536.0"][..], true),
            (&["4294967296.0.1-rc.1", "1.2.3", "4294967295.4294967295.4294967295"][..], false),
            (&["1.2.3", "3.18446744073709551615.0"][..], true),
        ] {
            let index = Arc::new(whole_index(versions));
            assert_eq!(index.ascending(), ascending, "{versions:?}");
            // As parsed, then as read back from a cache file with every line's pin stored.
            let dir = tempfile::tempdir().unwrap();
            let own = url("file:///own/");
            for stored in [false, true] {
                let index = match stored {
                    false => Arc::clone(&index),
                    true => {
                        let caches = ResolutionCaches::new(dir.path(), own.clone());
                        caches.registry(&own).remember(&name("my_pkg"), fingerprint(1), Arc::clone(&index));
                        caches.save();
                        let caches = ResolutionCaches::new(dir.path(), own.clone());
                        let got = caches.registry(&own).get(&name("my_pkg"), &fingerprint(1)).unwrap();
                        assert!(got.stored_pins().next().is_some());
                        assert_eq!(got.ascending(), ascending, "{versions:?} read back");
                        assert!(got.candidates().eq(index.candidates()), "{versions:?} read back");
                        got
                    }
                };
                for (k, v) in versions.iter().enumerate() {
                    let entry = index.entry(&Version::parse(v).unwrap()).unwrap().unwrap();
                    // The first line with the version (each line's checksum is its own).
                    let first = versions.iter().position(|w| w == v).unwrap();
                    let want = format!("{first:02x}").repeat(32);
                    assert_eq!(entry.cksum.to_hex(), want, "{v} of {versions:?} (line {k}, stored: {stored})");
                    // Found from a resolver's position, the line's own or another's (a version moved):
                    // still the first line with the version.
                    let version = Version::parse(v).unwrap();
                    for at in [k as u32, 0, 99] {
                        let pin = index.pin_of(at, &version).unwrap().unwrap();
                        assert_eq!(pin.cksum, entry.cksum, "{v} at {at} of {versions:?} (stored: {stored})");
                    }
                }
                assert!(index.entry(&Version::new(5, 0, 0)).is_none());
            }
        }
    }

    #[test]
    fn pins_are_learned_once_kept_with_the_record_and_never_made_up_for_a_damaged_line() {
        let dir = tempfile::tempdir().unwrap();
        let own = url("file:///own/");
        let index = Arc::new(whole_index(&["1.0.0", "1.1.0"]));
        let v = |s: &str| Version::parse(s).unwrap();
        // Learned from the line itself, signer included.
        let pin = index.pin(&v("1.1.0")).unwrap().unwrap();
        assert_eq!(pin.name.as_str(), "my-pkg");
        assert_eq!(pin.cksum.0, [0x01; 32]);
        assert_eq!(pin.signed_by, Some(ebpkg_spec::types::KeyId([1; 32])));
        assert!(index.pin(&v("9.0.0")).unwrap().is_err(), "a damaged line has no pin");
        assert!(index.pin(&v("3.0.0")).is_none());
        let caches = ResolutionCaches::new(dir.path(), own.clone());
        caches.registry(&own).remember(&name("my_pkg"), fingerprint(1), Arc::clone(&index));
        caches.save();

        // The next command reads the pin from the record: its text is not parsed again.
        let caches = ResolutionCaches::new(dir.path(), own.clone());
        let got = caches.registry(&own).get(&name("my_pkg"), &fingerprint(1)).unwrap();
        assert_eq!(stored_pins(&got), vec![(1, pin.clone())]);
        assert!(got.pin(&v("9.0.0")).unwrap().is_err(), "still damaged, still not cached");
        assert!(!got.learned_pins());
        assert_eq!(got.pin(&v("1.1.0")).unwrap().unwrap(), pin);
        assert!(!got.learned_pins(), "a stored pin is not learned again");
        let modified = || std::fs::metadata(cache_file(dir.path())).unwrap().modified().unwrap();
        let first = modified();
        std::thread::sleep(std::time::Duration::from_millis(20));
        caches.save();
        assert_eq!(modified(), first, "nothing learned: not written");

        // A command choosing another version learns its pin: the record is written again with both.
        let caches = ResolutionCaches::new(dir.path(), own.clone());
        let got = caches.registry(&own).get(&name("my_pkg"), &fingerprint(1)).unwrap();
        let other = got.pin(&v("1.0.0")).unwrap().unwrap();
        assert_eq!((other.cksum.0, other.signed_by), ([0; 32], None));
        caches.save();
        assert_ne!(modified(), first);
        let caches = ResolutionCaches::new(dir.path(), own.clone());
        let got = caches.registry(&own).get(&name("my_pkg"), &fingerprint(1)).unwrap();
        assert_eq!(stored_pins(&got), vec![(0, other), (1, pin)]);
    }

    #[test]
    fn a_records_second_part_is_read_only_when_used() {
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), "file:///own/", "my_pkg", fingerprint(1));
        let path = cache_file(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        // Where the record came from, made into something that is not UTF-8.
        let origin = bytes.windows(18).position(|w| w == b"/own/index/3/p/pkg").unwrap();
        bytes[origin] = 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let caches = ResolutionCaches::new(dir.path(), url("file:///own/"));
        let got = caches.registry(&url("file:///own/")).get(&name("my_pkg"), &fingerprint(1));
        let got = got.expect("decoded without reading the second part");
        assert!(got.candidates().eq(index().candidates()));
        assert!(caches.damaged().is_empty());
        // Read when used: its checksum no longer holds, so no line is read from it (the
        // index file is), and the record is noted to be dropped.
        assert_eq!(got.origin(), "(a damaged resolution cache record)");
        assert!(got.entry(&Version::new(1, 0, 0)).is_none());
        assert_eq!(caches.damaged().len(), 1);
        // Any other byte of it, or where the directory says it starts, is caught the same way.
        bytes[origin] = b'/';
        let entry = bytes.windows(10).position(|w| w == b"\x06\x00\x00\x00my_pkg").unwrap();
        let second_at = entry + 10 + IndexFingerprint::BYTES + 8;
        let second = u32::from_le_bytes(bytes[second_at..second_at + 4].try_into().unwrap());
        for (what, at, to) in [
            ("nothing", origin, b'/'),
            ("a text byte", origin + 40, bytes[origin + 40] ^ 1),
            ("its start", second_at, (second - 1) as u8),
        ] {
            let mut bad = bytes.clone();
            bad[at] = to;
            std::fs::write(&path, &bad).unwrap();
            let caches = ResolutionCaches::new(dir.path(), url("file:///own/"));
            let got = caches.registry(&url("file:///own/")).get(&name("my_pkg"), &fingerprint(1)).unwrap();
            assert_eq!(got.entry(&Version::new(1, 0, 0)).is_some(), what == "nothing", "{what} changed");
        }
    }

    #[test]
    fn a_version_with_unknown_flags_or_a_list_that_does_not_exist_is_a_miss() {
        let own = url("file:///own/");
        let encoded = crate::format::encode(&index(), &own, &own).unwrap();
        // Each damaged first part resealed (its checksum made to hold): the check that refuses it
        // must be the one the case names, not the checksum.
        let read = |hot: &[u8]| {
            let mut hot = hot.to_vec();
            if let Some(body) = hot.len().checked_sub(4) {
                let crc = crc32fast::hash(&hot[..body]);
                hot[body..].copy_from_slice(&crc.to_le_bytes());
            }
            let bytes = [&hot[..], &encoded.cold].concat();
            let record =
                crate::format::Record { fingerprint: fingerprint(1), hot: 0..hot.len(), cold: hot.len()..bytes.len() };
            let context = Arc::new(ListContext::new(&own, &own));
            decode(&Arc::new(Stored::Owned(bytes)), &Arc::from("my_pkg"), &record, &context)
        };
        assert!(read(&encoded.hot).is_some());
        // The table's three versions, two bytes a number, then 1.0.0's entry: numbers, its list
        // (0), its flags (none).
        let entry = [&3u32.to_le_bytes()[..], &[2], &1u16.to_le_bytes(), &[0; 6], &[0]].concat();
        let at = encoded.hot.windows(entry.len()).position(|w| w == entry).unwrap() + 5;
        let mut flags = encoded.hot.clone();
        flags[at + 8] = 8;
        assert!(read(&flags).is_none(), "a flag no ebpkg writes");
        let mut width = encoded.hot.clone();
        width[at - 1] = 3;
        assert!(read(&width).is_none(), "a width no ebpkg writes");
        let mut list = encoded.hot.clone();
        list[at + 6] = 2;
        assert!(read(&list).is_none(), "list 2 of a record with two");
        let mut cut = encoded.hot.clone();
        cut.pop();
        assert!(read(&cut).is_none(), "the lengths of the second part cut short");
    }

    #[test]
    fn a_pin_that_does_not_say_its_own_version_and_package_is_a_miss() {
        let own = url("file:///own/");
        let index = whole_index(&["1.0.0", "1.1.0"]);
        index.pin(&Version::new(1, 1, 0)).unwrap().unwrap();
        let encoded = crate::format::encode(&index, &own, &own).unwrap();
        let body = [encoded.hot.as_slice(), &encoded.cold].concat();
        let file = |bytes: Vec<u8>| Arc::new(Stored::Owned(bytes));
        let read = |bytes: &[u8], package: &str| {
            let context = Arc::new(crate::format::ListContext::new(&own, &own));
            let (hot, cold) = (0..encoded.hot.len(), encoded.hot.len()..bytes.len());
            let record = crate::format::Record { fingerprint: fingerprint(1), hot, cold };
            crate::format::decode(&file(bytes.to_vec()), &Arc::from(package), &record, &context)
        };
        assert_eq!(read(&body, "my_pkg").unwrap().stored_pins().count(), 1);
        assert!(read(&body, "other").is_none(), "a pin of another package");
        // The pin's position damaged to name 1.0.0's line while it says 1.1.0.
        let at = |pattern: &[u8]| body.windows(pattern.len()).position(|w| w == pattern).unwrap();
        let mut moved = body.clone();
        moved[at(b"\x01\x00\x00\x00\x05\x00\x00\x001.1.0")] = 0;
        assert!(read(&moved, "my_pkg").is_none(), "another version's checksum");
        // The name it pins damaged into another valid name.
        let mut renamed = body.clone();
        let name = at(b"\x06\x00\x00\x00my-pkg");
        renamed[name + 4] = b'x';
        assert!(read(&renamed, "my_pkg").is_none(), "another package's name");
    }

    #[test]
    fn a_few_changed_packages_of_a_large_registry_are_parsed_rather_than_rewrite_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let many = |names: std::ops::Range<u64>, fp: u64| {
            let caches = ResolutionCaches::new(dir.path(), url("file:///own/"));
            let cache = caches.registry(&url("file:///own/"));
            for n in names {
                cache.remember(&name(&format!("p{n}")), fingerprint(fp + n), Arc::new(index()));
            }
            caches.save();
        };
        let modified = || std::fs::metadata(cache_file(dir.path())).unwrap().modified().unwrap();
        many(0..300, 0);
        let first = modified();
        std::thread::sleep(std::time::Duration::from_millis(20));
        // 2 of 300: parsed by each command instead.
        many(0..2, 1000);
        assert_eq!(modified(), first);
        // 3 of 300 (1%): written.
        many(0..3, 1000);
        assert_ne!(modified(), first);
        let caches = ResolutionCaches::new(dir.path(), url("file:///own/"));
        let cache = caches.registry(&url("file:///own/"));
        assert!(cache.get(&name("p2"), &fingerprint(1002)).is_some());
        assert!(cache.get(&name("p299"), &fingerprint(299)).is_some());
    }

    #[test]
    fn a_damaged_or_foreign_cache_file_is_a_miss_never_a_crash() {
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), "file:///default/", "pkg", fingerprint(1));
        let path = cache_file(dir.path());
        let good = std::fs::read(&path).unwrap();
        let read_back = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            let caches = ResolutionCaches::new(dir.path(), url("file:///default/"));
            let got = caches.registry(&url("file:///own/")).get(&name("pkg"), &fingerprint(1));
            got.map(|index| (index.candidates().count(), index.text().to_vec()))
        };
        assert_eq!(read_back(&good).map(|g| g.0), Some(3));
        for len in 0..good.len() {
            assert_eq!(read_back(&good[..len]), None, "truncated to {len} bytes");
        }
        // Every single byte changed: whatever reads back stays within the file.
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0xa5;
            if let Some((_, text)) = read_back(&bad) {
                assert!(text.len() <= good.len());
            }
        }
        let mut other_ebpkg = good.clone();
        let stamp_at = MAGIC.len() + 4;
        other_ebpkg[stamp_at + STAMP.len() - 1] ^= 1;
        assert_eq!(read_back(&other_ebpkg), None, "written by another version of ebpkg");
    }
}
