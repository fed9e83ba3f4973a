//! A file registry on a real directory: publish, index, download, yank, search, and
//! the refusals that keep a registry consistent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use ebpkg_spec::types::Sha256Digest;
use std::fs;

use common::{name, pack, pack_described, pack_with, version};
use ebpkg_sources::{ErrorKind, FileRegistry, IndexFingerprint, MatchedOn, Registry, RegistryId, open_registry};
use ebpkg_spec::index::{IndexEntry, parse_index_file};
use ebpkg_spec::index_path;

fn registry(dir: &tempfile::TempDir) -> FileRegistry {
    FileRegistry::at(&dir.path().join("registry")).unwrap()
}

#[test]
fn publish_writes_the_archive_then_one_index_line() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let packed = pack_described(tmp.path(), "net", "1.0.0", "Verdicts for chains", &["xdp"], "hike_drop");

    let entry = reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    assert_eq!(entry, IndexEntry::from_manifest(&packed.manifest, packed.sha256));
    assert_eq!(entry.description.as_deref(), Some("Verdicts for chains"));
    assert_eq!(entry.keywords, ["xdp"]);

    let root = reg.root();
    assert_eq!(fs::read_to_string(root.join("config.json")).unwrap(), "{\"ebpkg-registry\":1}\n");
    let index_file = root.join("index").join(index_path("net"));
    assert_eq!(fs::read_to_string(&index_file).unwrap(), format!("{}\n", entry.to_line()));
    let hex = packed.sha256.to_hex();
    let archive = root.join("archives").join(&hex[..2]).join(format!("{hex}.tar.gz"));
    assert_eq!(archive, reg.archive_path(&packed.sha256));
    assert_eq!(fs::read(&archive).unwrap(), packed.bytes);

    assert_eq!(reg.index(&name("net")).unwrap(), Some(vec![entry.clone()]));
    let downloaded = reg.download(&entry).unwrap();
    assert_eq!(Sha256Digest::of(&downloaded), entry.cksum);
    assert_eq!(reg.names().unwrap(), [name("net")]);

    let second = pack(tmp.path(), "net", "1.1.0");
    let entry2 = reg.publish(&second.archive(), &second.manifest, None).unwrap();
    let lines = fs::read_to_string(&index_file).unwrap();
    assert_eq!(lines, format!("{}\n{}\n", entry.to_line(), entry2.to_line()), "appended in publication order");
}

#[test]
fn open_registry_gives_a_file_registry_for_file_urls() {
    let tmp = tempfile::tempdir().unwrap();
    let url = RegistryId::from_path(&tmp.path().join("reg")).unwrap();
    let reg = open_registry(&url, &ebpkg_sources::OpenOptions::default()).unwrap();
    assert_eq!(reg.url(), &url);
    let packed = pack(tmp.path(), "net", "1.0.0");
    reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    assert!(reg.index(&name("net")).unwrap().is_some());
    assert_eq!(reg.index(&name("meter")).unwrap(), None);
}

#[test]
fn a_published_version_is_never_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let first = pack(tmp.path(), "net", "1.0.0");
    reg.publish(&first.archive(), &first.manifest, None).unwrap();

    // Different content, same version.
    let again = pack_with(tmp.path(), "net", "1.0.0", "description = \"changed\"\n", &[]);
    let e = reg.publish(&again.archive(), &again.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::VersionExists { .. }), "{e}");
    let message = e.to_string();
    assert!(message.contains("net@1.0.0 is already published"), "{message}");
    assert!(message.contains("yanking does not free a version") && message.contains("bump the version"), "{message}");

    // Yanked versions stay taken; build metadata does not make a new version.
    reg.set_yanked(&name("net"), &version("1.0.0"), true).unwrap();
    assert!(matches!(
        reg.publish(&again.archive(), &again.manifest, None).unwrap_err().kind(),
        ErrorKind::VersionExists { .. }
    ));
    let build = pack(tmp.path(), "net", "1.0.0+build.2");
    assert!(matches!(
        reg.publish(&build.archive(), &build.manifest, None).unwrap_err().kind(),
        ErrorKind::VersionExists { .. }
    ));

    let entries = reg.index(&name("net")).unwrap().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].cksum, first.sha256);
    assert!(!reg.archive_path(&again.sha256).exists(), "a refused publish stores nothing");
}

