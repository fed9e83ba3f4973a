//! Checking a shipped object (SPEC.md §4.7) against its source: the source is
//! compiled again, reproducibly (as `ebpkg publish --with-objects` builds), with
//! the very compiler the object names, and the bytes are compared. A match means
//! the object is that source's code, so a native chain compiled from the source
//! runs what the interpreter runs; anything else means they may differ.
//!
//! Verdicts are kept in the build cache beside the objects, keyed by the shipped
//! object's SHA-256 and the source's reproducible cache key (the package's
//! archive digest, the source, the hook, the flags, the SDK): a match or mismatch
//! is the same every time for the same inputs, so it is found once. That a
//! compiler is missing is not kept (it may be installed later). Each verdict
//! is written and read through the cache's digest records, like the objects.

use std::path::{Path, PathBuf};

use ebpkg_spec::PackageId;
use ebpkg_spec::digest::FieldHasher;
use ebpkg_spec::manifest::KernelBuild;
use ebpkg_spec::types::{Hook, RelPath, Sha256Digest};

use crate::builder::Builder;
use crate::cache::object_path;
use crate::cache_record::CacheRecords;
use crate::compiler_of;
use crate::plan::{BuildUnit, UnitInput};
use crate::toolchain::{ToolRequest, ToolSource, Toolchain, ToolchainOptions, parse_clang_version};

/// A shipped object and the source it says it was built from.
#[derive(Debug, Clone)]
pub struct ShippedObject<'a> {
    pub package: PackageId,
    /// The package archive's SHA-256: it stands for every file of the package.
    pub package_digest: Sha256Digest,
    /// The unpacked package.
    pub root: &'a Path,
    pub kernel: KernelBuild,
    pub hook: Hook,
    pub source: &'a RelPath,
    /// The shipped object's bytes.
    pub object: &'a [u8],
}

/// What rebuilding a shipped object's source gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebuildOutcome {
    /// The same bytes, built by `compiler` (as the object names itself).
    Match { compiler: String },
    /// Other bytes: the object is not what its source builds to.
    Mismatch { compiler: String, rebuilt: Rebuilt },
    /// It could not be checked here; `reason` says why (which compiler is missing).
    CannotRebuild { compiler: Option<String>, reason: String },
}

/// What the source built to, when it did not match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebuilt {
    /// An object with this SHA-256.
    Object(Sha256Digest),
    /// No object: the compiler the shipped object names refused the source.
    Failed(String),
}

impl RebuildOutcome {
    /// The outcome's name, as reports and JSON spell it.
    pub fn name(&self) -> &'static str {
        match self {
            RebuildOutcome::Match { .. } => "match",
            RebuildOutcome::Mismatch { .. } => "mismatch",
            RebuildOutcome::CannotRebuild { .. } => "cannot-rebuild",
        }
    }

    /// The compiler the shipped object names, when it names one.
    pub fn compiler(&self) -> Option<&str> {
        match self {
            RebuildOutcome::Match { compiler } | RebuildOutcome::Mismatch { compiler, .. } => Some(compiler),
            RebuildOutcome::CannotRebuild { compiler, .. } => compiler.as_deref(),
        }
    }
}

impl std::fmt::Display for RebuildOutcome {
    /// What happened, in a sentence fragment ("rebuilt with … : the same bytes").
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RebuildOutcome::Match { compiler } => write!(f, "rebuilt with {compiler}: the same bytes"),
            RebuildOutcome::Mismatch { compiler, rebuilt: Rebuilt::Object(sha) } => {
                write!(f, "rebuilt with {compiler}, its source gives another object (sha256 {sha})")
            }
            RebuildOutcome::Mismatch { compiler, rebuilt: Rebuilt::Failed(why) } => {
                write!(f, "{compiler} does not compile its source: {why}")
            }
            RebuildOutcome::CannotRebuild { reason, .. } => f.write_str(reason),
        }
    }
}

/// Bumped when what a kept verdict means changes.
const VERDICT_FORMAT: u32 = 1;
/// Largest verdict file read back.
const MAX_VERDICT_BYTES: u64 = 4096;

