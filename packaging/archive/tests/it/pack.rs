#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Packing: what goes into an archive, what is refused, and that the bytes depend on
//! nothing but the files' contents and executable bits.

use crate::common;

use ebpkg_spec::types::Sha256Digest;
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use common::*;
use ebpkg_archive::{PackError, PackLimits, pack, pack_with_limits};
use tempfile::TempDir;

fn packed_paths(dir: &Path) -> Vec<String> {
    pack(dir).unwrap().files.into_iter().map(|f| f.path).collect()
}

#[test]
fn same_tree_gives_same_bytes() {
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    let first = pack(a.path()).unwrap();
    let second = pack(a.path()).unwrap();
    assert_eq!(first.bytes, second.bytes);
    assert_eq!(first.sha256, Sha256Digest::of(&first.bytes));
    assert_eq!(first.file_name(), "demo-1.0.0.tar.gz");
}

#[test]
fn bytes_do_not_depend_on_mtimes_location_creation_order_or_read_bits() {
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    let expected = pack(a.path()).unwrap().bytes;

    // Another directory, the same files created in the opposite order, other
    // timestamps, and non-executable files with other permission bits.
    let other = TempDir::new().unwrap();
    let b = other.path().join("somewhere").join("else");
    let mut files = tree(a.path());
    files.reverse();
    for (rel, contents, mode) in &files {
        let path = b.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, contents).unwrap();
        let mode = if mode & 0o111 != 0 { 0o700 } else { 0o600 };
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        let file = fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_234_567_890)).unwrap();
    }
    assert_eq!(pack(&b).unwrap().bytes, expected);

    // Touching every file changes nothing either.
    for (rel, _, _) in &files {
        let file = fs::File::options().write(true).open(a.path().join(rel)).unwrap();
        file.set_modified(SystemTime::now()).unwrap();
    }
    assert_eq!(pack(a.path()).unwrap().bytes, expected);
}

#[test]
fn contents_and_executable_bits_do_change_the_bytes() {
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    let before = pack(a.path()).unwrap().sha256;
    fs::set_permissions(a.path().join("README.md"), fs::Permissions::from_mode(0o744)).unwrap();
    let exec = pack(a.path()).unwrap().sha256;
    assert_ne!(before, exec);
    fs::write(a.path().join("README.md"), "# demo!\n").unwrap();
    assert_ne!(exec, pack(a.path()).unwrap().sha256);
}

#[test]
fn headers_and_gzip_carry_no_machine_or_time_data() {
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    let packed = pack(a.path()).unwrap();
    // gzip: no FNAME/FCOMMENT flags, mtime 0, OS "unknown".
    assert_eq!(&packed.bytes[..4], &[0x1f, 0x8b, 8, 0]);
    assert_eq!(&packed.bytes[4..8], &[0, 0, 0, 0]);
    assert_eq!(packed.bytes[9], 255);

    let tar_bytes = gunzip(&packed.bytes);
    let mut archive = tar::Archive::new(tar_bytes.as_slice());
    let mut paths = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let header = entry.header();
        assert_eq!(header.entry_type(), tar::EntryType::Regular);
        assert_eq!(header.mtime().unwrap(), 0);
        assert_eq!(header.uid().unwrap(), 0);
        assert_eq!(header.gid().unwrap(), 0);
        assert_eq!(header.username_bytes().unwrap_or_default(), b"");
        assert_eq!(header.groupname_bytes().unwrap_or_default(), b"");
        let path = entry.path().unwrap().to_str().unwrap().to_owned();
        let mode = header.mode().unwrap();
        assert_eq!(mode, if path.ends_with("gen.sh") { 0o755 } else { 0o644 }, "{path}");
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        assert_eq!(data, fs::read(a.path().join(path.strip_prefix("demo-1.0.0/").unwrap())).unwrap());
        paths.push(path);
    }
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted, "entries are sorted bytewise");
    let expected: Vec<String> = packed.files.iter().map(|f| format!("demo-1.0.0/{}", f.path)).collect();
    assert_eq!(paths, expected);
}