#[test]
fn names_colliding_after_normalization_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let original = pack(tmp.path(), "my-pkg", "1.0.0");
    reg.publish(&original.archive(), &original.manifest, None).unwrap();

    let impostor = pack(tmp.path(), "my_pkg", "2.0.0");
    let e = reg.publish(&impostor.archive(), &impostor.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NameCollision { existing, .. } if existing.as_str() == "my-pkg"), "{e}");
    assert!(e.to_string().contains("already has the package `my-pkg`"), "{e}");

    // Lookups by either spelling find the published package, spelled as published.
    let entries = reg.index(&name("my_pkg")).unwrap().unwrap();
    assert_eq!(entries[0].name.as_str(), "my-pkg");
    assert_eq!(reg.names().unwrap(), [name("my-pkg")]);
}

#[test]
fn a_new_name_too_close_to_an_existing_one_is_refused_with_its_name() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let original = pack(tmp.path(), "ddos", "1.0.0");
    reg.publish(&original.archive(), &original.manifest, None).unwrap();
    for close in ["dd_os", "ddos_", "dd0s", "dd-0s"] {
        let impostor = pack(tmp.path(), close, "1.0.0");
        let e = reg.publish(&impostor.archive(), &impostor.manifest, None).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::NameTooClose { existing, .. } if existing.as_str() == "ddos"), "{e}");
        assert!(e.to_string().contains("too close to `ddos`") && e.to_string().contains("operator"), "{e}");
        assert!(reg.index(&name(close)).unwrap().is_none(), "{close}: nothing written");
    }
    // Names apart, and new versions of the existing package, are fine.
    for (apart, version) in [("ddos2", "1.0.0"), ("ddos", "1.1.0")] {
        let packed = pack(tmp.path(), apart, version);
        reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    }
}

#[test]
fn look_alike_runs_are_refused_unless_the_publisher_signed_the_existing_package() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let owner = ebpkg_signing::SigningKey::generate().unwrap();
    let other = ebpkg_signing::SigningKey::generate().unwrap();
    let signed = |key: &ebpkg_signing::SigningKey, bytes: &[u8]| ebpkg_sources::PublishSignature {
        bundle: ebpkg_signing::sign(key, bytes).unwrap(),
        key: key.public().clone(),
    };
    let meter = pack(tmp.path(), "meter", "1.0.0");
    reg.publish(&meter.archive(), &meter.manifest, Some(&signed(&owner, &meter.bytes))).unwrap();
    // `rn` passes for `m`, `3` for `e`: unsigned, or signed by someone else, refused with the name.
    for close in ["rneter", "rn3ter", "m3ter"] {
        let impostor = pack(tmp.path(), close, "1.0.0");
        for signature in [None, Some(signed(&other, &impostor.bytes))] {
            let e = reg.publish(&impostor.archive(), &impostor.manifest, signature.as_ref()).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::NameTooClose { existing, .. } if existing.as_str() == "meter"),
                "{e}"
            );
            assert!(e.to_string().contains("too close to `meter`") && e.to_string().contains("`rn` as `m`"), "{e}");
            assert!(reg.index(&name(close)).unwrap().is_none(), "{close}: nothing written");
        }
    }
    // The publisher of `meter` (who signed it) may publish a look-alike of their own package.
    let own = pack(tmp.path(), "rneter", "1.0.0");
    reg.publish(&own.archive(), &own.manifest, Some(&signed(&owner, &own.bytes))).unwrap();
    assert!(reg.index(&name("rneter")).unwrap().is_some());
}

#[test]
fn dash_underscore_lookup_reaches_other_index_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    // `a-_b` lives under `a-/_b/`; `a_-b` would live under `a_/-b/`.
    let packed = pack(tmp.path(), "a-_b", "0.1.0");
    reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    for spelling in ["a_-b", "a__b", "a--b", "a-_b"] {
        let found = reg.index(&name(spelling)).unwrap().unwrap();
        assert_eq!(found[0].name.as_str(), "a-_b", "{spelling}");
    }
    let other = pack(tmp.path(), "a__b", "0.2.0");
    assert!(matches!(
        reg.publish(&other.archive(), &other.manifest, None).unwrap_err().kind(),
        ErrorKind::NameCollision { .. }
    ));
}

