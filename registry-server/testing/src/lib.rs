//! Real servers for tests, never mocks: PostgreSQL clusters (one shared per test
//! process, or private ones for tests that stop the database) and a database per
//! test; an S3-compatible server (moto) for the blob store; nginx, for the
//! load-balancer tests and the benchmark; a scripted HTTP peer, for what a real
//! server never sends. Each is cleaned up
//! by a guard, and by the kernel when the test process dies (the servers get
//! `PR_SET_PDEATHSIG`). Synchronous: usable from any test, with or without a
//! runtime. Headless Chromium, for what the catalog's pages show in a browser.

mod browser;
mod nginx;
mod peer;
mod postgres;
mod s3;
mod spawn;

pub use browser::{Browser, Visit};
pub use nginx::Nginx;
pub use peer::{HttpPeer, Request, respond};
pub use postgres::{Database, Postgres};
pub use s3::S3Server;
pub use spawn::{ServedRegistry, free_port, http, spawn_guarded, wait_listening};

/// A harness failure, with what the server said.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what}: {cause}")]
    Io { what: String, cause: std::io::Error },
    #[error("{what} failed: {output}")]
    Command { what: String, output: String },
    #[error("{what} did not get ready within {secs} s; its log ends with:\n{log}")]
    NotReady { what: String, secs: u64, log: String },
    #[error("{what} exited while starting ({status}); its log ends with:\n{log}")]
    Exited { what: String, status: std::process::ExitStatus, log: String },
    #[error("{0}; run ./ci/setup to install it")]
    Missing(String),
}

pub type Result<T> = std::result::Result<T, Error>;

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |cause| Error::Io { what, cause }
}
