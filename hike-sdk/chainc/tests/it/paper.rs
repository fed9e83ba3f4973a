//! The eCLAT paper's DDoS script compiles unchanged, and its bytecode does on every
//! path what the paper says, run on the reference interpreter with stub programs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::cell::RefCell;
use std::collections::HashMap;

use hike_bytecode::interp::{self, Ending, Memory, ProgramOutcome};
use hike_bytecode::{ChainId, ProgId};
use hike_chainc::link::{Ids, ProgramRef, encode_entry, link_chain};
use hike_chainc::{Device, FieldValue, Target, compile};

const SCRIPT: &str = include_str!("../scripts/ddos.eclat");

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;
const XDP_REDIRECT: u32 = 4;

/// Stub programs: what each returns for one packet, and a log of the calls.
#[derive(Default)]
struct Stubs {
    blacklisted: bool,
    dst_out: bool,
    sd_out: bool,
    dec2zero_counter: u64,
    calls: Vec<(String, Vec<u64>)>,
}

fn run_packet(ids: &Ids, insns: &[hike_bytecode::Insn], stubs: &RefCell<Stubs>) -> Ending {
    let names: HashMap<u32, String> = ids.programs.iter().map(|(r, id)| (id.0, r.program.clone())).collect();
    let mut progs = |id: u32, a: [u64; 4], _: &mut Memory| {
        let mut s = stubs.borrow_mut();
        let name = names.get(&id)?.clone();
        let outcome = match name.as_str() {
            "ip6_hset_srcdst" => {
                s.calls.push((name, vec![a[0]]));
                // LOOKUP (2) returns 0 when listed; ADD (1) lists the flow.
                if a[0] == 1 {
                    s.blacklisted = true;
                    ProgramOutcome::Result(0)
                } else {
                    ProgramOutcome::Result(if s.blacklisted { 0 } else { 1 })
                }
            }
            "ip6_sd_dec2zero" => {
                s.calls.push((name, vec![a[0]]));
                s.dec2zero_counter += 1;
                ProgramOutcome::Result(if s.dec2zero_counter.is_multiple_of(a[0]) { 0 } else { 1 })
            }
            "ip6_dst_tbmon" => {
                s.calls.push((name, vec![]));
                ProgramOutcome::Result(u64::from(s.dst_out))
            }
            "ip6_sd_tbmon" => {
                s.calls.push((name, vec![]));
                ProgramOutcome::Result(u64::from(s.sd_out))
            }
            "monitor" => {
                s.calls.push((name, vec![a[0]]));
                ProgramOutcome::Result(1)
            }
            "hike_drop" => ProgramOutcome::Verdict(XDP_DROP),
            "hike_pass" => ProgramOutcome::Verdict(XDP_PASS),
            "l2_redirect" => {
                s.calls.push((name, vec![a[0]]));
                ProgramOutcome::Verdict(XDP_REDIRECT)
            }
            _ => return None,
        };
        Some(outcome)
    };
    let mut chains = HashMap::new();
    chains.insert(1, insns.to_vec());
    interp::run(&chains, &mut progs, 1, Memory::new(vec![0; 64]), 2048).ending
}

fn link() -> (Ids, Vec<hike_bytecode::Insn>, hike_chainc::Artifact) {
    let compiled = compile(SCRIPT, "ddos.eclat", &common::paper_env()).unwrap_or_else(|d| panic!("{}", d.render()));
    assert_eq!(compiled.warnings.items, vec![], "{}", compiled.warnings.render());
    let art = compiled.artifact;
    assert_eq!(art.chains.len(), 1);
    let mut ids = Ids::default();
    let mut next = 10;
    for r in &art.chains[0].relocations {
        if let Target::Program { package, name } = &r.target {
            ids.programs.entry(ProgramRef::new(package.as_str(), name.as_str())).or_insert_with(|| {
                next += 1;
                ProgId(next)
            });
        }
    }
    ids.chains.insert("ddos_tb_2_lev".into(), ChainId(1));
    let insns = link_chain(&art.chains[0], &ids).unwrap();
    (ids, insns, art)
}