#[test]
fn yank_and_unyank_change_only_that_line() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    for v in ["1.0.0", "1.1.0", "1.2.0"] {
        let packed = pack(tmp.path(), "net", v);
        reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    }
    let path = reg.root().join("index").join(index_path("net"));
    // A line of a future schema, which this ebpkg skips but must keep.
    let future = r#"{"v":2,"name":"net","vers":"9.0.0","new_field":true}"#;
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str(future);
    text.push('\n');
    fs::write(&path, &text).unwrap();
    let before: Vec<String> = text.lines().map(str::to_owned).collect();

    let yanked = reg.set_yanked(&name("net"), &version("1.1.0"), true).unwrap();
    assert!(yanked.yanked);
    let after: Vec<String> = fs::read_to_string(&path).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(after.len(), before.len());
    assert_eq!(after[0], before[0]);
    assert_eq!(after[1], yanked.to_line());
    assert_eq!(after[2..], before[2..]);

    let entries = reg.index(&name("net")).unwrap().unwrap();
    assert_eq!(entries.iter().map(|e| e.yanked).collect::<Vec<_>>(), [false, true, false]);
    // Everything else about the line is unchanged.
    let original = parse_index_file("net", before.join("\n").as_bytes()).strict().unwrap();
    assert!(original[1].check_update(&entries[1]).is_ok());

    // Idempotent, then back.
    assert_eq!(reg.set_yanked(&name("net"), &version("1.1.0"), true).unwrap(), yanked);
    let unyanked = reg.set_yanked(&name("net"), &version("1.1.0"), false).unwrap();
    assert!(!unyanked.yanked);
    assert_eq!(fs::read_to_string(&path).unwrap(), text, "yank then unyank restores the exact bytes");

    let e = reg.set_yanked(&name("net"), &version("3.0.0"), true).unwrap_err();
    assert!(e.to_string().contains("net@3.0.0 is not in the registry"), "{e}");
    assert!(e.to_string().contains("versions 1.0.0, 1.1.0, 1.2.0"), "{e}");
    let e = reg.set_yanked(&name("meter"), &version("1.0.0"), true).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NoSuchPackage { .. }), "{e}");
}

#[test]
fn search_ranks_name_matches_first() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let publish = |n: &str, v: &str, description: &str, keywords: &[&str], program: &str| {
        let packed = pack_described(tmp.path(), n, v, description, keywords, program);
        reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    };
    publish("meter", "1.0.0", "Token buckets", &["rate"], "tb_mon");
    publish("meter", "1.2.0", "Token buckets per flow", &["rate", "policing"], "tb_mon");
    publish("meter-extra", "0.1.0", "More buckets", &["rate"], "tb_extra");
    publish("ip6-meter", "1.0.0", "IPv6 metering", &[], "ip6_mon");
    publish("policer", "1.0.0", "Drops what is out of profile", &["meter"], "drop_oop");
    publish("counters", "1.0.0", "Counts packets", &[], "meter_count");
    publish("monitor", "1.0.0", "Feeds a METER with events", &[], "events");
    publish("unrelated", "1.0.0", "Nothing to see", &[], "nothing");

    let hits = reg.search("Meter", 20).unwrap();
    let got: Vec<(&str, MatchedOn)> = hits.iter().map(|h| (h.name.as_str(), h.matched_on)).collect();
    assert_eq!(
        got,
        [
            ("meter", MatchedOn::Name),
            ("meter-extra", MatchedOn::NamePrefix),
            ("ip6-meter", MatchedOn::NameSubstring),
            ("policer", MatchedOn::Keyword),
            ("counters", MatchedOn::Program),
            ("monitor", MatchedOn::Description),
        ]
    );
    let meter = &hits[0];
    assert_eq!(meter.version, version("1.2.0"));
    assert_eq!(meter.description.as_deref(), Some("Token buckets per flow"));
    assert_eq!(meter.keywords, ["rate", "policing"]);
    assert_eq!(meter.programs.iter().map(|p| p.as_str()).collect::<Vec<_>>(), ["tb_mon"]);

    assert_eq!(reg.search("meter", 2).unwrap().len(), 2);
    assert_eq!(reg.search("meter_extra", 10).unwrap()[0].matched_on, MatchedOn::Name, "names compare normalized");
    assert!(reg.search("no such thing", 10).unwrap().is_empty());
    let all = reg.search("", 100).unwrap();
    assert_eq!(all.len(), 7);
    assert!(all.iter().all(|h| h.matched_on == MatchedOn::Everything));
    assert!(all.windows(2).all(|w| w[0].name < w[1].name));
}

