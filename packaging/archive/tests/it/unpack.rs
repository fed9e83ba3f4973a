#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Unpacking: round trips, and every way a hostile archive could try to write outside
//! its destination or exhaust the machine. Each refusal also checks that nothing at
//! all was left behind (no destination, no temporary directory, nothing escaped).

use crate::common;

use ebpkg_spec::types::Sha256Digest;
use std::fs;
use std::os::unix::fs::PermissionsExt;

use common::*;
use ebpkg_archive::{Limits, UnpackError, pack, unpack, verify_tree};
use ebpkg_spec::PackageName;
use tar::EntryType;
use tempfile::TempDir;

fn defaults() -> Limits {
    Limits::default()
}

#[test]
fn round_trip_restores_every_file_and_executable_bit() {
    let src = TempDir::new().unwrap();
    demo_package(src.path());
    let packed = pack(src.path()).unwrap();
    let site = Site::new();
    let unpacked = site.unpack(&packed.bytes, "demo", "1.0.0", &defaults()).unwrap();
    assert_eq!(unpacked.root, site.dest);
    assert_eq!(unpacked.manifest, packed.manifest);
    assert_eq!(unpacked.files, packed.files.len());
    assert_eq!(unpacked.bytes, packed.files.iter().map(|f| f.size).sum::<u64>());

    let normalized: Vec<_> =
        tree(src.path()).into_iter().map(|(p, c, m)| (p, c, if m & 0o111 != 0 { 0o755 } else { 0o644 })).collect();
    assert_eq!(tree(&site.dest), normalized);
    assert_eq!(fs::metadata(&site.dest).unwrap().permissions().mode() & 0o777, 0o755);
    // Only the destination was created beside it.
    let beside: Vec<_> = fs::read_dir(site.dest.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(beside, ["pkg"]);
}

/// Read in memory, a package has the manifest unpacking gives it, and only the
/// files the caller keeps, byte for byte; nothing is written anywhere.
#[test]
fn reading_in_memory_keeps_only_the_files_asked_for() {
    let src = TempDir::new().unwrap();
    demo_package(src.path());
    let packed = pack(src.path()).unwrap();
    let name = PackageName::new("demo").unwrap();
    let version = semver::Version::new(1, 0, 0);
    let archive = packed.archive();
    assert_eq!(archive.digest(), &packed.sha256);
    // README.md comes before ebpkg.toml in the archive, chains/ too, src/ after it:
    // kept or dropped alike once the manifest is read.
    let keep = |m: &ebpkg_spec::Manifest, rel: &str| {
        assert_eq!(m.package.name.as_str(), "demo", "asked with the manifest");
        rel == "README.md" || rel == "src/counter.bpf.c"
    };
    let files = ebpkg_archive::read_verified(&archive, &name, &version, &defaults(), keep).unwrap();
    assert_eq!(files.manifest, packed.manifest);
    assert_eq!(files.manifest_bytes(), MANIFEST.as_bytes());
    assert_eq!(files.file("README.md"), Some(&b"# demo\n"[..]));
    assert_eq!(files.file("src/counter.bpf.c"), Some(&b"int counter(void) { return 0; }\n"[..]));
    assert_eq!(files.file("chains/ddos.eclat"), None, "not kept");
    assert_eq!(files.file("tools/gen.sh"), None, "not kept");
    assert_eq!(files.files, packed.files.len());
    assert_eq!(files.bytes, packed.files.iter().map(|f| f.size).sum::<u64>());
    // The manifest is checked as unpacking checks it.
    let other = semver::Version::new(1, 0, 1);
    let err = ebpkg_archive::read_verified(&archive, &name, &other, &defaults(), |_, _| true).unwrap_err();
    let site = Site::new();
    let unpacked = site.unpack(&packed.bytes, "demo", "1.0.1", &defaults()).unwrap_err();
    assert_eq!(err.to_string(), unpacked.to_string());
}

#[test]
fn digest_mismatch_writes_nothing() {
    let src = TempDir::new().unwrap();
    demo_package(src.path());
    let packed = pack(src.path()).unwrap();
    let site = Site::new();
    // Not even the destination's missing parent is created.
    let dest = site.tmp.path().join("cache/ab/cd/pkg");
    let name = PackageName::new("demo").unwrap();
    let version = semver::Version::new(1, 0, 0);
    let wrong = Sha256Digest::of(b"another archive");
    let err = unpack(&packed.bytes, &wrong, &name, &version, &dest, &defaults()).unwrap_err();
    match &err {
        UnpackError::DigestMismatch { expected, actual } => {
            assert_eq!(*expected, wrong);
            assert_eq!(*actual, packed.sha256);
        }
        other => panic!("{other}"),
    }
    let text = err.to_string();
    assert!(text.contains(&wrong.to_hex()) && text.contains(&packed.sha256.to_hex()), "{text}");
    assert!(text.contains("tampered"), "{text}");
    site.assert_clean();
}

#[test]
fn an_existing_destination_is_reported_and_left_alone() {
    let src = TempDir::new().unwrap();
    demo_package(src.path());
    let packed = pack(src.path()).unwrap();
    let site = Site::new();
    fs::create_dir(&site.dest).unwrap();
    fs::write(site.dest.join("mine"), "keep").unwrap();
    let err = site.unpack(&packed.bytes, "demo", "1.0.0", &defaults()).unwrap_err();
    assert!(matches!(&err, UnpackError::DestinationExists { path } if *path == site.dest), "{err}");
    assert_eq!(tree(&site.dest), [("mine".to_owned(), b"keep".to_vec(), 0o644)]);
    let beside: Vec<_> = fs::read_dir(site.dest.parent().unwrap()).unwrap().collect();
    assert_eq!(beside.len(), 1, "no temporary directory left");
}

#[test]
fn files_without_directory_entries_and_explicit_directories_both_unpack() {
    let mut tar = RawTar::new();
    tar.file(b"demo-1.0.0/a/b/c.txt", b"deep").demo_manifest();
    let site = Site::new();
    site.unpack(&tar.finish(), "demo", "1.0.0", &defaults()).unwrap();
    assert_eq!(fs::read(site.dest.join("a/b/c.txt")).unwrap(), b"deep");

    let mut tar = RawTar::new();
    tar.dir(b"demo-1.0.0/")
        .dir(b"demo-1.0.0/a/")
        .dir(b"demo-1.0.0/a/empty/")
        .file(b"demo-1.0.0/a/x", b"x")
        .demo_manifest();
    let site = Site::new();
    site.unpack(&tar.finish(), "demo", "1.0.0", &defaults()).unwrap();
    assert!(site.dest.join("a/empty").is_dir());
    assert_eq!(fs::metadata(site.dest.join("a/empty")).unwrap().permissions().mode() & 0o7777, 0o755);
}

#[test]
fn modes_are_only_0644_or_0755() {
    let mut tar = RawTar::new();
    let mut header = RawTar::header(b"demo-1.0.0/suid", EntryType::Regular, 1);
    header.set_mode(0o4777);
    header.set_cksum();
    let mut header2 = RawTar::header(b"demo-1.0.0/world", EntryType::Regular, 1);
    header2.set_mode(0o666);
    header2.set_cksum();
    tar.raw(&header, b"x").raw(&header2, b"y").demo_manifest();
    let site = Site::new();
    site.unpack(&tar.finish(), "demo", "1.0.0", &defaults()).unwrap();
    let mode = |p: &str| fs::metadata(site.dest.join(p)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("suid"), 0o755);
    assert_eq!(mode("world"), 0o644);
}

fn unsafe_path(path: &[u8]) {
    let mut tar = RawTar::new();
    tar.demo_manifest().file(path, b"pwned");
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(err, UnpackError::UnsafePath { .. }), "{}: {err}", String::from_utf8_lossy(path));
}

