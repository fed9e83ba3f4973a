//! The first-party packages (packages/ of the repository): their own tests pass,
//! they pass the verifier with clang 14 and a newer clang, and their loaders route
//! packets to the chains scripts configure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::*;

#[test]
fn every_package_passes_its_own_tests() {
    require_kernel();
    let sb = Sandbox::new("pkgtests").shared_cache();
    for dir in first_party() {
        if !dir.join("tests").is_dir() {
            continue;
        }
        let run = sb.run(&dir, &["test", "--json"]).ok();
        let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        assert!(!report["passed"].as_array().unwrap().is_empty(), "{}: no test ran", dir.display());
        assert_eq!(report["failed"], serde_json::json!([]), "{}", dir.display());
    }
}

/// A clang newer than 14 (Debian's clang-19, else clang-16).
fn newer_clang() -> &'static str {
    ["clang-19", "clang-16"]
        .into_iter()
        .find(|c| std::process::Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
        .expect("a newer clang (ci/setup installs clang-16 and clang-19)")
}

#[test]
fn every_package_passes_the_verifier_with_clang_14_and_a_newer_clang() {
    require_kernel();
    // Portable objects are cached without the compiler that built them: the newer
    // clang gets a cache of its own, so that it really compiles every package.
    for (clang, sb) in
        [("clang-14", Sandbox::new("pkgverify").shared_cache()), (newer_clang(), Sandbox::new("pkgnewer"))]
    {
        for dir in first_party() {
            let manifest = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
            let run = sb.cmd(&dir, &["build", "--verify", "--json"]).env("EBPKG_CLANG", clang).output().unwrap();
            assert!(run.status.success(), "{clang} {}: {}", dir.display(), String::from_utf8_lossy(&run.stderr));
            let built: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
            let mut verified = Vec::new();
            for o in built.as_array().unwrap() {
                let object = o["object"].as_str().unwrap();
                assert!(
                    object.starts_with(sb.cache.to_str().unwrap()),
                    "{clang}: {object} is not in the sandbox's cache"
                );
                for s in o["verifier"].as_array().unwrap() {
                    assert!(s["insns_processed"].as_u64().unwrap() > 0, "{clang}: {s}");
                    verified.push(s["program"].as_str().unwrap().to_owned());
                }
            }
            // Every program and loader of the manifest was verified.
            for line in manifest.lines().filter_map(|l| l.strip_prefix("name = \"")) {
                let name = line.trim_end_matches('"');
                if manifest.contains(&format!("[[program]]\nname = \"{name}\""))
                    || manifest.contains(&format!("[[loader]]\nname = \"{name}\""))
                {
                    assert!(verified.iter().any(|v| v == name), "{clang}: {name} of {} not verified", dir.display());
                }
            }
        }
    }
}

#[test]
fn every_readme_documents_the_verifier_statistics_of_every_program() {
    for dir in first_party() {
        let manifest = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        let has_code = manifest.contains("[[program]]") || manifest.contains("[[loader]]");
        if has_code {
            assert!(readme.contains("## Verifier statistics"), "{}", dir.display());
        }
        // A README is read on the registry's pages, by people without this
        // repository: no path of it (`cli/tests/…`, `./ci/bench`).
        for inside in ["cli/", "./ci", "`ci/", "registry-server/", "hike-sdk/"] {
            assert!(!readme.contains(inside), "{} names `{inside}…` of this repository", dir.display());
        }
        for block in manifest.split("[[").filter(|b| b.starts_with("program]]") || b.starts_with("loader]]")) {
            let name = block.lines().find_map(|l| l.strip_prefix("name = \"")).unwrap().trim_end_matches('"');
            assert!(readme.contains(&format!("`{name}`")), "{} does not document `{name}`", dir.display());
        }
    }
}

/// A chain project using every loader of `basic`, not attached anywhere: packets
/// are run through each loader instance with BPF_PROG_TEST_RUN.
const LOADERS_SCRIPT: &str = "
from prog.net import hike_drop, hike_pass, hike_tx
from loaders.basic import ip6_sc, ip4_sc, l3_sc, ip6_dst_classifier, ip4_dst_classifier

