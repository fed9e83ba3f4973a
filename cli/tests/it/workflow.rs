//! The user's path through the CLI: init, add, write a chain, install; new
//! program packages with their test; publish, search, info; mirrors for
//! air-gapped hosts; hostile archives; doctor.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;

fn publish_fixtures(sb: &Sandbox) {
    for p in ["flow", "verdict", "classify"] {
        let dir = sb.package(p);
        sb.publish(&dir);
    }
}

#[test]
fn from_an_empty_directory_to_a_running_chain() {
    let sb = Sandbox::with_netns("init");
    publish_fixtures(&sb);
    let dir = sb.path("edge-guard");
    std::fs::create_dir_all(&dir).unwrap();
    let run = sb.run(&dir, &["init"]).ok();
    assert!(run.stderr.contains("Created chain package `edge-guard`"), "{}", run.stderr);
    // Comments in the manifest survive edits.
    let manifest = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
    std::fs::write(dir.join("ebpkg.toml"), format!("# our edge\n{manifest}")).unwrap();

    let run = sb.run(&dir, &["add", "flow", "verdict", "classify"]).ok();
    assert!(run.stderr.contains("Adding flow ^1.0.0"), "{}", run.stderr);
    let manifest = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
    assert!(manifest.starts_with("# our edge\n"), "{manifest}");
    assert!(manifest.contains("flow = \"^1.0.0\""), "{manifest}");
    assert!(dir.join("ebpkg.lock").exists());

    let run = sb.run(&dir, &["add", "flw"]).fails(6);
    assert!(run.stderr.contains("package `flw` is not in"), "{}", run.stderr);
    assert!(run.stderr.contains("did you mean `flow`?"), "{}", run.stderr);

    std::fs::copy(fixtures().join("e2e/app/chains/guard.eclat"), dir.join("chains/main.eclat")).unwrap();
    let run = sb.run(&dir, &["install"]).fails(2);
    assert!(
        run.stderr.contains("needs a value for parameter DEVNAME; give it with `--set DEVNAME=<value>`"),
        "{}",
        run.stderr
    );
    sb.run(&dir, &["install", "--set", "DEVNAME=va"]).ok();
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
    assert_eq!(verdict(&sb, &udp4(80)), XDP_PASS);

    let run = sb.run(&dir, &["remove", "flow"]).ok();
    assert!(run.stderr.contains("Removing flow 1.0.0"), "{}", run.stderr);
    assert!(!std::fs::read_to_string(dir.join("ebpkg.lock")).unwrap().contains("\"flow\""));
    // The chain still imports it: the next install says so, and changes nothing.
    let run = sb.run(&dir, &["install"]).fails(1);
    assert!(run.stderr.contains("chains/main.eclat"), "{}", run.stderr);
    assert!(run.stderr.contains("did not compile"), "{}", run.stderr);
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
    sb.run(&dir, &["uninstall"]).ok();
    assert!(!sb.root.exists());
}

#[test]
fn a_new_program_package_passes_its_own_test_and_failures_are_reported() {
    require_kernel();
    let sb = Sandbox::new("newprog");
    let run = sb.run(sb.dir.path(), &["new", "pktcount", "--program"]).ok();
    assert!(run.stderr.contains("Created program package `pktcount`"), "{}", run.stderr);
    let dir = sb.path("pktcount");
    let run = sb.run(&dir, &["test"]).ok();
    assert!(run.stderr.contains("Passed tests/pktcount.test.toml: adds the step to the count"), "{}", run.stderr);
    assert!(run.stderr.contains("1 passed, 0 failed"), "{}", run.stderr);

    let t = std::fs::read_to_string(dir.join("tests/pktcount.test.toml")).unwrap().replace("result = 7", "result = 8");
    std::fs::write(dir.join("tests/pktcount.test.toml"), t).unwrap();
    let run = sb.run(&dir, &["test"]).fails(8);
    assert!(run.stderr.contains("result: expected 8, got 7"), "{}", run.stderr);
    assert!(!std::path::Path::new(&format!("{}-test-", sb.root.display())).exists());
}