#[test]
fn the_script_compiles_unchanged_with_its_loader_statements() {
    let (ids, insns, art) = link();
    assert_eq!(art.chains[0].name, "ddos_tb_2_lev");
    assert_eq!(art.chains[0].nargs, 0);
    assert_eq!(art.params, ["DEVNAME"]);
    assert_eq!(art.attaches.len(), 1);
    assert_eq!(art.attaches[0].device, Device::Param("DEVNAME".into()));
    assert_eq!((art.attaches[0].loader.as_str(), art.attaches[0].mode.name()), ("ip6_sc", "xdp"));
    let cfg = &art.loader_configs[0];
    assert_eq!((cfg.package.as_str(), cfg.loader.as_str(), cfg.map.as_str()), ("basic", "ip6_sc", "ip6_sc_map"));
    assert_eq!(cfg.entries[0].key, [FieldValue::Int { value: 0, size: 4 }]);
    assert_eq!(cfg.entries[0].value, [FieldValue::Chain("ddos_tb_2_lev".into())]);
    assert_eq!(encode_entry(&cfg.entries[0], &ids, "ddos").unwrap(), (vec![0, 0, 0, 0], vec![1, 0, 0, 0]));
    // Re-exported programs are linked to the package that defines them.
    let targets: Vec<&Target> = art.chains[0].relocations.iter().map(|r| &r.target).collect();
    assert!(targets.contains(&&Target::Program { package: "meter".into(), name: "ip6_sd_tbmon".into() }));
    // The chain passes the VM's validator.
    let mut env = hike_bytecode::Env::default();
    for (ProgramRef { program: name, .. }, id) in &ids.programs {
        let nargs = common::paper_env().packages["net"].programs[name].args.len() as u8;
        env.programs.insert(id.0, hike_bytecode::ProgramSig { name: name.clone(), nargs });
    }
    hike_bytecode::validate(&insns, &env).unwrap();
}

#[test]
fn in_profile_traffic_passes() {
    let (ids, insns, _) = link();
    let stubs = RefCell::new(Stubs::default());
    assert_eq!(run_packet(&ids, &insns, &stubs), Ending::Verdict(XDP_PASS));
    let calls: Vec<String> = stubs.borrow().calls.iter().map(|(n, a)| format!("{n}{a:?}")).collect();
    assert_eq!(calls, ["ip6_hset_srcdst[2]", "ip6_dst_tbmon[]", "monitor[0]"]);
}

#[test]
fn out_of_profile_twice_blacklists_and_drops() {
    let (ids, insns, _) = link();
    let stubs = RefCell::new(Stubs { dst_out: true, sd_out: true, ..Default::default() });
    assert_eq!(run_packet(&ids, &insns, &stubs), Ending::Verdict(XDP_DROP));
    let calls: Vec<String> = stubs.borrow().calls.iter().map(|(n, a)| format!("{n}{a:?}")).collect();
    assert_eq!(calls, ["ip6_hset_srcdst[2]", "ip6_dst_tbmon[]", "ip6_sd_tbmon[]", "ip6_hset_srcdst[1]", "monitor[1]"]);
    assert!(stubs.borrow().blacklisted);
    // Only the destination out of profile: the flow itself is fine, it passes.
    let stubs = RefCell::new(Stubs { dst_out: true, ..Default::default() });
    assert_eq!(run_packet(&ids, &insns, &stubs), Ending::Verdict(XDP_PASS));
}

#[test]
fn blacklisted_flows_are_dropped_with_one_in_500_redirected() {
    let (ids, insns, _) = link();
    let stubs = RefCell::new(Stubs { blacklisted: true, ..Default::default() });
    let (mut drops, mut redirects) = (0, 0);
    for _ in 0..1500 {
        stubs.borrow_mut().calls.clear();
        match run_packet(&ids, &insns, &stubs) {
            Ending::Verdict(XDP_DROP) => {
                drops += 1;
                assert_eq!(stubs.borrow().calls.last().unwrap(), &("monitor".to_owned(), vec![1]));
            }
            Ending::Verdict(XDP_REDIRECT) => {
                redirects += 1;
                let calls = &stubs.borrow().calls;
                assert_eq!(calls[calls.len() - 2], ("monitor".to_owned(), vec![2]));
                assert_eq!(calls[calls.len() - 1], ("l2_redirect".to_owned(), vec![6]));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((drops, redirects), (1497, 3));
}
