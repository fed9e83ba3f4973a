//! `ebpkg-registry`: the ebpkg registry server. A sparse index and a JSON API over
//! PostgreSQL (packages, versions, owners, tokens) and a blob store (archives).
//! A web catalog of server-rendered pages for people. Stateless: any number of replicas may share one database and one blob store.
//!
//! README.md describes running it; docs/ARCHITECTURE.md where it sits.

pub mod app;
pub mod archive_cache;
pub mod auth;
pub mod catalog;
pub mod command_line;
pub mod config;
pub mod db;
pub mod downloads;
pub mod error;
pub mod index_cache;
pub mod metrics;
pub mod openapi;
pub mod ratelimit;
pub mod routes;
pub mod search;
pub mod state;
pub mod storage;
#[cfg(feature = "testing")]
pub mod testing;
pub mod trusted_publishing;
pub mod tuf;

pub use app::{Server, router};
pub use config::{AdminConfig, Config, ConfigArgs, StorageUrl};
