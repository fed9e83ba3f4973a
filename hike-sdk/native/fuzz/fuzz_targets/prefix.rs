//! Any text: prefixing a module's symbols never panics, keeps every line, and
//! leaves text without `@` as it was.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let out = hike_native::prefix_module(text, 3);
    assert_eq!(out.lines().count(), text.lines().count());
    if !text.contains('@') {
        assert_eq!(out, text);
    }
});
