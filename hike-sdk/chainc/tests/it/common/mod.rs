//! The package environment of the eCLAT paper's script, as ebpkg would build it
//! from the `net` and `basic` packages (signature stubs, no kernel).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use hike_bytecode::Hook;
use hike_chainc::{CompileEnv, EndsPacket, FieldType, IntType, LoaderSig, MapLayout, PackageExports, ProgramSig};

fn prog(package: &str, args: &[(&str, IntType)], ret: Option<IntType>, ends: EndsPacket) -> ProgramSig {
    ProgramSig {
        package: package.into(),
        hook: Hook::Xdp,
        args: args.iter().map(|(n, t)| (n.to_string(), *t)).collect(),
        ret,
        ends_packet: ends,
    }
}

pub fn paper_env() -> CompileEnv {
    let mut net = PackageExports { name: "net".into(), ..Default::default() };
    let u64 = IntType::U64;
    for (name, args, ret, ends) in [
        ("hike_drop", vec![], None, EndsPacket::Always),
        ("hike_pass", vec![], None, EndsPacket::Always),
        ("l2_redirect", vec![("ifindex", IntType::U32)], None, EndsPacket::Always),
        ("monitor", vec![("event", u64)], Some(u64), EndsPacket::Never),
        // Re-exported by net from the packages that define them.
        ("ip6_hset_srcdst", vec![("op", u64)], Some(u64), EndsPacket::Never),
        ("ip6_sd_tbmon", vec![], Some(u64), EndsPacket::Never),
        ("ip6_dst_tbmon", vec![], Some(u64), EndsPacket::Never),
        ("ip6_sd_dec2zero", vec![("n", u64)], Some(u64), EndsPacket::Never),
    ] {
        let package = match name {
            "ip6_hset_srcdst" => "sets",
            "ip6_sd_tbmon" | "ip6_dst_tbmon" => "meter",
            "ip6_sd_dec2zero" => "sampler",
            _ => "net",
        };
        net.programs.insert(name.into(), prog(package, &args, ret, ends));
    }
    let mut basic = PackageExports { name: "basic".into(), ..Default::default() };
    let mut maps = std::collections::BTreeMap::new();
    maps.insert(
        "ip6_sc_map".into(),
        MapLayout { key: vec![("slot".into(), FieldType::U32)], value: vec![("chain".into(), FieldType::Chain)] },
    );
    basic.loaders.insert("ip6_sc".into(), LoaderSig { package: "basic".into(), hook: Hook::Xdp, maps });
    let mut maps = std::collections::BTreeMap::new();
    maps.insert(
        "ip6_dst_map".into(),
        MapLayout {
            key: vec![("prefix".into(), FieldType::Ipv6Prefix)],
            value: vec![("chain".into(), FieldType::Chain)],
        },
    );
    basic.loaders.insert("ip6_dst_classifier".into(), LoaderSig { package: "basic".into(), hook: Hook::Xdp, maps });
    let mut env = CompileEnv::new();
    env.packages.insert("net".into(), net);
    env.packages.insert("basic".into(), basic);
    env
}

/// A package `t` of small programs for language tests:
/// `add(a, b) = a + b`, `echo(x) = x`, `neg8(x): s8 = x as s8`, `drop()` (XDP_DROP),
/// `verdict(v)` (ends with v), `tick() = number of calls so far`.
pub fn test_env() -> CompileEnv {
    let mut t = PackageExports { name: "t".into(), ..Default::default() };
    let u64 = IntType::U64;
    for (name, args, ret, ends) in [
        ("add", vec![("a", u64), ("b", u64)], Some(u64), EndsPacket::Never),
        ("echo", vec![("x", u64)], Some(u64), EndsPacket::Never),
        ("neg8", vec![("x", u64)], Some(IntType::S8), EndsPacket::Never),
        ("small", vec![("x", IntType::U8)], Some(u64), EndsPacket::Never),
        ("drop", vec![], None, EndsPacket::Always),
        ("verdict", vec![("v", IntType::U32)], None, EndsPacket::May),
        ("tick", vec![], Some(u64), EndsPacket::Never),
        ("args4", vec![("a", u64), ("b", u64), ("c", u64), ("d", u64)], Some(u64), EndsPacket::Never),
    ] {
        t.programs.insert(name.into(), prog("t", &args, ret, ends));
    }
    let mut tc = PackageExports { name: "tcpkg".into(), ..Default::default() };
    let mut p = prog("tcpkg", &[], Some(u64), EndsPacket::Never);
    p.hook = Hook::Tc;
    tc.programs.insert("tcprog".into(), p);
    let mut maps = std::collections::BTreeMap::new();
    maps.insert(
        "cfg".into(),
        MapLayout {
            key: vec![("prefix".into(), FieldType::Ipv6Prefix)],
            value: vec![("chain".into(), FieldType::Chain), ("mark".into(), FieldType::U8)],
        },
    );
    tc.loaders.insert("tcl".into(), LoaderSig { package: "tcpkg".into(), hook: Hook::Tc, maps });
    let mut env = paper_env();
    env.packages.insert("t".into(), t);
    env.packages.insert("tcpkg".into(), tc);
    env
}

