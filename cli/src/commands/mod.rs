//! One module per command (or group of related commands): arguments and printing.

pub mod account;
pub mod attest;
pub mod build;
pub mod cache;
pub mod chain;
pub mod deployments;
pub mod docs;
pub mod doctor;
pub mod edit;
pub mod install;
pub mod keys;
pub mod lock;
pub mod new;
pub mod registry;
pub mod test;
pub mod tuf;
pub mod verify;
