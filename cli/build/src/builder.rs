//! Turning units into objects: prebuilt checks, cache lookups, then parallel
//! compiles of whatever is left, with every failure collected.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use ebpkg_spec::manifest::KernelBuild;
use ebpkg_spec::types::{Hook, ObjectOrigin, RelPath, Sha256Digest};

use crate::btf::Btf;
use crate::cache::{self, object_path, warnings_path};
use crate::cache_key::{CacheKeyInput, KeyKernel, cache_key};
use crate::cache_record::CacheRecords;
use crate::compile::{self, Dirs};
use crate::elf_check::check_bpf_object;
use crate::error::{BtfError, BuildError, CompileError, PackageFileError, PrebuiltMismatch};
use crate::plan::{BuildUnit, UnitInput};
use crate::sdk;
use crate::toolchain::{ToolSource, Toolchain, ToolchainError, ToolchainOptions, target_arch};

/// Largest warning text kept per object; more is cut (clang repeats itself).
const MAX_WARNINGS_BYTES: usize = 64 * 1024;
use ebpkg_spec::MAX_OBJECT_BYTES;

/// Progress, for progress bars and logs. Every unit ends with exactly one of
/// `Cached`, `Prebuilt`, `Finished` or `Failed`; `Started` comes before
/// `Finished`/`Failed` of a compiled unit; `Warning` may come at any point (a
/// cached object that does not match its digest record is one).
#[derive(Debug, Clone, Copy)]
pub enum BuildEvent<'a> {
    /// clang started on the unit.
    Started(&'a BuildUnit),
    /// The object came from the build cache.
    Cached(&'a BuildUnit),
    /// The package's prebuilt object matched its digest and is used as is.
    Prebuilt(&'a BuildUnit),
    /// clang produced the object, after this long.
    Finished(&'a BuildUnit, Duration),
    /// The unit failed; the error is in the build's result.
    Failed(&'a BuildUnit),
    /// Compiler warnings, or a prebuilt object that was ignored.
    Warning(&'a BuildUnit, &'a str),
}

/// A unit's object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltObject {
    pub unit: BuildUnit,
    /// The object: in the build cache, or the package's prebuilt file.
    pub object: PathBuf,
    /// Where it came from: compiled now, the build cache, the package.
    pub origin: ObjectOrigin,
    /// The SHA-256 of the object's bytes as they were checked (against the
    /// cache's digest record, or the manifest's sha256): what may be loaded.
    pub sha256: Sha256Digest,
    /// The compiler the object names (`compiler_of`), when it names one.
    pub compiler: Option<String>,
    /// clang's warnings (also for cache hits, replayed from the cache), and a note
    /// when a mismatching prebuilt object was ignored; empty when none.
    pub warnings: String,
}

/// Builds units into a cache directory.
///
/// The toolchain is looked for only when something has to be compiled (or a
/// local-kernel unit's key needs the exact clang): a build whose portable
/// objects are all in the cache, or shipped in the packages, runs no clang and
/// works on a machine without one.
#[derive(Debug, Clone)]
pub struct Builder {
    cache_dir: PathBuf,
    toolchain: OnceLock<Result<Toolchain, ToolchainError>>,
    tool_options: ToolchainOptions,
    /// The `__TARGET_ARCH_*` name, known without the toolchain.
    arch: Result<String, ToolchainError>,
    /// The kernel BTF local-kernel units are built against; portable units need none.
    btf: Option<Btf>,
    /// Without `btf`: read the running kernel's the first time a local-kernel unit
    /// needs it (once per builder: it is read and hashed, megabytes).
    kernel_btf: Option<OnceLock<Option<Btf>>>,
    jobs: NonZeroUsize,
    extra_cflags: Vec<String>,
    /// Objects that name no path of this machine (see [`Builder::reproducible`]).
    reproducible: bool,
    /// The cache's digest records, opened when first needed.
    records: OnceLock<CacheRecords>,
}

/// What phase one decided for a unit.
enum Slot {
    Done(Box<BuiltObject>),
    Failed(BuildError),
    /// Waits for a compile job; `note` goes before its warnings.
    Compile {
        job: usize,
        note: String,
    },
}

/// One clang run, shared by every unit with the same key.
struct Job {
    key: Sha256Digest,
    /// The first unit with this key: its package, root and source.
    unit: usize,
    source: RelPath,
    /// Every unit waiting for it.
    waiting: Vec<usize>,
}

/// What a compile produced.
struct Compiled {
    object: PathBuf,
    sha256: Sha256Digest,
    compiler: Option<String>,
    /// clang's warnings.
    warnings: String,
}

type JobResult = Result<Compiled, BuildError>;

impl Builder {
    /// A builder writing into `cache_dir` (created when needed) with a toolchain
    /// already found. `jobs` is how many clang processes run at once; `None` means
    /// one per available CPU.
    pub fn new(cache_dir: impl Into<PathBuf>, toolchain: Toolchain, btf: Btf, jobs: Option<NonZeroUsize>) -> Builder {
        let arch = Ok(toolchain.arch.clone());
        let mut b = Builder::detecting(cache_dir, ToolchainOptions::default(), Some(btf), jobs);
        b.arch = arch;
        b.toolchain = OnceLock::from(Ok(toolchain));
        b
    }

    /// A builder that looks for the toolchain described by `options` the first time
    /// it needs it. `btf` is the kernel local-kernel units are built against;
    /// without it, only portable units can be built.
    pub fn detecting(
        cache_dir: impl Into<PathBuf>,
        options: ToolchainOptions,
        btf: Option<Btf>,
        jobs: Option<NonZeroUsize>,
    ) -> Builder {
        let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN));
        let host = std::env::consts::ARCH;
        let arch = target_arch(host)
            .map(str::to_owned)
            .ok_or_else(|| ToolchainError::UnsupportedArch { arch: host.to_owned() });
        Builder {
            cache_dir: cache_dir.into(),
            toolchain: OnceLock::new(),
            tool_options: options,
            arch,
            btf,
            kernel_btf: None,
            jobs,
            extra_cflags: Vec::new(),
            reproducible: false,
            records: OnceLock::new(),
        }
    }

    /// Objects that name no path of the machine that built them: the SDK's cache
    /// directory is `/hike-sdk` in their debug info, so the same package built by
    /// any machine (any user, any cache directory) with the same clang gives the
    /// same bytes, and a shipped object leaks no home directory. The price: the
    /// verifier cannot quote the VM's own lines (vm.h) for these objects, which is
    /// why builds for this machine do not do it. Part of the cache key.
    pub fn reproducible(mut self) -> Builder {
        self.reproducible = true;
        self
    }

    /// A reproducible builder like this one (no extra flags) writing into
    /// `cache_dir` with `toolchain`: what a shipped object is rebuilt with
    /// (crate::rebuild).
    pub(crate) fn for_rebuild(&self, cache_dir: &Path, toolchain: Option<Toolchain>) -> Builder {
        Builder {
            cache_dir: cache_dir.to_owned(),
            toolchain: toolchain.map_or_else(OnceLock::new, |t| OnceLock::from(Ok(t))),
            tool_options: self.tool_options.clone(),
            arch: self.arch.clone(),
            btf: None,
            kernel_btf: None,
            jobs: NonZeroUsize::MIN,
            extra_cflags: Vec::new(),
            reproducible: true,
            // The scratch cache's own records: nothing from the real cache is
            // trusted for a rebuild.
            records: OnceLock::new(),
        }
    }

    /// How the toolchain is looked for.
    pub(crate) fn tool_options(&self) -> &ToolchainOptions {
        &self.tool_options
    }

    /// The compiler arguments of a `hook` unit, symbolic paths included.
    fn args(&self, arch: &str, hook: Hook) -> Vec<compile::Arg> {
        let mut args = compile::args(arch, hook, &self.extra_cflags);
        if self.reproducible {
            args.push(compile::Arg::PrefixMapSdk);
        }
        args
    }

    /// Extra compiler arguments appended to every compile (e.g. `-DDEBUG`); they
    /// are part of the cache key.
    pub fn with_extra_cflags(mut self, flags: Vec<String>) -> Builder {
        self.extra_cflags = flags;
        self
    }

    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// The digest records of the cache: every artifact of it that can reach the
    /// kernel is written and read through them.
    pub fn records(&self) -> &CacheRecords {
        self.records.get_or_init(|| CacheRecords::open(&self.cache_dir))
    }

    /// The toolchain, found now if it was not yet.
    pub fn toolchain(&self) -> Result<&Toolchain, ToolchainError> {
        self.toolchain.get_or_init(|| Toolchain::detect(&self.tool_options)).as_ref().map_err(Clone::clone)
    }

    /// The kernel BTF local-kernel units are built against, when there is one.
    pub fn btf(&self) -> Option<&Btf> {
        self.btf.as_ref()
    }

    fn arch(&self) -> Result<&str, ToolchainError> {
        self.arch.as_deref().map_err(Clone::clone)
    }

    fn local_btf(&self) -> Result<&Btf, BuildError> {
        if let Some(btf) = &self.btf {
            return Ok(btf);
        }
        let Some(lazy) = &self.kernel_btf else { return Err(BuildError::Btf(BtfError::NotGiven)) };
        match lazy.get_or_init(|| Btf::kernel().ok()) {
            Some(btf) => Ok(btf),
            // Read again only to say why (the failure is the rare path).
            None => Err(BuildError::Btf(Btf::kernel().err().unwrap_or(BtfError::NotGiven))),
        }
    }

    /// Without a BTF given, local-kernel units use the running kernel's, read
    /// when the first of them needs it; portable builds never read it.
    pub fn kernel_btf_when_needed(mut self) -> Builder {
        if self.btf.is_none() {
            self.kernel_btf = Some(OnceLock::new());
        }
        self
    }

    pub fn jobs(&self) -> NonZeroUsize {
        self.jobs
    }

    /// The compiler arguments for a hook as they enter the cache key (paths as
    /// `<root>`, `<sdk>`, `<vmlinux>`), before `-c <source> -o <object>`.
    pub fn flags(&self, hook: Hook) -> Result<Vec<String>, BuildError> {
        Ok(compile::key_flags(&self.args(self.arch()?, hook)))
    }

    /// The compiler arguments for sources of `hook` under `root` with real paths
    /// (the SDK headers and the kernel types put in the cache first): what native
    /// chains compile package sources with, beside their own flags.
    pub fn resolved_args(
        &self,
        hook: Hook,
        kernel: KernelBuild,
        root: &Path,
    ) -> Result<Vec<std::ffi::OsString>, BuildError> {
        let sdk = self.install_sdk()?;
        let types = self.kernel_types_dir(kernel, &sdk)?;
        Ok(compile::resolve(&self.args(self.arch()?, hook), &Dirs { root, sdk: &sdk.include, vmlinux: &types }))
    }

    /// The cache key of compiling `source` of the package with `package_digest`
    /// for `hook` against `kernel`'s types, with `extra` arguments after the usual
    /// ones (native chains' modules: the same source built another way is another
    /// entry).
    pub fn cache_key_with(
        &self,
        package_digest: Sha256Digest,
        source: &str,
        hook: Hook,
        kernel: KernelBuild,
        extra: &[&str],
    ) -> Result<Sha256Digest, BuildError> {
        let mut flags = self.flags(hook)?;
        flags.extend(extra.iter().map(|f| (*f).to_owned()));
        let key_kernel = match kernel {
            KernelBuild::Portable => KeyKernel::Portable,
            KernelBuild::Local => {
                let toolchain = self.toolchain()?;
                KeyKernel::Local {
                    clang: &toolchain.clang,
                    clang_version: &toolchain.clang_version,
                    btf_digest: self.local_btf()?.digest(),
                }
            }
        };
        Ok(cache_key(&CacheKeyInput {
            package_digest,
            source,
            hook,
            flags: &flags,
            sdk_digest: sdk::digest(),
            kernel: key_kernel,
        }))
    }

    /// The cache key of compiling `source` for `unit`.
    pub fn cache_key(&self, unit: &BuildUnit, source: &RelPath) -> Result<Sha256Digest, BuildError> {
        self.cache_key_with(unit.package_digest, source.as_str(), unit.hook, unit.kernel, &[])
    }

    fn install_sdk(&self) -> Result<sdk::InstalledSdk, BuildError> {
        sdk::install(&self.cache_dir).map_err(|cause| BuildError::Cache {
            path: ebpkg_spec::cache_layout::CacheLayout::new(&self.cache_dir).sdk(),
            cause,
        })
    }

    /// The directory holding the `vmlinux.h` that `kernel` units include: the SDK's
    /// reference types, or the kernel's own, generated from its BTF.
    fn kernel_types_dir(&self, kernel: KernelBuild, sdk: &sdk::InstalledSdk) -> Result<PathBuf, BuildError> {
        match kernel {
            KernelBuild::Portable => Ok(sdk.reference.clone()),
            KernelBuild::Local => {
                let bpftool = &self.toolchain()?.bpftool;
                Ok(self.local_btf()?.vmlinux_h(&self.cache_dir, bpftool)?.dir)
            }
        }
    }

    /// Produces an object for every unit, in the order given. Prebuilt objects
    /// are checked, cached objects reused, and the rest compiled `jobs` at a time.
    /// clang, the SDK headers and vmlinux.h are only needed when something has to
    /// be compiled. Every failing unit is reported ([`BuildError::Multiple`] when
    /// more than one failed); objects of units that succeeded stay cached.
    pub fn build(
        &self,
        units: &[BuildUnit],
        on_event: &(dyn Fn(BuildEvent<'_>) + Sync),
    ) -> Result<Vec<BuiltObject>, BuildError> {
        // What killed builds left behind.
        crate::temps::remove_stale(&self.cache_dir);
        let mut slots = Vec::with_capacity(units.len());
        let mut jobs: Vec<Job> = Vec::new();
        let mut job_by_key: HashMap<Sha256Digest, usize> = HashMap::new();
        for (i, unit) in units.iter().enumerate() {
            let (source, note) = match &unit.input {
                UnitInput::Source(source) => (source.clone(), String::new()),
                UnitInput::Prebuilt { object, sha256, source } => match self.prebuilt(unit, object, sha256, source) {
                    Prebuilt::Use(built) => {
                        on_event(BuildEvent::Prebuilt(unit));
                        slots.push(Slot::Done(built));
                        continue;
                    }
                    Prebuilt::Fail(e) => {
                        on_event(BuildEvent::Failed(unit));
                        slots.push(Slot::Failed(e));
                        continue;
                    }
                    Prebuilt::Compile(source, note) => {
                        on_event(BuildEvent::Warning(unit, &note));
                        (source, note)
                    }
                },
            };
            let key = match self.cache_key(unit, &source) {
                Ok(key) => key,
                Err(e) => {
                    on_event(BuildEvent::Failed(unit));
                    slots.push(Slot::Failed(e));
                    continue;
                }
            };
            if let Some(built) = self.lookup(unit, &key, &note, on_event) {
                on_event(BuildEvent::Cached(unit));
                let replayed = &built.warnings[note.len()..];
                if !replayed.trim().is_empty() {
                    on_event(BuildEvent::Warning(unit, replayed));
                }
                slots.push(Slot::Done(Box::new(built)));
                continue;
            }
            // Units with the same key (a prebuilt object's fallback source that
            // another program also names) share one compile.
            let job = *job_by_key.entry(key).or_insert_with(|| {
                jobs.push(Job { key, unit: i, source, waiting: Vec::new() });
                jobs.len() - 1
            });
            jobs[job].waiting.push(i);
            slots.push(Slot::Compile { job, note });
        }

        // A failure to prepare the compiles (no clang, no vmlinux.h) fails every
        // unit waiting for one; it is reported once, after the units' own errors.
        let mut global = None;
        let mut results: Vec<Option<JobResult>> = if jobs.is_empty() {
            Vec::new()
        } else {
            match self.compile_all(units, &jobs, on_event) {
                Ok(results) => results.into_iter().map(Some).collect(),
                Err(e) => {
                    for &u in jobs.iter().flat_map(|j| &j.waiting) {
                        on_event(BuildEvent::Failed(&units[u]));
                    }
                    global = Some(e);
                    jobs.iter().map(|_| None).collect()
                }
            }
        };

        // Units are visited in order and a job belongs to its first unit, so the
        // errors come out in unit order; a shared failure is reported once.
        let mut built = Vec::with_capacity(units.len());
        let mut errors = Vec::new();
        for (i, slot) in slots.into_iter().enumerate() {
            match slot {
                Slot::Done(b) => built.push(*b),
                Slot::Failed(e) => errors.push(e),
                Slot::Compile { job, note } => {
                    if let Some(Ok(c)) = &results[job] {
                        built.push(BuiltObject {
                            unit: units[i].clone(),
                            object: c.object.clone(),
                            origin: ObjectOrigin::BuiltHere,
                            sha256: c.sha256,
                            compiler: c.compiler.clone(),
                            warnings: join_warnings(&note, &c.warnings),
                        });
                    } else if jobs[job].unit == i
                        && let Some(Err(e)) = results[job].take()
                    {
                        errors.push(e);
                    }
                }
            }
        }
        errors.extend(global);
        match BuildError::from_list(errors) {
            Some(e) => Err(e),
            None => Ok(built),
        }
    }

    /// SPEC.md §4.7: a matching prebuilt object is used; a mismatching one is
    /// ignored in favour of `source`, or is an error when there is none.
    fn prebuilt(
        &self,
        unit: &BuildUnit,
        object: &RelPath,
        expected: &Sha256Digest,
        source: &Option<RelPath>,
    ) -> Prebuilt {
        // A missing object cannot match either: with a source, build that.
        if let Some(src) = source
            && std::fs::symlink_metadata(unit.root.join(object.as_str())).is_err()
        {
            let note =
                format!("warning: prebuilt object {object} of {} is missing; {src} compiled instead\n", unit.package);
            return Prebuilt::Compile(src.clone(), note);
        }
        let path = match package_file(unit, object) {
            Ok(p) => p,
            Err(e) => return Prebuilt::Fail(e),
        };
        let bytes = match ebpkg_fs::read(&path, MAX_OBJECT_BYTES) {
            Ok(b) => b,
            Err(e) => return Prebuilt::Fail(file_error(unit, object, format!("cannot read it: {e}"))),
        };
        let actual = Sha256Digest::of(&bytes);
        if actual == *expected {
            return match check_bpf_object(&bytes) {
                Ok(()) => Prebuilt::Use(Box::new(BuiltObject {
                    unit: unit.clone(),
                    object: path,
                    origin: ObjectOrigin::ShippedByPublisher,
                    sha256: actual,
                    compiler: crate::elf_check::compiler_of(&bytes),
                    warnings: String::new(),
                })),
                Err(problem) => Prebuilt::Fail(BuildError::BadObject {
                    package: unit.package.clone(),
                    file: object.clone(),
                    prebuilt: true,
                    problem,
                }),
            };
        }
        match source {
            Some(src) => Prebuilt::Compile(
                src.clone(),
                format!(
                    "warning: prebuilt object {object} of {} does not match its sha256 in ebpkg.toml \
                     (expected {expected}, found {actual}); it was ignored and {src} compiled instead\n",
                    unit.package
                ),
            ),
            None => Prebuilt::Fail(BuildError::PrebuiltMismatch(Box::new(PrebuiltMismatch {
                package: unit.package.clone(),
                object: object.clone(),
                expected: *expected,
                actual,
            }))),
        }
    }

    /// A cached object for `key`, when there is one that matches its digest
    /// record and is a valid object. One that does not match is a miss, said
    /// as a warning: it is compiled again, never loaded.
    fn lookup(
        &self,
        unit: &BuildUnit,
        key: &Sha256Digest,
        note: &str,
        on_event: &(dyn Fn(BuildEvent<'_>) + Sync),
    ) -> Option<BuiltObject> {
        let object = object_path(&self.cache_dir, key);
        let verified = self.records().lookup(&object, MAX_OBJECT_BYTES, |miss| {
            on_event(BuildEvent::Warning(unit, &format!("{miss}; it is built again\n")));
        })?;
        let bytes = verified.bytes;
        if let Err(problem) = check_bpf_object(&bytes) {
            // Damaged (a disk error, a hand edit): build it again.
            tracing::warn!(object = %object.display(), %problem, "ignoring a damaged cache entry");
            return None;
        }
        let warnings = ebpkg_fs::read_text(&warnings_path(&object), MAX_WARNINGS_BYTES as u64).unwrap_or_default();
        Some(BuiltObject {
            unit: unit.clone(),
            object,
            origin: ObjectOrigin::BuildCache,
            sha256: verified.sha256,
            compiler: crate::elf_check::compiler_of(&bytes),
            warnings: join_warnings(note, &warnings),
        })
    }

    /// Prepares clang's inputs once, then runs the jobs on `self.jobs` threads.
    fn compile_all(
        &self,
        units: &[BuildUnit],
        jobs: &[Job],
        on_event: &(dyn Fn(BuildEvent<'_>) + Sync),
    ) -> Result<Vec<JobResult>, BuildError> {
        let clang = &self.toolchain()?.clang;
        if !clang.is_file() {
            // Checked once here rather than failing every unit the same way.
            return Err(ToolchainError::ClangNotFound { requested: clang.clone(), how: ToolSource::Detected }.into());
        }
        let sdk = self.install_sdk()?;
        // Each kind of kernel types that some job needs, prepared once.
        let portable = sdk.reference.clone();
        let local = if jobs.iter().any(|j| units[j.unit].kernel == KernelBuild::Local) {
            Some(self.kernel_types_dir(KernelBuild::Local, &sdk)?)
        } else {
            None
        };

        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<JobResult>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
        let workers = self.jobs.get().min(jobs.len());
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    loop {
                        let j = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(j) else { break };
                        for &u in &job.waiting {
                            on_event(BuildEvent::Started(&units[u]));
                        }
                        let started = Instant::now();
                        let unit = &units[job.unit];
                        let types = match unit.kernel {
                            KernelBuild::Local => local.as_deref().unwrap_or(&portable),
                            KernelBuild::Portable => &portable,
                        };
                        let result = self.compile_one(unit, job, &sdk.include, types);
                        let took = started.elapsed();
                        for &u in &job.waiting {
                            let unit = &units[u];
                            match &result {
                                Ok(Compiled { warnings, .. }) => {
                                    if !warnings.trim().is_empty() {
                                        on_event(BuildEvent::Warning(unit, warnings));
                                    }
                                    on_event(BuildEvent::Finished(unit, took));
                                }
                                Err(_) => on_event(BuildEvent::Failed(unit)),
                            }
                        }
                        if let Ok(mut r) = results.lock() {
                            r[j] = Some(result);
                        }
                    }
                });
            }
        });
        let results = results.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(results
            .into_iter()
            .zip(jobs)
            .map(|(r, job)| {
                // Every job index below jobs.len() was taken by some worker.
                r.unwrap_or_else(|| Err(file_error(&units[job.unit], &job.source, "was not compiled".to_owned())))
            })
            .collect())
    }

    /// Compiles one source into a temporary file beside its cache entry, checks
    /// the object, then renames it into place.
    fn compile_one(&self, unit: &BuildUnit, job: &Job, sdk_include: &Path, vmlinux_dir: &Path) -> JobResult {
        let source = &job.source;
        let toolchain = self.toolchain()?;
        package_file(unit, source)?;
        // clang compares the prefix map with its real working directory, so map
        // the canonical root (the source check above proved it exists).
        let root = unit.root.canonicalize().map_err(|e| file_error(unit, source, format!("cannot resolve: {e}")))?;
        let args = compile::resolve(
            &self.args(&toolchain.arch, unit.hook),
            &Dirs { root: &root, sdk: sdk_include, vmlinux: vmlinux_dir },
        );

        let object = object_path(&self.cache_dir, &job.key);
        let dir = object.parent().unwrap_or(&self.cache_dir);
        let cache_err = |cause| BuildError::Cache { path: dir.to_owned(), cause };
        cache::create_dirs(dir).map_err(cache_err)?;
        let tmp = tempfile::Builder::new()
            .prefix(&crate::temps::prefix())
            .suffix(".o")
            .tempfile_in(dir)
            .map_err(cache_err)?
            .into_temp_path();

        tracing::debug!(unit = %unit, "compiling");
        let out =
            compile::run(&toolchain.clang, &args, &root, source.as_str(), &tmp).map_err(|e| BuildError::RunClang {
                package: unit.package.clone(),
                file: source.clone(),
                clang: toolchain.clang.clone(),
                cause: e,
            })?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            return Err(BuildError::Compile(Box::new(CompileError {
                package: unit.package.clone(),
                file: source.clone(),
                hook: unit.hook,
                clang_release: toolchain.clang_release.clone(),
                stderr,
                command: compile::display_command(&toolchain.clang, &args, source.as_str()),
            })));
        }
        let bytes = ebpkg_fs::read(&tmp, MAX_OBJECT_BYTES).map_err(|cause| BuildError::CacheRead { cause })?;
        check_bpf_object(&bytes).map_err(|problem| BuildError::BadObject {
            package: unit.package.clone(),
            file: source.clone(),
            prebuilt: false,
            problem,
        })?;
        let warnings = cap(stderr);
        // The warnings go in first: a reader that sees the object sees its warnings.
        if !warnings.trim().is_empty() {
            cache::write_atomic(&warnings_path(&object), warnings.as_bytes()).map_err(cache_err)?;
        } else {
            // A portable key names no compiler: an entry rebuilt by another clang
            // (after damage, or in a race) must not replay the first one's warnings.
            match std::fs::remove_file(warnings_path(&object)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(cache_err(e)),
                _ => {}
            }
        }
        // clang replaced the temporary file with its own (mode from the umask):
        // cache files are the cache user's alone.
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(cache::FILE_MODE)).map_err(cache_err)?;
        tmp.persist(&object).map_err(|e| cache_err(e.error))?;
        let sha256 = self.records().record(&object, &bytes).map_err(cache_err)?;
        Ok(Compiled { object, sha256, compiler: crate::elf_check::compiler_of(&bytes), warnings })
    }
}

