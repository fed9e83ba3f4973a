//! Errors of deployments, written for the person who ran `ebpkg`.

use std::fmt;
use std::path::PathBuf;

use hike_runtime::{RuntimeError, VerifierFailure};

use ebpkg_spec::PackageId;
use ebpkg_spec::types::Sha256Digest;
use semver::Version;

#[derive(Debug, thiserror::Error)]
pub enum DeployError {
    #[error("{what} {}: {cause}", path.display())]
    Io { what: &'static str, path: PathBuf, cause: std::io::Error },
    #[error("{what}: {cause}")]
    Read { what: &'static str, cause: ebpkg_fs::ReadError },
    #[error(
        "the object {} changed after it was built and checked (sha256 {expected}, now {found}); it was not loaded. \
         Run the command again to build it anew, and check who else can write there",
        path.display()
    )]
    ObjectChanged { path: PathBuf, expected: Sha256Digest, found: Sha256Digest },
    #[error(
        "{} is damaged ({reason}); move it away and run `ebpkg doctor`",
        path.display()
    )]
    CorruptState { path: PathBuf, reason: String },
    #[error("refusing to use {}: {reason}; {fix}", path.display())]
    UnsafeState { path: PathBuf, reason: String, fix: String },
    #[error(
        "deployment `{name}` belongs to {}; this project is {}; give this one its own name with `--name {name}-2`, or uninstall the other first (`ebpkg uninstall {name}`)",
        show_project(theirs),
        show_project(ours)
    )]
    NameTaken { name: String, theirs: Option<PathBuf>, ours: Option<PathBuf> },
    #[error(
        "interface {interface} ({point}) is used by deployment `{deployment}` ({}); uninstall it there or attach this project elsewhere",
        show_project(project)
    )]
    InterfaceTaken { interface: String, point: String, deployment: String, project: Option<PathBuf> },
    #[error(
        "the HIKe root {} is managed by {owner}; use that state directory (--state-dir), or another --bpffs-root for this one",
        root.display()
    )]
    RootTaken { root: PathBuf, owner: String },
    #[error("the journal {} cannot be acted on: {reason}; it was moved to {}", path.display(), moved.display())]
    RejectedJournal { path: PathBuf, reason: String, moved: PathBuf },
    #[error("{what}: {cause}")]
    Runtime { what: String, cause: RuntimeError },
    #[error("{0}")]
    Verifier(Box<VerifierError>),
    #[error(
        "chain `{chain}` cannot run natively, and --chain-mode native asks for it: {reason}\n(the install was undone; `--chain-mode auto` runs such chains interpreted)"
    )]
    Native { chain: String, reason: String },
    #[error("chain script {script}: {cause}")]
    Link { script: String, cause: hike_chainc::link::LinkError },
    #[error(
        "chain script {script} needs a value for parameter {name}; give it with `--set {name}=<value>`{}",
        example.as_deref().map(|e| format!(" (e.g. --set {name}={e})")).unwrap_or_default()
    )]
    MissingParam { script: String, name: String, example: Option<String> },
    #[error("deployment name `{name}`: use at most 64 ASCII letters, digits, `-` and `_`")]
    BadDeploymentName { name: String },
    #[error("no chain script takes a parameter `{name}`{}", if known.is_empty() { " (they take none)".to_owned() } else { format!("; they take: {}", known.join(", ")) })]
    UnknownParam { name: String, known: Vec<String> },
    #[error("{package}: {reason}")]
    Package { package: PackageId, reason: String },
    #[error("{0}")]
    MapLayout(Box<LayoutRefusal>),
    #[error("chain scripts configure loader {package}::{loader} map `{map}` twice with the same key; keep one entry")]
    DuplicateEntry { package: String, loader: String, map: String },
    #[error("no deployment named `{name}`{}", if known.is_empty() { " (nothing is deployed)".to_owned() } else { format!("; deployed: {}", known.join(", ")) })]
    NotDeployed { name: String, known: Vec<String> },
    #[error(
        "deployment `{name}` has {}; kept: {} (the newest {} generations are kept)",
        match wanted { Some(n) => format!("no generation {n} to roll back to"), None => "no generation before the running one to roll back to".to_owned() },
        if kept.is_empty() { "none".to_owned() } else { kept.iter().map(u64::to_string).collect::<Vec<_>>().join(", ") },
        keep
    )]
    NoGeneration { name: String, wanted: Option<u64>, kept: Vec<u64>, keep: usize },
    #[error("cannot enter network namespace `{name}`: {reason}")]
    Netns { name: String, reason: String },
    #[error(
        "{error}\n\nrolling back also failed ({}); the journal stays in the state directory and the next ebpkg run retries",
        rollback.join("; ")
    )]
    RollbackFailed { error: Box<DeployError>, rollback: Vec<String> },
}

