//! Kernel verification attestations end to end, on this machine's kernel: `ebpkg
//! attest` of a published version (verified by cosign as an in-toto attestation),
//! `ebpkg info` showing it, and `ebpkg install` reading them before it builds —
//! refusing a kernel an attestation saw refuse a program, noting (or, by
//! policy, refusing) a kernel none observed, and ignoring, with the reason, an
//! attestation by an untrusted key, for another archive, or changed after
//! signing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use base64::Engine;
use common::*;

const PREDICATE: &str = "https://ebpkg.dev/attestation/kernel-verification/v1";
const REBUILD: &str = "https://ebpkg.dev/attestation/rebuild/v1";

/// The attestation file of `name@version` in the sandbox's registry.
fn attestation_file(sb: &Sandbox, name: &str, version: &str) -> std::path::PathBuf {
    let target = ebpkg_spec::attestation::attestation_target(
        &ebpkg_spec::PackageName::new(name).unwrap(),
        &semver::Version::parse(version).unwrap(),
    );
    sb.path("registry").join(target)
}

/// The archive of `name@version` as the sandbox's registry holds it.
fn archive(sb: &Sandbox, name: &str, version: &str) -> Vec<u8> {
    let index = std::fs::read_to_string(sb.path("registry/index").join(ebpkg_spec::index_path(name))).unwrap();
    let line = index.lines().find(|l| l.contains(&format!("\"vers\":\"{version}\""))).unwrap();
    let entry: serde_json::Value = serde_json::from_str(line).unwrap();
    let cksum = entry["cksum"].as_str().unwrap();
    std::fs::read(sb.path("registry/archives").join(&cksum[..2]).join(format!("{cksum}.tar.gz"))).unwrap()
}