#[test]
fn long_paths_are_packed() {
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    let deep = format!("{}/file.txt", ["d123456789"; 15].join("/"));
    write_files(a.path(), &[(&deep, b"deep")]);
    let packed = pack(a.path()).unwrap();
    assert!(packed.files.iter().any(|f| f.path == deep));
    let site = Site::new();
    site.unpack(&packed.bytes, "demo", "1.0.0", &Default::default()).unwrap();
    assert_eq!(fs::read(site.dest.join(&deep)).unwrap(), b"deep");
}

#[test]
fn build_outputs_vcs_data_backups_and_the_lockfile_are_left_out() {
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    write_files(
        a.path(),
        &[
            (".git/config", b"x"),
            ("vendor/lib/.git", b"gitdir: elsewhere"),
            ("target/debug/out", b"x"),
            ("build/prog.o", b"x"),
            (".ebpkg/cache", b"x"),
            ("ebpkg.lock", b"x"),
            ("src/counter.bpf.c~", b"x"),
            ("src/.counter.bpf.c.swp", b"x"),
            ("src/counter.o", b"x"),
            ("src/build/kept.c", b"kept: only the root's build/ is excluded"),
            ("src/target/kept.c", b"kept"),
        ],
    );
    // Inside an excluded directory even a link is of no concern.
    std::os::unix::fs::symlink("/etc/passwd", a.path().join("target/link")).unwrap();
    assert_eq!(
        packed_paths(a.path()),
        [
            "README.md",
            "chains/ddos.eclat",
            "ebpkg.toml",
            "src/build/kept.c",
            "src/counter.bpf.c",
            "src/target/kept.c",
            "tools/gen.sh"
        ]
    );
}

fn prebuilt_manifest(object: &str, digest: &str, with_source: bool) -> String {
    let source = if with_source { "source = \"src/p.bpf.c\"\n" } else { "" };
    format!(
        "[package]\nname = \"demo\"\nversion = \"1.0.0\"\n\n[[program]]\nname = \"p\"\n{source}hook = \"xdp\"\n\
         prebuilt = {{ object = \"{object}\", sha256 = \"{digest}\" }}\n"
    )
}

#[test]
fn prebuilt_objects_are_kept_even_in_excluded_places() {
    for object in ["obj/p.o", "build/p.o"] {
        let a = TempDir::new().unwrap();
        let elf = b"\x7fELF prebuilt";
        let manifest = prebuilt_manifest(object, &Sha256Digest::of(elf).to_hex(), false);
        write_files(a.path(), &[("ebpkg.toml", manifest.as_bytes()), (object, elf), ("obj/stray.o", b"x")]);
        let mut expected = vec!["ebpkg.toml", object];
        expected.sort();
        assert_eq!(packed_paths(a.path()), expected, "{object}");
    }
}

#[test]
fn prebuilt_object_with_wrong_digest_is_refused_unless_source_is_shipped() {
    let a = TempDir::new().unwrap();
    let wrong = Sha256Digest::of(b"something else").to_hex();
    let manifest = prebuilt_manifest("obj/p.o", &wrong, false);
    write_files(a.path(), &[("ebpkg.toml", manifest.as_bytes()), ("obj/p.o", b"\x7fELF")]);
    let err = pack(a.path()).unwrap_err();
    assert!(matches!(&err, PackError::PrebuiltMismatch { path, .. } if path == "obj/p.o"), "{err}");
    assert!(err.to_string().contains(&Sha256Digest::of(b"\x7fELF").to_hex()), "{err}");

    let manifest = prebuilt_manifest("obj/p.o", &wrong, true);
    write_files(a.path(), &[("ebpkg.toml", manifest.as_bytes()), ("src/p.bpf.c", b"int p;")]);
    assert_eq!(packed_paths(a.path()), ["ebpkg.toml", "obj/p.o", "src/p.bpf.c"]);
}

