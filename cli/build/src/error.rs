//! What can go wrong, written for the person running `ebpkg install`: what failed,
//! where (package@version and file), and what to do about it.

use std::fmt::Write as _;
use std::path::PathBuf;

use ebpkg_spec::PackageId;
use ebpkg_spec::types::{Hook, RelPath, Sha256Digest};

use crate::elf_check::ElfProblem;
use crate::toolchain::{INSTALL_HINT, ToolchainError};

/// Most lines of clang's output a compile error shows (the full text stays in
/// [`CompileError::stderr`]).
pub const MAX_SHOWN_LINES: usize = 40;
/// Most characters of clang's output a compile error shows.
pub const MAX_SHOWN_CHARS: usize = 6000;

/// The kernel's BTF could not be read or turned into `vmlinux.h`.
#[derive(Debug, thiserror::Error)]
pub enum BtfError {
    #[error(
        "the running kernel does not expose its BTF ({cause}); CO-RE builds need a kernel built with \
         CONFIG_DEBUG_INFO_BTF=y, or pass the kernel's BTF with --btf FILE"
    )]
    KernelMissing { cause: ebpkg_fs::ReadError },

    #[error("{0}; it cannot be used as the BTF file")]
    Read(ebpkg_fs::ReadError),

    #[error(
        "this package is built against the kernel's own types (`build = \"local\"` in [package.kernel] of its \
         ebpkg.toml), but no kernel BTF was given to build against; build on the target kernel, or pass its BTF \
         with --btf FILE"
    )]
    NotGiven,

    #[error(
        "{} is not a raw BTF file (it does not start with the BTF magic 0xeB9F); pass the kernel's BTF, \
         such as /sys/kernel/btf/vmlinux of the target machine",
        path.display()
    )]
    NotBtf { path: PathBuf },

    #[error("cannot run bpftool at {} to generate vmlinux.h: {cause}; {INSTALL_HINT}", bpftool.display())]
    RunBpftool { bpftool: PathBuf, cause: std::io::Error },

    #[error(
        "bpftool could not turn the BTF in {} into vmlinux.h ({status}): {stderr}",
        btf.display(), status = status, stderr = stderr.trim()
    )]
    Bpftool { btf: PathBuf, status: String, stderr: String },

    #[error(
        "cannot write vmlinux.h to the build cache at {}: {cause}; check the directory's permissions and free \
         space, or use another cache directory",
        path.display()
    )]
    Write { path: PathBuf, cause: std::io::Error },
}

/// A build failed. [`BuildError::Multiple`] holds one error per failing unit.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// clang refused a source file.
    #[error(transparent)]
    Compile(Box<CompileError>),

    /// A prebuilt object without a source to fall back on does not match its digest.
    #[error(transparent)]
    PrebuiltMismatch(Box<PrebuiltMismatch>),

    /// An object (compiled or prebuilt) is not a CO-RE BPF object.
    #[error("{} {file} of {package} is not a usable BPF object: {problem}", if *prebuilt { "the prebuilt object" } else { "the object compiled from" })]
    BadObject { package: PackageId, file: RelPath, prebuilt: bool, problem: ElfProblem },

    /// A file the manifest names is missing, unreadable or outside the package.
    #[error(transparent)]
    PackageFile(Box<PackageFileError>),

    /// The compiler could not be started.
    #[error("cannot run clang at {} to compile {file} of {package}: {cause}; {INSTALL_HINT}", clang.display())]
    RunClang { package: PackageId, file: RelPath, clang: PathBuf, cause: std::io::Error },

    #[error(transparent)]
    Toolchain(#[from] ToolchainError),

    #[error(transparent)]
    Btf(#[from] BtfError),

    /// The build cache could not be written.
    #[error(
        "cannot write the build cache at {}: {cause}; check the directory's permissions and free space, \
         or use another cache directory",
        path.display()
    )]
    Cache { path: PathBuf, cause: std::io::Error },

    /// An object the compiler just wrote could not be read back.
    #[error("cannot read the object the compiler wrote: {cause}; check the build cache's directory and free space")]
    CacheRead { cause: ebpkg_fs::ReadError },

    /// Several units failed; each is reported.
    #[error("{}", list(.0))]
    Multiple(Vec<BuildError>),
}

/// clang refused a source file. (Boxed in [`BuildError`] to keep results small.)
#[derive(Debug, thiserror::Error)]
#[error(
    "failed to compile {file} of {package} (clang {clang_release}):\n{}\n{}",
    shown_output(stderr), reproduce(command, *hook)
)]
pub struct CompileError {
    pub package: PackageId,
    /// The source file, relative to the package root (as clang's messages name it).
    pub file: RelPath,
    pub hook: Hook,
    /// clang's version number, e.g. `14.0.6`.
    pub clang_release: String,
    /// Everything clang printed.
    pub stderr: String,
    /// The command, runnable from the package root, to reproduce the failure.
    pub command: String,
}

