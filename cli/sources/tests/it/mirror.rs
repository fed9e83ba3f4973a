//! Mirrors: exactly the locked packages, from several registries into one, with the
//! same index lines and bytes, idempotently.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::{name, pack, pack_with, version};
use ebpkg_sources::{Cache, ErrorKind, FileRegistry, OpenOptions, Registry, RegistryId, mirror, open_registry};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::types::Sha256Digest;
use ebpkg_spec::{LockedDependency, LockedPackage, Lockfile, index_path};

fn locked(entry: &IndexEntry, source: &FileRegistry) -> LockedPackage {
    LockedPackage {
        name: entry.name.clone(),
        version: entry.vers.clone(),
        source: source.url().clone(),
        checksum: entry.cksum,
        signer: None,
        dependencies: vec![],
    }
}

fn publish(reg: &FileRegistry, scratch: &Path, n: &str, v: &str) -> IndexEntry {
    let packed = pack(scratch, n, v);
    reg.publish(&packed.archive(), &packed.manifest, None).unwrap()
}

/// Every file under `dir` with its bytes, for comparing directory states.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else if e.file_name() != ".lock" {
                out.insert(e.path().strip_prefix(dir).unwrap().to_owned(), fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

struct World {
    tmp: tempfile::TempDir,
    a: FileRegistry,
    b: FileRegistry,
    cache: Cache,
    lock: Lockfile,
    net_old: IndexEntry,
}

/// Registry A has net 1.0.0 (yanked) and 1.1.0, meter 1.0.0 and an unlocked package;
/// registry B has guard 1.0.0. The lockfile takes net 1.1.0 and meter from A, guard from B.
fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let scratch = tmp.path().join("scratch");
    let a = FileRegistry::at(&tmp.path().join("a")).unwrap();
    let b = FileRegistry::at(&tmp.path().join("b")).unwrap();
    let net_old = publish(&a, &scratch, "net", "1.0.0");
    let net = publish(&a, &scratch, "net", "1.1.0");
    let meter = publish(&a, &scratch, "meter", "1.0.0");
    publish(&a, &scratch, "unlocked", "1.0.0");
    let guard = publish(&b, &scratch, "guard", "1.0.0");
    let mut guard_locked = locked(&guard, &b);
    guard_locked.dependencies = vec![
        LockedDependency { name: name("net"), version: version("1.1.0") },
        LockedDependency { name: name("meter"), version: version("1.0.0") },
    ];
    let lock = Lockfile::new(vec![locked(&net, &a), locked(&meter, &a), guard_locked]);
    let cache = Cache::new(tmp.path().join("cache"));
    World { tmp, a, b, cache, lock, net_old }
}

#[test]
fn a_mirror_holds_exactly_the_locked_packages() {
    let w = world();
    let dest = w.tmp.path().join("mirror");
    let report = mirror(&w.lock, |u| open_registry(u, &OpenOptions::default()), &w.cache, &dest).unwrap();
    assert_eq!(report.url, RegistryId::from_path(&dest).unwrap());
    let added: Vec<String> = report.added.iter().map(ToString::to_string).collect();
    assert_eq!(added, ["guard@1.0.0", "meter@1.0.0", "net@1.1.0"]);
    assert!(report.already_present.is_empty());

    let m = FileRegistry::at(&dest).unwrap();
    assert_eq!(m.names().unwrap(), [name("guard"), name("meter"), name("net")]);
    for p in w.lock.packages() {
        let source = if p.name.as_str() == "guard" { &w.b } else { &w.a };
        let entries = m.index(&p.name).unwrap().unwrap();
        assert_eq!(entries.len(), 1, "only the locked version of {}", p.name);
        // The source's line, unchanged.
        let original = source.index(&p.name).unwrap().unwrap().into_iter().find(|e| e.vers == p.version).unwrap();
        assert_eq!(entries[0].to_line(), original.to_line());
        // The same bytes.
        assert_eq!(fs::read(m.archive_path(&p.checksum)).unwrap(), source.download(&original).unwrap());
    }

    // Installing from the mirror with the lockfile's checksums works, from a fresh cache.
    let fresh = Cache::new(w.tmp.path().join("fresh-cache"));
    for p in w.lock.packages() {
        let entry = m.index(&p.name).unwrap().unwrap().into_iter().find(|e| e.vers == p.version).unwrap();
        let archive = fresh.fetch(&m, &entry, &p.checksum, true).unwrap();
        fresh.unpack(&p.name, &p.version, &archive).unwrap();
    }
}

