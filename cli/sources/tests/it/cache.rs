//! The download cache against a real file registry: hits, corruption, checksum
//! refusals, offline mode, unpacking and cleaning.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use ebpkg_spec::cache_layout::CachePart;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use common::{name, pack, version};
use ebpkg_sources::{Cache, CleanReport, ErrorKind, FileRegistry, Registry, RegistryId, SearchHit, check_locked};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::types::Sha256Digest;
use ebpkg_spec::{LockedPackage, Manifest, PackageName};
use semver::Version;

/// A file registry that presents itself as a remote one, to exercise offline mode
/// (only the URL differs; every operation is the real file registry's).
struct Remote {
    inner: FileRegistry,
    url: RegistryId,
}

impl Registry for Remote {
    fn url(&self) -> &RegistryId {
        &self.url
    }
    fn index_text(&self, name: &PackageName) -> ebpkg_sources::Result<Option<ebpkg_sources::IndexText>> {
        self.inner.index_text(name)
    }
    fn names(&self) -> ebpkg_sources::Result<Vec<PackageName>> {
        self.inner.names()
    }
    fn download(&self, entry: &IndexEntry) -> ebpkg_sources::Result<Vec<u8>> {
        self.inner.download(entry)
    }
    fn publish(
        &self,
        archive: &ebpkg_archive::VerifiedArchive,
        manifest: &Manifest,
        signature: Option<&ebpkg_sources::PublishSignature>,
    ) -> ebpkg_sources::Result<IndexEntry> {
        self.inner.publish(archive, manifest, signature)
    }
    fn bundle(&self, version: &ebpkg_sources::SignedVersion) -> ebpkg_sources::Result<Vec<u8>> {
        self.inner.bundle(version)
    }
    fn publisher_key(&self, id: &ebpkg_spec::types::KeyId) -> ebpkg_sources::Result<ebpkg_sources::KeyRecord> {
        self.inner.publisher_key(id)
    }
    fn set_yanked(&self, name: &PackageName, version: &Version, yanked: bool) -> ebpkg_sources::Result<IndexEntry> {
        self.inner.set_yanked(name, version, yanked)
    }
    fn search(&self, query: &str, limit: usize) -> ebpkg_sources::Result<Vec<SearchHit>> {
        self.inner.search(query, limit)
    }
}

struct Setup {
    tmp: tempfile::TempDir,
    reg: FileRegistry,
    cache: Cache,
    entry: IndexEntry,
    bytes: Vec<u8>,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let reg = FileRegistry::at(&tmp.path().join("registry")).unwrap();
    let packed = pack(tmp.path(), "net", "1.0.0");
    let entry = reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    let cache = Cache::new(tmp.path().join("cache"));
    Setup { tmp, reg, cache, entry, bytes: packed.bytes }
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() { dirs.push(e.path()) } else { out.push(e.path()) }
        }
    }
    out
}

#[test]
fn fetch_stores_a_verified_archive_and_then_hits() {
    let s = setup();
    let archive = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    assert_eq!(archive.bytes(), s.bytes.as_slice());
    assert_eq!(archive.digest(), &s.entry.cksum);
    let path = s.cache.archive_path(&s.entry.cksum);
    let hex = s.entry.cksum.to_hex();
    assert!(path.ends_with(format!("archives/{}/{hex}.tar.gz", &hex[..2])));
    assert_eq!(fs::read(&path).unwrap(), s.bytes);

    // A hit needs neither the registry's archive nor its index.
    fs::remove_dir_all(s.reg.root()).unwrap();
    let hit = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, true).unwrap();
    assert_eq!(hit.bytes(), s.bytes.as_slice());
}

#[test]
fn a_corrupted_cached_archive_is_fetched_again() {
    let s = setup();
    s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    let path = s.cache.archive_path(&s.entry.cksum);
    fs::write(&path, b"bit rot").unwrap();
    let again = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    assert_eq!(again.bytes(), s.bytes.as_slice());
    assert_eq!(fs::read(&path).unwrap(), s.bytes);
}

#[test]
fn offline_mode_blocks_only_remote_registries() {
    let s = setup();
    // A file registry is local: offline mode reads it.
    s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, true).unwrap();

    let remote = Remote {
        inner: FileRegistry::at(s.reg.root()).unwrap(),
        url: RegistryId::parse("https://registry.example.org").unwrap(),
    };
    let other = Cache::new(s.tmp.path().join("other-cache"));
    let e = other.fetch(&remote, &s.entry, &s.entry.cksum, true).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Offline { .. }), "{e}");
    assert!(e.to_string().contains("net@1.0.0 is not in the cache, and offline mode forbids downloading it"), "{e}");

    // A corrupted copy is not "in the cache" either, and is not kept.
    other.fetch(&remote, &s.entry, &s.entry.cksum, false).unwrap();
    let path = other.archive_path(&s.entry.cksum);
    fs::write(&path, b"bit rot").unwrap();
    let e = other.fetch(&remote, &s.entry, &s.entry.cksum, true).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Offline { .. }), "{e}");
    assert!(!path.exists());
}