/// A prebuilt object that does not match its digest and has no source to fall
/// back on.
#[derive(Debug, thiserror::Error)]
#[error(
    "the prebuilt object {object} of {package} does not match its sha256 in ebpkg.toml \
     (expected {expected}, found {actual}), and the package has no `source` to build it from; \
     the package is damaged or was published with a stale digest: fetch it again, or, as its author, \
     rebuild the object and write the output of `sha256sum {object}` into `prebuilt.sha256`"
)]
pub struct PrebuiltMismatch {
    pub package: PackageId,
    pub object: RelPath,
    pub expected: Sha256Digest,
    pub actual: Sha256Digest,
}

/// A file the manifest names is missing, unreadable or outside the package.
#[derive(Debug, thiserror::Error)]
#[error("{file} of {package} (in {}): {problem}", root.display())]
pub struct PackageFileError {
    pub package: PackageId,
    /// The package root.
    pub root: PathBuf,
    pub file: RelPath,
    pub problem: String,
}

impl BuildError {
    /// Every single failure, with [`BuildError::Multiple`] flattened.
    pub fn errors(&self) -> Vec<&BuildError> {
        match self {
            BuildError::Multiple(list) => list.iter().flat_map(BuildError::errors).collect(),
            other => vec![other],
        }
    }

    /// One error for a list: itself when there is one, [`BuildError::Multiple`]
    /// otherwise. `None` for an empty list.
    pub fn from_list(mut list: Vec<BuildError>) -> Option<BuildError> {
        match list.len() {
            0 => None,
            1 => list.pop(),
            _ => Some(BuildError::Multiple(list)),
        }
    }
}

fn list(errors: &[BuildError]) -> String {
    let mut out = format!("{} build units failed:", errors.len());
    for e in errors {
        let _ = write!(out, "\n\n{e}");
    }
    out
}

/// clang's output, cut to [`MAX_SHOWN_LINES`] lines and [`MAX_SHOWN_CHARS`]
/// characters: the first errors matter most, later ones often follow from them.
pub fn shown_output(stderr: &str) -> String {
    let trimmed = stderr.trim_end();
    let lines: Vec<&str> = trimmed.lines().collect();
    let mut out = String::new();
    let mut shown = 0;
    for line in &lines {
        if shown == MAX_SHOWN_LINES || out.len() + line.len() > MAX_SHOWN_CHARS {
            break;
        }
        if shown > 0 {
            out.push('\n');
        }
        out.push_str(line);
        shown += 1;
    }
    if shown < lines.len() {
        let _ = write!(out, "\n… {} more lines of clang output not shown", lines.len() - shown);
    }
    if out.is_empty() {
        out.push_str("(clang printed nothing)");
    }
    out
}

fn reproduce(command: &str, hook: Hook) -> String {
    format!("(built for the {hook} hook; to reproduce, run in the package directory: {command})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_output_is_cut() {
        let many: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let shown = shown_output(&many);
        assert!(shown.starts_with("line 0\nline 1\n"));
        assert!(shown.ends_with("… 60 more lines of clang output not shown"), "{shown}");
        let wide = "x".repeat(5000) + "\n" + &"y".repeat(5000);
        assert!(shown_output(&wide).ends_with("… 1 more lines of clang output not shown"));
        assert_eq!(shown_output("one\n"), "one");
    }

    #[test]
    fn compile_error_reads_well() {
        let e = BuildError::Compile(Box::new(CompileError {
            package: PackageId::new(ebpkg_spec::PackageName::new("meter").unwrap(), semver::Version::new(1, 0, 0)),
            file: RelPath::new("src/tb.bpf.c").unwrap(),
            hook: Hook::Tc,
            clang_release: "14.0.6".into(),
            stderr: "src/tb.bpf.c:12:3: error: use of undeclared identifier 'x'\n1 error generated.\n".into(),
            command: "clang -O2 -c src/tb.bpf.c -o tb.bpf.o".into(),
        }));
        let text = e.to_string();
        assert!(text.starts_with(
            "failed to compile src/tb.bpf.c of meter@1.0.0 (clang 14.0.6):\nsrc/tb.bpf.c:12:3: error: use of undeclared"
        ));
        assert!(text.contains("tc hook"));
        let both = BuildError::from_list(vec![e, BuildError::Multiple(vec![])]).unwrap();
        assert!(both.to_string().starts_with("2 build units failed:\n\nfailed to compile src/tb.bpf.c"));
        assert_eq!(both.errors().len(), 1);
    }
}
