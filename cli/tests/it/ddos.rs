//! The eCLAT paper's DDoS scenario end to end: the `ddos` package installed by
//! ebpkg from a file:// registry onto a veth in network namespaces the test makes
//! (source → host under test → sample collector on interface 6), a flood from one
//! source among legitimate traffic, and exact counters.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::net::Ipv6Addr;
use std::time::{Duration, Instant};

use common::*;
use ebpkg_packages_harness::bpf::{self, Loaded};
use ebpkg_packages_harness::netns::{Netns, send_frames, veth};
use ebpkg_packages_harness::packets;
use hike_runtime::{Clock, Runtime};

fn udp6(src: u16, dst: Ipv6Addr) -> Vec<u8> {
    let src = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, src);
    packets::ipv6(src, dst, 64, 0, &[], &packets::udp(4000, 80, b"payload"))
}

/// The monitor events (PASS 0, DROP 1, REDIRECT 2) as `ebpkg status --maps` shows them.
fn events(sb: &Sandbox) -> [u64; 3] {
    let run = sb.run(sb.dir.path(), &["status", "--maps", "--json"]).ok();
    let st: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let map = st[0]["maps"].as_array().unwrap().iter().find(|m| m["map"] == "monitor_events").unwrap().clone();
    let mut out = [0; 3];
    let keys: Vec<u64> =
        map["entries"].as_array().unwrap().iter().map(|e| e["key"]["event"].as_u64().unwrap()).collect();
    assert!(keys.is_sorted(), "entries are listed in key order: {keys:?}");
    for e in map["entries"].as_array().unwrap() {
        let ev = e["key"]["event"].as_u64().unwrap() as usize;
        if ev < 3 {
            out[ev] = e["value"]["count"].as_u64().unwrap();
        }
    }
    out
}

#[test]
fn a_flood_is_blacklisted_and_sampled_while_other_traffic_passes() {
    require_kernel();
    let sb = Sandbox::new("ddos").shared_cache();
    sb.publish_first_party();
    flood_is_blacklisted(sb, "auto");
}

/// The same counts with the chain interpreted by the VM (the native tier must
/// not change what a chain does).
#[test]
fn the_interpreted_chain_counts_the_same() {
    require_kernel();
    let sb = Sandbox::new("ddosi").shared_cache();
    sb.publish_first_party();
    flood_is_blacklisted(sb, "interpreted");
}

/// The same, with every package published to a registry server over HTTP by
/// `ebpkg publish` after `ebpkg login`, and installed from it.
#[test]
fn the_ddos_chain_installs_from_a_registry_server() {
    require_kernel();
    let server = ebpkg_registry::testing::TestRegistry::start().unwrap();
    let token = server.token("ci", &[], &[]).unwrap();
    let mut sb = Sandbox::new("ddosh").shared_cache();
    let login = sb.use_server(server.url(), &token).ok();
    assert!(login.stderr.contains("as `ci`"), "{}", login.stderr);
    let credentials = sb.path("credentials.toml");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&credentials).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "the token file is private");
    sb.publish_first_party();
    flood_is_blacklisted(sb, "auto");
}