ip6_sc[ip6_sc_map] = { (0): (drop) }
ip4_sc[ip4_sc_map] = { (0): (tx) }
l3_sc[l3_sc_map] = { (4): (drop), (6): (tx) }
ip6_dst_classifier[ip6_dst_map] = { ('2001:db8::/32'): (drop), ('2001:db8:1::/48'): (tx) }
ip4_dst_classifier[ip4_dst_map] = { ('10.0.0.0/8'): (drop), ('10.1.0.0/16'): (tx) }

def drop():
    hike_drop()

def tx():
    hike_tx()
";

fn udp6(dst: &str) -> Vec<u8> {
    let mut p = vec![0u8; 14 + 40 + 8];
    p[12] = 0x86;
    p[13] = 0xdd;
    p[14] = 0x60;
    p[19] = 8;
    p[20] = 17;
    p[21] = 64;
    let d: std::net::Ipv6Addr = dst.parse().unwrap();
    p[22..38].copy_from_slice(&"2001:db8::99".parse::<std::net::Ipv6Addr>().unwrap().octets());
    p[38..54].copy_from_slice(&d.octets());
    p
}

fn udp4_to(dst: [u8; 4]) -> Vec<u8> {
    let mut p = udp4(80);
    p[30..34].copy_from_slice(&dst);
    p
}

#[test]
fn the_basic_loaders_route_packets_to_the_configured_chains() {
    require_kernel();
    let sb = Sandbox::new("loaders").shared_cache();
    sb.publish_first_party();
    let app = sb.path("loaders-app");
    std::fs::create_dir_all(app.join("chains")).unwrap();
    std::fs::write(
        app.join("ebpkg.toml"),
        "[package]\nname = \"loaders-app\"\nversion = \"0.1.0\"\n\n[dependencies]\nnet = \"1\"\nbasic = \"1\"\n\n\
         [[chain]]\nname = \"main\"\nsource = \"chains/main.eclat\"\n",
    )
    .unwrap();
    std::fs::write(app.join("chains/main.eclat"), LOADERS_SCRIPT).unwrap();
    sb.run(&app, &["install"]).ok();
    let rt = hike_runtime::Runtime::open(&sb.root).unwrap();
    let run =
        |loader: &str, p: &[u8]| rt.test_run_loader(&format!("loaders-app-1-basic-{loader}"), p, 0).unwrap().verdict;
    const TX: u32 = 3;
    let v6 = udp6("2001:db8::5");
    let v4 = udp4_to([10, 0, 0, 2]);
    assert_eq!(run("ip6_sc", &v6), XDP_DROP);
    assert_eq!(run("ip6_sc", &v4), XDP_PASS, "not IPv6: passes");
    assert_eq!(run("ip4_sc", &v4), TX);
    assert_eq!(run("ip4_sc", &v6), XDP_PASS);
    assert_eq!(run("l3_sc", &v4), XDP_DROP);
    assert_eq!(run("l3_sc", &v6), TX);
    assert_eq!(run("l3_sc", &[0u8; 14]), XDP_PASS, "neither: passes");
    assert_eq!(run("ip6_dst_classifier", &udp6("2001:db8::5")), XDP_DROP);
    assert_eq!(run("ip6_dst_classifier", &udp6("2001:db8:1::5")), TX, "the longest prefix wins");
    assert_eq!(run("ip6_dst_classifier", &udp6("2001:db9::1")), XDP_PASS, "no prefix: passes");
    assert_eq!(run("ip6_dst_classifier", &v4), XDP_PASS);
    assert_eq!(run("ip4_dst_classifier", &udp4_to([10, 9, 0, 1])), XDP_DROP);
    assert_eq!(run("ip4_dst_classifier", &udp4_to([10, 1, 2, 3])), TX);
    assert_eq!(run("ip4_dst_classifier", &udp4_to([192, 0, 2, 1])), XDP_PASS);
    drop(rt);
    sb.run(&app, &["uninstall"]).ok();
    assert!(!sb.root.exists());
}