/// Compiles `script` against `test_env`, links it (chains get ids 1, 2, … in
/// installation order, programs ids by name), and runs chain `entry` on the
/// reference interpreter over `packet`.
pub fn run(script: &str, entry: &str, packet: Vec<u8>) -> hike_bytecode::Run {
    run_with_budget(script, entry, packet, 100_000)
}

/// `run` with the VM's instruction budget set to `budget`.
pub fn run_with_budget(script: &str, entry: &str, packet: Vec<u8>, budget: u32) -> hike_bytecode::Run {
    use hike_bytecode::interp::{self, Memory, ProgramOutcome};
    let compiled = hike_chainc::compile(script, "test.eclat", &test_env()).unwrap_or_else(|d| panic!("{}", d.render()));
    let art = compiled.artifact;
    let mut ids = hike_chainc::link::Ids::default();
    let names =
        ["add", "echo", "neg8", "small", "drop", "verdict", "tick", "args4", "monitor", "hike_drop", "hike_pass"];
    for (i, n) in names.iter().enumerate() {
        ids.programs.insert(hike_chainc::link::ProgramRef::new("t", *n), hike_bytecode::ProgId(100 + i as u32));
        ids.programs.insert(hike_chainc::link::ProgramRef::new("net", *n), hike_bytecode::ProgId(100 + i as u32));
    }
    for (i, c) in art.chains.iter().enumerate() {
        ids.chains.insert(c.name.clone(), hike_bytecode::ChainId(i as u32 + 1));
    }
    let mut chains = std::collections::HashMap::new();
    for c in &art.chains {
        chains.insert(ids.chains[&c.name].0, hike_chainc::link::link_chain(c, &ids).unwrap());
    }
    let mut ticks = 0u64;
    let mut progs = |id: u32, a: [u64; 4], _: &mut Memory| {
        let name = names.get(id.checked_sub(100)? as usize)?;
        Some(match *name {
            "add" => ProgramOutcome::Result(a[0].wrapping_add(a[1])),
            "echo" => ProgramOutcome::Result(a[0]),
            "neg8" => ProgramOutcome::Result(a[0] as u8 as i8 as i64 as u64),
            "small" => ProgramOutcome::Result(u64::from(a[0] as u8)),
            "drop" | "hike_drop" => ProgramOutcome::Verdict(1),
            "hike_pass" => ProgramOutcome::Verdict(2),
            "verdict" => ProgramOutcome::Verdict(a[0] as u32),
            "tick" => {
                ticks += 1;
                ProgramOutcome::Result(ticks)
            }
            "args4" => ProgramOutcome::Result(a[0] * 1000 + a[1] * 100 + a[2] * 10 + a[3]),
            "monitor" => ProgramOutcome::Result(0),
            _ => return None,
        })
    };
    interp::run(&chains, &mut progs, ids.chains[entry].0, Memory::new(packet), budget)
}

/// `run` for a script whose chain `f` computes the result.
pub fn result(script: &str) -> u64 {
    let r = run(script, "f", vec![0; 64]);
    assert_eq!(r.ending, hike_bytecode::Ending::Returned, "{script}");
    r.regs[0]
}