#[test]
fn fixture_tests_pass_with_map_setup_repeat_and_pcap() {
    require_kernel();
    let sb = Sandbox::new("ptest");
    let dir = sb.package("flow");
    // The same packet as a pcap file.
    let hex = "020000000002020000000001080045000 01c0000000040110000 0a0000010a00000204d2270f00080000".replace(' ', "");
    let pkt: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    let mut pcap = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0];
    pcap.extend([0u8; 8]);
    pcap.extend((pkt.len() as u32).to_le_bytes());
    pcap.extend((pkt.len() as u32).to_le_bytes());
    pcap.extend(&pkt);
    std::fs::write(dir.join("tests/udp.pcap"), pcap).unwrap();
    std::fs::write(
        dir.join("tests/pcap.test.toml"),
        "[[case]]\nname = \"from a pcap\"\nprogram = \"flow_match\"\nargs = [17, 9999]\npcap = \"tests/udp.pcap\"\n[case.expect]\nresult = 1\n",
    )
    .unwrap();
    let run = sb.run(&dir, &["test"]).ok();
    assert!(run.stderr.contains("4 passed, 0 failed"), "{}", run.stderr);
    let run = sb.run(&dir, &["test", "pcap", "--json"]).ok();
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["passed"].as_array().unwrap().len(), 1);
    assert_eq!(report["filtered"], 3);
}

/// Test files are input like any other: the paths they name follow SPEC §1 and stay
/// in the package, and the work they ask for is capped. Each is refused before
/// anything is built or run.
#[test]
fn test_files_cannot_read_outside_the_package_or_run_forever() {
    let sb = Sandbox::new("tlimits");
    let dir = sb.package("flow");
    let outside = sb.dir.path().join("secret");
    std::fs::write(&outside, "not for tests").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("tests/link.pcap")).unwrap();
    let case = |extra: &str| format!("[[case]]\nname = \"c\"\nprogram = \"flow_match\"\n{extra}\n");
    let bad: Vec<(String, &str)> = vec![
        (case("pcap = \"/etc/shadow\""), "is absolute"),
        (case("pcap = \"../../../etc/shadow\""), ".."),
        (case("pcap = \"tests/link.pcap\""), "outside the package"),
        (case("packet = \"00\"\nrepeat = 4294967295"), "repeat = 4294967295 is more than 1000000"),
        (case("packet = \"00\"\n[[case.then]]\nrepeat = 2000000"), "repeat = 2000000 is more than 1000000"),
        (case(&format!("packet = \"00\"\n{}", "[[case.then]]\n".repeat(19_999))), "more than the 10000 one"),
        ((0..30).map(|_| case("packet = \"00\"\nrepeat = 1000000")).collect(), "more than the 20000000 one"),
    ];
    for (text, expect) in bad {
        std::fs::write(dir.join("tests/bad.test.toml"), &text).unwrap();
        let started = std::time::Instant::now();
        let run = sb.run(&dir, &["test"]).fails(1);
        assert!(run.stderr.contains(expect), "{expect}: {}", run.stderr);
        assert!(!run.stderr.contains("Compiling"), "refused before building: {}", run.stderr);
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }
    // Filtered to the other files' cases, the same file is within the limits.
    std::fs::remove_file(dir.join("tests/link.pcap")).unwrap();
    let run = sb.run(&dir, &["test", "flow.test"]).ok();
    assert!(run.stderr.contains("0 failed"), "{}", run.stderr);
    std::fs::write(dir.join("tests/bad.test.toml"), vec![b'#'; 2 << 20]).unwrap();
    let run = sb.run(&dir, &["test"]).fails(1);
    assert!(run.stderr.contains("more than the 1048576 bytes"), "{}", run.stderr);
}