/// Every byte read once: one install of the DDoS project opens its ebpkg.toml
/// once (not again to hash the project, nor to load the trust policy, nor for
/// each step that needs the project) and each package archive once (checked,
/// signature-verified, unpacked and compared from those bytes). Counted with
/// strace over the process and its children, so a read by any path (ebpkg_fs or
/// not) counts.
#[test]
fn an_install_of_the_ddos_project_opens_its_manifest_and_each_archive_once() {
    let sb = Sandbox::with_veth("ddosr", "in0", "x0").shared_cache();
    sb.publish_first_party();
    let project = sb.path("ddos");
    copy_dir(&ebpkg_packages_harness::packages_dir().join("ddos"), &project);
    let (run, opens) = sb.run_traced(&project, &["install", "--set", "DEVNAME=in0"]);
    let run = run.ok();
    assert!(run.stderr.contains("Attached in0 to ddos-1-basic-ip6_sc"), "{}", run.stderr);
    let reads: Vec<&str> = opens
        .iter()
        .filter(|(_, flags)| flags.contains("O_RDONLY") && !flags.contains("O_PATH") && !flags.contains("O_DIRECTORY"))
        .map(|(path, _)| path.as_str())
        .collect();

    let manifest = project.join("ebpkg.toml");
    let manifest = [manifest.display().to_string(), std::fs::canonicalize(&manifest).unwrap().display().to_string()];
    let manifest_reads = reads.iter().filter(|p| manifest.contains(&p.to_string())).count();
    assert_eq!(manifest_reads, 1, "{manifest:?} opened {manifest_reads} times");

    let lock = std::fs::read_to_string(project.join("ebpkg.lock")).unwrap();
    let lock = ebpkg_spec::Lockfile::parse(&lock, "ebpkg.lock").unwrap();
    let mut per_archive = std::collections::BTreeMap::<&str, usize>::new();
    for path in reads.iter().filter(|p| p.ends_with(".tar.gz")) {
        *per_archive.entry(path.rsplit('/').next().unwrap_or(path)).or_default() += 1;
    }
    let locked: Vec<String> = lock.packages().iter().map(|p| format!("{}.tar.gz", p.checksum.to_hex())).collect();
    assert_eq!(lock.packages().len(), 5, "net, basic, meter, sets, sampler");
    assert_eq!(per_archive.len(), locked.len(), "only the locked archives: {per_archive:?}");
    for archive in &locked {
        assert_eq!(per_archive.get(archive.as_str()), Some(&1), "{archive} read once: {per_archive:?}");
    }
    sb.run(&project, &["uninstall"]).ok();
}

