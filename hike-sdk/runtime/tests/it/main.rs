//! hike-runtime's integration tests: one test binary for the crate, one module per
//! topic, so that a change links one binary rather than one per file
//! (docs/ARCHITECTURE.md, "Tests"). One topic: `cargo test -p hike-runtime --test it abi::`.

mod abi;
mod attach;
mod clock;
mod common;
mod differential;
mod lifecycle;
mod native;
mod random;
mod repair;
mod sdk_build;
mod verify;
mod vm;
