//! `ebpkg publish --with-objects`: a package published with its portable objects
//! (prebuilt/, named in its ebpkg.toml, under the archive's digest and signature)
//! installs on a node with no clang and an empty build cache; `build = "local"`
//! packages are refused; the archive is reproducible and an item's own prebuilt
//! object is left alone; `ci/publish` ships objects unless --source-only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use common::*;

/// Every file of a package archive, by path inside the package.
fn archive_files(bytes: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let (_, rel) = path.split_once('/').unwrap();
        let rel = rel.to_owned();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        out.insert(rel, data);
    }
    out
}

/// The archive the sandbox's registry holds for the newest version of `name`.
fn published_archive(sb: &Sandbox, name: &str) -> BTreeMap<String, Vec<u8>> {
    let run = sb.run(sb.dir.path(), &["info", name, "--json"]).ok();
    let info: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let sum = info["entry"]["cksum"].as_str().unwrap().to_owned();
    archive_files(&std::fs::read(sb.path(&format!("registry/archives/{}/{sum}.tar.gz", &sum[..2]))).unwrap())
}

fn sha256_hex(bytes: &[u8]) -> String {
    ebpkg_spec::types::Sha256Digest::of(bytes).to_string()
}

/// Checks that `files` ship `object` for `items` of the package's manifest,
/// beside their `source`.
fn assert_ships(files: &BTreeMap<String, Vec<u8>>, object: &str, source: &str, items: &[&str]) {
    let obj = files.get(object).unwrap_or_else(|| panic!("{object} is not in the archive: {:?}", files.keys()));
    assert_eq!(&obj[..4], b"\x7fELF");
    let toml = String::from_utf8(files["ebpkg.toml"].clone()).unwrap();
    let entry = format!("prebuilt = {{ object = \"{object}\", sha256 = \"{}\" }}", sha256_hex(obj));
    assert_eq!(toml.matches(&entry).count(), items.len(), "{toml}");
    for item in items {
        let table = toml.split(&format!("name = \"{item}\"")).nth(1).unwrap().split("\n[[").next().unwrap();
        assert!(table.contains(&entry), "{item}: {toml}");
        assert!(table.contains(&format!("source = \"{source}\"")), "{item} keeps its source: {toml}");
    }
}

#[test]
fn packages_published_with_their_objects_install_without_clang() {
    let mut sb = Sandbox::with_netns("ship");
    for (p, object, verified) in [
        ("flow", "prebuilt/xdp/src/flow.bpf.c.o", 2),
        ("verdict", "prebuilt/xdp/src/verdict.bpf.c.o", 2),
        ("classify", "prebuilt/xdp/src/l3.bpf.c.o", 1),
    ] {
        let dir = sb.package(p);
        let before = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
        // With the kernel's verification, which must check the shipped object.
        let run = sb.run(&dir, &["publish", "--with-objects"]).ok();
        assert!(
            run.stderr.contains(&format!("Shipping 1 portable object(s) with {p}@1.0.0: {object}")),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains(&format!("Prebuilt {object} (xdp) of {p}@1.0.0")), "{}", run.stderr);
        assert!(run.stderr.contains(&format!("the kernel verified {verified} program(s)")), "{}", run.stderr);
        assert!(run.stderr.contains(&format!("Signed {p}@1.0.0")), "{}", run.stderr);
        // The package directory itself is left as it was.
        assert_eq!(std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap(), before);
        assert!(!dir.join("prebuilt").exists());
    }
    let flow = published_archive(&sb, "flow");
    assert_ships(&flow, "prebuilt/xdp/src/flow.bpf.c.o", "src/flow.bpf.c", &["flow_match", "flow_count"]);
    assert!(flow.contains_key("src/flow.bpf.c"), "the sources are shipped too");
    let verdict_pkg = published_archive(&sb, "verdict");
    assert_ships(&verdict_pkg, "prebuilt/xdp/src/verdict.bpf.c.o", "src/verdict.bpf.c", &["hike_drop", "hike_pass"]);
    assert_ships(
        &published_archive(&sb, "classify"),
        "prebuilt/xdp/src/l3.bpf.c.o",
        "src/l3.bpf.c",
        &["l3_classifier"],
    );

    // A node with no clang and nothing in its build cache.
    sb.cache = sb.path("node-cache");
    let app = sb.package("app");
    let no_clang = [("EBPKG_CLANG", "/nonexistent/clang")];
    let run = sb.run_with(&app, &["install", "--set", "DEVNAME=va"], &no_clang, None).ok();
    for (p, object) in [
        ("flow", "prebuilt/xdp/src/flow.bpf.c.o"),
        ("verdict", "prebuilt/xdp/src/verdict.bpf.c.o"),
        ("classify", "prebuilt/xdp/src/l3.bpf.c.o"),
    ] {
        assert!(run.stderr.contains(&format!("Prebuilt {object} (xdp) of {p}@1.0.0")), "{}", run.stderr);
    }
    assert!(!run.stderr.contains("Compiled"), "{}", run.stderr);
    assert!(run.stderr.contains("Attached va to app-1-classify-l3_classifier"), "{}", run.stderr);
    // A native chain is compiled from the sources: without clang the chain runs on the VM.
    assert!(run.stderr.contains("Interpreted chain guard (1): cannot find clang"), "{}", run.stderr);
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    assert_eq!(verdict(&sb, &udp4(53)), XDP_PASS);
    sb.run(&app, &["uninstall"]).ok();
    assert!(!sb.root.exists(), "uninstall leaves no pins: {:?}", sb.pins());

    // The same without the shipped objects: the node would need clang.
    let mut plain = Sandbox::with_netns("plain");
    for p in ["flow", "verdict", "classify"] {
        plain.publish(&plain.package(p));
    }
    plain.cache = plain.path("node-cache");
    let app = plain.package("app");
    let run = plain.run_with(&app, &["install", "--set", "DEVNAME=va"], &no_clang, None);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("cannot find clang"), "{}", run.stderr);
}

