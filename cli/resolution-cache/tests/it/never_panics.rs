//! A resolution cache file is untrusted input: whatever its bytes (their checksums made
//! to hold or not), reading it
//! gives a miss or records whose lines, when read, lie within their text and whose versions
//! each name one of their dependency lists (every list decoded or found damaged),
//! never a panic. The
//! fuzz target `cache_file` runs the same property unbounded; this runs a real
//! cache file and its mutations in every test run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, OnceLock};

use ebpkg_resolution_cache::{Line, LoadedIndex, ResolutionCaches, read_records, reseal};
use ebpkg_resolver::{Candidate, QualifiedName, Requirement};
use ebpkg_sources::{IndexFingerprint, RegistryId};
use ebpkg_spec::PackageName;
use proptest::prelude::*;
use semver::Version;

/// A cache file of three packages, written by the crate itself.
fn seed() -> &'static [u8] {
    static SEED: OnceLock<Vec<u8>> = OnceLock::new();
    SEED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let url = RegistryId::parse("file:///registry/").unwrap();
        let caches = ResolutionCaches::new(dir.path(), url.clone());
        let cache = caches.registry(&url);
        for (n, name) in ["meter", "ddos", "net_tools"].iter().enumerate() {
            let line = |v: &str| {
                let cksum = "ab".repeat(32);
                format!("{{\"v\":1,\"name\":\"{name}\",\"vers\":\"{v}\",\"deps\":[],\"cksum\":\"{cksum}\",\"yanked\":false}}")
            };
            let text = format!("{}\n{}\n", line("1.0.0"), line("2.0.0-rc.1+b"));
            let split = text.find('\n').unwrap();
            let dep = Requirement::parse(
                QualifiedName::in_registry(PackageName::new("meter").unwrap(), Some(RegistryId::parse_url("file:///other/").unwrap())),
                "^1.2, <1.9",
            )
            .unwrap();
            let lists: Vec<Box<[Requirement]>> = vec![Box::from(vec![dep]), Box::from([])];
            let candidates = [("1.0.0", false, 0), ("2.0.0-rc.1+b", true, 1)]
                .map(|(v, yanked, deps)| Candidate { version: Version::parse(v).unwrap(), yanked, deps });
            let lines =
                vec![Line { bytes: 0..split, line_no: 1 }, Line { bytes: split + 1..text.len() - 1, line_no: 2 }];
            let index =
                LoadedIndex::parsed("origin".into(), text.into_bytes(), lines, candidates.into(), lists, Vec::new());
            // Learned, so that the file holds a pin too.
            index.pin(&Version::parse("1.0.0").unwrap()).unwrap().unwrap();
            let fp = IndexFingerprint::File { dev: 1, ino: n as u64, size: 2, mtime_ns: 3, ctime_ns: 4 };
            cache.remember(&PackageName::new(name).unwrap(), fp, Arc::new(index));
        }
        caches.save();
        let path = ebpkg_spec::cache_layout::CacheLayout::new(dir.path()).resolution_cache(&url);
        std::fs::read(path).unwrap()
    })
}

/// Reads `bytes` as they are, and with their checksums made to hold (so that damaged
/// contents reach the decoding).
fn check(bytes: &[u8]) -> usize {
    let mut resealed = bytes.to_vec();
    reseal(&mut resealed);
    let mut n = 0;
    for bytes in [bytes.to_vec(), resealed] {
        let records = read_records(bytes);
        for index in &records {
            for c in index.candidates() {
                let _ = index.entry(&c.version);
                let _ = index.pin(&c.version);
                let _ = index.pin_of(0, &c.version);
            }
        }
        n = records.len();
    }
    n
}

#[test]
fn the_seed_reads_back_whole() {
    let records = read_records(seed().to_vec());
    assert_eq!(records.len(), 3);
    for index in &records {
        assert_eq!(index.candidates().count(), 2);
        let entry = index.entry(&Version::parse("1.0.0").unwrap()).unwrap().unwrap();
        assert_eq!(entry.vers, Version::parse("1.0.0").unwrap());
        let pin = index.pin(&Version::parse("1.0.0").unwrap()).unwrap().unwrap();
        assert_eq!((pin.name, pin.cksum.0, pin.signed_by), (entry.name, [0xab; 32], None));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn mutated_cache_files_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = seed().to_vec();
        for (at, b) in flips {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        check(&bytes);
        check(&bytes[..cut.index(bytes.len() + 1)]);
    }

    #[test]
    fn arbitrary_bytes_after_a_valid_header_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..512)) {
        let seed = seed();
        // The header (magic, stamp, count, slots, hash seed) is 28 bytes and the stamp: the
        // table, the directory and the records are arbitrary (three records: eight slots).
        let header = 8 + 4 + u32::from_le_bytes(seed[8..12].try_into().unwrap()) as usize + 4 + 4 + 8;
        let mut bytes = seed[..header].to_vec();
        bytes.extend(tail);
        check(&bytes);
    }
}