/// `publish` verifies with the kernel when it can and refuses what the kernel
/// refuses; `--no-verify` skips that but never a missing dependency; what it writes
/// is readable by everyone whatever the umask.
#[test]
fn publish_verifies_with_the_kernel_and_checks_dependencies() {
    require_kernel();
    let sb = Sandbox::new("pubverify");
    publish_fixtures(&sb);
    let dir = sb.package("flow");
    let toml =
        std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap().replace("version = \"1.0.0\"", "version = \"1.2.0\"");
    std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();
    let good = std::fs::read_to_string(dir.join("src/flow.bpf.c")).unwrap();
    // Reads the port without checking the packet's end: clang is happy, the kernel is not.
    let bad = good.replace("\tif ((void *)(dport + 1) > end)\n\t\treturn hike_result(0);\n", "\t(void)end;\n");
    assert_ne!(bad, good);
    std::fs::write(dir.join("src/flow.bpf.c"), &bad).unwrap();
    let run = sb.run(&dir, &["publish"]).fails(5);
    assert!(run.stderr.contains("flow_match"), "{}", run.stderr);
    let run = sb.run(sb.dir.path(), &["info", "flow"]).ok();
    assert!(run.stdout.contains("versions: 1.0.0") && !run.stdout.contains("1.2.0"), "{}", run.stdout);

    std::fs::write(dir.join("src/flow.bpf.c"), &good).unwrap();
    let run = sb.run(&dir, &["publish", "--dry-run"]).ok();
    assert!(run.stderr.contains("the kernel verified 2 program(s)"), "{}", run.stderr);
    let run = sb.run(&dir, &["publish", "--no-verify", "--dry-run"]).ok();
    assert!(run.stderr.contains("(--no-verify): not built, not checked by the kernel"), "{}", run.stderr);

    // A dependency the registry does not have is refused, --no-verify or not.
    let toml = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
    let missing = if toml.contains("[dependencies]") {
        toml.replace("[dependencies]", "[dependencies]\nnosuchpkg = \"1\"")
    } else {
        format!("{toml}\n[dependencies]\nnosuchpkg = \"1\"\n")
    };
    std::fs::write(dir.join("ebpkg.toml"), missing).unwrap();
    let run = sb.run(&dir, &["publish", "--no-verify"]).fails(3);
    assert!(run.stderr.contains("nosuchpkg"), "{}", run.stderr);
    std::fs::write(dir.join("ebpkg.toml"), toml).unwrap();

    // Under umask 077 the registry is still readable by everyone.
    let mut cmd = sb.cmd(&dir, &["publish"]);
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
            Ok(())
        });
    }
    assert!(cmd.status().unwrap().success());
    let mut pending = vec![sb.path("registry")];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777;
        if meta.is_dir() {
            assert_eq!(mode, 0o755, "{}", path.display());
            pending.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if path.file_name().unwrap() != ".lock" {
            assert_eq!(mode, 0o644, "{}", path.display());
        }
    }
}

#[test]
fn publish_search_info_and_duplicate_versions() {
    let sb = Sandbox::new("reg");
    publish_fixtures(&sb);
    let dir = sb.package("flow");
    let run = sb.run(&dir, &["publish", "--no-verify"]).fails(6);
    assert!(run.stderr.contains("flow") && run.stderr.contains("1.0.0"), "{}", run.stderr);
    let run = sb.run(sb.dir.path(), &["search", "counter"]).ok();
    assert!(run.stdout.contains("flow = \"1.0.0\""), "{}", run.stdout);
    let run = sb.run(sb.dir.path(), &["search", "loader", "--json"]).ok();
    let hits: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(hits[0]["name"], "classify");
    let run = sb.run(sb.dir.path(), &["info", "flow"]).ok();
    assert!(run.stdout.contains("program flow_match(proto: u8, port: u16) -> u64"), "{}", run.stdout);
    assert!(run.stdout.contains("versions: 1.0.0"), "{}", run.stdout);
    // Whether a program ends the packet, in words (it read `ends packet: Never`, a Rust name).
    assert!(
        run.stdout.contains(
            "program flow_count(slot: u32) -> u64  [xdp, ends the packet: never (it always returns to the chain)]"
        ),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("Never") && !run.stdout.contains("May"), "{}", run.stdout);
    let run = sb.run(sb.dir.path(), &["info", "flwo"]).fails(6);
    assert!(run.stderr.contains("did you mean `flow`?"), "{}", run.stderr);
}

#[test]
fn a_mirror_serves_a_frozen_install_when_the_registry_is_gone() {
    let sb = Sandbox::with_netns("mirror");
    publish_fixtures(&sb);
    let app = sb.package("app");
    sb.run(&app, &["lock"]).ok();
    let mirror = sb.path("mirror");
    let run = sb.run(&app, &["mirror", mirror.to_str().unwrap()]).ok();
    assert!(run.stderr.contains("holds the 3 package(s) of ebpkg.lock (3 added)"), "{}", run.stderr);
    std::fs::remove_dir_all(sb.path("registry")).unwrap();
    std::fs::remove_dir_all(sb.path("cache")).unwrap();
    let run = sb
        .cmd(&app, &["install", "--frozen", "--set", "DEVNAME=va"])
        .env("EBPKG_MIRROR", format!("file://{}", mirror.display()))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
    sb.run(&app, &["uninstall"]).ok();
}

