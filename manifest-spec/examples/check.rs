//! Checks manifests and lockfiles the way `ebpkg` will read them, printing a
//! summary or every problem with its source line.
//!
//! ```text
//! cargo run -p ebpkg-spec --example check -- path/to/ebpkg.toml [path/to/ebpkg.lock ...]
//! ```
//!
//! Exits 1 when any file has a problem.

use std::path::Path;
use std::process::ExitCode;

use ebpkg_spec::{Lockfile, Manifest};

fn main() -> ExitCode {
    let mut ok = true;
    for arg in std::env::args().skip(1) {
        let path = Path::new(&arg);
        let is_lock = path.file_name().is_some_and(|n| n == ebpkg_spec::lockfile::LOCK_FILE);
        let result = if is_lock {
            Lockfile::load(path).map(|l| format!("{} locked package(s)", l.packages().len()))
        } else {
            Manifest::load(path).map(|m| {
                format!(
                    "{}@{}: {} program(s), {} loader(s), {} chain script(s), {} dependenc(ies)",
                    m.package.name,
                    m.package.version,
                    m.programs.len(),
                    m.loaders.len(),
                    m.chains.len(),
                    m.dependencies.len()
                )
            })
        };
        match result {
            Ok(summary) => println!("ok   {arg}: {summary}"),
            Err(e) => {
                ok = false;
                println!("FAIL {arg}:");
                print!("{}", e.render());
            }
        }
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
