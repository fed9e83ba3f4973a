//! Trusted publishing, as PyPI and crates.io do it: a CI pipeline proves who it
//! is with an OIDC token from an issuer the operator trusts (GitHub Actions'),
//! and exchanges it for a registry token that can publish only the packages
//! whose owners said that repository's workflow may publish them, for 30
//! minutes. No long-lived secret sits in the pipeline.
//!
//! `jwks` fetches and caches the issuers' signing keys; `verify` checks a token
//! (signature with an asymmetric algorithm, issuer, audience, expiry and
//! not-before with a minute of leeway, a bounded lifetime) and reads the CI
//! identity from it; `routes::trusted_publishing` matches it against the
//! packages' configurations, refuses a token used twice, and mints the token.

pub mod jwks;
pub mod verify;

pub use jwks::JwksCache;
pub use verify::{Identity, Refusal, verify};
