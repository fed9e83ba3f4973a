//! Exit codes, so scripts and CI can tell failures apart:
//!
//! | code | meaning |
//! |------|---------|
//! | 0 | success |
//! | 1 | bad input: a manifest, lockfile, chain script, test file or archive is wrong |
//! | 2 | bad usage: unknown flag or command, missing argument |
//! | 3 | versions cannot be resolved (the explanation says why) |
//! | 4 | `--locked`/`--frozen` and `ebpkg.lock` would have to change |
//! | 5 | the kernel refused: verifier rejection, attach failure |
//! | 6 | a registry or the cache failed: unreachable, offline, checksum mismatch, not found |
//! | 7 | the environment is missing something: root, bpffs, clang, bpftool, BTF |
//! | 8 | `ebpkg test` ran and some cases failed |
//! | 9 | a limit of the HIKe VM on this host was reached: no free program or chain id, chain calls too deep |

use std::fmt;

/// Why a command failed, as an exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Input = 1,
    Usage = 2,
    Resolution = 3,
    LockDrift = 4,
    Kernel = 5,
    Registry = 6,
    Environment = 7,
    TestsFailed = 8,
    Limit = 9,
}

/// An error with the exit code it should produce.
#[derive(Debug)]
pub struct Exit {
    pub failure: Failure,
    pub error: anyhow::Error,
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&message(&self.error))
    }
}

/// The error and its causes as one message, each cause once: many errors say
/// their cause in their own message and also expose it as their source, and a
/// cause already said is not repeated.
pub fn message(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let said = cause.to_string();
        let said = said.trim_end();
        if said.is_empty() || text.contains(said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(said);
    }
    text
}

/// How an error is printed: `error: <message>`, except for compiler-style
/// diagnostics, which carry their own `error:`/`error[E…]:` heading.
pub fn render(error: &anyhow::Error, color: bool) -> String {
    let text = message(error);
    if text.starts_with("error:") || text.starts_with("error[") {
        text
    } else if color {
        format!("\x1b[1;31merror\x1b[0m: {text}")
    } else {
        format!("error: {text}")
    }
}

impl std::error::Error for Exit {}

/// Tags a result's error with an exit code (the first tag wins).
pub trait ExitExt<T> {
    fn exit(self, failure: Failure) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> ExitExt<T> for Result<T, E> {
    fn exit(self, failure: Failure) -> anyhow::Result<T> {
        self.map_err(|e| {
            let error: anyhow::Error = e.into();
            if error.downcast_ref::<Exit>().is_some() { error } else { anyhow::Error::new(Exit { failure, error }) }
        })
    }
}

/// An error of category `failure` with message `msg`.
pub fn fail(failure: Failure, msg: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Exit { failure, error: anyhow::anyhow!("{msg}") })
}

/// A package name given on the command line that is not one, with the name
/// rule's suggestion.
pub fn bad_name(input: &str, e: &ebpkg_spec::names::NameError) -> anyhow::Error {
    match e.help() {
        Some(help) => fail(Failure::Usage, format!("`{input}`: {e}; {help}")),
        None => fail(Failure::Usage, format!("`{input}`: {e}")),
    }
}

/// The exit code for an error (1 when it was not tagged).
pub fn code_of(error: &anyhow::Error) -> u8 {
    error.chain().find_map(|e| e.downcast_ref::<Exit>()).map_or(Failure::Input as u8, |e| e.failure as u8)
}

/// Exit code of a command whose input was wrong (a script, a manifest, …).
pub const EXIT_INPUT: u8 = Failure::Input as u8;