#[test]
fn an_attestation_verifies_with_cosign_and_info_and_install_show_it() {
    let (sb, app) = Sandbox::with_app_published("attok");
    let dir = sb.dir.path().to_owned();
    let out = sb.path("flow.attestation.json");
    let run = sb.run(&dir, &["attest", "flow@1.0.0", "--out", out.to_str().unwrap(), "--publish"]).ok();
    assert!(run.stdout.contains("| program `flow_match` | verified |"), "{}", run.stdout);
    assert!(run.stdout.contains("| program `flow_count` | verified |"), "{}", run.stdout);
    assert!(run.stderr.contains("Published the attestation of flow@1.0.0"), "{}", run.stderr);

    // cosign verifies it against the archive the registry serves, for its type.
    let archive_path = sb.path("flow-1.0.0.tar.gz");
    std::fs::write(&archive_path, archive(&sb, "flow", "1.0.0")).unwrap();
    let cosign = ebpkg_signing::testing::Cosign::locate(KEY_PASSWORD).unwrap();
    cosign
        .verify_blob_attestation(&dir, "keys/default.pub", "flow.attestation.json", PREDICATE, "flow-1.0.0.tar.gz")
        .unwrap();

    // What it states: this kernel, its BTF, each item with the verifier's count,
    // the object's digest and compiler.
    let bundle = ebpkg_signing::SignedAttestation::parse(&std::fs::read(&out).unwrap()).unwrap();
    let statement = bundle.statement();
    assert_eq!(statement.subject[0].name, "flow-1.0.0.tar.gz");
    assert_eq!(statement.subject.len(), 2, "the archive and the one object: {:?}", statement.subject);
    let k = &statement.predicate["kernels"][0];
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(k["kernel"]["release"], release.trim());
    let btf = ebpkg_spec::types::Sha256Digest::of(&std::fs::read("/sys/kernel/btf/vmlinux").unwrap());
    assert_eq!(k["kernel"]["btf"]["sha256"], btf.to_string());
    for item in k["items"].as_array().unwrap() {
        assert_eq!(item["verdict"], "verified", "{item}");
        assert!(item["insnsProcessed"].as_u64().unwrap() > 0, "{item}");
        assert!(item["object"]["compiler"].as_str().unwrap().contains("clang version"), "{item}");
        assert_eq!(item["tier"], "native", "{item}");
    }

    let info = sb.run(&dir, &["info", "flow"]).ok();
    assert!(info.stdout.contains("kernels (attested):"), "{}", info.stdout);
    assert!(info.stdout.contains("verified (2 items; native tier 2 of 2)"), "{}", info.stdout);
    assert!(info.stdout.contains("← this kernel"), "{}", info.stdout);

    let run = sb.run(&app, &["install", "--set", "DEVNAME=va", "--json"]).ok();
    assert!(run.stderr.contains("Attested flow@1.0.0 on this kernel: 2 item(s) verified"), "{}", run.stderr);
    assert!(run.stderr.contains("note: no trusted attestation covers this kernel"), "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let kernels = json["kernel_attestations"].as_array().unwrap();
    let status = |name: &str| {
        kernels.iter().find(|c| c["package"].as_str().unwrap().starts_with(name)).unwrap()["status"].clone()
    };
    assert_eq!(status("flow@"), "verified", "{kernels:?}");
    assert_eq!(status("verdict@"), "unattested", "{kernels:?}");
    sb.run(&app, &["uninstall"]).ok();

    // A mirror carries the attestation file byte for byte: an air-gapped
    // install judges the kernel as one from the origin does.
    let mirror = sb.path("mirror");
    sb.run(&app, &["mirror", mirror.to_str().unwrap()]).ok();
    let file = "attestations/fl/ow/flow/1.0.0.json";
    assert_eq!(std::fs::read(mirror.join(file)).unwrap(), std::fs::read(sb.path("registry").join(file)).unwrap());
    std::fs::rename(sb.path("registry"), sb.path("registry-away")).unwrap();
    let mut sb = sb;
    sb.cache = sb.path("cache-2");
    let url = format!("file://{}/", mirror.display());
    let run = sb.run_with(&app, &["--frozen", "install", "--set", "DEVNAME=va"], &[("EBPKG_MIRROR", &url)], None).ok();
    assert!(run.stderr.contains("Attested flow@1.0.0 on this kernel"), "{}", run.stderr);
    sb.run(&app, &["uninstall"]).ok();
}

#[test]
fn a_kernel_an_attestation_saw_refuse_a_program_is_refused_before_any_build() {
    let (sb, app) = Sandbox::with_app_published("attno");
    // Reads the port without checking the packet's end.
    sb.publish_flow_variant(
        "1.2.0",
        "\tif ((void *)(dport + 1) > end)\n\t\treturn hike_result(0);\n",
        "\t(void)end;\n",
    );
    let run = sb.run(sb.dir.path(), &["attest", "flow@1.2.0", "--publish"]).ok();
    assert!(run.stdout.contains("| program `flow_match` | REFUSED |"), "{}", run.stdout);
    assert!(
        run.stdout.contains("| program `flow_count` | verified |"),
        "the other program still loads: {}",
        run.stdout
    );
    assert!(run.stderr.contains("this kernel refused 1 of 2 item(s)"), "{}", run.stderr);

    // A fresh cache and no compiler: a build would fail, and say so.
    std::fs::remove_dir_all(&sb.cache).unwrap();
    let run =
        sb.run_with(&app, &["install", "--set", "DEVNAME=va"], &[("EBPKG_CLANG", "/nonexistent/clang")], None).fails(5);
    assert!(
        run.stderr.contains("flow@1.2.0 was refused by this kernel's verifier: program `flow_match`: "),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("(at flow.bpf.c:"), "the line is in the reason: {}", run.stderr);
    assert!(run.stderr.contains("nothing was built or installed"), "{}", run.stderr);
    assert!(!run.stderr.contains("clang"), "no compile was tried: {}", run.stderr);
    assert!(!sb.cache.join("objects").exists(), "nothing was built");
    assert_eq!(sb.status(), serde_json::json!([]));

    let info = sb.run(&app, &["info", "flow@1.2.0"]).ok();
    assert!(info.stdout.contains("refused: program `flow_match`"), "{}", info.stdout);
}

#[test]
fn the_trust_policy_can_refuse_a_kernel_no_attestation_observed() {
    let (sb, app) = Sandbox::with_app_published("attpol");
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert!(run.stderr.contains("note: no trusted attestation covers this kernel"), "{}", run.stderr);
    assert!(run.stderr.contains("flow@1.0.0"), "{}", run.stderr);
    sb.run(&app, &["uninstall"]).ok();

    // A trusted attestation of this release and machine whose BTF differs (another
    // build of the release) does not cover this kernel, and the note says that
    // only the BTF differs rather than "attested on" this very release.
    let out = sb.path("other-build.json");
    sb.run(sb.dir.path(), &["attest", "flow@1.0.0", "--out", out.to_str().unwrap()]).ok();
    let mut statement =
        ebpkg_signing::SignedAttestation::parse(&std::fs::read(&out).unwrap()).unwrap().statement().clone();
    let kernel = &mut statement.predicate["kernels"][0]["kernel"];
    let (release, machine) = (kernel["release"].as_str().unwrap().to_owned(), kernel["architecture"].clone());
    let here = ebpkg_spec::types::Sha256Digest::of(&std::fs::read("/sys/kernel/btf/vmlinux").unwrap());
    assert_eq!(kernel["btf"]["sha256"], here.to_string());
    let other = ebpkg_spec::types::Sha256Digest::of(b"the BTF of another build");
    kernel["btf"]["sha256"] = other.to_string().into();
    let pem = std::fs::read_to_string(sb.path("keys/default.key")).unwrap();
    let key = ebpkg_signing::SigningKey::from_encrypted_pem(&pem, KEY_PASSWORD.as_bytes()).unwrap();
    let bundle: serde_json::Value =
        serde_json::from_str(ebpkg_signing::attest(&key, &statement).unwrap().json()).unwrap();
    let file = attestation_file(&sb, "flow", "1.0.0");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, serde_json::json!({ "attestations": [bundle] }).to_string()).unwrap();
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    let says = format!(
        "flow@1.0.0 (attested on {release} ({}) with BTF sha256 {}…, but this kernel has the same release and machine \
         with BTF sha256 {}…: another build of that release, which those attestations do not cover)",
        machine.as_str().unwrap(),
        &other.to_hex()[..12],
        &here.to_hex()[..12]
    );
    assert!(run.stderr.contains(&says), "{}", run.stderr);
    sb.run(&app, &["uninstall"]).ok();

    let set = sb.run(sb.dir.path(), &["trust", "unattested-kernels", "refuse"]).ok();
    assert!(set.stderr.contains("Updated"), "{}", set.stderr);
    assert!(std::fs::read_to_string(sb.path("trust.toml")).unwrap().contains("[kernels]\nunattested = \"refuse\""));
    let listed = sb.run(sb.dir.path(), &["trust", "list"]).ok();
    assert!(listed.stdout.contains("unattested kernels: refuse"), "{}", listed.stdout);
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).fails(10);
    assert!(run.stderr.contains("the trust policy refuses unattested kernels"), "{}", run.stderr);
    assert!(run.stderr.contains("flow@1.0.0"), "{}", run.stderr);
    assert_eq!(sb.status(), serde_json::json!([]));

    // Attested, every package: installed.
    for p in ["flow@1.0.0", "verdict@1.0.0", "classify@1.0.0"] {
        sb.run(sb.dir.path(), &["attest", p, "--publish"]).ok();
    }
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    assert!(!run.stderr.contains("no trusted attestation"), "{}", run.stderr);
    sb.run(&app, &["uninstall"]).ok();
}

