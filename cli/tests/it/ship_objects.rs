//! `ebpkg publish --with-objects`: a package published with its portable objects
//! (prebuilt/, named in its ebpkg.toml, under the archive's digest and signature)
//! installs on a node with no clang and an empty build cache; `build = "local"`
//! packages are refused; the archive is reproducible and an item's own prebuilt
//! object is left alone; `ci/publish` ships objects unless --source-only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

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

    // --rebuild-attest: each version that ships objects rebuilt from what the
    // registry serves, the attestation signed and attached to it.
    let run = run_ci_publish(&sb, "--no-verify --rebuild-attest", &[&flow, &classify]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("match          flow@1.0.0 prebuilt/xdp/src/flow.bpf.c.o (xdp)"), "{}", run.stdout);
    assert!(run.stderr.contains("Published the rebuild attestation of flow@1.0.0"), "{}", run.stderr);
    assert!(!run.stderr.contains("attestation of classify@1.0.0"), "published as sources: {}", run.stderr);
    assert!(run.stderr.contains("ci/publish: 1 version(s) rebuilt and attested"), "{}", run.stderr);
    let attested = sb.path("registry").join(ebpkg_spec::attestation::attestation_target(
        &ebpkg_spec::PackageName::new("flow").unwrap(),
        &semver::Version::new(1, 0, 0),
    ));
    assert!(std::fs::read_to_string(attested).unwrap().contains("payload"));

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

/// A copy of fixture flow whose programs take `object` (bytes) as their shipped
/// object `objs/flow.o`, beside their unchanged source.
fn flow_shipping(sb: &Sandbox, object: &[u8]) -> PathBuf {
    let dir = sb.package("flow");
    std::fs::create_dir_all(dir.join("objs")).unwrap();
    std::fs::write(dir.join("objs/flow.o"), object).unwrap();
    let entry = format!("prebuilt = {{ object = \"objs/flow.o\", sha256 = \"{}\" }}", sha256_hex(object));
    let mut toml = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
    for p in ["flow_match", "flow_count"] {
        toml = toml.replacen(&format!("name = \"{p}\"\n"), &format!("name = \"{p}\"\n{entry}\n"), 1);
    }
    std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();
    dir
}

/// The object `ebpkg publish --with-objects` ships for fixture flow with its
/// source's `from` replaced by `to` (built as a publisher builds it).
fn flow_object_of_variant(sb: &Sandbox, from: &str, to: &str) -> Vec<u8> {
    let dir = sb.package("flow");
    let src = std::fs::read_to_string(dir.join("src/flow.bpf.c")).unwrap();
    assert!(src.contains(from), "flow.bpf.c has no {from:?}");
    std::fs::write(dir.join("src/flow.bpf.c"), src.replace(from, to)).unwrap();
    let out = sb.path(&format!("variant-{}.tar.gz", sha256_hex(to.as_bytes())));
    sb.run(&dir, &["publish", "--with-objects", "--dry-run", "--no-verify", "--out", out.to_str().unwrap()]).ok();
    std::fs::remove_dir_all(&dir).unwrap();
    archive_files(&std::fs::read(&out).unwrap())["prebuilt/xdp/src/flow.bpf.c.o"].clone()
}