#[test]
fn escaping_and_malformed_paths_are_refused() {
    unsafe_path(b"../escape");
    unsafe_path(b"../sentinel/escape");
    unsafe_path(b"/abs");
    unsafe_path(b"demo-1.0.0/../../sentinel/x");
    unsafe_path(b"demo-1.0.0/a/../../../x");
    unsafe_path(b"demo-1.0.0/./x");
    unsafe_path(b"demo-1.0.0//x");
    unsafe_path(b"demo-1.0.0/a\\..\\..\\x");
    unsafe_path(b"demo-1.0.0/\xff\xfe");
    unsafe_path(b"demo-1.0.0/line\nbreak");
    unsafe_path(b"demo-1.0.0/trailing/");
}

#[test]
fn paths_outside_the_prefix_are_refused() {
    for path in [&b"escape"[..], b"other-1.0.0/x", b"demo-1.0.1/ebpkg.toml", b"demo-1.0.0x/y", b"demo/ebpkg.toml"] {
        let mut tar = RawTar::new();
        tar.file(path, b"x").demo_manifest();
        let err = Site::new().refuse(&tar.finish(), &defaults());
        assert!(
            matches!(&err, UnpackError::OutsidePrefix { prefix, .. } if prefix == "demo-1.0.0"),
            "{}: {err}",
            String::from_utf8_lossy(path)
        );
    }
}

