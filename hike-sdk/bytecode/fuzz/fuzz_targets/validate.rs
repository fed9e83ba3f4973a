//! Any bytes, read as a chain, are accepted or refused by the validator without a
//! panic; an accepted chain runs on the reference interpreter to an ending within
//! its budget, and the disassembly of a chain that decodes reassembles to it.
#![no_main]

use std::collections::HashMap;

use hike_bytecode::interp::{self, Memory, ProgramOutcome};
use hike_bytecode::{ChainSig, Env, Insn, ProgramSig, asm, validate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(insns) = Insn::decode_all(&data[..data.len() / 8 * 8]) else { return };
    let mut env = Env::default();
    env.programs.insert(1, ProgramSig { name: "p1".into(), nargs: 1 });
    env.programs.insert(2, ProgramSig { name: "p2".into(), nargs: 0 });
    env.chains.insert(3, ChainSig { name: "c3".into(), nargs: 0, depth: 1 });
    let Ok(_) = validate(&insns, &env) else { return };

    let text: Vec<String> = asm::disassemble(&insns).into_iter().map(|(_, t)| t).collect();
    let again = asm::assemble(&text.join("\n")).expect("the disassembly of a valid chain assembles");
    assert_eq!(again, insns);

    let mut chains = HashMap::new();
    chains.insert(7, insns);
    chains.insert(3, vec![hike_bytecode::build::exit()]);
    let mut programs = |id: u32, args: [u64; 4], _: &mut Memory| match id {
        1 => Some(ProgramOutcome::Result(args[0].wrapping_mul(3))),
        2 => Some(ProgramOutcome::Result(9)),
        _ => None,
    };
    let run = interp::run(&chains, &mut programs, 7, Memory::new(vec![0xab; 64]), 500);
    assert!(run.executed <= 500);
});
