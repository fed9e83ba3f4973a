//! Any bytes given to the lexer and parser give a tree or diagnostics, never a
//! panic or a stack overflow (however deep the nesting), and every diagnostic
//! renders within the text. Bytes that are not UTF-8 are placed, not refused
//! whole.
#![no_main]

use hike_chainc::diag::{Sink, source_text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let text = match source_text(bytes, "fuzz.eclat") {
        Ok(text) => text,
        Err(d) => {
            assert!(d.items.iter().all(|i| i.line >= 1 && i.column >= 1));
            let _ = d.render();
            return;
        }
    };
    let mut sink = Sink::new("fuzz.eclat", text);
    let tokens = hike_chainc::lexer::lex(text, &mut sink);
    let _ = hike_chainc::parser::parse(tokens, &mut sink);
    let diags = sink.finish();
    let shown = diags.render();
    assert!(!shown.contains('\0') && !shown.contains('\x1b'), "a control character reached the output");
});
