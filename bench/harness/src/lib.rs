//! What the first-party packages' scenario tests (`cli/tests/it/mmlf.rs`,
//! `cli/tests/it/ddos.rs`) and the data-plane benchmark (`./ci/bench`) need besides
//! `ebpkg`: network namespaces with veth pairs, plain BPF objects built and loaded
//! next to HIKe (the monolithic and tail-call MMLF variants, traffic injectors,
//! counters), and packets.
//!
//! Everything made here is removed by guards, even when a test fails.

pub mod bench;
pub mod bpf;
pub mod netns;
pub mod packets;

use std::path::PathBuf;

/// The repository's `packages/` directory.
pub fn packages_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../packages")
}

/// `bpf/scenario.bpf.c`: the frame source and counting sink the scenarios and
/// the MMLF benchmark load beside the packages.
pub fn scenario_source() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bpf/scenario.bpf.c")
}
