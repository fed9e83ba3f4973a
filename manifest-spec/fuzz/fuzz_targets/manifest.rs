//! Any bytes given to the manifest parser give a manifest or diagnostics, never a
//! panic; a manifest that parses writes canonical TOML that parses to the same value.
#![no_main]

use ebpkg_spec::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match Manifest::parse_bytes(data, "ebpkg.toml") {
        Ok(manifest) => {
            let text = manifest.to_toml_string();
            let again = Manifest::parse(&text, "ebpkg.toml");
            assert_eq!(again.as_ref(), Ok(&manifest), "canonical text did not round-trip:\n{text}");
        }
        Err(diagnostics) => {
            // Rendering touches every span: it must stay inside the text.
            let source = String::from_utf8_lossy(data);
            let _ = diagnostics.render(&source);
        }
    }
});
