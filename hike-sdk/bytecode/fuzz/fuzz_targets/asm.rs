//! Any text given to the assembler assembles or gives an error, never a panic;
//! what assembles disassembles to text that assembles to the same instructions.
#![no_main]

use hike_bytecode::asm;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok(insns) = asm::assemble(text) else { return };
    let lines: Vec<String> = asm::disassemble(&insns).into_iter().map(|(_, t)| t).collect();
    if lines.iter().any(|l| l.starts_with(".insn")) {
        // Slots that do not decode (e.g. a lone second half of `ll`) have no text form.
        return;
    }
    assert_eq!(asm::assemble(&lines.join("\n")).expect("disassembly assembles"), insns);
});