#[test]
fn search_describes_the_newest_usable_version() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    for v in ["1.0.0", "1.1.0", "2.0.0-rc.1"] {
        let packed = pack(tmp.path(), "net", v);
        reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    }
    let hit = |reg: &FileRegistry| reg.search("net", 1).unwrap().remove(0);
    assert_eq!(hit(&reg).version, version("1.1.0"), "stable before pre-release");
    reg.set_yanked(&name("net"), &version("1.1.0"), true).unwrap();
    assert_eq!(hit(&reg).version, version("1.0.0"));
    reg.set_yanked(&name("net"), &version("1.0.0"), true).unwrap();
    assert_eq!(hit(&reg).version, version("2.0.0-rc.1"), "a pre-release before a yanked version");
    reg.set_yanked(&name("net"), &version("2.0.0-rc.1"), true).unwrap();
    let all_yanked = hit(&reg);
    assert_eq!(all_yanked.version, version("2.0.0-rc.1"));
    assert!(all_yanked.yanked);
}

#[test]
fn search_skips_a_corrupt_index_file_and_non_index_files() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    for n in ["net", "meter"] {
        let packed = pack(tmp.path(), n, "1.0.0");
        reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    }
    fs::write(reg.root().join("index").join(index_path("meter")), "garbage\n").unwrap();
    fs::write(reg.root().join("index").join("README"), "not a package\n").unwrap();
    fs::write(reg.root().join("index/3/n/.tmp-abc"), "half a line").unwrap();
    let hits = reg.search("", 10).unwrap();
    assert_eq!(hits.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["net"]);
    assert_eq!(reg.index(&name("meter")).unwrap(), Some(vec![]), "no usable line");
    // A writer refuses to add to a file it cannot fully read.
    let packed = pack(tmp.path(), "meter", "1.1.0");
    let e = reg.publish(&packed.archive(), &packed.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::CorruptIndex { .. }));
    assert!(e.to_string().contains("is corrupt: line 1: not an index entry"), "{e}");
}

#[test]
fn a_bad_index_line_costs_only_that_line() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let mut lines = Vec::new();
    for v in ["1.0.0", "1.1.0", "1.2.0"] {
        let packed = pack(tmp.path(), "net", v);
        lines.push(reg.publish(&packed.archive(), &packed.manifest, None).unwrap().to_line());
    }
    let index_file = reg.root().join("index").join(index_path("net"));
    // Line 2 truncated, line 3's checksum in uppercase (SPEC §6: lowercase only).
    let upper = {
        let entry = IndexEntry::parse_line(&lines[2]).unwrap().unwrap();
        lines[2].replace(&entry.cksum.to_hex(), &entry.cksum.to_hex().to_uppercase())
    };
    let damaged = format!("{}\n{}\n{}\n", lines[0], &lines[1][..lines[1].len() / 2], upper);
    fs::write(&index_file, damaged).unwrap();
    let versions: Vec<String> = reg.index(&name("net")).unwrap().unwrap().iter().map(|e| e.vers.to_string()).collect();
    assert_eq!(versions, ["1.0.0"]);
    let entry = IndexEntry::parse_line(&lines[0]).unwrap().unwrap();
    assert_eq!(Sha256Digest::of(&reg.download(&entry).unwrap()), entry.cksum);
    let packed = pack(tmp.path(), "net", "1.3.0");
    let e = reg.publish(&packed.archive(), &packed.manifest, None).unwrap_err();
    assert!(e.to_string().contains("line 2:"), "{e}");
}