fn flood_is_blacklisted(mut sb: Sandbox, chain_mode: &str) {
    let upgrade = chain_mode == "interpreted";
    let pid = sb.tag.clone();
    let src = Netns::new(&format!("dds{pid}"), false).unwrap();
    let dut = Netns::new(&format!("ddd{pid}"), false).unwrap();
    let col = Netns::new(&format!("ddc{pid}"), false).unwrap();
    veth(&src, "eth0", 0, &dut, "in0", 0).unwrap();
    // The script sends samples to interface index 6 (REDIRECT_IF_INDEX = 6).
    veth(&dut, "sample", 6, &col, "eth0", 0).unwrap();

    sb.netns = Some(dut.name.clone());
    let empty = sb.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let run = sb.run(&empty, &["install", "ddos@^1", "--set", "DEVNAME=in0", "--chain-mode", chain_mode]).ok();
    assert!(run.stderr.contains("Attached in0 to ddos-1-basic-ip6_sc"), "{}", run.stderr);
    let tier =
        if chain_mode == "interpreted" { "Interpreted chain ddos_tb_2_lev" } else { "Native chain ddos_tb_2_lev" };
    assert!(run.stderr.contains(tier), "{}", run.stderr);
    // How long the tier-up took, in the test's log.
    if let Some(line) = run.stderr.lines().find(|l| l.contains(tier)) {
        eprintln!("{}", line.trim());
    }
    // Token buckets and the blacklist's expiry run on a frozen clock: the counts
    // below do not depend on how fast this machine sends.
    Runtime::open(&sb.root).unwrap().set_clock(Clock::Frozen(1_000_000_000_000)).unwrap();

    let obj = bpf::compile(&ebpkg_packages_harness::scenario_source(), &sb.cache).unwrap();
    let mut collector = Loaded::load(&obj, "collector").unwrap();
    collector.attach("xdp_count", &col, "eth0").unwrap();

    let target = Ipv6Addr::new(0x2001, 0xdb8, 0xff, 0, 0, 0, 0, 1);
    let other = Ipv6Addr::new(0x2001, 0xdb8, 0xfe, 0, 0, 0, 0, 1);
    let src_if = src.ifindex("eth0").unwrap();
    // Sent in bursts, each seen through the chain (its events counted) before the next: frames sent
    // faster than the receiving side runs the chain overflow its veth queue (256 frames) and are lost
    // before the chain sees them — under an emulated CPU (QEMU TCG) an interpreted chain lost 760 of 1081.
    let mut sent = 0u64;
    let mut send = |packet: Vec<u8>, n: u32| {
        for burst in (0..n).step_by(32).map(|start| (n - start).min(32)) {
            let packet = packet.clone();
            src.run(move || send_frames(src_if, &packet, burst).unwrap()).unwrap();
            sent += u64::from(burst);
            let deadline = Instant::now() + Duration::from_secs(30);
            while events(&sb).iter().sum::<u64>() < sent && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    // The flood: 1081 packets from ::1. Defaults: the destination's bucket passes
    // 64, the pair's 16 more; the 81st blacklists the pair; of the 1000 after it,
    // the 500th and the 1000th are sampled to interface 6, the rest dropped.
    send(udp6(1, target), 1081);
    // Legitimate traffic to the same destination (its own pair's burst) and to
    // another destination.
    send(udp6(2, target), 10);
    send(udp6(3, other), 5);

    let want = [80 + 10 + 5, 1 + 998, 2];
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = events(&sb);
    while got != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        got = events(&sb);
    }
    assert_eq!(got, want, "PASS, DROP, REDIRECT");
    assert_eq!(collector.percpu_u64("counted", &0u32.to_le_bytes()).unwrap(), 2, "samples at the collector");

    // The flood's pair, and only it, is blacklisted.
    let run = sb.run(sb.dir.path(), &["status", "--maps", "--json"]).ok();
    let st: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let set = st[0]["maps"].as_array().unwrap().iter().find(|m| m["map"] == "ip6_hset").unwrap().clone();
    let listed: Vec<(String, String)> = set["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["key"]["src"].as_str().unwrap().to_owned(), e["key"]["dst"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(listed, [("2001:db8::1".to_owned(), "2001:db8:ff::1".to_owned())]);

    if upgrade {
        // `sets` upgraded under the running chain: the blacklist (an LRU hash whose
        // values are expiry times) and its configuration are the new version's
        // maps, entries and expiry untouched, and the flood stays blacklisted.
        let dir = sb.path("sets-next");
        let status = std::process::Command::new("cp")
            .arg("-r")
            .arg(ebpkg_packages_harness::packages_dir().join("sets"))
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success());
        let manifest = std::fs::read_to_string(dir.join("ebpkg.toml")).unwrap();
        std::fs::write(dir.join("ebpkg.toml"), manifest.replacen("version = \"1.0.0\"", "version = \"1.0.1\"", 1))
            .unwrap();
        let source = dir.join("src/hset.bpf.c");
        let text = std::fs::read_to_string(&source).unwrap();
        std::fs::write(&source, text + "/* 1.0.1 */\n").unwrap();
        sb.run(&dir, &["publish", "--no-verify"]).ok();
        let run = sb.run(&empty, &["install", "ddos@^1", "--chain-mode", chain_mode]).ok();
        for want in [
            "Registered sets@1.0.1 ip6_hset_srcdst",
            "Kept map ip6_hset of sets 1.0.0 → 1.0.1",
            "Kept map ip6_hset_cfg of sets 1.0.0 → 1.0.1",
            "Keeping loader instance ddos-1-basic-ip6_sc (its entries rewritten in place)",
        ] {
            assert!(run.stderr.contains(want), "{want}: {}", run.stderr);
        }
        let run = sb.run(sb.dir.path(), &["status", "--maps", "--json"]).ok();
        let st: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        let after = st[0]["maps"].as_array().unwrap().iter().find(|m| m["map"] == "ip6_hset").unwrap().clone();
        assert_eq!(after["entries"], set["entries"], "the same pairs, expiring when they did");
        assert_eq!(after["version"], "1.0.1", "{after}");
        send(udp6(1, target), 10);
        let want = [want[0], want[1] + 10, want[2]];
        let deadline = Instant::now() + Duration::from_secs(5);
        while events(&sb) != want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(events(&sb), want, "the flood is still dropped, every count went on");
    }

    drop(collector);
    sb.run(&empty, &["uninstall", "ddos"]).ok();
    assert!(!sb.root.exists());
}