#[test]
fn attestations_that_do_not_hold_are_ignored_and_say_why() {
    let (sb, app) = Sandbox::with_app_published("attbad");
    let dir = sb.dir.path().to_owned();
    let good = sb.path("good.json");
    sb.run(&dir, &["attest", "flow@1.0.0", "--out", good.to_str().unwrap()]).ok();
    let good_json: serde_json::Value = serde_json::from_slice(&std::fs::read(&good).unwrap()).unwrap();

    // Signed by a key the trust policy does not trust for flow.
    sb.run(&dir, &["key", "generate", "--name", "stranger"]).ok();
    let stranger = sb.path("stranger.json");
    sb.run(&dir, &["attest", "flow@1.0.0", "--key", "stranger", "--out", stranger.to_str().unwrap()]).ok();
    // The registry itself refuses it: that key signed nothing of flow there.
    let refused = sb.run(&dir, &["attest", "flow@1.0.0", "--key", "stranger", "--publish"]).fails(10);
    assert!(refused.stderr.contains("signed no version of flow in this registry"), "{}", refused.stderr);

    // One byte of the statement changed after signing.
    let mut changed = good_json.clone();
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut payload = b64.decode(changed["dsseEnvelope"]["payload"].as_str().unwrap()).unwrap();
    let at = payload.windows(10).position(|w| w == b"\"verified\"").unwrap();
    payload[at + 1] = b'V';
    changed["dsseEnvelope"]["payload"] = b64.encode(&payload).into();

    // flow 1.0.1: the 1.0.0 attestation is for another archive.
    let pkg = sb.package("flow");
    let toml =
        std::fs::read_to_string(pkg.join("ebpkg.toml")).unwrap().replace("version = \"1.0.0\"", "version = \"1.0.1\"");
    std::fs::write(pkg.join("ebpkg.toml"), toml).unwrap();
    sb.publish(&pkg);

    // Written into the directory registry by hand, past its checks: an install
    // must judge each attestation on its own.
    let stranger_json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stranger).unwrap()).unwrap();
    let file = attestation_file(&sb, "flow", "1.0.1");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let all = serde_json::json!({ "attestations": [stranger_json, changed, good_json] });
    std::fs::write(&file, all.to_string()).unwrap();

    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).ok();
    let err = &run.stderr;
    assert!(err.contains("flow@1.0.1: ignored attestation 1: signed by key"), "{err}");
    assert!(err.contains("which the trust policy does not trust for flow"), "{err}");
    assert!(err.contains("flow@1.0.1: ignored attestation 2: the attestation's signature does not verify"), "{err}");
    assert!(err.contains("flow@1.0.1: ignored attestation 3: it is for another archive"), "{err}");
    assert!(err.contains("note: no trusted attestation covers this kernel"), "none of them counts: {err}");
    sb.run(&app, &["uninstall"]).ok();

    // A file the registry's TUF metadata does not vouch for is refused outright.
    let (_, _, online) = sb.tuf_init();
    let online = [("EBPKG_TUF_ONLINE_KEY", online.to_str().unwrap())];
    let signed = sb.run_with(&dir, &["attest", "flow@1.0.1", "--publish"], &online, None).ok();
    assert!(signed.stderr.contains("Published the attestation of flow@1.0.1"), "{}", signed.stderr);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.insert(bytes.len() - 2, b' ');
    std::fs::write(&file, bytes).unwrap();
    let run = sb.run(&app, &["install", "--set", "DEVNAME=va"]).fails(10);
    assert!(run.stderr.contains("attestations/"), "{}", run.stderr);
    assert_eq!(sb.status(), serde_json::json!([]));
}

