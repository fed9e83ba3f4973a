//! Any README a publisher uploads renders to HTML without a panic, and what the
//! catalog would show has no script-capable element, event handler or
//! `javascript:`-like URL.
#![no_main]

use ebpkg_registry::catalog::markdown::{active_content, render};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let html = render(text);
    if let Some(found) = active_content(&html) {
        panic!("{found} in the rendering of {text:?}: {html}");
    }
});