#[test]
fn long_name_and_pax_records_cannot_smuggle_a_path() {
    // GNU long name: the real path is in an `L` entry before a harmless header.
    let long = b"demo-1.0.0/../../sentinel/escape\0";
    let mut tar = RawTar::new();
    tar.demo_manifest()
        .raw(&RawTar::header(b"././@LongLink", EntryType::GNULongName, long.len() as u64), long)
        .file(b"demo-1.0.0/harmless", b"pwned");
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(&err, UnpackError::UnsafePath { path, .. } if path.contains("sentinel")), "{err}");

    // A NUL inside a long name.
    let long = b"demo-1.0.0/a\0b";
    let mut tar = RawTar::new();
    tar.demo_manifest()
        .raw(&RawTar::header(b"././@LongLink", EntryType::GNULongName, long.len() as u64), long)
        .file(b"demo-1.0.0/harmless", b"x");
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(err, UnpackError::UnsafePath { .. }), "{err}");

    // pax `path` record.
    let record = pax_record("path", "/tmp/escape");
    let mut tar = RawTar::new();
    tar.demo_manifest()
        .raw(&RawTar::header(b"PaxHeader", EntryType::XHeader, record.len() as u64), &record)
        .file(b"demo-1.0.0/harmless", b"pwned");
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(&err, UnpackError::UnsafePath { path, .. } if path == "/tmp/escape"), "{err}");

    // A pax global header is refused outright.
    let mut tar = RawTar::new();
    tar.demo_manifest()
        .raw(&RawTar::header(b"pax_global_header", EntryType::XGlobalHeader, record.len() as u64), &record);
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(err, UnpackError::UnsupportedEntry { .. }), "{err}");
}

/// One pax record, `<len> <key>=<value>\n`, where `len` counts the whole record.
fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while len.to_string().len() + body.len() != len {
        len += 1;
    }
    format!("{len}{body}").into_bytes()
}

