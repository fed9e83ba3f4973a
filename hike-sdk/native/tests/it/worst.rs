//! The worst case bounds every run (see `hike_native::testing`), on random
//! chains (loops included) built from valid instructions, and code is generated
//! for every chain the analysis accepts.

use hike_bytecode::{AluOp, Bank, Cond, Insn, Size, build};
use proptest::prelude::*;

fn step() -> impl Strategy<Value = Vec<Insn>> {
    prop_oneof![
        (0u8..10, any::<i32>()).prop_map(|(r, i)| vec![build::mov_imm(r, i)]),
        (0u8..10, 0u8..10).prop_map(|(d, s)| vec![build::alu_reg(AluOp::Add, d, s)]),
        (0u8..10, any::<i32>(), 1i16..4).prop_map(|(r, i, off)| vec![build::jmp_imm(Cond::Gt, r, i, off)]),
        // A countdown loop: `n` iterations, some past the VM's call limit.
        (1i32..700).prop_map(|n| vec![
            build::mov_imm(8, n),
            build::alu_imm(AluOp::Sub, 8, 1),
            build::jmp_imm(Cond::Ne, 8, 0, -2)
        ]),
        (1u32..=4).prop_map(|id| vec![build::call_prog(id, (id - 1) as u8)]),
        Just(vec![build::call_chain(2, 1)]),
        (0u8..10).prop_map(|r| vec![build::store(Size::DW, Bank::Stack, 10, -8, r)]),
        (0u8..10).prop_map(|r| vec![build::load(Size::B, Bank::Packet, r, 0, 12)]),
    ]
}

fn bytes(insns: &[Insn]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.encode()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]
    #[test]
    fn the_worst_case_bounds_every_run(top in prop::collection::vec(step(), 0..60), callee in prop::collection::vec(step(), 0..12)) {
        let mut t: Vec<Insn> = top.concat();
        t.push(build::exit());
        // The callee may not call itself (the validator refuses it); its own calls go to programs.
        let mut c: Vec<Insn> = callee.into_iter().filter(|s| !s.iter().any(|i| i.src == 1 && i.code == 0x85)).flatten().collect();
        c.push(build::exit());
        if let Err(e) = hike_native::testing::worst_bounds_runs(&bytes(&t), &bytes(&c)) {
            prop_assert!(false, "{}", e);
        }
    }
}
