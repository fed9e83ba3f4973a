//! Finding and checking the tools a build needs: clang (with libbpf's headers
//! reachable) and bpftool (to turn the kernel's BTF into `vmlinux.h`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Environment variable naming the clang to use when no path is given.
pub const CLANG_ENV: &str = "EBPKG_CLANG";
/// Environment variable naming the bpftool to use when no path is given.
pub const BPFTOOL_ENV: &str = "EBPKG_BPFTOOL";
/// Oldest clang that builds HIKe programs: the SDK exports program signatures with
/// `__attribute__((btf_decl_tag))`, which clang 14 introduced.
pub const MIN_CLANG_MAJOR: u32 = 14;
/// What to tell people who lack a tool.
pub const INSTALL_HINT: &str = "install the BPF toolchain with `apt-get install clang bpftool libbpf-dev` (or run `./ci/setup` in an ebpkg checkout)";

/// The toolchain is missing or unusable.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolchainError {
    #[error(
        "cannot find clang (`{}`, {how}): HIKe programs are compiled with clang {MIN_CLANG_MAJOR} or newer; \
         {INSTALL_HINT}, or name a clang with ${} or `clang` in [build] of the configuration file",
        requested.display(), CLANG_ENV
    )]
    ClangNotFound { requested: PathBuf, how: ToolSource },

    #[error(
        "cannot use {} as clang: {detail}; {INSTALL_HINT}, or name another clang with ${} or `clang` in [build] \
         of the configuration file",
        clang.display(), CLANG_ENV
    )]
    ClangUnusable { clang: PathBuf, detail: String },

    #[error(
        "{} is clang {version}, but HIKe programs need clang {MIN_CLANG_MAJOR} or newer (for BTF decl tags); \
         {INSTALL_HINT}, or name a newer clang with ${} (e.g. EBPKG_CLANG=clang-16)",
        clang.display(), CLANG_ENV
    )]
    ClangTooOld { clang: PathBuf, version: String },

    #[error(
        "{} cannot find libbpf's <bpf/bpf_helpers.h>, which every HIKe program includes; \
         install libbpf's headers with `apt-get install libbpf-dev` (or run `./ci/setup`)",
        clang.display()
    )]
    LibbpfHeadersMissing { clang: PathBuf },

    #[error(
        "cannot find bpftool (`{}`, {how}), which ebpkg needs to turn the kernel's BTF into vmlinux.h; \
         {INSTALL_HINT}, or name it with ${}",
        requested.display(), BPFTOOL_ENV
    )]
    BpftoolNotFound { requested: PathBuf, how: ToolSource },

    #[error("cannot use {} as bpftool: {detail}; {INSTALL_HINT}", bpftool.display())]
    BpftoolUnusable { bpftool: PathBuf, detail: String },

    #[error(
        "this machine's architecture `{arch}` has no known BPF target name (__TARGET_ARCH_*); \
         ebpkg builds on x86_64, aarch64, arm, s390x, powerpc64, mips, riscv64, loongarch64 and sparc64"
    )]
    UnsupportedArch { arch: String },
}

/// The tools to use. `None` is the default name: `clang` on `PATH`; `bpftool`
/// on `PATH` or in the `sbin` directories where distributions put it. (The
/// caller decides, from its configuration and environment, what to ask for.)
#[derive(Debug, Clone, Default)]
pub struct ToolchainOptions {
    pub clang: Option<ToolRequest>,
    pub bpftool: Option<ToolRequest>,
}

/// A tool asked for by path or name, and who asked, so that errors can say
/// where the value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRequest {
    pub path: PathBuf,
    pub origin: ToolSource,
}

impl ToolRequest {
    /// A tool named by the caller's configuration.
    pub fn configured(path: impl Into<PathBuf>) -> ToolRequest {
        ToolRequest { path: path.into(), origin: ToolSource::Configured }
    }
}