/// A named way of adding entries to an archive.
type Case = (&'static str, fn(&mut RawTar));

#[test]
fn links_devices_and_other_entry_types_are_refused() {
    let cases: [Case; 6] = [
        ("symlink", |t| {
            t.link(b"demo-1.0.0/link", EntryType::Symlink, b"../../sentinel");
        }),
        ("symlink then a file through it", |t| {
            t.link(b"demo-1.0.0/link", EntryType::Symlink, b"../../../sentinel").file(b"demo-1.0.0/link/pwned", b"x");
        }),
        ("hard link", |t| {
            t.link(b"demo-1.0.0/hard", EntryType::Link, b"/etc/passwd");
        }),
        ("char device", |t| {
            t.raw(&RawTar::header(b"demo-1.0.0/null", EntryType::Char, 0), &[]);
        }),
        ("fifo", |t| {
            t.raw(&RawTar::header(b"demo-1.0.0/fifo", EntryType::Fifo, 0), &[]);
        }),
        ("block device", |t| {
            t.raw(&RawTar::header(b"demo-1.0.0/sda", EntryType::Block, 0), &[]);
        }),
    ];
    for (what, add) in cases {
        let mut tar = RawTar::new();
        tar.demo_manifest();
        add(&mut tar);
        let err = Site::new().refuse(&tar.finish(), &defaults());
        assert!(matches!(err, UnpackError::UnsupportedEntry { .. }), "{what}: {err}");
    }
}

#[test]
fn duplicate_and_conflicting_entries_are_refused() {
    let cases: [Case; 4] = [
        ("same file twice", |t| {
            t.file(b"demo-1.0.0/a", b"1").file(b"demo-1.0.0/a", b"2");
        }),
        ("file then directory", |t| {
            t.file(b"demo-1.0.0/a", b"1").dir(b"demo-1.0.0/a/");
        }),
        ("directory then file", |t| {
            t.dir(b"demo-1.0.0/a/").file(b"demo-1.0.0/a", b"1");
        }),
        ("file used as a directory", |t| {
            t.file(b"demo-1.0.0/a", b"1").file(b"demo-1.0.0/a/b", b"2");
        }),
    ];
    for (what, add) in cases {
        let mut tar = RawTar::new();
        tar.demo_manifest();
        add(&mut tar);
        let err = Site::new().refuse(&tar.finish(), &defaults());
        assert!(matches!(&err, UnpackError::Duplicate { path } if path.starts_with('a')), "{what}: {err}");
    }
    // Overwriting the manifest after it was read would be a duplicate too.
    let mut tar = RawTar::new();
    tar.demo_manifest().demo_manifest();
    assert!(matches!(Site::new().refuse(&tar.finish(), &defaults()), UnpackError::Duplicate { .. }));
}

#[test]
fn a_gzip_bomb_is_refused_by_its_compression_ratio() {
    // 16 MiB of zeros squeeze into a few KiB: far beyond 200:1.
    let mut tar = RawTar::new();
    tar.demo_manifest().file(b"demo-1.0.0/zeros", &vec![0u8; 16 << 20]);
    let bytes = tar.finish();
    assert!(bytes.len() < 100_000);
    let err = Site::new().refuse(&bytes, &defaults());
    assert!(matches!(err, UnpackError::CompressionRatio { limit: 200 }), "{err}");
}

#[test]
fn small_compressible_archives_are_not_taken_for_bombs() {
    let mut tar = RawTar::new();
    tar.demo_manifest().file(b"demo-1.0.0/zeros", &vec![0u8; 512 << 10]);
    Site::new().unpack(&tar.finish(), "demo", "1.0.0", &defaults()).unwrap();
}

#[test]
fn total_size_is_capped_on_bytes_really_decompressed() {
    let no_ratio = Limits { max_ratio: u64::MAX, ..defaults() };
    // File contents, as claimed by headers.
    let mut tar = RawTar::new();
    tar.demo_manifest().file(b"demo-1.0.0/a", &noise(40_000, 1)).file(b"demo-1.0.0/b", &noise(40_000, 2));
    let err = Site::new().refuse(&tar.finish(), &Limits { max_total_bytes: 64_000, ..no_ratio });
    assert!(matches!(err, UnpackError::TooLarge { limit: 64_000 }), "{err}");

    // A huge GNU long name: no file header counts it, the metered stream does.
    let long = noise(200_000, 3);
    let mut tar = RawTar::new();
    tar.demo_manifest()
        .raw(&RawTar::header(b"././@LongLink", EntryType::GNULongName, long.len() as u64), &long)
        .file(b"demo-1.0.0/x", b"x");
    let err = Site::new().refuse(&tar.finish(), &Limits { max_total_bytes: 100_000, ..no_ratio });
    assert!(matches!(err, UnpackError::TooLarge { limit: 100_000 }), "{err}");

    // Data after the end-of-archive blocks is metered too.
    let mut tar = RawTar::new();
    tar.demo_manifest();
    let mut stream = tar.bytes.clone();
    stream.extend(std::iter::repeat_n(0, 1024));
    stream.extend(noise(200_000, 4));
    let err = Site::new().refuse(&gzip(&stream), &Limits { max_total_bytes: 100_000, ..no_ratio });
    assert!(matches!(err, UnpackError::TooLarge { .. }), "{err}");
}

#[test]
fn per_file_size_and_entry_count_are_capped() {
    let mut tar = RawTar::new();
    tar.demo_manifest().file(b"demo-1.0.0/big", &noise(5000, 5));
    let err = Site::new().refuse(&tar.finish(), &Limits { max_file_bytes: 4096, ..defaults() });
    assert!(matches!(&err, UnpackError::FileTooLarge { path, size: 5000, limit: 4096 } if path.ends_with("big")));

    let mut tar = RawTar::new();
    tar.demo_manifest();
    for i in 0..10 {
        tar.file(format!("demo-1.0.0/f{i}").as_bytes(), b"x");
    }
    let err = Site::new().refuse(&tar.finish(), &Limits { max_entries: 5, ..defaults() });
    assert!(matches!(err, UnpackError::TooManyEntries { limit: 5 }), "{err}");
}

#[test]
fn headers_that_lie_about_sizes_are_refused() {
    // Claims more data than there is.
    let mut tar = RawTar::new();
    tar.demo_manifest().raw(&RawTar::header(b"demo-1.0.0/short", EntryType::Regular, 100_000), b"only this");
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(err, UnpackError::Corrupt { .. }), "{err}");

    // Claims an enormous size: refused before any byte is read.
    let mut tar = RawTar::new();
    tar.demo_manifest().raw(&RawTar::header(b"demo-1.0.0/huge", EntryType::Regular, 1 << 40), b"x");
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(err, UnpackError::FileTooLarge { size: 1_099_511_627_776, .. }), "{err}");

    // Claims less data than follows: the rest is read as a header, which is garbage.
    let mut tar = RawTar::new();
    tar.demo_manifest().raw(&RawTar::header(b"demo-1.0.0/long", EntryType::Regular, 10), &noise(2000, 6));
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(err, UnpackError::Corrupt { .. }), "{err}");
}

