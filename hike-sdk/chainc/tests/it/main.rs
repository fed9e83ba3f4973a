//! hike-chainc's integration tests: one test binary for the crate, one module per
//! topic, so that a change links one binary rather than one per file
//! (docs/ARCHITECTURE.md, "Tests"). One topic: `cargo test -p hike-chainc --test it diagnostics::`.

mod common;
mod diagnostics;
mod differential;
mod docs;
mod features;
mod limits;
mod nesting;
mod paper;
mod scale;
mod slips;
