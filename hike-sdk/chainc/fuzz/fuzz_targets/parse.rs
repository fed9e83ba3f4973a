//! Any text given to the lexer and parser gives a tree or diagnostics, never a
//! panic, and every diagnostic renders within the text.
#![no_main]

use hike_chainc::diag::Sink;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let mut sink = Sink::new("fuzz.eclat", text);
    let tokens = hike_chainc::lexer::lex(text, &mut sink);
    let _ = hike_chainc::parser::parse(tokens, &mut sink);
    let _ = sink.finish().render();
});