#[test]
fn truncated_and_garbage_archives_are_refused() {
    let src = TempDir::new().unwrap();
    demo_package(src.path());
    let bytes = pack(src.path()).unwrap().bytes;
    for cut in [bytes.len() / 2, bytes.len() - 4, 10, 0] {
        let err = Site::new().refuse(&bytes[..cut], &defaults());
        assert!(matches!(err, UnpackError::Corrupt { .. }), "cut at {cut}: {err}");
    }
    let mut flipped = bytes.clone();
    let crc = flipped.len() - 8;
    flipped[crc] ^= 1;
    assert!(matches!(Site::new().refuse(&flipped, &defaults()), UnpackError::Corrupt { .. }));
    let err = Site::new().refuse(b"this is not a gzip stream at all", &defaults());
    assert!(matches!(err, UnpackError::Corrupt { .. }), "{err}");
    // Plain tar, not gzipped.
    let mut tar = RawTar::new();
    tar.demo_manifest();
    assert!(matches!(Site::new().refuse(&tar.bytes, &defaults()), UnpackError::Corrupt { .. }));
}

#[test]
fn the_manifest_must_be_there_valid_and_name_the_expected_package() {
    let mut tar = RawTar::new();
    tar.file(b"demo-1.0.0/README.md", b"hi");
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(err, UnpackError::MissingManifest { .. }), "{err}");

    let mut tar = RawTar::new();
    tar.file(b"demo-1.0.0/ebpkg.toml", b"[package]\nname = 3\n");
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(err, UnpackError::InvalidManifest(_)), "{err}");

    for (name, version) in [("other", "1.0.0"), ("demo", "2.0.0"), ("demo", "1.0.0+build")] {
        let mut tar = RawTar::new();
        tar.file(b"demo-1.0.0/ebpkg.toml", manifest_for(name, version).as_bytes());
        let err = Site::new().refuse(&tar.finish(), &defaults());
        assert!(matches!(&err, UnpackError::WrongPackage { expected, .. } if expected == "demo 1.0.0"), "{err}");
    }

    // The exact spelling counts, not only the normalized name.
    let mut tar = RawTar::new();
    tar.file(b"my-pkg-1.0.0/ebpkg.toml", manifest_for("my_pkg", "1.0.0").as_bytes());
    let site = Site::new();
    let err = site.unpack(&tar.finish(), "my-pkg", "1.0.0", &defaults()).unwrap_err();
    assert!(matches!(err, UnpackError::WrongPackage { .. }), "{err}");
    site.assert_clean();

    let mut tar = RawTar::new();
    tar.file(b"demo-1.0.0/ebpkg.toml", MANIFEST.as_bytes()).file(b"demo-1.0.0/README.md", b"hi");
    let err = Site::new().refuse(&tar.finish(), &defaults());
    assert!(matches!(&err, UnpackError::MissingReferenced { path, .. } if path == "src/counter.bpf.c"), "{err}");
}