/// What an attacker with write access to a file registry can leave where an
/// archive or an index file should be: each is refused at once, without reading it.
#[test]
fn devices_fifos_and_huge_files_in_a_registry_are_refused_unread() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let packed = pack(tmp.path(), "net", "1.0.0");
    let entry = reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    let archive = reg.archive_path(&entry.cksum);

    let expect_damaged = |what: &str| {
        let started = std::time::Instant::now();
        let e = reg.download(&entry).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::DamagedRegistry { .. }), "{e}");
        assert!(e.to_string().contains(what), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "read, not refused");
    };
    fs::remove_file(&archive).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &archive).unwrap();
    expect_damaged("is a character device, not a regular file");
    fs::remove_file(&archive).unwrap();
    rustix::fs::mkfifoat(rustix::fs::CWD, &archive, rustix::fs::Mode::from_raw_mode(0o644)).unwrap();
    expect_damaged("is a named pipe");
    fs::remove_file(&archive).unwrap();
    fs::File::create(&archive).unwrap().set_len(50 << 30).unwrap();
    expect_damaged("53687091200 bytes, more than the 100663296 bytes");

    let index_file = reg.root().join("index").join(index_path("net"));
    fs::remove_file(&index_file).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &index_file).unwrap();
    let e = reg.index(&name("net")).unwrap_err();
    assert!(e.to_string().contains("is a character device"), "{e}");
    let config = reg.root().join("config.json");
    fs::remove_file(&config).unwrap();
    rustix::fs::mkfifoat(rustix::fs::CWD, &config, rustix::fs::Mode::from_raw_mode(0o644)).unwrap();
    let e = reg.names().unwrap_err();
    assert!(e.to_string().contains("config.json is a named pipe"), "{e}");
}

#[test]
fn only_empty_or_registry_directories_are_published_into() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("home");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("notes.txt"), "mine").unwrap();
    let reg = FileRegistry::at(&dir).unwrap();
    let packed = pack(tmp.path(), "net", "1.0.0");
    let e = reg.publish(&packed.archive(), &packed.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotARegistry { .. }), "{e}");
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "nothing was written there");

    // Reading a directory that is not a registry says so.
    let e = reg.index(&name("net")).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NoRegistry { .. }), "{e}");
    assert!(e.to_string().contains("config.json is missing"), "{e}");

    // An existing empty directory becomes a registry.
    let empty = tmp.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    FileRegistry::at(&empty).unwrap().publish(&packed.archive(), &packed.manifest, None).unwrap();

    // A newer registry format is not guessed at.
    fs::write(empty.join("config.json"), "{\"ebpkg-registry\":2}").unwrap();
    let e = FileRegistry::at(&empty).unwrap().names().unwrap_err();
    assert!(e.to_string().contains("upgrade ebpkg"), "{e}");
}

#[test]
fn archive_and_manifest_must_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let net = pack(tmp.path(), "net", "1.0.0");
    let other = pack_with(tmp.path(), "net", "1.0.0", "description = \"not what was packed\"\n", &[]);

    let e = reg.publish(&net.archive(), &other.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::ManifestMismatch { .. }), "{e}");
    assert!(e.to_string().contains("differs from the archive's ebpkg.toml in [package]"), "{e}");

    let meter = pack(tmp.path(), "meter", "1.0.0");
    let e = reg.publish(&meter.archive(), &net.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::InvalidArchive { .. }), "{e}");
    assert!(e.to_string().contains("`meter-1.0.0/ebpkg.toml` is not under `net-1.0.0/`"), "{e}");

    let junk = b"not a tar.gz".to_vec();
    let digest = ebpkg_spec::types::Sha256Digest::of(&junk);
    let junk = ebpkg_archive::VerifiedArchive::check(junk, &digest, &Default::default()).unwrap();
    let e = reg.publish(&junk, &net.manifest, None).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::InvalidArchive { .. }), "{e}");
    assert!(!reg.root().join("index").exists(), "nothing was published");
}