/// Over HTTP, with the registry's TUF metadata trusted: `ebpkg attest
/// --publish` sends it to the server, `ebpkg info` shows it, and an install asks
/// the server for the attestation file of exactly the versions the signed
/// metadata says have one (none for the others) and uses it before building.
#[test]
fn over_http_with_tuf_attestations_are_published_and_read_before_building() {
    let keys = tempfile::tempdir().unwrap();
    let (root_key, online_key) = (keys.path().join("root.key"), keys.path().join("online.key"));
    let online = online_key.clone();
    let server =
        ebpkg_registry::testing::TestRegistry::start_with(Box::new(move |c| c.tuf_online_key = Some(online))).unwrap();
    let mut sb = Sandbox::with_netns("atthttp");
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    for p in ["flow", "verdict", "classify"] {
        let dir = sb.package(p);
        sb.publish(&dir);
    }
    server.block_on(ebpkg_registry::tuf::init(server.pool(), std::slice::from_ref(&root_key), 1, &online_key)).unwrap();
    let root = server
        .block_on(ebpkg_registry::db::tuf::all(server.pool()))
        .unwrap()
        .into_iter()
        .find(|(n, _)| n == "root.json")
        .unwrap()
        .1;
    std::fs::write(sb.path("root.json"), root).unwrap();
    let dir = sb.dir.path().to_owned();
    sb.run(&dir, &["registry", "add", "corp", server.url(), "--root", sb.path("root.json").to_str().unwrap()]).ok();

    let run = sb.run(&dir, &["attest", "flow@1.0.0", "--publish"]).ok();
    assert!(run.stderr.contains("Published the attestation of flow@1.0.0"), "{}", run.stderr);
    assert!(run.stderr.contains("(added; 1 attestation(s) for this version)"), "{}", run.stderr);
    let info = sb.run(&dir, &["info", "flow"]).ok();
    assert!(info.stdout.contains("verified (2 items; native tier 2 of 2)"), "{}", info.stdout);

    let app = sb.package("app");
    let run = sb.run(&app, &["-vv", "install", "--set", "DEVNAME=va"]).ok();
    assert!(run.stderr.contains("Attested flow@1.0.0 on this kernel"), "{}", run.stderr);
    let asked: Vec<String> = run.requests().into_iter().filter(|r| r.contains("/attestations")).collect();
    assert_eq!(asked, ["GET /api/v1/packages/flow/1.0.0/attestations → 200"], "{}", run.stderr);
    sb.run(&app, &["uninstall"]).ok();
}