#[test]
fn a_hostile_archive_in_the_registry_writes_nothing_outside_the_cache() {
    let sb = Sandbox::new("hostile");
    publish_fixtures(&sb);
    // A registry serving an archive that climbs out of its directory; its index
    // line carries the archive's true checksum, so only unpacking can catch it.
    let mut tar = tar::Builder::new(Vec::new());
    let manifest = b"[package]\nname = \"evil\"\nversion = \"1.0.0\"\n";
    for (path, data) in [("evil-1.0.0/ebpkg.toml", &manifest[..]), ("evil-1.0.0/../../../escaped", b"pwned")] {
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append(&h, data).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar.into_inner().unwrap()).unwrap();
    let bytes = gz.finish().unwrap();
    let sum: String = {
        use sha2_digest::*;
        hex_sha256(&bytes)
    };
    let archive = sb.path(&format!("registry/archives/{}/{sum}.tar.gz", &sum[..2]));
    std::fs::create_dir_all(archive.parent().unwrap()).unwrap();
    std::fs::write(&archive, &bytes).unwrap();
    std::fs::create_dir_all(sb.path("registry/index/ev/il")).unwrap();
    std::fs::write(
        sb.path("registry/index/ev/il/evil"),
        format!("{{\"v\":1,\"name\":\"evil\",\"vers\":\"1.0.0\",\"deps\":[],\"cksum\":\"{sum}\",\"yanked\":false,\"programs\":[],\"loaders\":[],\"chains\":[]}}\n"),
    )
    .unwrap();
    let app = sb.path("victim");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(
        app.join("ebpkg.toml"),
        "[package]\nname = \"victim\"\nversion = \"0.1.0\"\n\n[dependencies]\nevil = \"1\"\n",
    )
    .unwrap();
    require_kernel();
    // Unsigned, it would be refused before being unpacked; the unpacker is what is tested.
    let refused = sb.run(&app, &["install"]).fails(10);
    assert!(refused.stderr.contains("evil@1.0.0") && refused.stderr.contains("not signed"), "{}", refused.stderr);
    sb.run(&app, &["trust", "allow-unsigned", "evil"]).ok();
    let run = sb.run(&app, &["install"]).fails(6);
    assert!(run.stderr.contains(".."), "{}", run.stderr);
    // Each cause is said once, not once per level of the error chain.
    assert_eq!(run.stderr.matches("archive entry `evil-1.0.0/../../../escaped`").count(), 1, "{}", run.stderr);
    assert!(!run.stderr.contains("error: error:"), "{}", run.stderr);
    for dir in [sb.dir.path().to_owned(), sb.path("cache"), sb.path("cache/src")] {
        assert!(!dir.join("escaped").exists(), "{}", dir.display());
    }
    let src = sb.path("cache/src");
    let left: Vec<_> =
        std::fs::read_dir(&src).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(left.iter().all(|n| !n.to_string_lossy().starts_with("evil")), "{left:?}");
}

#[test]
fn doctor_explains_the_machine() {
    let sb = Sandbox::new("doctor");
    let run = sb.run(sb.dir.path(), &["doctor", "--json"]).ok();
    let checks: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let names: Vec<&str> = checks.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    for n in ["kernel", "BTF", "JIT", "bpffs", "privileges", "clang", "bpftool", "state directory", "cache", "registry"]
    {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    // Without clang a host still installs packages that ship their objects (or
    // whose objects are cached): a warning that says so, not a failure.
    let run = sb.cmd(sb.dir.path(), &["doctor"]).env("EBPKG_CLANG", "/nonexistent/clang").output().unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(0), "{out}");
    assert!(out.contains("warn  toolchain"), "{out}");
    assert!(out.contains("--with-objects") && out.contains("apt-get install clang"), "{out}");
}

mod sha2_digest {
    pub fn hex_sha256(bytes: &[u8]) -> String {
        let out = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(bytes)?;
                c.wait_with_output()
            })
            .unwrap();
        String::from_utf8_lossy(&out.stdout)[..64].to_owned()
    }
}

#[test]
fn a_published_chain_package_installs_without_a_project() {
    let sb = Sandbox::with_netns("byname");
    publish_fixtures(&sb);
    let app = sb.package("app");
    sb.publish(&app);
    let empty = sb.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let run = sb.run(&empty, &["install", "app@^0.1", "--set", "DEVNAME=va"]).ok();
    assert!(run.stderr.contains("Finished deployment app generation 1"), "{}", run.stderr);
    assert!(!empty.join("ebpkg.lock").exists(), "no project, no lockfile");
    assert_eq!(verdict(&sb, &udp4(9999)), XDP_DROP);
    let run = sb.run(&empty, &["install", "nothing@1"]).fails(3);
    assert!(run.stderr.contains("`nothing`, which is not in the default registry"), "{}", run.stderr);
    sb.run(&empty, &["uninstall", "app"]).ok();
    assert!(!sb.root.exists());
}

