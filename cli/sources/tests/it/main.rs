//! ebpkg-sources's integration tests: one test binary for the crate, one module per
//! topic, so that a change links one binary rather than one per file
//! (docs/ARCHITECTURE.md, "Tests"). One topic: `cargo test -p ebpkg-sources --test it cache::`.

mod cache;
mod common;
mod concurrency;
mod file_registry;
mod fuzz_index;
mod http_registry;
mod mirror;
mod url;
