//! The `mmlf` chain, installed by ebpkg from a file:// registry, against the
//! hand-written monolithic program (packages/mmlf/bench/mmlf_mono.bpf.c): the same
//! verdict and the same output packet for 10,000 varied packets, routed by the
//! kernel's FIB in a network namespace of the test's own.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::net::{Ipv4Addr, Ipv6Addr};

use common::*;
use ebpkg_packages_harness::bpf::{self, Loaded};
use ebpkg_packages_harness::netns::{Netns, veth};
use ebpkg_packages_harness::packets::{self, Rng};
use hike_runtime::{Runtime, TestRunOptions};

const PACKETS: usize = 10_000;

/// gen0 -- in0 [DUT: the chain on in0, routes out of out0] out0 -- sink0
struct Topology {
    dut: Netns,
    _gen: Netns,
    _sink: Netns,
}

fn topology(tag: &str) -> Topology {
    let pid = std::process::id();
    let dut = Netns::new(&format!("mmd{tag}{pid}"), true).unwrap();
    let gen_ns = Netns::new(&format!("mmg{tag}{pid}"), false).unwrap();
    let sink = Netns::new(&format!("mms{tag}{pid}"), false).unwrap();
    veth(&gen_ns, "gen0", 0, &dut, "in0", 0).unwrap();
    veth(&dut, "out0", 0, &sink, "sink0", 0).unwrap();
    for (k, v) in [("net/ipv4/ip_forward", "1"), ("net/ipv6/conf/all/forwarding", "1")] {
        dut.sysctl(k, v).unwrap();
    }
    for args in [
        &["addr", "add", "10.50.0.1/24", "dev", "in0"][..],
        &["addr", "add", "10.60.0.1/24", "dev", "out0"],
        &["addr", "add", "2001:db8:50::1/64", "dev", "in0", "nodad"],
        &["addr", "add", "2001:db8:60::1/64", "dev", "out0", "nodad"],
        &["neigh", "add", "10.60.0.2", "lladdr", "02:00:00:00:60:02", "dev", "out0", "nud", "permanent"],
        &["neigh", "add", "2001:db8:60::2", "lladdr", "02:00:00:00:60:02", "dev", "out0", "nud", "permanent"],
        &["route", "add", "198.51.100.0/24", "via", "10.60.0.2"],
        &["-6", "route", "add", "2001:db8:100::/48", "via", "2001:db8:60::2"],
    ] {
        dut.ip(args).unwrap();
    }
    Topology { dut, _gen: gen_ns, _sink: sink }
}

const LISTED6: [u16; 2] = [0xa, 0xb];
const LISTED4: [u8; 2] = [10, 11];

/// A varied packet: IPv6, IPv4 (with 0–2 VLAN tags), listed or unlisted sources,
/// routed or unroutable destinations, expiring hop limits, other ethertypes,
/// truncated frames.
fn packet(rng: &mut Rng) -> Vec<u8> {
    let vlans: Vec<u16> = match rng.below(10) {
        0 => vec![7],
        1 => vec![7, 8],
        _ => vec![],
    };
    let listed = rng.below(2) == 0;
    let routed = rng.below(10) < 7;
    let hop = if rng.below(20) == 0 { 1 } else { 64 };
    let class = rng.below(256) as u8;
    let payload = vec![0xab; rng.below(64) as usize];
    let l4 = packets::udp(rng.below(65536) as u16, 80, &payload);
    let mut p = match rng.below(20) {
        0..=9 => {
            let src = if listed { LISTED6[rng.below(2) as usize] } else { 0x100 + rng.below(1000) as u16 };
            let dst = if routed { 0x100 } else { 0x200 };
            packets::ipv6(
                Ipv6Addr::new(0x2001, 0xdb8, 0x50, 0, 0, 0, 0, src),
                Ipv6Addr::new(0x2001, 0xdb8, dst, 0, 0, 0, 0, rng.below(100) as u16),
                hop,
                class,
                &vlans,
                &l4,
            )
        }
        10..=16 => {
            let src = if listed { LISTED4[rng.below(2) as usize] } else { 100 + rng.below(100) as u8 };
            let dst = if routed { Ipv4Addr::new(198, 51, 100, 7) } else { Ipv4Addr::new(203, 0, 113, 7) };
            packets::ipv4(Ipv4Addr::new(10, 50, 0, src), dst, hop, class, &vlans, &l4)
        }
        17 => {
            let mut p = packets::eth(0x0806, &vlans);
            p.extend([0u8; 28]);
            p
        }
        _ => {
            let mut p = packets::ipv6(
                Ipv6Addr::new(0x2001, 0xdb8, 0x50, 0, 0, 0, 0, LISTED6[0]),
                Ipv6Addr::new(0x2001, 0xdb8, 0x100, 0, 0, 0, 0, 1),
                64,
                0,
                &vlans,
                &l4,
            );
            let cut = 14 + rng.below(50) as usize;
            p.truncate(cut);
            p
        }
    };
    if p.len() < 14 {
        p.resize(14, 0);
    }
    p
}

