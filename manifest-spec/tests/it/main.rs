//! ebpkg-spec's integration tests: one test binary for the crate, one module per
//! topic, so that a change links one binary rather than one per file
//! (docs/ARCHITECTURE.md, "Tests"). One topic: `cargo test -p ebpkg-spec --test it manifest::`.

mod manifest;
mod roundtrip;
mod schemas;
mod spec_examples;