#[test]
fn a_rebuild_attestation_verifies_with_cosign_and_vouches_for_shipped_objects() {
    let sb = Sandbox::with_netns("attrebuild");
    for p in ["flow", "verdict", "classify"] {
        sb.run(&sb.package(p), &["publish", "--with-objects", "--no-verify"]).ok();
    }
    let app = sb.package("app");
    let dir = sb.dir.path().to_owned();
    // A kernel verification of a version with shipped objects names each by the
    // source its manifest names, and the shipped object by its own path.
    let observed = sb.path("flow.attestation.json");
    sb.run(&dir, &["attest", "flow@1.0.0", "--out", observed.to_str().unwrap()]).ok();
    let bundle = ebpkg_signing::SignedAttestation::parse(&std::fs::read(&observed).unwrap()).unwrap();
    let statement = bundle.statement();
    let item = &statement.predicate["kernels"][0]["items"][0];
    assert_eq!(item["object"]["source"], "src/flow.bpf.c", "{item}");
    assert_eq!(item["object"]["shipped"], "prebuilt/xdp/src/flow.bpf.c.o", "{item}");
    assert_eq!(statement.subject[1].name, "flow@1.0.0/src_flow.bpf.c.xdp.o");
    let predicate = sb.path("flow.predicate.json");
    std::fs::write(&predicate, serde_json::to_vec(&statement.predicate).unwrap()).unwrap();
    common::assert_schema_valid("kernel-verification.schema.json", &predicate);

    // Shipped objects load only once rebuilt, and this node has no clang (nor
    // the verdicts the rebuilding machine keeps in its own build cache).
    sb.run(&dir, &["trust", "prebuilt-objects", "rebuilt"]).ok();
    let node_cache = sb.path("node-cache");
    let no_clang = [
        ("EBPKG_CLANG", "/nonexistent/clang"),
        ("PATH", "/usr/sbin:/sbin"),
        ("EBPKG_CACHE_DIR", node_cache.to_str().unwrap()),
    ];
    let run = sb.run_with(&app, &["install", "--set", "DEVNAME=va"], &no_clang, None).fails(12);
    assert!(run.stderr.contains("could not be rebuilt here"), "{}", run.stderr);
    assert!(run.stderr.contains("no trusted rebuild attestation vouches for it"), "{}", run.stderr);

    // A machine with the compiler rebuilds one version, signs what it found
    // and publishes it; cosign verifies it against the archive, for its type.
    let out = sb.path("flow.rebuild.json");
    let run = sb
        .run(&dir, &["verify", "--rebuild", "flow@1.0.0", "--sign", "--out", out.to_str().unwrap(), "--publish"])
        .ok();
    assert!(run.stdout.contains("match          flow@1.0.0 prebuilt/xdp/src/flow.bpf.c.o (xdp)"), "{}", run.stdout);
    assert!(run.stderr.contains("Published the rebuild attestation of flow@1.0.0"), "{}", run.stderr);
    std::fs::write(sb.path("flow-1.0.0.tar.gz"), archive(&sb, "flow", "1.0.0")).unwrap();
    let cosign = ebpkg_signing::testing::Cosign::locate(KEY_PASSWORD).unwrap();
    cosign
        .verify_blob_attestation(&dir, "keys/default.pub", "flow.rebuild.json", REBUILD, "flow-1.0.0.tar.gz")
        .unwrap();
    // Not as another type.
    assert!(
        cosign
            .verify_blob_attestation(&dir, "keys/default.pub", "flow.rebuild.json", PREDICATE, "flow-1.0.0.tar.gz")
            .is_err()
    );
    let bundle = ebpkg_signing::SignedAttestation::parse(&std::fs::read(&out).unwrap()).unwrap();
    let statement = bundle.statement();
    assert_eq!(statement.subject[0].name, "flow-1.0.0.tar.gz");
    assert_eq!(statement.subject[1].name, "flow@1.0.0/prebuilt_xdp_src_flow.bpf.c.o.xdp.o");
    let o = &statement.predicate["objects"][0];
    assert_eq!((o["result"].as_str(), o["source"].as_str()), (Some("match"), Some("src/flow.bpf.c")), "{o}");
    assert_eq!(o["rebuilt"]["sha256"], o["digest"]["sha256"], "{o}");
    // The registry's file holds it beside kernel verifications; it is no
    // kernel verification, so installs do not warn of it.
    assert!(std::fs::read_to_string(attestation_file(&sb, "flow", "1.0.0")).unwrap().contains("payload"));

    // The whole lockfile: the other two as well.
    let run = sb.run(&app, &["verify", "--rebuild", "--sign", "--publish"]).ok();
    assert!(run.stderr.contains("Verified 3 shipped object(s) of 3 package(s): 3 match"), "{}", run.stderr);
    assert!(run.stderr.contains("Published the rebuild attestation of classify@1.0.0"), "{}", run.stderr);

    // They were signed by the publisher's own key: a publisher vouching for
    // its own objects proves nothing, so the node without clang still refuses,
    // saying why each was left out, even with that key listed as a rebuilder.
    let publisher =
        *ebpkg_signing::PublicKey::from_pem(&std::fs::read_to_string(dir.join("keys/default.pub")).unwrap())
            .unwrap()
            .id();
    sb.run(&dir, &["trust", "rebuilder", "add", "default"]).ok();
    let run = sb.run_with(&app, &["install", "--set", "DEVNAME=va"], &no_clang, None).fails(12);
    assert!(run.stderr.contains("no trusted rebuild attestation vouches for it"), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "flow@1.0.0: ignored rebuild attestation 1: signed by key {publisher}, which signed the version itself"
        )),
        "{}",
        run.stderr
    );
    sb.run(&dir, &["trust", "rebuilder", "remove", "default"]).ok();

    // An independent rebuilder, with a key of its own that the registry holds
    // (a directory registry has no accounts: its keys/ directory is who it
    // knows), rebuilds and attests; not listed yet, it does not count either.
    sb.run(&dir, &["key", "generate", "--name", "rebuilder"]).ok();
    let pem = std::fs::read_to_string(dir.join("keys/rebuilder.pub")).unwrap();
    let rebuilder = *ebpkg_signing::PublicKey::from_pem(&pem).unwrap().id();
    std::fs::write(ebpkg_spec::cache_layout::key_file(&sb.path("registry"), &rebuilder), &pem).unwrap();
    let run = sb.run(&app, &["verify", "--rebuild", "--sign", "rebuilder", "--publish"]).ok();
    assert!(run.stderr.contains("Published the rebuild attestation of flow@1.0.0"), "{}", run.stderr);
    let run = sb.run_with(&app, &["install", "--set", "DEVNAME=va"], &no_clang, None).fails(12);
    assert!(
        run.stderr.contains(&format!("signed by key {rebuilder}, which the trust policy does not list as a rebuilder")),
        "{}",
        run.stderr
    );

    // Listed, it vouches for each shipped object, and the node without clang installs.
    sb.run(&dir, &["trust", "rebuilder", "add", "rebuilder"]).ok();
    assert!(sb.run(&dir, &["trust", "list"]).ok().stdout.contains(&format!("rebuilder {rebuilder}")));
    let run = sb.run_with(&app, &["install", "--set", "DEVNAME=va"], &no_clang, None).ok();
    assert!(
        run.stderr.contains(&format!(
            "Rebuilt prebuilt/xdp/src/flow.bpf.c.o of flow@1.0.0 matches its source (rebuild attestation by key \
             {rebuilder})"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
    sb.run(&app, &["uninstall"]).ok();
}