#[test]
fn an_archive_not_matching_the_pinned_digest_is_refused_and_not_stored() {
    let s = setup();
    // The lockfile pins other content than the registry serves.
    let pinned = Sha256Digest([0xab; 32]);
    let e = s.cache.fetch(&s.reg, &s.entry, &pinned, false).unwrap_err();
    match e.kind() {
        ErrorKind::ChecksumMismatch { package, version: v, expected, actual, registry } => {
            assert_eq!(package.as_str(), "net");
            assert_eq!(*v, version("1.0.0"));
            assert_eq!(*expected, pinned);
            assert_eq!(*actual, s.entry.cksum);
            assert_eq!(registry, s.reg.url());
        }
        other => panic!("{other:?}"),
    }
    let message = e.to_string();
    for part in
        ["net@1.0.0", "differs from the one that was locked", "tampered with", "republished", "Nothing was stored"]
    {
        assert!(message.contains(part), "{part}: {message}");
    }
    assert!(files_under(s.cache.root()).is_empty(), "nothing stored: {:?}", files_under(s.cache.root()));

    // The registry's archive itself was swapped: the index's digest catches it.
    let other = pack(s.tmp.path(), "net", "1.0.1");
    fs::write(s.reg.archive_path(&s.entry.cksum), &other.bytes).unwrap();
    let e = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::ChecksumMismatch { actual, .. } if *actual == other.sha256), "{e}");
    assert!(files_under(s.cache.root()).is_empty());
}

/// The index line the caller resolved is what is fetched: the registry's index
/// is not read again (a resolution already read and parsed it).
#[test]
fn fetch_downloads_the_entry_it_is_given_without_reading_the_index() {
    let s = setup();
    fs::remove_dir_all(s.reg.root().join("index")).unwrap();
    let archive = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    assert_eq!(archive.bytes(), s.bytes.as_slice());
}

#[test]
fn unpack_once_then_reuse() {
    let s = setup();
    let (n, v) = (name("net"), version("1.0.0"));
    let archive = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    let unpacked = s.cache.unpack(&n, &v, &archive).unwrap();
    let root = unpacked.root;
    assert_eq!(root, s.cache.source_dir(&n, &v, &s.entry.cksum));
    assert!(root.ends_with(format!("src/net-1.0.0-{}", &s.entry.cksum.to_hex()[..16])));
    assert!(fs::read_to_string(root.join("ebpkg.toml")).unwrap().contains("name = \"net\""));
    assert_eq!(unpacked.manifest.package.name, n, "the manifest, parsed from the archive");

    let reused = s.cache.unpack(&n, &v, &archive).unwrap();
    assert_eq!((&reused.root, &reused.manifest.package.version), (&root, &v));
    // The cached archive's bytes are not read again: the tree is checked against
    // the archive in memory (already checked against its digest).
    fs::remove_file(s.cache.archive_path(&s.entry.cksum)).unwrap();
    assert_eq!(s.cache.unpack(&n, &v, &archive).unwrap().root, root);
}

#[test]
fn concurrent_unpacks_of_one_package_agree() {
    let s = setup();
    let (n, v) = (name("net"), version("1.0.0"));
    let archive = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    let cache = Arc::new(s.cache.clone());
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (cache, archive, n, v) = (Arc::clone(&cache), archive.clone(), n.clone(), v.clone());
            std::thread::spawn(move || cache.unpack(&n, &v, &archive).unwrap().root)
        })
        .collect();
    let roots: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(roots.windows(2).all(|w| w[0] == w[1]));
    assert!(roots[0].join("ebpkg.toml").is_file());
    let src = s.cache.root().join("src");
    assert_eq!(fs::read_dir(&src).unwrap().count(), 1, "no temporary directories left behind");
}

/// Bytes that do not hash to the digest never become an archive to unpack: a
/// corrupted cached copy is read, refused and fetched again before unpacking.
#[test]
fn a_corrupted_archive_is_never_unpacked() {
    let s = setup();
    let (n, v) = (name("net"), version("1.0.0"));
    assert!(ebpkg_archive::VerifiedArchive::check(b"bit rot".to_vec(), &s.entry.cksum, &Default::default()).is_err());
    s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    fs::write(s.cache.archive_path(&s.entry.cksum), b"bit rot").unwrap();
    assert!(s.cache.cached_archive(&s.entry.cksum).unwrap().is_none(), "a corrupted copy is not the archive");
    let archive = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    let root = s.cache.unpack(&n, &v, &archive).unwrap().root;
    assert!(root.join("ebpkg.toml").is_file());
}

