//! ebpkg-registry's integration tests: one test binary for the crate, one module per
//! topic, so that a change links one binary rather than one per file
//! (docs/ARCHITECTURE.md, "Tests"). One topic: `cargo test -p ebpkg-registry --test it api::`.

mod api;
mod attestations;
mod catalog;
mod common;
mod concurrency;
mod conformance;
mod faults;
mod replicas;
mod s3;
mod signatures;
mod trusted_publishing;
mod tuf;