#[test]
fn dependency_registries_are_recorded_by_their_canonical_url() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let packed = pack_with(
        tmp.path(),
        "guard",
        "1.0.0",
        "\n[dependencies]\nmeter = { version = \"1\", registry = \"https://registry.example.org\" }\n",
        &[],
    );
    let entry = reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    assert_eq!(entry.deps[0].registry.as_ref().map(RegistryId::as_str), Some("https://registry.example.org/"));
    let line = fs::read_to_string(reg.root().join("index").join(index_path("guard"))).unwrap();
    assert!(line.contains(r#""registry":"https://registry.example.org/""#), "{line}");

    // A file:// URL naming another host, which no installer can reach, is refused
    // where the manifest is read: such a package is never packed, so never published.
    let text = "[package]\nname = \"guard2\"\nversion = \"1.0.0\"\n[dependencies]\nmeter = { version = \"1\", registry = \"file://elsewhere/reg\" }\n";
    let e = ebpkg_spec::Manifest::parse(text, "ebpkg.toml").unwrap_err().to_string();
    assert!(e.contains("dependency `meter`: `file://elsewhere/reg` is not a registry URL"), "{e}");
    assert!(e.contains("remove the host name"), "{e}");
}

#[test]
fn a_missing_archive_is_reported_as_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let packed = pack(tmp.path(), "net", "1.0.0");
    let entry = reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    fs::remove_file(reg.archive_path(&entry.cksum)).unwrap();
    let e = reg.download(&entry).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::ArchiveMissing { .. }), "{e}");
    assert!(e.to_string().contains("lists net@1.0.0, but its archive"), "{e}");
}

#[test]
fn a_registry_that_requires_signatures_refuses_unsigned_and_badly_signed_publishes() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let first = pack(tmp.path(), "net", "1.0.0");
    reg.publish(&first.archive(), &first.manifest, None).unwrap();
    let config = reg.root().join("config.json");
    fs::write(&config, "{\"ebpkg-registry\":1,\"require-signatures\":true}\n").unwrap();
    let index_file = reg.root().join("index").join(index_path("net"));
    let before = fs::read(&index_file).unwrap();

    let next = pack(tmp.path(), "net", "1.1.0");
    let err = reg.publish(&next.archive(), &next.manifest, None).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::UnsignedRefused { .. }), "{err}");
    assert!(err.to_string().contains("require-signatures"), "{err}");

    // Signed, but the bundle signs other bytes.
    let key = ebpkg_signing::SigningKey::generate().unwrap();
    let wrong = ebpkg_sources::PublishSignature {
        bundle: ebpkg_signing::sign(&key, &first.bytes).unwrap(),
        key: key.public().clone(),
    };
    assert!(reg.publish(&next.archive(), &next.manifest, Some(&wrong)).is_err());
    assert_eq!(fs::read(&index_file).unwrap(), before, "nothing was published");
    assert!(!reg.archive_path(&next.sha256).exists());

    let signed = ebpkg_sources::PublishSignature {
        bundle: ebpkg_signing::sign(&key, &next.bytes).unwrap(),
        key: key.public().clone(),
    };
    let entry = reg.publish(&next.archive(), &next.manifest, Some(&signed)).unwrap();
    assert_eq!(entry.signed_by.as_ref(), Some(key.public().id()));
    let record = reg.publisher_key(key.public().id()).unwrap();
    assert_eq!(record.key.id(), key.public().id());
}

#[test]
fn the_text_read_carries_the_fingerprint_of_the_file_read_once_settled() {
    let tmp = tempfile::tempdir().unwrap();
    let reg = registry(&tmp);
    let packed = pack(tmp.path(), "net", "1.0.0");
    reg.publish(&packed.archive(), &packed.manifest, None).unwrap();
    let net = name("net");
    // Just written: no fingerprint is trusted, before or after a read.
    assert_eq!(reg.index_fingerprint(&net).unwrap(), None);
    assert_eq!(reg.index_text(&net).unwrap().unwrap().fingerprint, None);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let before = reg.index_fingerprint(&net).unwrap().expect("settled");
    let text = reg.index_text(&net).unwrap().unwrap();
    assert_eq!(text.fingerprint, Some(before), "the file read is the file fingerprinted");
    assert!(matches!(before, IndexFingerprint::File { size, .. } if size == text.bytes.len() as u64));
    // Replaced by a rename (another file where the path was): another fingerprint,
    // and none while the new file is fresh.
    let file = reg.root().join("index").join(index_path("net"));
    let copy = file.with_extension("new");
    fs::write(&copy, &text.bytes).unwrap();
    fs::rename(&copy, &file).unwrap();
    assert_eq!(reg.index_fingerprint(&net).unwrap(), None);
    assert_eq!(reg.index_text(&net).unwrap().unwrap().fingerprint, None);
    assert_eq!(reg.index_fingerprint(&name("absent")).unwrap(), None);
}
