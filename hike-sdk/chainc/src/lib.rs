//! The chain compiler: eCLAT-compatible chain scripts to HIKe VM bytecode.
//!
//! [`compile`] takes a script and the packages it may use ([`CompileEnv`]) and
//! returns an [`Artifact`]: the bytecode of each chain with calls still by name,
//! the loader configuration and attach statements, and a line table; or every
//! error found, as [`Diagnostics`] with `file:line:col` and source carets.
//! [`link`] fills in the ids the runtime assigned. The language is described in
//! hike-sdk/docs/CHAINS.md.

pub mod artifact;
pub mod ast;
mod codegen;
mod compile;
mod consteval;
mod cost;
pub mod diag;
pub mod env;
pub mod lexer;
pub mod link;
pub mod parser;
pub mod types;

pub use artifact::{Artifact, Attach, CompiledChain, Device, FieldValue, LoaderConfig, MapEntry, Target};
pub use compile::{Compiled, compile, compile_bytes, parse_address};
pub use cost::Cost;
pub use diag::{Code, Diagnostic, Diagnostics, Severity, source_text};
pub use env::{CompileEnv, LoaderSig, MapLayout, PackageExports, ProgramSig};
pub use types::{EndsPacket, FieldType, IntType};