#[test]
fn a_shipped_object_other_than_its_source_never_runs_natively() {
    let sb = Sandbox::with_netns("shipdiff");
    // Source `*n += 1`, shipped object built from `*n += 1000`.
    let other = flow_object_of_variant(&sb, "*n += 1;", "*n += 1000;");
    sb.publish(&flow_shipping(&sb, &other));
    for p in ["verdict", "classify"] {
        sb.publish(&sb.package(p));
    }
    let app = sb.package("app");
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert!(run.stderr.contains("Prebuilt objs/flow.o (xdp) of flow@1.0.0"), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "Interpreted chain guard (1): flow@1.0.0 ships objs/flow.o for flow_match, but its source \
             src/flow.bpf.c is other code (rebuilt with Debian clang version"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("so the chain stays on the VM, which runs the shipped object"), "{}", run.stderr);
    assert!(!run.stderr.contains("Native chain"), "{}", run.stderr);
    let status = sb.status();
    assert_eq!(status[0]["chains"][0]["tier"]["tier"], "interpreted", "{status}");
    // The VM runs the shipped object: each packet counts 1000.
    verdict(&sb, &udp4(53));
    verdict(&sb, &udp4(53));
    assert_eq!(flow_count_of(&sb, 0), 2000);

    // `verify --rebuild` finds it, and says so with exit 11.
    let dir = sb.dir.path().to_owned();
    let run = sb.run(&dir, &["verify", "--rebuild", "flow@1.0.0"]).fails(11);
    assert!(
        run.stdout.contains(
            "mismatch       flow@1.0.0 objs/flow.o (xdp) from src/flow.bpf.c: rebuilt with Debian clang \
             version"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("its source gives another object (sha256 "), "{}", run.stdout);
    assert!(run.stderr.contains("1 of 1 shipped object(s) are not what their source builds to"), "{}", run.stderr);
    let run = sb.run(&dir, &["verify", "--rebuild", "flow@1.0.0", "--json"]).fails(11);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let o = &json["objects"][0];
    assert_eq!((o["outcome"].as_str(), o["object"].as_str()), (Some("mismatch"), Some("objs/flow.o")), "{json}");
    assert_eq!(o["sha256"], sha256_hex(&other), "{json}");
    assert_ne!(o["rebuilt_sha256"], o["sha256"], "{json}");
    assert!(o["compiler"].as_str().unwrap().starts_with("Debian clang version 14"), "{json}");
    // Without the compiler the object names: it cannot be checked (exit 12), saying which is missing.
    let no_clang = [("EBPKG_CLANG", "/nonexistent/clang"), ("PATH", "/usr/sbin:/sbin")];
    let run = sb.run_with(&dir, &["verify", "--rebuild", "flow@1.0.0"], &no_clang, None).fails(12);
    assert!(run.stdout.contains("cannot-rebuild flow@1.0.0 objs/flow.o (xdp)"), "{}", run.stdout);
    assert!(run.stdout.contains("which is not installed here"), "{}", run.stdout);
    assert!(run.stdout.contains("apt-get install clang-14"), "{}", run.stdout);

    // A trust policy that loads shipped objects only once rebuilt refuses it
    // (exit 11), before anything is installed.
    sb.run(&dir, &["trust", "prebuilt-objects", "rebuilt"]).ok();
    let run = sb.run(&app, &["install", "--force"]).fails(11);
    assert!(
        run.stderr.contains("flow@1.0.0 ships objs/flow.o, which is not what its source builds to"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("[objects] prebuilt = \"rebuilt\""), "{}", run.stderr);
    assert!(!run.stderr.contains("Deploying"), "{}", run.stderr);
    assert_eq!(sb.status()[0]["generation"], 1, "the deployment is left as it was");
    // One that never loads them compiles the source, which then also runs natively.
    sb.run(&dir, &["trust", "prebuilt-objects", "never"]).ok();
    let run = sb.run(&app, &["install", "--force"]).ok();
    assert!(run.stderr.contains("Compiled src/flow.bpf.c (xdp) of flow@1.0.0"), "{}", run.stderr);
    assert!(!run.stderr.contains("Prebuilt objs/flow.o"), "{}", run.stderr);
    assert!(run.stderr.contains("Native chain guard"), "{}", run.stderr);
    sb.run(&dir, &["trust", "prebuilt-objects", "rebuilt"]).ok();

    // The same source shipping its own object (1.0.1): the chain goes native,
    // and a policy asking for rebuilt objects loads it once rebuilt here.
    let own = flow_object_of_variant(&sb, "*n += 1;", "*n += 1;");
    let dir = flow_shipping(&sb, &own);
    let toml =
        std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap().replace("version = \"1.0.0\"", "version = \"1.0.1\"");
    std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();
    sb.publish(&dir);
    std::fs::remove_file(app.join("ebpkg.lock")).unwrap();
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert!(run.stderr.contains("Prebuilt objs/flow.o (xdp) of flow@1.0.1"), "{}", run.stderr);
    assert!(
        run.stderr.contains("Rebuilt objs/flow.o of flow@1.0.1 from src/flow.bpf.c: rebuilt with Debian clang version"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("Native chain guard"), "{}", run.stderr);
    let before = flow_count_of(&sb, 0);
    verdict(&sb, &udp4(53));
    assert_eq!(flow_count_of(&sb, 0), before + 1);
    // status says the loaded object is the shipped one, rebuilt and matched here.
    let run = sb.run(sb.dir.path(), &["status", "--json"]).ok();
    let st: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let flow = st[0]["packages"].as_array().unwrap().iter().find(|p| p["name"] == "flow").unwrap();
    assert_eq!(flow["objects"][0]["origin"], "rebuilt-and-matched", "{}", run.stdout);
    assert_eq!(flow["objects"][0]["sha256"], sha256_hex(&own), "{}", run.stdout);
    let run = sb.run(sb.dir.path(), &["verify", "--rebuild", "flow@1.0.1"]).ok();
    assert!(run.stdout.contains("match          flow@1.0.1 objs/flow.o (xdp)"), "{}", run.stdout);
    sb.run(&app, &["uninstall"]).ok();
}

/// Counter `slot` of flow, as `status --maps --json` decodes it.
fn flow_count_of(sb: &Sandbox, slot: u64) -> u64 {
    let run = sb.run(sb.dir.path(), &["status", "--maps", "--json"]).ok();
    let st: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let m = st[0]["maps"].as_array().unwrap().iter().find(|m| m["map"] == "flow_counters").unwrap();
    m["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"]["slot"] == slot)
        .map_or(0, |e| e["value"]["packets"].as_u64().unwrap())
}