#[test]
fn the_mmlf_chain_and_the_monolithic_program_agree_on_10000_packets() {
    require_kernel();
    let topo = topology("d");
    let mut sb = Sandbox::new("mmlf").shared_cache();
    sb.netns = Some(topo.dut.name.clone());
    sb.publish_first_party();
    let empty = sb.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    sb.run(&empty, &["install", "mmlf@^1", "--set", "DEVNAME=in0"]).ok();

    let rt = Runtime::open(&sb.root).unwrap();
    let mono =
        bpf::compile(&ebpkg_packages_harness::packages_dir().join("mmlf/bench/mmlf_mono.bpf.c"), &sb.cache).unwrap();
    let mono = Loaded::load(&mono, "mmlf_mono").unwrap();
    for s in LISTED6 {
        let src = Ipv6Addr::new(0x2001, 0xdb8, 0x50, 0, 0, 0, 0, s).octets();
        rt.package_map("mmlf", "1.0.0", "mmlf_src6").unwrap().write(&src, &[1]).unwrap();
        mono.update("mono_src6", &src, &[1]).unwrap();
    }
    for s in LISTED4 {
        let src = Ipv4Addr::new(10, 50, 0, s).octets();
        rt.package_map("mmlf", "1.0.0", "mmlf_src4").unwrap().write(&src, &[1]).unwrap();
        mono.update("mono_src4", &src, &[1]).unwrap();
    }
    drop(rt);

    let in0 = topo.dut.ifindex("in0").unwrap();
    let out0 = topo.dut.ifindex("out0").unwrap();
    let mono_fd = mono.prog_fd("mmlf_mono").unwrap();
    let root = sb.root.clone();
    let (verdicts, mismatches) = topo
        .dut
        .run(move || {
            let rt = Runtime::open(&root).unwrap();
            let instance = "mmlf-1-basic-l3_sc";
            let mut rng = Rng::new(0x6d6d_6c66);
            let mut verdicts = std::collections::BTreeMap::<u32, usize>::new();
            let mut mismatches = Vec::new();
            for i in 0..PACKETS {
                let p = packet(&mut rng);
                let opts = TestRunOptions { ingress_ifindex: in0, ..Default::default() };
                let hike = rt.test_run_loader_with(instance, &p, &opts).unwrap();
                let mono = bpf::test_run(mono_fd, &p, in0, false, 1).unwrap();
                *verdicts.entry(hike.verdict).or_default() += 1;
                if hike.verdict != mono.verdict || hike.packet != mono.packet {
                    mismatches.push(format!(
                        "packet {i} ({} bytes): chain {} vs monolithic {}",
                        p.len(),
                        hike.verdict,
                        mono.verdict
                    ));
                }
            }
            (verdicts, mismatches)
        })
        .unwrap();
    assert!(
        mismatches.is_empty(),
        "{} mismatches, first: {:?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(5)]
    );
    // Both outcomes happened often: the comparison covered forwarding and passing.
    assert!(verdicts.get(&4).copied().unwrap_or(0) > 1000, "redirected: {verdicts:?}");
    assert!(verdicts.get(&2).copied().unwrap_or(0) > 1000, "passed: {verdicts:?}");
    assert!(out0 > 0);
    sb.run(&empty, &["uninstall", "mmlf"]).ok();
}
