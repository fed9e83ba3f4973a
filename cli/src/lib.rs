//! `ebpkg` as a library: what the `ebpkg` command does, callable in process.
//! `ops` holds one function per operation (resolve, fetch, plan, install,
//! publish, …) taking a [`Ctx`]; `registries` opens the configured registries,
//! mirrors and the cache. The binary (`main.rs`, `commands/`) only parses
//! arguments, calls an op and prints, as cargo's `src/bin/cargo` does over
//! `cargo::ops`.

pub mod cache_safety;
pub mod config;
pub mod ctx;
pub mod exit;
pub mod ops;
pub mod project;
pub mod registries;
pub mod trust_files;
pub mod ui;

pub use ctx::Ctx;
pub use exit::{EXIT_INPUT, Failure};