/// What to do with a prebuilt unit.
enum Prebuilt {
    Use(Box<BuiltObject>),
    Fail(BuildError),
    /// Compile this source instead; the note says why.
    Compile(RelPath, String),
}

/// The absolute path of a file the manifest names, refusing one that is missing,
/// not a regular file, or outside the package through a symbolic link (SPEC.md §1).
fn package_file(unit: &BuildUnit, file: &RelPath) -> Result<PathBuf, BuildError> {
    let path = unit.root.join(file.as_str());
    let real = path.canonicalize().map_err(|e| {
        let problem = if e.kind() == std::io::ErrorKind::NotFound {
            "no such file; the manifest names it, so the package is incomplete".to_owned()
        } else {
            format!("cannot open it: {e}")
        };
        file_error(unit, file, problem)
    })?;
    let root = unit.root.canonicalize().map_err(|e| file_error(unit, file, format!("cannot open the package: {e}")))?;
    if !real.starts_with(&root) {
        return Err(file_error(
            unit,
            file,
            format!(
                "it leaves the package directory through a symbolic link (to {}); packages may only use their own files",
                real.display()
            ),
        ));
    }
    if !real.is_file() {
        return Err(file_error(unit, file, "it is not a regular file".to_owned()));
    }
    Ok(path)
}

fn file_error(unit: &BuildUnit, file: &RelPath, problem: String) -> BuildError {
    BuildError::PackageFile(Box::new(PackageFileError {
        package: unit.package.clone(),
        root: unit.root.clone(),
        file: file.clone(),
        problem,
    }))
}

fn join_warnings(note: &str, warnings: &str) -> String {
    format!("{note}{warnings}")
}

/// Cuts warnings to [`MAX_WARNINGS_BYTES`] at a line boundary.
fn cap(mut text: String) -> String {
    if text.len() > MAX_WARNINGS_BYTES {
        let cut = text[..MAX_WARNINGS_BYTES].rfind('\n').unwrap_or(0);
        text.truncate(cut);
        text.push_str("\n… more warnings not shown\n");
    }
    text
}
