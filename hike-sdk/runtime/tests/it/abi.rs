//! The byte layouts hike-runtime and hike-bytecode assume are the ones the C
//! compiler produced: read the BTF of a compiled object and compare every offset,
//! size and limit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use hike_bytecode::limits;
use hike_runtime::abi::{chain, config, state};
use hike_runtime::objects;
use libbpf_rs::btf::types::{Composite, MemberAttr};
use libbpf_rs::btf::{Btf, HasSize};

/// Offset (bytes) of each member of struct `name`, and its size.
fn layout(btf: &Btf<'_>, name: &str) -> (HashMap<String, usize>, usize) {
    let s: Composite<'_> = btf.type_by_name(name).unwrap_or_else(|| panic!("struct {name} in BTF"));
    let mut offsets = HashMap::new();
    for m in s.iter() {
        let bits = match m.attr {
            MemberAttr::Normal { offset } | MemberAttr::BitField { offset, .. } => offset,
        };
        if let Some(n) = m.name {
            offsets.insert(n.to_string_lossy().into_owned(), (bits / 8) as usize);
        }
    }
    (offsets, s.size())
}

#[test]
fn rust_layouts_match_the_compiled_structs() {
    let elf = objects::vmtest(hike_bytecode::Hook::Xdp);
    let btf = Btf::from_raw("vmtest", elf).unwrap().unwrap();

    let (st, size) = layout(&btf, "hike_state");
    assert_eq!(size, state::SIZE);
    for (field, want) in [
        ("regs", state::REGS),
        ("pc", state::PC),
        ("chain", state::CHAIN),
        ("budget", state::BUDGET),
        ("depth", state::DEPTH),
        ("calls", state::CALLS),
        ("frames", state::FRAMES),
        ("stack", state::STACK),
        ("scratch", state::SCRATCH),
        ("prog_calls", state::PROG_CALLS),
        ("chain_runs", state::CHAIN_RUNS),
        ("aborts", state::ABORTS),
    ] {
        assert_eq!(st[field], want, "hike_state.{field}");
    }
    let (frame, frame_size) = layout(&btf, "hike_frame");
    assert_eq!(frame_size, state::FRAME_SIZE_BYTES);
    assert_eq!(frame["saved"], 8);

    let (ch, chain_size) = layout(&btf, "hike_chain");
    assert_eq!(chain_size, chain::SIZE);
    assert_eq!((ch["len"], ch["nargs"], ch["insns"]), (chain::LEN, chain::NARGS, chain::INSNS));

    let (cfg, cfg_size) = layout(&btf, "hike_config");
    assert_eq!(cfg_size, config::SIZE);
    assert_eq!((cfg["magic"], cfg["abi_version"], cfg["budget"]), (config::MAGIC, config::ABI_VERSION, config::BUDGET));

    // struct hike_pkt_info only types locals of inlined functions, which BTF does
    // not record; tests/it/vm.rs checks its offsets by reading them from a chain.
    let (_, insn_size) = layout(&btf, "hike_insn");
    assert_eq!(insn_size, hike_bytecode::Insn::SIZE);
    // The array lengths in the state are the limits.
    assert_eq!((state::STACK - state::FRAMES) / state::FRAME_SIZE_BYTES, limits::MAX_DEPTH);
    assert_eq!(state::SCRATCH - state::STACK, limits::MAX_DEPTH * limits::FRAME_SIZE as usize);
    assert_eq!((state::CHAIN_RUNS - state::PROG_CALLS) / 8, limits::MAX_PROGS as usize);
}

#[test]
fn program_signatures_are_read_from_btf() {
    let sigs = hike_runtime::signature::read("vmtest", objects::vmtest(hike_bytecode::Hook::Xdp)).unwrap();
    let args4 = &sigs["test_args4"];
    assert_eq!(
        args4.args,
        [("u64", "a"), ("u64", "b"), ("u64", "c"), ("u64", "d")].map(|(t, n)| (t.to_owned(), n.to_owned()))
    );
    assert_eq!(args4.ret, "u64");
    assert_eq!(sigs["test_args1"].args[0], ("u32".to_owned(), "a".to_owned()));
    assert_eq!(sigs["test_ret_u8"].ret, "u8");
    assert_eq!(sigs["test_nop"].nargs(), 0);
    assert_eq!(sigs.len(), 10);
    // A loader object has no HIKe programs.
    assert!(
        hike_runtime::signature::read("testloader", objects::testloader(hike_bytecode::Hook::Xdp)).unwrap().is_empty()
    );
}
