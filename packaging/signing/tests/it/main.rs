//! ebpkg-signing's integration tests: one test binary for the crate, one module per
//! topic, so that a change links one binary rather than one per file
//! (docs/ARCHITECTURE.md, "Tests"). One topic: `cargo test -p ebpkg-signing --test it attestations::`.

mod attestations;
mod cosign;
mod never_panics;
mod policy;
mod signatures;
