//! ebpkg-deploy's integration tests: one test binary for the crate, one module per
//! topic, so that a change links one binary rather than one per file
//! (docs/ARCHITECTURE.md, "Tests"). One topic: `cargo test -p ebpkg-deploy --test it crash::`.

mod common;
mod crash;
mod install;
mod state;
