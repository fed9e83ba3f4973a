//! TUF metadata over an ebpkg registry's index files, written with and checked
//! by the `tough` crate (pinned).
//!
//! Roles, as PEP 458 splits them for a package index: `root` and `targets` are
//! signed with an offline key (the registry's operator keeps it away from the
//! machine that publishes); `targets` delegates every target to one of
//! [`BINS`] hashed bins (`bins-0` … `bins-f`, by the first hex digit of the
//! SHA-256 of the target's name), which, with `snapshot` and `timestamp`, are
//! signed with an online key on every change. A publish re-signs one bin, the
//! snapshot and the timestamp, never everything.
//!
//! The targets are the index files (`index/3/n/net`) and `config.json`: each
//! index line carries its archive's SHA-256 and its signer's key id, so signing
//! the index files covers archives and publisher signatures transitively.
//!
//! [`repo`] writes the metadata, [`client`] loads and checks it.

pub mod bins;
pub mod client;
mod error;
pub mod keys;
pub mod repo;
pub mod store;
pub mod verified;

pub use client::{LATEST_KNOWN_TIME, TrustedIndex, load, load_with, recorded_time_ahead};
pub use error::{Error, Result};
pub use repo::Expiry;
pub use store::{DirStore, MemStore, Store};
pub use tough::{
    Bytes, FilesystemTransport, Transport, TransportError, TransportErrorKind, TransportStream, async_trait,
};
pub use verified::{LastVerified, Probe, last_verified, load_probed};

/// The number of hashed bins.
pub const BINS: usize = 16;

/// The TUF specification version the metadata says it follows.
const SPEC_VERSION: &str = "1.0.0";

/// Runs an async `tough` call from synchronous code.
fn block_on<F: std::future::Future>(f: F) -> Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Io { what: "starting a runtime for TUF".into(), cause: e })?;
    Ok(runtime.block_on(f))
}