impl Builder {
    /// Rebuilds `shipped`'s source with the compiler its object names and
    /// compares the bytes. With `use_kept`, a verdict found before for the same
    /// object and source is taken without compiling; a new match or mismatch is
    /// kept either way.
    pub fn rebuild_shipped(&self, shipped: &ShippedObject<'_>, use_kept: bool) -> RebuildOutcome {
        let compiler = compiler_of(shipped.object);
        if shipped.kernel == KernelBuild::Local {
            return RebuildOutcome::CannotRebuild {
                compiler,
                reason: "the package is built against each kernel's own types (`build = \"local\"`), so no \
                         object built elsewhere can be compared with one built here"
                    .into(),
            };
        }
        let Some(compiler) = compiler else {
            return RebuildOutcome::CannotRebuild {
                compiler: None,
                reason: "the object does not name the compiler that built it (no DWARF producer or .comment), so \
                         there is no compiler to rebuild it with"
                    .into(),
            };
        };
        let shipped_sha = Sha256Digest::of(shipped.object);
        let unit = BuildUnit {
            package: shipped.package.clone(),
            package_digest: shipped.package_digest,
            root: shipped.root.to_owned(),
            hook: shipped.hook,
            input: UnitInput::Source(shipped.source.clone()),
            kernel: KernelBuild::Portable,
            programs: Vec::new(),
            loaders: Vec::new(),
        };
        let verdict_path = match self.for_rebuild(self.cache_dir(), None).cache_key(&unit, shipped.source) {
            Ok(key) => {
                let mut h = FieldHasher::new();
                h.field("rebuild-verdict", &VERDICT_FORMAT.to_le_bytes());
                h.field("shipped", &shipped_sha.0);
                h.field("source-key", &key.0);
                object_path(self.cache_dir(), &h.finish()).with_extension("rebuild")
            }
            Err(e) => return RebuildOutcome::CannotRebuild { compiler: Some(compiler), reason: e.to_string() },
        };
        if use_kept && let Some(kept) = read_verdict(self.records(), &verdict_path, &compiler) {
            return kept;
        }
        let toolchain = match self.compiler_named(&compiler) {
            Ok(t) => t,
            Err(reason) => return RebuildOutcome::CannotRebuild { compiler: Some(compiler), reason },
        };
        let outcome = self.rebuild_with(&unit, shipped.source, toolchain, &shipped_sha, compiler);
        write_verdict(self.records(), &verdict_path, &outcome);
        outcome
    }

    /// Compiles `unit` in a scratch cache of its own (a portable cache key names
    /// no compiler, so the real cache could hold another clang's object).
    fn rebuild_with(
        &self,
        unit: &BuildUnit,
        source: &RelPath,
        toolchain: Toolchain,
        shipped: &Sha256Digest,
        compiler: String,
    ) -> RebuildOutcome {
        let scratch = match tempfile::Builder::new().prefix(&crate::temps::prefix()).tempdir() {
            Ok(d) => d,
            Err(e) => {
                return RebuildOutcome::CannotRebuild {
                    compiler: Some(compiler),
                    reason: format!("cannot create a temporary directory to rebuild {source} in: {e}"),
                };
            }
        };
        let builder = self.for_rebuild(scratch.path(), Some(toolchain));
        let built = match builder.build(std::slice::from_ref(unit), &|_| {}) {
            Ok(mut b) => b.pop(),
            Err(crate::BuildError::Compile(e)) => {
                let first = e.stderr.lines().find(|l| l.contains("error")).unwrap_or("").trim().to_owned();
                return RebuildOutcome::Mismatch { compiler, rebuilt: Rebuilt::Failed(first) };
            }
            Err(e) => return RebuildOutcome::CannotRebuild { compiler: Some(compiler), reason: e.to_string() },
        };
        let Some(built) = built else {
            return RebuildOutcome::CannotRebuild { compiler: Some(compiler), reason: "no object was built".into() };
        };
        match ebpkg_fs::read(&built.object, ebpkg_spec::MAX_OBJECT_BYTES) {
            Ok(bytes) => {
                let rebuilt = Sha256Digest::of(&bytes);
                if rebuilt == *shipped {
                    RebuildOutcome::Match { compiler }
                } else {
                    RebuildOutcome::Mismatch { compiler, rebuilt: Rebuilt::Object(rebuilt) }
                }
            }
            Err(e) => RebuildOutcome::CannotRebuild {
                compiler: Some(compiler),
                reason: format!("cannot read the rebuilt object: {e}"),
            },
        }
    }

