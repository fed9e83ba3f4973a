//! ebpkg's integration tests: one test binary for the crate, one module per
//! topic, so that a change links one binary rather than one per file
//! (docs/ARCHITECTURE.md, "Tests"). One topic: `cargo test -p ebpkg --test it attestations::`.

mod attestations;
mod chain;
mod ci_publish;
mod common;
mod cosign_publish;
mod ddos;
mod docs;
mod first_party;
mod fleet;
mod host_state;
mod install;
mod messages;
mod mmlf;
mod registry_http;
mod resolve;
mod ship_objects;
mod signatures;
mod trusted_publishing;
mod tuf;
mod upgrade_state;
mod workflow;
