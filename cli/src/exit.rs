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
}

/// An error with the exit code it should produce.
#[derive(Debug)]
pub struct Exit {
    pub failure: Failure,
    pub error: anyhow::Error,
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
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

/// The exit code for an error (1 when it was not tagged).
pub fn code_of(error: &anyhow::Error) -> u8 {
    error.chain().find_map(|e| e.downcast_ref::<Exit>()).map_or(Failure::Input as u8, |e| e.failure as u8)
}

/// Exit code of a command whose input was wrong (a script, a manifest, …).
pub const EXIT_INPUT: u8 = Failure::Input as u8;