#[test]
fn the_config_file_names_registries_and_refuses_unknown_keys() {
    let sb = Sandbox::new("config");
    publish_fixtures(&sb);
    std::fs::write(
        sb.path("config.toml"),
        format!("[registry]\ndefault = \"corp\"\n\n[registries.corp]\nurl = \"{}\"\n", sb.registry_url()),
    )
    .unwrap();
    let run = sb.cmd(sb.dir.path(), &["search", "flow"]).env_remove("EBPKG_REGISTRY").output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(String::from_utf8_lossy(&run.stdout).contains("flow = \"1.0.0\""));

    std::fs::write(sb.path("config.toml"), "[registry]\ndefualt = \"x\"\n").unwrap();
    let run = sb.run(sb.dir.path(), &["search", "flow"]).fails(1);
    assert!(run.stderr.contains("config.toml") && run.stderr.contains("defualt"), "{}", run.stderr);
}

#[test]
fn build_copies_objects_out_and_cache_clean_empties_the_cache() {
    let sb = Sandbox::new("build");
    let dir = sb.package("flow");
    let out = sb.path("out");
    let run = sb.run(&dir, &["build", "--out-dir", out.to_str().unwrap(), "--json"]).ok();
    let built: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(built[0]["source"], "src/flow.bpf.c");
    assert_eq!(built[0]["programs"], serde_json::json!(["flow_match", "flow_count"]));
    let obj = std::fs::read(out.join("src_flow.bpf.c.xdp.o")).unwrap();
    assert_eq!(&obj[..4], b"\x7fELF");
    // Built once: the second build compiles nothing.
    let run = sb.run(&dir, &["build"]).ok();
    assert!(!run.stderr.contains("Compiled"), "{}", run.stderr);
    let run = sb.run(&dir, &["cache", "clean", "--json"]).ok();
    let removed: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(removed["files"].as_u64().unwrap() >= 2, "{removed}");
    let run = sb.run(&dir, &["build"]).ok();
    assert!(run.stderr.contains("Compiled src/flow.bpf.c (xdp) of flow@1.0.0"), "{}", run.stderr);
    // A compile error names the package, the file and clang's message.
    std::fs::write(
        dir.join("src/flow.bpf.c"),
        "#include <hike/program.h>\nHIKE_PROGRAM(flow_match) { return nope; }\n",
    )
    .unwrap();
    let run = sb.run(&dir, &["build"]).fails(1);
    assert!(run.stderr.contains("failed to compile src/flow.bpf.c of flow@1.0.0"), "{}", run.stderr);
    assert!(run.stderr.contains("src/flow.bpf.c:2:"), "{}", run.stderr);
}

/// The README's "A first session" block, run verbatim against the first-party
/// packages, in a network namespace whose interface is called eth0.
#[test]
fn the_readme_first_session_runs_verbatim() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let after = readme.split("A first session").nth(1).expect("README has \"A first session\"");
    let script = after.split("```sh\n").nth(1).and_then(|s| s.split("\n```").next()).expect("a sh block");
    assert!(script.contains("ebpkg install --set DEVNAME=eth0"), "{script}");
    let sb = Sandbox::with_veth("readme", "eth0", "eth1").shared_cache();
    sb.publish_first_party();
    let run = sb.shell(sb.dir.path(), script);
    assert_eq!(run.code, 0, "the README's session failed:\n{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("attached to eth0 (xdp)"), "{}", run.stdout);
    assert!(run.stderr.contains("Uninstalled deployment guard"), "{}", run.stderr);
    assert!(!sb.root.exists(), "uninstall removed everything");
}

/// Inside a project, `chain check` and `chain compile` see what `install` sees:
/// the project's locked dependencies, with their re-exports.
#[test]
fn chain_check_inside_a_project_uses_its_dependencies() {
    let sb = Sandbox::new("chaincheck").shared_cache();
    sb.publish_first_party();
    let dir = sb.path("proj");
    std::fs::create_dir_all(&dir).unwrap();
    sb.run(&dir, &["init"]).ok();
    std::fs::copy(first_party()[7].join("chains/ddos.eclat"), dir.join("chains/main.eclat")).unwrap();
    // Not a dependency yet: the error says how to add it.
    let run = sb.run(&dir, &["chain", "check", "chains/main.eclat"]).fails(1);
    assert!(run.stderr.contains("add it with `ebpkg add net`"), "{}", run.stderr);
    sb.run(&dir, &["add", "net", "basic"]).ok();
    let run = sb.run(&dir.join("chains"), &["chain", "check", "main.eclat"]).ok();
    assert!(run.stderr.contains("main.eclat: 1 chain(s), no errors"), "{}", run.stderr);
    let run = sb.run(&dir, &["chain", "compile", "--emit", "asm", "chains/main.eclat"]).ok();
    assert!(run.stdout.contains("call prog 0, 1  ; sets::ip6_hset_srcdst"), "{}", run.stdout);
}