#[test]
fn with_objects_refuses_a_package_built_against_the_local_kernel() {
    let sb = Sandbox::new("shiplocal");
    let dir = sb.package("flow");
    let toml = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap().replacen(
        "\n[[program]]",
        "\n[package.kernel]\nbuild = \"local\"\n\n[[program]]",
        1,
    );
    std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();
    let run = sb.run(&dir, &["publish", "--with-objects", "--no-verify"]).fails(2);
    assert!(run.stderr.contains("flow@1.0.0 cannot be published --with-objects"), "{}", run.stderr);
    assert!(run.stderr.contains(&dir.join("ebpkg.toml").display().to_string()), "{}", run.stderr);
    assert!(run.stderr.contains("says `build = \"local\"` in [package.kernel]"), "{}", run.stderr);
    assert!(run.stderr.contains("Publish it without --with-objects"), "{}", run.stderr);
    assert!(!run.stderr.contains("Compiled"), "refused before building: {}", run.stderr);
    assert!(!sb.path("registry").exists(), "nothing published");
    // Without the flag it publishes as sources.
    sb.run(&dir, &["publish", "--no-verify"]).ok();
}

#[test]
fn shipped_archives_are_reproducible_and_an_items_own_prebuilt_is_kept() {
    let sb = Sandbox::new("shiprepro");
    let dir = sb.package("flow");
    let out = |name: &str| -> (PathBuf, Vec<u8>) {
        let path = sb.path(name);
        let p = path.to_str().unwrap().to_owned();
        sb.run(&dir, &["publish", "--with-objects", "--dry-run", "--no-verify", "--out", &p]).ok();
        let bytes = std::fs::read(&path).unwrap();
        (path, bytes)
    };
    let (_, first) = out("first.tar.gz");
    // Compiled again from nothing (same compiler), from another temporary copy:
    // the same bytes.
    std::fs::remove_dir_all(&sb.cache).unwrap();
    let (_, second) = out("second.tar.gz");
    assert_eq!(sha256_hex(&first), sha256_hex(&second), "packing with objects is reproducible");
    // Another machine's cache directory (another user's home): the same bytes,
    // and no path of the publisher's in them.
    let elsewhere = sb.path("another-home/.cache/ebpkg");
    let p = sb.path("elsewhere.tar.gz");
    let run = sb
        .cmd(&dir, &["publish", "--with-objects", "--dry-run", "--no-verify", "--out", p.to_str().unwrap()])
        .env("EBPKG_CACHE_DIR", &elsewhere)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let third_party = std::fs::read(&p).unwrap();
    assert_eq!(sha256_hex(&first), sha256_hex(&third_party), "the cache directory's path is not in the objects");
    let object = &archive_files(&first)["prebuilt/xdp/src/flow.bpf.c.o"];
    for path in [sb.cache.to_str().unwrap(), elsewhere.to_str().unwrap()] {
        assert!(!object.windows(path.len()).any(|w| w == path.as_bytes()), "{path} is in the shipped object");
    }
    let files = archive_files(&first);
    assert_ships(&files, "prebuilt/xdp/src/flow.bpf.c.o", "src/flow.bpf.c", &["flow_match", "flow_count"]);

    // flow_count ships an object of its own: it stays as written; flow_match gets one.
    let own = files["prebuilt/xdp/src/flow.bpf.c.o"].clone();
    std::fs::create_dir_all(dir.join("objs")).unwrap();
    std::fs::write(dir.join("objs/count.o"), &own).unwrap();
    let own_entry = format!("prebuilt = {{ object = \"objs/count.o\", sha256 = \"{}\" }}", sha256_hex(&own));
    let toml = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap().replacen(
        "name = \"flow_count\"\n",
        &format!("name = \"flow_count\"\n{own_entry}\n"),
        1,
    );
    std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();
    let (_, third) = out("third.tar.gz");
    let files = archive_files(&third);
    assert_ships(&files, "prebuilt/xdp/src/flow.bpf.c.o", "src/flow.bpf.c", &["flow_match"]);
    let manifest = String::from_utf8(files["ebpkg.toml"].clone()).unwrap();
    assert_eq!(manifest.matches("prebuilt = ").count(), 2, "{manifest}");
    let count = manifest.split("name = \"flow_count\"").nth(1).unwrap();
    assert!(count.starts_with(&format!("\n{own_entry}\n")), "{manifest}");
    assert_eq!(files["objs/count.o"], own);

    // An object holding a map the manifest does not declare is refused before
    // anything is packed, naming the package, the object and the map.
    let toml = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
    let undeclared =
        toml.replacen("[[program.map]]\nname = \"flow_counters\"", "[[program.map]]\nname = \"other_map\"", 1);
    assert_ne!(toml, undeclared);
    std::fs::write(dir.join("ebpkg.toml"), undeclared).unwrap();
    let p = sb.path("undeclared.tar.gz");
    let run = sb.run(&dir, &["publish", "--dry-run", "--no-verify", "--out", p.to_str().unwrap()]).fails(1);
    for says in ["flow@1.0.0: the prebuilt object objs/count.o", "defines the map `flow_counters`"] {
        assert!(run.stderr.contains(says), "`{says}` in:\n{}", run.stderr);
    }
    assert!(!p.exists(), "nothing packed");
}

