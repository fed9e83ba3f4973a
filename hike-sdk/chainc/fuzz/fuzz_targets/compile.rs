//! Any text given to the compiler gives an artifact or diagnostics, never a panic;
//! every chain it produces passes the VM's validator (calls linked to stub ids)
//! and fits in the VM.
#![no_main]

use std::collections::BTreeMap;

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
        MapLayout {
            key: vec![("slot".into(), FieldType::Int(IntType::U32))],
            value: vec![("chain".into(), FieldType::Chain)],
        },
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
    let mut ids = Ids::default();
    let mut vm = Env::default();
    for (i, (name, sig)) in env.packages["net"].programs.iter().enumerate() {
        let id = i as u32 + 1;
        ids.programs.insert(("net".into(), name.clone()), id);
        vm.programs.insert(id, VmSig { name: name.clone(), nargs: sig.args.len() as u8 });
    }
    for (i, chain) in art.chains.iter().enumerate() {
        let id = i as u32 + 1;
        let insns = link_chain(chain, &ids).expect("every reference links");
        let facts =
            validate(&insns, &vm).unwrap_or_else(|e| panic!("chain {} fails validation: {e}\n{text}", chain.name));
        vm.chains
            .insert(id, hike_bytecode::ChainSig { name: chain.name.clone(), nargs: chain.nargs, depth: facts.depth });
        ids.chains.insert(chain.name.clone(), id);
        assert!(chain.relocations.iter().all(|r| matches!(r.target, Target::Program { .. } | Target::Chain { .. })));
    }
});