#[test]
fn mirroring_again_is_idempotent_and_adds_what_is_missing() {
    let w = world();
    let dest = w.tmp.path().join("mirror");
    mirror(&w.lock, |u| open_registry(u, &OpenOptions::default()), &w.cache, &dest).unwrap();
    let before = snapshot(&dest);

    let report = mirror(&w.lock, |u| open_registry(u, &OpenOptions::default()), &w.cache, &dest).unwrap();
    assert!(report.added.is_empty());
    assert_eq!(report.already_present.len(), 3);
    assert_eq!(snapshot(&dest), before, "nothing changed");

    // A re-run needs no source at all when nothing is missing.
    let fail = |url: &RegistryId| -> ebpkg_sources::Result<Box<dyn Registry>> { panic!("opened {url}") };
    mirror(&w.lock, fail, &Cache::new(w.tmp.path().join("empty-cache")), &dest).unwrap();

    // A lockfile with one more package: only that one is added, yanked as in its source.
    let mut packages = w.lock.packages().to_vec();
    packages.push(locked(&w.net_old, &w.a));
    w.a.set_yanked(&name("net"), &version("1.0.0"), true).unwrap();
    let report =
        mirror(&Lockfile::new(packages), |u| open_registry(u, &OpenOptions::default()), &w.cache, &dest).unwrap();
    assert_eq!(report.added, [ebpkg_spec::PackageId::new(name("net"), version("1.0.0"))]);
    let net = FileRegistry::at(&dest).unwrap().index(&name("net")).unwrap().unwrap();
    assert_eq!(
        net.iter().map(|e| (e.vers.to_string(), e.yanked)).collect::<Vec<_>>(),
        [("1.1.0".to_owned(), false), ("1.0.0".to_owned(), true)]
    );
}

#[test]
fn a_source_that_changed_since_locking_is_refused() {
    let w = world();
    let dest = w.tmp.path().join("mirror");
    let mut packages = w.lock.packages().to_vec();
    let meter = packages.iter_mut().find(|p| p.name.as_str() == "meter").unwrap();
    meter.checksum = Sha256Digest([9; 32]);
    let e =
        mirror(&Lockfile::new(packages), |u| open_registry(u, &OpenOptions::default()), &w.cache, &dest).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LockDrift { .. }), "{e}");
    assert!(!dest.join("index").join(index_path("meter")).exists());

    let mut packages = w.lock.packages().to_vec();
    packages.push(LockedPackage { version: version("9.9.9"), ..locked(&w.net_old, &w.a) });
    let e =
        mirror(&Lockfile::new(packages), |u| open_registry(u, &OpenOptions::default()), &w.cache, &dest).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::LockedNotInRegistry { .. }), "{e}");
    assert!(e.to_string().contains("takes net@9.9.9 from file://"), "{e}");
}

#[test]
fn one_name_from_two_registries_is_refused_before_writing() {
    let w = world();
    let scratch = w.tmp.path().join("scratch2");
    let other_net = publish(&w.b, &scratch, "net", "2.0.0");
    let mut packages = w.lock.packages().to_vec();
    packages.push(locked(&other_net, &w.b));
    let dest = w.tmp.path().join("mirror");
    let e =
        mirror(&Lockfile::new(packages), |u| open_registry(u, &OpenOptions::default()), &w.cache, &dest).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::MirrorConflict { .. }), "{e}");
    assert!(e.to_string().contains("takes `net` from two registries"), "{e}");
    assert!(!dest.exists());
}

#[test]
fn a_mirror_refuses_other_content_under_a_locked_version() {
    let w = world();
    let dest = w.tmp.path().join("mirror");
    // The destination already has a different net 1.1.0.
    let m = FileRegistry::at(&dest).unwrap();
    let impostor = pack_with(&w.tmp.path().join("scratch3"), "net", "1.1.0", "description = \"other\"\n", &[]);
    m.publish(&impostor.archive(), &impostor.manifest, None).unwrap();
    let e = mirror(&w.lock, |u| open_registry(u, &OpenOptions::default()), &w.cache, &dest).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::ImportDiffers { .. }), "{e}");
    assert!(e.to_string().contains("Mirror into a new, empty directory"), "{e}");
}