/// A map whose running contents the new version cannot use as they are, and
/// that the package does not say may start fresh or be extended.
#[derive(Debug, thiserror::Error)]
#[error(
    "{package}: map `{map}` cannot keep what {}@{from} holds in it: {reason}; {}",
    package.name,
    if *extend_would_do {
        "its value only gains fields at the end, so the package can declare `on-upgrade = \"extend\"` for it; or \
         install with --reset-state to start it empty"
    } else {
        "install with --reset-state to start it empty (what it holds is lost)"
    }
)]
pub struct LayoutRefusal {
    pub package: PackageId,
    pub from: Version,
    pub map: String,
    pub reason: String,
    /// The new value only adds fields at its end.
    pub extend_would_do: bool,
}

fn show_project(p: &Option<PathBuf>) -> String {
    match p {
        Some(p) => format!("the project at {}", p.display()),
        None => "a package installed by name".to_owned(),
    }
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, DeployError>;

/// The kernel refused a program or loader: where, why, and the log.
#[derive(Debug)]
pub struct VerifierError {
    pub package: PackageId,
    pub failure: VerifierFailure,
    /// The failing line's file as the package names it (the kernel gives only the
    /// base name), when it could be found.
    pub file: Option<String>,
    /// The failing line as the package's file has it (when the file is there).
    pub line_text: Option<String>,
    /// Where the complete log was saved.
    pub log_path: Option<PathBuf>,
}

impl fmt::Display for VerifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = &self.failure;
        // The runtime names objects `package@version (file)` already.
        if v.object.starts_with(&self.package.to_string()) {
            writeln!(f, "the kernel verifier refused program `{}` of {}", v.program, v.object)?;
        } else {
            writeln!(f, "the kernel verifier refused program `{}` of {} ({})", v.program, self.package, v.object)?;
        }
        if let Some(reason) = &v.reason {
            writeln!(f, "  reason: {reason}")?;
        }
        if let Some(src) = &v.source {
            let text = self.line_text.as_deref().unwrap_or(src.text.as_str());
            writeln!(f, "  at {}:{}", self.file.as_deref().unwrap_or(src.file.as_str()), src.line)?;
            writeln!(f, "  {:>5} | {}", src.line, text.trim_end())?;
        }
        writeln!(f, "  last lines of the verifier log:")?;
        for l in v.tail() {
            writeln!(f, "    {l}")?;
        }
        if let Some(p) = &self.log_path {
            writeln!(f, "  full log: {}", p.display())?;
        }
        write!(
            f,
            "help: nothing was changed; this is a bug in {} for this kernel: report it to its authors, or pin \
             an earlier version in ebpkg.toml",
            self.package
        )
    }
}

impl DeployError {
    pub(crate) fn runtime(what: impl Into<String>) -> impl FnOnce(RuntimeError) -> DeployError {
        let what = what.into();
        move |cause| DeployError::Runtime { what, cause }
    }

    /// True when the kernel refused something (the verifier, or an attach).
    pub fn is_kernel_refusal(&self) -> bool {
        match self {
            DeployError::Verifier(_) => true,
            DeployError::Runtime { cause, .. } => {
                matches!(
                    cause,
                    RuntimeError::Kernel { .. } | RuntimeError::Loader { .. } | RuntimeError::NoInterface { .. }
                )
            }
            DeployError::RollbackFailed { error, .. } => error.is_kernel_refusal(),
            _ => false,
        }
    }

    /// Whether a limit of the HIKe VM refused it: every program or chain id taken,
    /// a chain the VM's validator refuses (calls nested too deep, too long).
    pub fn is_vm_limit(&self) -> bool {
        match self {
            DeployError::Runtime { cause, .. } => {
                matches!(cause, RuntimeError::IdsExhausted { .. } | RuntimeError::InvalidChain { .. })
            }
            DeployError::RollbackFailed { error, .. } => error.is_vm_limit(),
            _ => false,
        }
    }
}