#[test]
fn symlinks_in_the_tree_are_refused_with_their_path() {
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    std::os::unix::fs::symlink("counter.bpf.c", a.path().join("src/alias.c")).unwrap();
    let err = pack(a.path()).unwrap_err();
    assert!(matches!(&err, PackError::Symlink { path } if path.ends_with("src/alias.c")), "{err}");
    assert!(err.to_string().contains("src/alias.c"));
}

#[test]
fn a_referenced_file_reached_through_a_symlinked_directory_is_refused() {
    let a = TempDir::new().unwrap();
    let manifest = prebuilt_manifest("build/p.o", &Sha256Digest::of(b"o").to_hex(), false);
    write_files(a.path(), &[("ebpkg.toml", manifest.as_bytes()), ("real/p.o", b"o")]);
    std::os::unix::fs::symlink("real", a.path().join("build")).unwrap();
    let err = pack(a.path()).unwrap_err();
    assert!(matches!(&err, PackError::Symlink { path } if path.ends_with("build")), "{err}");
}

#[test]
fn special_files_are_refused() {
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    let _socket = std::os::unix::net::UnixListener::bind(a.path().join("src/control.sock")).unwrap();
    let err = pack(a.path()).unwrap_err();
    assert!(matches!(&err, PackError::NotRegular { kind: "socket", path } if path.ends_with("control.sock")), "{err}");
}

#[test]
fn names_that_unpack_would_refuse_are_refused() {
    use std::os::unix::ffi::OsStrExt;
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    fs::write(a.path().join(std::ffi::OsStr::from_bytes(b"src/\xff.c")), "x").unwrap();
    assert!(matches!(pack(a.path()), Err(PackError::NonUtf8Name { .. })));

    let b = TempDir::new().unwrap();
    demo_package(b.path());
    write_files(b.path(), &[("src/a\\b.c", b"x")]);
    let err = pack(b.path()).unwrap_err();
    assert!(matches!(&err, PackError::BadName { problem: "contains a backslash", .. }), "{err}");
}

#[test]
fn missing_referenced_files_are_refused_naming_the_item() {
    let cases = [
        ("src/counter.bpf.c", "program `counter` (source)"),
        ("chains/ddos.eclat", "chain `ddos` (source)"),
        ("README.md", "package.readme"),
    ];
    for (remove, item_name) in cases {
        let a = TempDir::new().unwrap();
        demo_package(a.path());
        fs::remove_file(a.path().join(remove)).unwrap();
        let err = pack(a.path()).unwrap_err();
        assert!(
            matches!(&err, PackError::MissingReferenced { item, path } if item == item_name && path == remove),
            "{err}"
        );
        assert!(err.to_string().contains(item_name), "{err}");
    }
    // A directory where the manifest names a file.
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    fs::remove_file(a.path().join("README.md")).unwrap();
    fs::create_dir(a.path().join("README.md")).unwrap();
    assert!(matches!(pack(a.path()), Err(PackError::MissingReferenced { .. })));
}

#[test]
fn manifest_problems_are_reported_as_diagnostics() {
    let a = TempDir::new().unwrap();
    let err = pack(a.path()).unwrap_err();
    assert!(matches!(err, PackError::Manifest(ebpkg_spec::ManifestError::Io(_))), "{err}");

    write_files(a.path(), &[("ebpkg.toml", b"[package]\nname = \"demo\"\nvresion = \"1.0.0\"\n")]);
    let err = pack(a.path()).unwrap_err();
    assert!(matches!(err, PackError::Manifest(ebpkg_spec::ManifestError::Invalid { .. })), "{err}");
    assert!(err.render().contains("vresion"), "{}", err.render());
}