/// A checked toolchain. Building a value by hand (rather than with
/// [`Toolchain::detect`]) is allowed; the builder runs whatever paths it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// Absolute path of clang, as found (symbolic links are not resolved, so
    /// `/usr/bin/clang` stays itself).
    pub clang: PathBuf,
    /// First line of `clang --version`, e.g. `Debian clang version 14.0.6`.
    pub clang_version: String,
    /// The version number alone, e.g. `14.0.6`.
    pub clang_release: String,
    /// The major version, e.g. `14`.
    pub clang_major: u32,
    /// Absolute path of bpftool.
    pub bpftool: PathBuf,
    /// First line of `bpftool --version`, e.g. `bpftool v7.1.0`.
    pub bpftool_version: String,
    /// The `__TARGET_ARCH_<arch>` libbpf's `bpf_tracing.h` wants, e.g. `x86`.
    pub arch: String,
}

/// How a tool's path was chosen, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSource {
    /// Given by the caller: ebpkg's configuration file (`[build] clang`).
    Configured,
    /// The toolchain detected earlier, whose tool has gone since.
    Detected,
    /// From an environment variable.
    Env(&'static str),
    /// The default name, searched on `PATH`.
    Default,
}

impl std::fmt::Display for ToolSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolSource::Configured => f.write_str("as configured by `clang` in [build] of the configuration file"),
            ToolSource::Detected => f.write_str("found earlier, but gone now"),
            ToolSource::Env(var) => write!(f, "from ${var}"),
            ToolSource::Default => f.write_str("searched on PATH"),
        }
    }
}

impl Toolchain {
    /// Finds clang and bpftool, reads their versions, and checks that clang is new
    /// enough and finds libbpf's `<bpf/bpf_helpers.h>`.
    pub fn detect(opts: &ToolchainOptions) -> Result<Toolchain, ToolchainError> {
        // (A test counts these: a command looks for the toolchain at most once.)
        tracing::debug!("looking for the toolchain");
        let arch = target_arch(std::env::consts::ARCH)
            .ok_or_else(|| ToolchainError::UnsupportedArch { arch: std::env::consts::ARCH.to_owned() })?;

        let (clang_req, clang_src) = requested(opts.clang.as_ref(), "clang");
        let clang = find_tool(&clang_req, &[])
            .ok_or_else(|| ToolchainError::ClangNotFound { requested: clang_req.clone(), how: clang_src })?;
        let clang_version = first_line_of(&clang, "--version")
            .map_err(|detail| ToolchainError::ClangUnusable { clang: clang.clone(), detail })?;
        let (clang_release, clang_major) =
            parse_clang_version(&clang_version).ok_or_else(|| ToolchainError::ClangUnusable {
                clang: clang.clone(),
                detail: format!("`--version` printed `{clang_version}`, which does not look like clang"),
            })?;
        if clang_major < MIN_CLANG_MAJOR {
            return Err(ToolchainError::ClangTooOld { clang, version: clang_release });
        }
        probe_libbpf_headers(&clang)?;

        // Debian and Fedora install bpftool in sbin, which is not on a normal
        // user's PATH.
        let (bpftool_req, bpftool_src) = requested(opts.bpftool.as_ref(), "bpftool");
        let sbin: &[&str] =
            if bpftool_src == ToolSource::Default { &["/usr/sbin", "/sbin", "/usr/local/sbin"] } else { &[] };
        let bpftool = find_tool(&bpftool_req, sbin)
            .ok_or_else(|| ToolchainError::BpftoolNotFound { requested: bpftool_req.clone(), how: bpftool_src })?;
        let bpftool_version = first_line_of(&bpftool, "--version")
            .map_err(|detail| ToolchainError::BpftoolUnusable { bpftool: bpftool.clone(), detail })?;

        Ok(Toolchain {
            clang,
            clang_version,
            clang_release,
            clang_major,
            bpftool,
            bpftool_version,
            arch: arch.to_owned(),
        })
    }
}

/// The `__TARGET_ARCH_*` suffix for a Rust/uname architecture name, as libbpf's
/// `bpf_tracing.h` spells them.
pub fn target_arch(host: &str) -> Option<&'static str> {
    Some(match host {
        "x86_64" | "x86" | "i386" | "i686" => "x86",
        "aarch64" | "arm64" => "arm64",
        "arm" | "armv7l" => "arm",
        "s390x" => "s390",
        "powerpc64" | "powerpc64le" | "ppc64le" | "ppc64" | "powerpc" => "powerpc",
        "mips" | "mips64" => "mips",
        "riscv64" => "riscv",
        "loongarch64" => "loongarch",
        "sparc64" => "sparc",
        _ => return None,
    })
}