fn ci_publish() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../ci/publish")
}

fn run_ci_publish(sb: &Sandbox, args: &str, dirs: &[&Path]) -> Run {
    let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    sb.shell(
        sb.dir.path(),
        &format!("EBPKG=\"$(command -v ebpkg)\" {} {args} {}", ci_publish().display(), dirs.join(" ")),
    )
}

#[test]
fn ci_publish_ships_objects_unless_source_only() {
    let sb = Sandbox::new("shipci");
    let flow = sb.package("flow");
    let verdict_dir = sb.package("verdict");
    // A local-kernel package is published as sources, with or without --source-only.
    let classify = sb.package("classify");
    let toml = std::fs::read_to_string(classify.join("ebpkg.toml")).unwrap().replacen(
        "\n[[loader]]",
        "\n[package.kernel]\nbuild = \"local\"\n\n[[loader]]",
        1,
    );
    std::fs::write(classify.join("ebpkg.toml"), toml).unwrap();

    let run = run_ci_publish(&sb, "--no-verify", &[&flow, &classify]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("Shipping 1 portable object(s) with flow@1.0.0"), "{}", run.stderr);
    assert!(!run.stderr.contains("with classify@1.0.0"), "{}", run.stderr);
    assert!(run.stderr.contains("Published classify@1.0.0"), "{}", run.stderr);
    assert!(published_archive(&sb, "flow").contains_key("prebuilt/xdp/src/flow.bpf.c.o"));
    assert!(!published_archive(&sb, "classify").keys().any(|k| k.starts_with("prebuilt/")));

    // Again: the same archive (skipped as already there).
    let again = run_ci_publish(&sb, "--no-verify", &[&flow, &classify]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.stderr.matches("has it already").count(), 2, "{}", again.stderr);

    let run = run_ci_publish(&sb, "--no-verify --source-only", &[&verdict_dir]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("Shipping"), "{}", run.stderr);
    let files = published_archive(&sb, "verdict");
    assert!(!files.keys().any(|k| k.starts_with("prebuilt/")), "{:?}", files.keys());
    assert!(!String::from_utf8(files["ebpkg.toml"].clone()).unwrap().contains("prebuilt"));

    // A version published before without its objects is not a change without a
    // version bump: it stays as it is.
    let again = run_ci_publish(&sb, "--no-verify", &[&verdict_dir]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stderr.contains("published without its objects"), "{}", again.stderr);
}
