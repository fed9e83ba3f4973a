//! Any text given to the lockfile parser gives a lockfile or diagnostics, never a
//! panic; a lockfile that parses writes text that parses back to it.
#![no_main]

use ebpkg_spec::Lockfile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &str| {
    if let Ok(lock) = Lockfile::parse(data, "ebpkg.lock") {
        let text = lock.to_toml_string();
        assert_eq!(Lockfile::parse(&text, "ebpkg.lock").as_ref(), Ok(&lock));
    }
});
