//! Errors of the runtime. Each says what failed, on what, and what to do.

use std::path::PathBuf;

use hike_bytecode::ValidationError;

use crate::verifier::VerifierFailure;

/// Everything that can go wrong in the runtime.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("{what}: {cause}")]
    Kernel { what: String, cause: libbpf_rs::Error },
    #[error("{what} {}: {cause}", path.display())]
    Io { what: &'static str, path: PathBuf, cause: std::io::Error },
    #[error("{} is not a HIKe root ({reason}); create it with `init` first", root.display())]
    NotInitialized { root: PathBuf, reason: String },
    #[error("the HIKe root {} is not safe to use: {} {reason}; {fix}", root.display(), path.display())]
    UnsafeRoot { root: PathBuf, path: PathBuf, reason: String, fix: String },
    #[error(
        "{} was created by a HIKe runtime with ABI version {found}, but this runtime uses version {expected}; \
         uninstall what runs there with the runtime that created it, or use another root"
    , root.display())]
    IncompatibleRoot { root: PathBuf, found: u32, expected: u32 },
    #[error("{0}")]
    Verifier(Box<VerifierFailure>),
    #[error("chain `{name}` is invalid: {error}")]
    InvalidChain { name: String, error: ValidationError },
    #[error("no free {kind} id: all {max} are in use; remove unused {kind}s first")]
    IdsExhausted { kind: &'static str, max: u32 },
    #[error("{what} is still used by {users}; remove those first")]
    InUse { what: String, users: String },
    #[error("{0} not found")]
    NotFound(String),
    #[error("object {name}: {reason}")]
    BadObject { name: String, reason: String },
    #[error(
        "`{0}` cannot be used as a name in the pin tree: use ASCII letters, digits, `_`, `-`, `+` and `@` only (bpffs refuses `.`)"
    )]
    BadName(String),
    #[error("interface `{name}` does not exist in this network namespace: {cause}")]
    NoInterface { name: String, cause: std::io::Error },
    #[error("loader `{loader}`: {reason}")]
    Loader { loader: String, reason: String },
}

impl RuntimeError {
    /// Whether this is the kernel saying no to an object on this kernel — its
    /// verifier, or a load failure such as a relocation it cannot make or a map or
    /// program type it lacks — rather than this machine being unable to load
    /// anything (no privilege, no memory), which says nothing about the object.
    pub fn is_kernel_refusal(&self) -> bool {
        match self {
            RuntimeError::Verifier(_) => true,
            RuntimeError::Kernel { cause, .. } => {
                !matches!(cause.kind(), libbpf_rs::ErrorKind::PermissionDenied | libbpf_rs::ErrorKind::OutOfMemory)
            }
            _ => false,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, RuntimeError>;

/// Adds what was being done to a libbpf error.
pub(crate) trait KernelContext<T> {
    fn kernel(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> KernelContext<T> for std::result::Result<T, libbpf_rs::Error> {
    fn kernel(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|cause| RuntimeError::Kernel { what: what(), cause })
    }
}

/// Adds what was being done, and on which path, to an I/O error.
pub(crate) trait IoContext<T> {
    fn io(self, what: &'static str, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn io(self, what: &'static str, path: &std::path::Path) -> Result<T> {
        self.map_err(|cause| RuntimeError::Io { what, path: path.to_owned(), cause })
    }
}