#[test]
fn size_and_count_limits_are_enforced() {
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    write_files(a.path(), &[("data/big.bin", &noise(4000, 1))]);
    let limits = PackLimits { max_total_bytes: 3000, ..PackLimits::default() };
    assert!(matches!(pack_with_limits(a.path(), &limits), Err(PackError::TooLarge { limit: 3000 })));
    let limits = PackLimits { max_files: 3, ..PackLimits::default() };
    assert!(matches!(pack_with_limits(a.path(), &limits), Err(PackError::TooManyFiles { limit: 3 })));
}

#[test]
fn an_archive_unpack_would_take_for_a_bomb_is_refused() {
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    write_files(a.path(), &[("data/zeros.bin", &vec![0u8; 8 << 20])]);
    let err = pack(a.path()).unwrap_err();
    assert!(matches!(&err, PackError::Unpackable { reason } if reason.contains("200")), "{err}");
}

/// A directory's tree digest: the same exactly when it would pack to the same
/// archive (files, contents, executable bits, name and version), without packing;
/// `ebpkg.toml` is hashed from the bytes given, not read again.
#[test]
fn the_tree_digest_changes_exactly_when_the_archive_would() {
    let digest = |dir: &Path| {
        let text = fs::read(dir.join("ebpkg.toml")).unwrap();
        let manifest = ebpkg_spec::Manifest::parse_bytes(&text, "ebpkg.toml").unwrap();
        ebpkg_archive::tree_digest(dir, &manifest, &text).unwrap()
    };
    let a = TempDir::new().unwrap();
    demo_package(a.path());
    let first = digest(a.path());
    assert_eq!(digest(a.path()), first, "deterministic");
    assert_ne!(first, pack(a.path()).unwrap().sha256, "not the archive's checksum");

    // What packing leaves out, and timestamps, change nothing.
    write_files(a.path(), &[("target/debug.o", b"built"), ("src/counter.bpf.c~", b"backup"), ("ebpkg.lock", b"")]);
    let past = SystemTime::now() - Duration::from_secs(3600);
    fs::File::options().write(true).open(a.path().join("README.md")).unwrap().set_modified(past).unwrap();
    assert_eq!(digest(a.path()), first);

    // What packing keeps does.
    type Change = fn(&Path);
    let changes: &[(&str, Change)] = &[
        ("content", |d| fs::write(d.join("README.md"), b"# demo, edited\n").unwrap()),
        ("executable bit", |d| fs::set_permissions(d.join("README.md"), fs::Permissions::from_mode(0o755)).unwrap()),
        ("new file", |d| write_files(d, &[("docs/more.md", b"more")])),
        ("renamed", |d| fs::rename(d.join("tools/gen.sh"), d.join("tools/gen2.sh")).unwrap()),
    ];
    for (what, change) in changes {
        let b = TempDir::new().unwrap();
        demo_package(b.path());
        assert_eq!(digest(b.path()), first, "{what}: another directory, the same files");
        change(b.path());
        assert_ne!(digest(b.path()), first, "{what}");
    }

    // ebpkg.toml's bytes are the caller's: the file is not read again.
    let text = fs::read(a.path().join("ebpkg.toml")).unwrap();
    let manifest = ebpkg_spec::Manifest::parse_bytes(&text, "ebpkg.toml").unwrap();
    fs::write(a.path().join("ebpkg.toml"), b"not read").unwrap();
    assert_eq!(ebpkg_archive::tree_digest(a.path(), &manifest, &text).unwrap(), first);

    // What packing refuses, it refuses.
    fs::write(a.path().join("ebpkg.toml"), &text).unwrap();
    fs::remove_file(a.path().join("chains/ddos.eclat")).unwrap();
    let err = ebpkg_archive::tree_digest(a.path(), &manifest, &text).unwrap_err();
    assert!(matches!(err, PackError::MissingReferenced { .. }), "{err}");
}
