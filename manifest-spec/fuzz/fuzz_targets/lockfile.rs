//! Any text given to the lockfile parser gives a lockfile or diagnostics, never a
//! panic; a lockfile that parses writes text that parses back to it; and what is
//! salvaged of any text (to resolve again from) is itself a valid lockfile, equal
//! to the parsed one when the text was valid. Read in the layout ebpkg writes or as a
//! TOML document, it gives the same lockfile or the same diagnostics.
#![no_main]

use ebpkg_spec::Lockfile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &str| {
    let parsed = Lockfile::parse(data, "ebpkg.lock");
    assert_eq!(parsed, Lockfile::parse_as_toml(data, "ebpkg.lock"), "read in its layout, not as TOML");
    if let Ok(lock) = &parsed {
        let text = lock.to_toml_string();
        assert_eq!(Lockfile::parse(&text, "ebpkg.lock").as_ref(), Ok(lock));
    }
    let salvaged = Lockfile::salvage(data, "ebpkg.lock");
    let text = salvaged.to_toml_string();
    assert_eq!(Lockfile::parse(&text, "ebpkg.lock").as_ref(), Ok(&salvaged), "salvaged text is invalid:\n{text}");
    if let Ok(lock) = parsed {
        assert_eq!(salvaged, lock);
    }
});