/// `("14.0.6", 14)` from `Debian clang version 14.0.6`, `Ubuntu clang version
/// 16.0.6 (15)`, `clang version 19.1.7 (Fedora 19.1.7-1.fc41)`, `Apple clang
/// version 15.0.0 (…)`.
pub fn parse_clang_version(line: &str) -> Option<(String, u32)> {
    let (_, rest) = line.split_once("clang version ")?;
    let release = rest.split_whitespace().next()?;
    let major = release.split('.').next()?.parse().ok()?;
    Some((release.to_owned(), major))
}

/// The name or path to look for, and how it was chosen.
fn requested(given: Option<&ToolRequest>, default: &str) -> (PathBuf, ToolSource) {
    match given {
        Some(r) => (r.path.clone(), r.origin),
        None => (PathBuf::from(default), ToolSource::Default),
    }
}

/// A path containing `/` is used as is (made absolute); a bare name is searched on
/// `PATH`, then in `extra` directories.
fn find_tool(requested: &Path, extra: &[&str]) -> Option<PathBuf> {
    if requested.components().count() > 1 || requested.is_absolute() {
        let abs = std::path::absolute(requested).ok()?;
        return is_executable(&abs).then_some(abs);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(extra.iter().map(PathBuf::from))
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(requested))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `tool arg` and returns the first non-empty line of its output.
fn first_line_of(tool: &Path, arg: &str) -> Result<String, String> {
    let out = Command::new(tool).arg(arg).stdin(Stdio::null()).output().map_err(|e| format!("cannot run it: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{} {arg}` failed ({}): {}",
            tool.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| format!("`{} {arg}` printed nothing", tool.display()))
}

/// Asks clang, with the same target as real builds, whether `<bpf/bpf_helpers.h>`
/// is on its include path: `__has_include` answers without needing the kernel
/// types the header itself would need.
fn probe_libbpf_headers(clang: &Path) -> Result<(), ToolchainError> {
    const PROBE: &[u8] = b"#if !__has_include(<bpf/bpf_helpers.h>)\n#error bpf/bpf_helpers.h not found\n#endif\n";
    let unusable = |detail: String| ToolchainError::ClangUnusable { clang: clang.to_owned(), detail };
    let mut child = Command::new(clang)
        .args(["-target", "bpf", "-fsyntax-only", "-x", "c", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| unusable(format!("cannot run it: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A write error means clang exited early; its status and stderr say why.
        let _ = stdin.write_all(PROBE);
    }
    let out = child.wait_with_output().map_err(|e| unusable(format!("cannot wait for it: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    if stderr.contains("bpf_helpers.h not found") {
        Err(ToolchainError::LibbpfHeadersMissing { clang: clang.to_owned() })
    } else {
        Err(unusable(format!("it cannot compile for the BPF target: {stderr}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clang_versions() {
        assert_eq!(parse_clang_version("Debian clang version 14.0.6"), Some(("14.0.6".into(), 14)));
        assert_eq!(parse_clang_version("Ubuntu clang version 16.0.6 (15)"), Some(("16.0.6".into(), 16)));
        assert_eq!(parse_clang_version("clang version 19.1.7 (Fedora 19.1.7-1.fc41)"), Some(("19.1.7".into(), 19)));
        assert_eq!(parse_clang_version("Apple clang version 15.0.0 (clang-1500.3.9.4)"), Some(("15.0.0".into(), 15)));
        assert_eq!(parse_clang_version("gcc (Debian 12.2.0-14) 12.2.0"), None);
    }

    #[test]
    fn arches() {
        assert_eq!(target_arch("x86_64"), Some("x86"));
        assert_eq!(target_arch("aarch64"), Some("arm64"));
        assert_eq!(target_arch("riscv64"), Some("riscv"));
        assert_eq!(target_arch("s390x"), Some("s390"));
        assert_eq!(target_arch("wasm32"), None);
    }

    #[test]
    fn bare_names_are_searched_paths_are_not() {
        assert!(find_tool(Path::new("sh"), &[]).is_some_and(|p| p.is_absolute()));
        assert!(find_tool(Path::new("/nonexistent/clang"), &[]).is_none());
        assert!(find_tool(Path::new("definitely-not-a-tool-ebpkg"), &[]).is_none());
    }
}