#[test]
fn clean_removes_what_it_is_asked_to_and_counts_it() {
    let s = setup();
    let (n, v) = (name("net"), version("1.0.0"));
    assert_eq!(
        s.cache.clean(&[CachePart::Archives, CachePart::Sources]).unwrap(),
        CleanReport::default(),
        "an empty cache"
    );
    let fetched = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    let archive = s.cache.archive_path(&s.entry.cksum);
    let root = s.cache.unpack(&n, &v, &fetched).unwrap().root;
    let unpacked_files = files_under(&root);
    let unpacked_bytes: u64 = unpacked_files.iter().map(|f| fs::metadata(f).unwrap().len()).sum();

    let report = s.cache.clean(&[CachePart::Sources]).unwrap();
    assert_eq!(report, CleanReport { files: unpacked_files.len() as u64, bytes: unpacked_bytes });
    assert!(!root.exists() && archive.exists());

    let report = s.cache.clean(&[CachePart::Archives]).unwrap();
    assert_eq!(report, CleanReport { files: 1, bytes: s.bytes.len() as u64 });
    assert!(!archive.exists());

    let fetched = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    s.cache.unpack(&n, &v, &fetched).unwrap();
    let report = s.cache.clean(&[CachePart::Archives, CachePart::Sources]).unwrap();
    assert_eq!(report.files, 1 + unpacked_files.len() as u64);
    assert!(files_under(s.cache.root()).is_empty());
}

#[test]
fn check_locked_catches_a_republished_version() {
    let s = setup();
    let mut locked = LockedPackage {
        name: name("net"),
        version: version("1.0.0"),
        source: s.reg.url().clone(),
        checksum: s.entry.cksum,
        signer: None,
        dependencies: vec![],
    };
    check_locked(&(&s.entry).into(), &locked).unwrap();
    locked.checksum = Sha256Digest([7; 32]);
    let e = check_locked(&(&s.entry).into(), &locked).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LockDrift { .. }), "{e}");
    let message = e.to_string();
    assert!(message.contains("disagree about net@1.0.0"), "{message}");
    assert!(message.contains(&format!("the lock pins sha256 {}", "07".repeat(32))), "{message}");
    assert!(message.contains(&format!("the registry lists {}", s.entry.cksum)), "{message}");
    // The likelier cause first: a lock edited by hand or by a bad merge.
    assert!(
        message.contains("Either ebpkg.lock was edited") && message.contains("git checkout ebpkg.lock"),
        "{message}"
    );
    assert!(message.contains("republished"), "{message}");
}

/// An unpacked tree edited after unpacking (a changed source, an added header) is
/// never handed out: it is compared with its verified archive and unpacked again.
#[test]
fn an_edited_cached_tree_is_unpacked_again() {
    let s = setup();
    let (n, v) = (name("net"), version("1.0.0"));
    let archive = s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    let root = s.cache.unpack(&n, &v, &archive).unwrap().root;
    let pristine = files_under(&root).into_iter().map(|f| (fs::read(&f).unwrap(), f)).collect::<Vec<_>>();
    let manifest = root.join("ebpkg.toml");
    let original = fs::read(&manifest).unwrap();
    fs::write(&manifest, [original.as_slice(), b"\n# edited\n"].concat()).unwrap();
    fs::write(root.join("planted.h"), b"#define EVIL 1\n").unwrap();
    let again = s.cache.unpack(&n, &v, &archive).unwrap();
    assert_eq!(again.root, root);
    assert_eq!(fs::read(&manifest).unwrap(), original);
    assert!(!root.join("planted.h").exists());
    let now = files_under(&root).into_iter().map(|f| (fs::read(&f).unwrap(), f)).collect::<Vec<_>>();
    assert_eq!(now, pristine);

    // A link left where the tree was is replaced too, and what it pointed to is untouched.
    let elsewhere = s.tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    fs::write(elsewhere.join("keep"), b"mine").unwrap();
    fs::remove_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &root).unwrap();
    s.cache.unpack(&n, &v, &archive).unwrap();
    assert!(fs::symlink_metadata(&root).unwrap().is_dir());
    assert_eq!(fs::read(elsewhere.join("keep")).unwrap(), b"mine");
}

/// A device, FIFO or huge sparse file where a cached archive should be is not read:
/// it is dropped and the archive fetched again.
#[test]
fn a_cached_archive_that_is_not_a_file_is_fetched_again_unread() {
    let s = setup();
    s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap();
    let path = s.cache.archive_path(&s.entry.cksum);
    type Plant = fn(&Path);
    let plants: &[Plant] = &[
        |p| std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
        |p| rustix::fs::mkfifoat(rustix::fs::CWD, p, rustix::fs::Mode::from_raw_mode(0o644)).unwrap(),
        |p| fs::File::create(p).unwrap().set_len(50 << 30).unwrap(),
    ];
    for plant in plants {
        fs::remove_file(&path).unwrap();
        plant(&path);
        let started = std::time::Instant::now();
        assert_eq!(s.cache.fetch(&s.reg, &s.entry, &s.entry.cksum, false).unwrap().bytes(), s.bytes.as_slice());
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        assert_eq!(fs::read(&path).unwrap(), s.bytes);
    }
}