#[test]
fn an_archive_for_another_version_is_refused_by_its_prefix() {
    let src = TempDir::new().unwrap();
    demo_package(src.path());
    let bytes = pack(src.path()).unwrap().bytes;
    let site = Site::new();
    let err = site.unpack(&bytes, "demo", "1.0.1", &defaults()).unwrap_err();
    assert!(matches!(err, UnpackError::OutsidePrefix { .. }), "{err}");
    site.assert_clean();
}

/// A cached tree is checked against its archive before use: any change after
/// unpacking — an edited, truncated, extended, replaced, removed or added file, a
/// link in place of a file or directory — is found and named.
#[test]
fn verify_tree_finds_every_change_to_an_unpacked_tree() {
    let src = TempDir::new().unwrap();
    demo_package(src.path());
    let packed = pack(src.path()).unwrap();
    let name = PackageName::new("demo").unwrap();
    let version = semver::Version::new(1, 0, 0);
    type Change = fn(&std::path::Path);
    let changes: &[(&str, Change, &str)] = &[
        (
            "edited",
            |d| fs::write(d.join("src/counter.bpf.c"), b"int counter(void) { return 1; }\n").unwrap(),
            "content differs",
        ),
        ("truncated", |d| fs::write(d.join("src/counter.bpf.c"), b"int").unwrap(), "bytes, the archive's is"),
        ("removed", |d| fs::remove_file(d.join("README.md")).unwrap(), "the file is missing"),
        ("added", |d| fs::write(d.join("src/extra.h"), b"#define X 1\n").unwrap(), "the archive has no such file"),
        (
            "linked",
            |d| {
                let f = d.join("src/counter.bpf.c");
                let text = fs::read(&f).unwrap();
                fs::write(d.join("../elsewhere.c"), text).unwrap();
                fs::remove_file(&f).unwrap();
                std::os::unix::fs::symlink("../../elsewhere.c", &f).unwrap();
            },
            "it should be a regular file",
        ),
        (
            "dir linked",
            |d| {
                fs::rename(d.join("src"), d.join("../src-moved")).unwrap();
                std::os::unix::fs::symlink("../src-moved", d.join("src")).unwrap();
            },
            "src",
        ),
    ];
    for (what, change, expect) in changes {
        let site = Site::new();
        site.unpack(&packed.bytes, "demo", "1.0.0", &defaults()).unwrap();
        let manifest = verify_tree(&packed.bytes, &packed.sha256, &name, &version, &site.dest, &defaults()).unwrap();
        assert_eq!(manifest, packed.manifest, "parsed from the archive");
        change(&site.dest);
        let err = verify_tree(&packed.bytes, &packed.sha256, &name, &version, &site.dest, &defaults()).unwrap_err();
        assert!(matches!(err, UnpackError::TreeModified { .. }), "{what}: {err}");
        assert!(err.to_string().contains(expect), "{what}: {err}");
        assert!(err.to_string().contains("was changed after it was unpacked"), "{what}: {err}");
    }
}

#[test]
fn an_archive_larger_than_the_limit_is_refused_before_hashing() {
    let src = TempDir::new().unwrap();
    demo_package(src.path());
    let packed = pack(src.path()).unwrap();
    let site = Site::new();
    let small = Limits { max_archive_bytes: packed.bytes.len() as u64 - 1, ..defaults() };
    let err = site.unpack(&packed.bytes, "demo", "1.0.0", &small).unwrap_err();
    assert!(matches!(err, UnpackError::ArchiveTooLarge { .. }), "{err}");
    site.assert_clean();
}
