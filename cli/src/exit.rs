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
//! | 7 | the environment is missing something: root, bpffs, clang, bpftool, BTF; or a state directory or cache another user can write |
//! | 8 | `ebpkg test` ran and some cases failed |
//! | 9 | a limit of the HIKe VM on this host was reached: no free program or chain id, chain calls too deep |
//! | 10 | a signature or the trust policy refused a package: unsigned, untrusted or revoked key, bad signature, signer changed |
//! | 11 | a shipped object is not what its source builds to (`verify --rebuild`), or the trust policy's `prebuilt = "rebuilt"` refused one |
//! | 12 | a shipped object could not be rebuilt here to check it (`verify --rebuild`): the compiler it names is missing |

use std::error::Error as StdError;
use std::fmt;

use ebpkg_build::{BtfError, BuildError, ToolchainError};
use ebpkg_deploy::DeployError;
use ebpkg_resolver::ResolveError;
use hike_runtime::RuntimeError;

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
    Trust = 10,
    RebuildMismatch = 11,
    RebuildUnavailable = 12,
}

/// A failure the CLI itself decides: a usage mistake, a refusal of its own, a
/// file operation of a command. Errors of the library crates carry no exit code;
/// [`failure_of`] derives theirs from their type.
#[derive(Debug)]
pub struct CliError {
    pub failure: Failure,
    message: String,
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for CliError {}

/// An error of category `failure` with message `msg`.
pub fn fail(failure: Failure, msg: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(CliError { failure, message: msg.to_string() })
}

/// The error and what the CLI added around it, outermost first, as one line.
/// Library errors say their own cause in their message and do not repeat it as
/// their `source()`, so each cause appears once.
pub fn message(error: &anyhow::Error) -> String {
    let parts: Vec<String> =
        error.chain().map(|cause| cause.to_string().trim_end().to_owned()).filter(|s| !s.is_empty()).collect();
    parts.join(": ")
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

/// A package name given on the command line that is not one, with the name
/// rule's suggestion.
pub fn bad_name(input: &str, e: &ebpkg_spec::names::NameError) -> anyhow::Error {
    match e.help() {
        Some(help) => fail(Failure::Usage, format!("`{input}`: {e}; {help}")),
        None => fail(Failure::Usage, format!("`{input}`: {e}")),
    }
}

/// The exit code of an error: the one place it is decided. The outermost error
/// whose type says what failed decides; an error of no known type is bad input.
pub fn failure_of(error: &anyhow::Error) -> Failure {
    error.chain().find_map(classify).unwrap_or(Failure::Input)
}

fn classify(e: &(dyn StdError + 'static)) -> Option<Failure> {
    if let Some(e) = e.downcast_ref::<CliError>() {
        return Some(e.failure);
    }
    if let Some(e) = e.downcast_ref::<DeployError>() {
        return Some(deploy_failure(e));
    }
    if let Some(e) = e.downcast_ref::<ebpkg_sources::Error>() {
        return Some(source_failure(e));
    }
    if let Some(e) = e.downcast_ref::<ebpkg_sources::RegistryIdError>() {
        return Some(url_failure(e));
    }
    if let Some(e) = e.downcast_ref::<ResolveError>() {
        return Some(match e {
            // Why the source failed decides: a registry refused for trust
            // reasons (TUF, signatures) is a trust failure, not an outage.
            ResolveError::Source { cause, .. } => {
                let mut next: Option<&(dyn StdError + 'static)> = Some(cause.as_ref());
                while let Some(c) = next {
                    if let Some(s) = c.downcast_ref::<ebpkg_sources::Error>() {
                        return Some(source_failure(s));
                    }
                    if let Some(u) = c.downcast_ref::<ebpkg_sources::RegistryIdError>() {
                        return Some(url_failure(u));
                    }
                    next = c.source();
                }
                Failure::Registry
            }
            _ => Failure::Resolution,
        });
    }
    if let Some(e) = e.downcast_ref::<BuildError>() {
        return Some(build_failure(e));
    }
    if e.is::<ToolchainError>() || e.is::<BtfError>() {
        return Some(Failure::Environment);
    }
    if let Some(e) = e.downcast_ref::<RuntimeError>() {
        return Some(runtime_failure(e));
    }
    if e.is::<crate::cache_safety::UnsafeCache>() {
        return Some(Failure::Environment);
    }
    None
}

/// The exit code of a deployment's failure.
pub fn deploy_failure(e: &DeployError) -> Failure {
    match e {
        _ if e.is_kernel_refusal() => Failure::Kernel,
        _ if e.is_vm_limit() => Failure::Limit,
        DeployError::MissingParam { .. } | DeployError::UnknownParam { .. } | DeployError::BadDeploymentName { .. } => {
            Failure::Usage
        }
        DeployError::Package { .. }
        | DeployError::MapLayout(_)
        | DeployError::Link { .. }
        | DeployError::DuplicateEntry { .. } => Failure::Input,
        DeployError::NotDeployed { .. } | DeployError::NoGeneration { .. } => Failure::Input,
        // The cache's entry changed under the command: a cache failure.
        DeployError::ObjectChanged { .. } => Failure::Registry,
        DeployError::NameTaken { .. } | DeployError::InterfaceTaken { .. } | DeployError::RootTaken { .. } => {
            Failure::Usage
        }
        _ => Failure::Environment,
    }
}

fn url_failure(e: &ebpkg_sources::RegistryIdError) -> Failure {
    match e {
        ebpkg_sources::RegistryIdError::CurrentDir { .. } => Failure::Environment,
        ebpkg_sources::RegistryIdError::Invalid { .. }
        | ebpkg_sources::RegistryIdError::NotAUrl { .. }
        | ebpkg_sources::RegistryIdError::UnsupportedScheme { .. } => Failure::Input,
    }
}

fn source_failure(e: &ebpkg_sources::Error) -> Failure {
    use ebpkg_sources::ErrorKind;
    match e.kind() {
        ErrorKind::Url(e) => url_failure(e),
        ErrorKind::Signing { .. } => Failure::Input,
        ErrorKind::SignerDrift { .. }
        | ErrorKind::BadSignature { .. }
        | ErrorKind::BundleMissing { .. }
        | ErrorKind::KeyUnavailable { .. }
        | ErrorKind::UnsignedRefused { .. }
        | ErrorKind::AttestationRefused { .. }
        | ErrorKind::Tuf { .. } => Failure::Trust,
        // A CA file setting naming an unusable file: the user's settings to fix.
        ErrorKind::TufKeyNeeded { .. } | ErrorKind::CaInfo(_) => Failure::Usage,
        _ => Failure::Registry,
    }
}

fn build_failure(e: &BuildError) -> Failure {
    match e {
        BuildError::Toolchain(_)
        | BuildError::Btf(_)
        | BuildError::Cache { .. }
        | BuildError::CacheRead { .. }
        | BuildError::RunClang { .. } => Failure::Environment,
        BuildError::Multiple(all) => all.first().map_or(Failure::Input, build_failure),
        _ => Failure::Input,
    }
}

fn runtime_failure(e: &RuntimeError) -> Failure {
    match e {
        RuntimeError::Kernel { .. }
        | RuntimeError::Verifier(_)
        | RuntimeError::Loader { .. }
        | RuntimeError::NoInterface { .. } => Failure::Kernel,
        RuntimeError::IdsExhausted { .. } | RuntimeError::InvalidChain { .. } => Failure::Limit,
        RuntimeError::BadObject { .. } | RuntimeError::BadName(_) => Failure::Input,
        _ => Failure::Environment,
    }
}

/// Exit code of a command whose input was wrong (a script, a manifest, …).
pub const EXIT_INPUT: u8 = Failure::Input as u8;

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime(cause: RuntimeError) -> DeployError {
        DeployError::Runtime { what: "installing chain main".into(), cause }
    }

    /// A limit of the VM is neither the environment's fault nor the kernel's.
    #[test]
    fn vm_limits_have_their_own_exit_code() {
        let full = runtime(RuntimeError::IdsExhausted { kind: "chain", max: 256 });
        assert_eq!(deploy_failure(&full), Failure::Limit);
        let rolled = DeployError::RollbackFailed { error: Box::new(full), rollback: vec![] };
        assert_eq!(deploy_failure(&rolled), Failure::Limit);
        let missing = runtime(RuntimeError::NotFound("program 4".into()));
        assert_eq!(deploy_failure(&missing), Failure::Environment);
    }

    /// The typed error decides, through any context the CLI adds around it;
    /// the CLI's own failures carry theirs.
    #[test]
    fn the_typed_error_decides_through_contexts() {
        let e = anyhow::Error::new(runtime(RuntimeError::IdsExhausted { kind: "program", max: 64 }))
            .context("installing kapp");
        assert_eq!(failure_of(&e), Failure::Limit);
        let url = ebpkg_sources::RegistryId::parse("gopher://x").unwrap_err();
        assert_eq!(failure_of(&anyhow::Error::new(url).context("the default registry")), Failure::Input);
        let usage = fail(Failure::Usage, "bad flag").context("while parsing");
        assert_eq!(failure_of(&usage), Failure::Usage);
        assert_eq!(failure_of(&anyhow::anyhow!("something else")), Failure::Input);
    }

    /// Each cause once: the message of a library error is not followed by its
    /// cause again.
    #[test]
    fn each_cause_is_printed_once() {
        let read = ebpkg_fs::read(std::path::Path::new("/nonexistent/btf"), 10).unwrap_err();
        let e = anyhow::Error::new(BuildError::Btf(BtfError::Read(read)));
        let text = message(&e);
        assert_eq!(text.matches("does not exist").count(), 1, "{text}");
        assert_eq!(failure_of(&e), Failure::Environment);
        let io = ebpkg_fs::read_text(std::path::Path::new("/proc/self/mem"), 10).unwrap_err();
        let text = message(&anyhow::Error::new(io).context("reading a test file"));
        assert_eq!(text.matches("/proc/self/mem").count(), 1, "{text}");
    }
}
