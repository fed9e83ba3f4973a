//! Any text given to the compiler gives an artifact or diagnostics, never a panic;
//! every chain it produces passes the VM's validator (calls linked to stub ids)
//! and fits in the VM; and run on the reference interpreter (programs returning
//! 0), a chain that returns costs at least what the compiler says it costs at
//! least (the bound its E302 checks rest on).
#![no_main]

use std::collections::BTreeMap;

use hike_bytecode::interp::{self, Ending, Memory, ProgramOutcome};
use hike_bytecode::{Env, Hook, ProgramSig as VmSig, validate};
use hike_chainc::link::{Ids, link_chain};
use hike_chainc::{
    CompileEnv, EndsPacket, FieldType, IntType, LoaderSig, MapLayout, PackageExports, ProgramSig, Target, compile,
};
use libfuzzer_sys::fuzz_target;

fn env() -> CompileEnv {
    let mut net = PackageExports { name: "net".into(), ..Default::default() };
    for (name, nargs, ends) in [
        ("hike_drop", 0, EndsPacket::Always),
        ("hike_pass", 0, EndsPacket::Always),
        ("monitor", 1, EndsPacket::Never),
        ("ip6_hset_srcdst", 1, EndsPacket::Never),
        ("ip6_sd_tbmon", 0, EndsPacket::Never),
        ("ip6_dst_tbmon", 0, EndsPacket::Never),
        ("ip6_sd_dec2zero", 1, EndsPacket::Never),
        ("l2_redirect", 1, EndsPacket::Always),
    ] {
        let args = (0..nargs).map(|i| (format!("a{i}"), IntType::U64)).collect();
        net.programs.insert(
            name.into(),
            ProgramSig { package: "net".into(), hook: Hook::Xdp, args, ret: Some(IntType::U64), ends_packet: ends },
        );
    }
    let mut basic = PackageExports { name: "basic".into(), ..Default::default() };
    let mut maps = BTreeMap::new();
    maps.insert(
        "ip6_sc_map".into(),
        MapLayout { key: vec![("slot".into(), FieldType::U32)], value: vec![("chain".into(), FieldType::Chain)] },
    );
    basic.loaders.insert("ip6_sc".into(), LoaderSig { package: "basic".into(), hook: Hook::Xdp, maps });
    let mut env = CompileEnv::new();
    env.packages.insert("net".into(), net);
    env.packages.insert("basic".into(), basic);
    env
}

fuzz_target!(|text: &str| {
    let env = env();
    let compiled = match compile(text, "fuzz.eclat", &env) {
        Ok(c) => c,
        Err(d) => {
            let _ = d.render();
            return;
        }
    };
    let art = compiled.artifact;
    let least = compiled.least;
    let mut ids = Ids::default();
    let mut vm = Env::default();
    for (i, (name, sig)) in env.packages["net"].programs.iter().enumerate() {
        let id = i as u32 + 1;
        ids.programs.insert(hike_chainc::link::ProgramRef::new("net", name.as_str()), hike_bytecode::ProgId(id));
        vm.programs.insert(id, VmSig { name: name.clone(), nargs: sig.args.len() as u8 });
    }
    let mut linked = std::collections::HashMap::new();
    for (i, chain) in art.chains.iter().enumerate() {
        let id = i as u32 + 1;
        let insns = link_chain(chain, &ids).expect("every reference links");
        linked.insert(id, insns.clone());
        let facts =
            validate(&insns, &vm).unwrap_or_else(|e| panic!("chain {} fails validation: {e}\n{text}", chain.name));
        vm.chains
            .insert(id, hike_bytecode::ChainSig { name: chain.name.clone(), nargs: chain.nargs, depth: facts.depth });
        ids.chains.insert(chain.name.clone(), hike_bytecode::ChainId(id));
        assert!(chain.relocations.iter().all(|r| matches!(r.target, Target::Program { .. } | Target::Chain { .. })));
    }
    let ends: Vec<bool> =
        env.packages["net"].programs.values().map(|sig| sig.ends_packet == EndsPacket::Always).collect();
    for chain in &art.chains {
        let Some(bound) = least.get(&chain.name) else { continue };
        let mut programs = |id: u32, _: [u64; 4], _: &mut Memory| {
            let always = *ends.get(id.checked_sub(1)? as usize)?;
            Some(if always { ProgramOutcome::Verdict(1) } else { ProgramOutcome::Result(0) })
        };
        let run = interp::run(&linked, &mut programs, ids.chains[&chain.name].0, Memory::new(vec![0; 64]), 100_000);
        if run.ending == Ending::Returned {
            let calls: u64 = run.prog_calls.values().sum();
            assert!(
                u64::from(run.executed) >= bound.insns && calls >= bound.calls,
                "chain {} ran {} instructions and {calls} program calls, under its least {bound:?}\n{text}",
                chain.name,
                run.executed
            );
        }
    }
});