    /// A clang that names itself `compiler` (the first line of its `--version`):
    /// the configured one, else `clang-<major>` or `clang` on PATH.
    fn compiler_named(&self, compiler: &str) -> Result<Toolchain, String> {
        if let Ok(t) = self.toolchain()
            && t.clang_version == compiler
        {
            return Ok(t.clone());
        }
        let Some((_, major)) = parse_clang_version(compiler) else {
            return Err(format!(
                "the object was built by `{compiler}`, which is not clang; only clang builds are rebuilt"
            ));
        };
        let mut seen: Vec<String> = Vec::new();
        for name in [format!("clang-{major}"), "clang".to_owned()] {
            let options = ToolchainOptions {
                clang: Some(ToolRequest { path: PathBuf::from(&name), origin: ToolSource::Default }),
                bpftool: self.tool_options().bpftool.clone(),
            };
            match Toolchain::detect(&options) {
                Ok(t) if t.clang_version == compiler => return Ok(t),
                Ok(t) => seen.push(format!("{} is `{}`", t.clang.display(), t.clang_version)),
                Err(_) => seen.push(format!("no usable {name} on PATH")),
            }
        }
        if let Ok(t) = self.toolchain() {
            seen.insert(0, format!("the configured clang {} is `{}`", t.clang.display(), t.clang_version));
        }
        Err(format!(
            "the object was built by `{compiler}`, which is not installed here ({}); install clang {major} (e.g. \
             `apt-get install clang-{major}`) to rebuild it",
            seen.join("; ")
        ))
    }
}

/// A kept verdict for an object naming `compiler`, when there is a readable
/// one whose digest record matches it: a verdict decides whether a native
/// chain may run a shipped object's source, so an unrecorded or edited one is
/// no verdict (the object is rebuilt again).
fn read_verdict(records: &CacheRecords, path: &Path, compiler: &str) -> Option<RebuildOutcome> {
    let kept = match records.read(path, MAX_VERDICT_BYTES) {
        Ok(kept) => kept,
        Err(miss) => {
            if miss.is_mismatch() {
                tracing::warn!("{miss}; the shipped object is rebuilt again");
            }
            return None;
        }
    };
    let text = String::from_utf8(kept.bytes).ok()?;
    let mut lines = text.lines();
    let (verdict, kept_compiler) = (lines.next()?, lines.next()?);
    if kept_compiler != compiler {
        return None;
    }
    let compiler = compiler.to_owned();
    match verdict {
        "match" => Some(RebuildOutcome::Match { compiler }),
        "mismatch" => {
            let rebuilt = Sha256Digest::from_canonical_hex(lines.next()?)?;
            Some(RebuildOutcome::Mismatch { compiler, rebuilt: Rebuilt::Object(rebuilt) })
        }
        _ => None,
    }
}

/// Keeps a match or an object mismatch; a verdict that cannot be written only
/// costs the next check a compile.
fn write_verdict(records: &CacheRecords, path: &Path, outcome: &RebuildOutcome) {
    let text = match outcome {
        RebuildOutcome::Match { compiler } => format!("match\n{compiler}\n"),
        RebuildOutcome::Mismatch { compiler, rebuilt: Rebuilt::Object(sha) } => {
            format!("mismatch\n{compiler}\n{sha}\n")
        }
        _ => return,
    };
    // The record creates the verdict's directory (private, like every cache one).
    if let Err(e) = records.write(path, text.as_bytes()) {
        tracing::debug!(path = %path.display(), "rebuild verdict not kept: {e}");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn verdicts_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("objects/ab/x.rebuild");
        let c = "Debian clang version 14.0.6";
        let r = CacheRecords::open(dir.path());
        let m = RebuildOutcome::Match { compiler: c.into() };
        write_verdict(&r, &p, &m);
        assert_eq!(read_verdict(&r, &p, c), Some(m));
        // Kept for another compiler's object: not this one's verdict.
        assert_eq!(read_verdict(&r, &p, "Debian clang version 16.0.6 (15~deb12u1)"), None);
        let mm = RebuildOutcome::Mismatch { compiler: c.into(), rebuilt: Rebuilt::Object(Sha256Digest([7; 32])) };
        write_verdict(&r, &p, &mm);
        assert_eq!(read_verdict(&r, &p, c), Some(mm));
        // What may change is not kept.
        let q = dir.path().join("objects/ab/y.rebuild");
        write_verdict(&r, &q, &RebuildOutcome::CannotRebuild { compiler: None, reason: "x".into() });
        assert!(!q.exists());
        r.write(&q, b"maybe\n").unwrap();
        assert_eq!(read_verdict(&r, &q, c), None);
    }
}
