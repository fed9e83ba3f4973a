//! Properties over random input: decoding and validation never panic, every
//! decodable instruction has a text form that reads back to it, and the
//! interpreter always ends within its budget.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use hike_bytecode::interp::{self, Ending, Memory, ProgramOutcome};
use hike_bytecode::{Env, Insn, ProgramSig, asm, decode, validate};
use proptest::prelude::*;

fn insn() -> impl Strategy<Value = Insn> {
    // Bias towards real opcodes so the interesting paths are reached.
    let codes = prop_oneof![
        prop::sample::select(vec![
            0x07u8, 0x0f, 0x17, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x47, 0x4f, 0x57, 0x5f, 0x67, 0x6f, 0x77, 0x7f, 0x87,
            0x97, 0x9f, 0xa7, 0xaf, 0xb7, 0xbf, 0xc7, 0xcf, 0xd4, 0xdc, 0xd7, 0x18, 0x61, 0x69, 0x71, 0x79, 0x63, 0x6b,
            0x73, 0x7b, 0x05, 0x15, 0x1d, 0x25, 0x55, 0x65, 0x75, 0xa5, 0xc5, 0x45, 0x85, 0x95,
        ]),
        any::<u8>(),
    ];
    (codes, 0u8..12, 0u8..12, -4i16..8, prop_oneof![-3i32..70, any::<i32>()])
        .prop_map(|(code, dst, src, off, imm)| Insn::new(code, dst, src, off, imm))
}

proptest! {
    #[test]
    fn decodable_instructions_round_trip_through_text(insns in prop::collection::vec(insn(), 1..12)) {
        for pc in 0..insns.len() {
            if let Ok(op) = decode(&insns, pc) {
                let text = asm::format_op(&op);
                let back = asm::assemble(&text).map_err(|e| TestCaseError::fail(format!("{e}")))?;
                prop_assert_eq!(&back[..], &insns[pc..pc + op.width()], "{}", text);
            }
        }
    }

    #[test]
    fn validated_chains_end_within_their_budget(insns in prop::collection::vec(insn(), 1..30), budget in 1u32..300) {
        let mut env = Env::default();
        env.programs.insert(1, ProgramSig { name: "p".into(), nargs: 1 });
        if validate(&insns, &env).is_ok() {
            let mut chains = HashMap::new();
            chains.insert(5, insns);
            let mut progs = |id: u32, a: [u64; 4], _: &mut Memory| (id == 1).then_some(ProgramOutcome::Result(a[0] ^ 7));
            let run = interp::run(&chains, &mut progs, 5, Memory::new(vec![1; 40]), budget);
            prop_assert!(run.executed <= budget);
            prop_assert!(!matches!(run.ending, Ending::Aborted(hike_bytecode::AbortReason::BadInsn | hike_bytecode::AbortReason::BadPc)),
                "a validated chain never hits an undecodable instruction or leaves the chain: {:?}", run.ending);
        }
    }
}
