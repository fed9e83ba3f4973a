//! Building packages' programs and loaders into CO-RE objects for this kernel,
//! through the build cache, in parallel.

use ebpkg_spec::PackageId;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Result;
use ebpkg_build::{Btf, BuildEvent, Builder, PackageToBuild};
use ebpkg_deploy::PlannedObject;
use ebpkg_spec::Manifest;
use ebpkg_spec::types::Sha256Digest;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::project::Project;

/// A package to build.
pub struct BuildInput<'a> {
    pub root: &'a Path,
    pub digest: Sha256Digest,
    pub manifest: &'a Manifest,
}

/// Build settings from the command line.
#[derive(Debug, Default, Clone)]
pub struct BuildOptions {
    /// Build packages that ask for the kernel's own types against this BTF
    /// instead of the running kernel's.
    pub btf: Option<PathBuf>,
    /// Objects that name no path of this machine, to ship
    /// ([`ebpkg_build::Builder::reproducible`]).
    pub reproducible: bool,
}

/// The builder of one command, shared by its package builds and its native
/// chains: clang is looked for only when something is not in the cache or
/// shipped prebuilt, and the running kernel's BTF is read only when a package
/// built against the kernel's own types needs it — each at most once. A BTF file
/// asked for by name (`--btf`) must be readable at once.
pub fn builder(ctx: &Ctx, opts: &BuildOptions) -> Result<std::sync::Arc<Builder>> {
    let btf = match &opts.btf {
        Some(p) => Some(Btf::from_file(p)?),
        None => None,
    };
    ctx.checked_cache()?;
    let jobs = ctx.config.jobs.and_then(NonZeroUsize::new);
    let mut builder =
        Builder::detecting(ctx.config.cache_dir.clone(), ctx.config.tools.clone(), btf, jobs).kernel_btf_when_needed();
    if opts.reproducible {
        builder = builder.reproducible();
    }
    Ok(std::sync::Arc::new(builder))
}

/// Builds every package; returns each package's objects, in the order given.
pub fn build_packages(ctx: &Ctx, inputs: &[BuildInput<'_>], opts: &BuildOptions) -> Result<Vec<Vec<PlannedObject>>> {
    build_with(ctx, &*builder(ctx, opts)?, inputs)
}

/// [`build_packages`] with the command's [`builder`].
pub fn build_with(ctx: &Ctx, builder: &Builder, inputs: &[BuildInput<'_>]) -> Result<Vec<Vec<PlannedObject>>> {
    let plans: Vec<_> =
        inputs.iter().map(|i| ebpkg_build::plan(&PackageToBuild::new(i.root, i.digest, i.manifest))).collect();
    let units: Vec<_> = plans.iter().flatten().cloned().collect();
    if units.is_empty() {
        return Ok(vec![Vec::new(); inputs.len()]);
    }
    let progress = Mutex::new(ctx.ui.progress("Building", units.len() as u64));
    let ui = &ctx.ui;
    let on_event = |e: BuildEvent<'_>| {
        let Ok(p) = progress.lock() else { return };
        match e {
            BuildEvent::Started(u) => p.message(u.to_string()),
            BuildEvent::Cached(u) => {
                p.inc(u.to_string());
                if ui.verbose > 0 {
                    p.println(ui, "Fresh", u);
                }
            }
            BuildEvent::Prebuilt(u) => {
                p.inc(u.to_string());
                p.println(ui, "Prebuilt", u);
            }
            BuildEvent::Finished(u, d) => {
                p.inc(u.to_string());
                p.println(ui, "Compiled", format!("{u} in {:.2}s", d.as_secs_f64()));
            }
            BuildEvent::Failed(u) => p.inc(u.to_string()),
            BuildEvent::Warning(u, w) => p.println(ui, "Warning", format!("{u}:\n{}", w.trim_end())),
        }
    };
    let built = builder.build(&units, &on_event)?;
    if let Ok(p) = progress.lock() {
        p.finish();
    }
    // What was built must define what the manifest declares, no more and no less
    // (publish's check, for build, test and install too): a renamed [[program]]
    // would otherwise run, or be refused, far from its cause.
    for b in &built {
        check_declared(&b.unit, &b.object)?;
    }
    // The builder gives one object per unit, in the units' order: each input's
    // objects are the next as many as its plan has units.
    let mut built = built.into_iter();
    Ok(plans
        .iter()
        .map(|plan| {
            built
                .by_ref()
                .take(plan.len())
                .map(|b| PlannedObject {
                    path: b.object.clone(),
                    object_name: b.unit.file().to_string(),
                    hook: b.unit.hook,
                    programs: b.unit.programs.iter().map(|p| p.to_string()).collect(),
                    loaders: b.unit.loaders.iter().map(|l| l.to_string()).collect(),
                    sha256: Some(b.sha256),
                    origin: Some(b.origin),
                    compiler: b.compiler.clone(),
                })
                .collect()
        })
        .collect())
}

/// Loads every program and loader of the objects in a HIKe root of this run's own
/// and collects what the verifier says.
pub fn verify_objects(
    ctx: &Ctx,
    id: &PackageId,
    objects: &[PlannedObject],
) -> Result<Vec<(String, hike_runtime::VerifierStats)>> {
    let root = crate::ops::TempRoot::create(ctx, "verify")?;
    let mut out = Vec::new();
    for o in objects {
        let elf = o.read()?;
        let programs: Vec<String> = o.programs.iter().chain(&o.loaders).cloned().collect();
        let stats = root.root.rt.verify_object(&format!("{id} ({})", o.object_name), &elf, &programs)?;
        ctx.ui.status("Verified", format!("{} ({}) of {id}", o.object_name, o.hook.name()));
        out.extend(stats.into_iter().map(|s| (o.object_name.clone(), s)));
    }
    Ok(out)
}

/// Refuses an object that does not define every program and loader its unit
/// declares. (It may define more: another item of the package can take a program
/// of the same name from a prebuilt object of its own, and only declared
/// programs are ever loaded.)
fn check_declared(unit: &ebpkg_build::BuildUnit, object: &Path) -> Result<()> {
    let elf = ebpkg_fs::read(object, ebpkg_spec::MAX_OBJECT_BYTES)?;
    let defined = hike_runtime::object_programs(&unit.to_string(), &elf)?;
    let missing: Vec<String> = unit
        .programs
        .iter()
        .chain(&unit.loaders)
        .map(|p| p.to_string())
        .filter(|d| !defined.contains(d))
        .map(|d| format!("`{d}`"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let defined: Vec<String> = defined.iter().map(|d| format!("`{d}`")).collect();
    Err(crate::exit::fail(
        crate::exit::Failure::Input,
        format!(
            "{unit}: ebpkg.toml declares {} but the object does not define {}; it defines {}. The name of a \
             [[program]] or [[loader]] is its C function's: rename one to match the other",
            missing.join(", "),
            if missing.len() == 1 { "it" } else { "them" },
            if defined.is_empty() { "no program".to_owned() } else { defined.join(", ") }
        ),
    ))
}

/// What `ebpkg build` does beyond building.
pub struct BuildProjectOptions {
    pub build: BuildOptions,
    /// Copy the objects into this directory (named `<file>.<hook>.o`).
    pub out_dir: Option<PathBuf>,
    /// Have the kernel verify every program and loader.
    pub verify: bool,
}

/// One object of the project, and where it is.
pub struct BuiltObject {
    pub object: PlannedObject,
    /// In the build cache, or the copy in `out_dir`.
    pub path: PathBuf,
}

/// The project's objects, and (with `verify`) what the verifier said of each
/// program, by object name, in the order verified.
pub struct BuiltProject {
    pub objects: Vec<BuiltObject>,
    pub stats: Vec<(String, hike_runtime::VerifierStats)>,
}

/// Builds the project's objects (verified by the kernel with `verify`, copied
/// into `out_dir` when given).
pub fn build_project(ctx: &Ctx, project: &Project, opts: BuildProjectOptions) -> Result<BuiltProject> {
    if opts.verify {
        // (Building for other kernels is not refused: only loading here.)
        crate::ops::kernel_fit::refuse_unmet(&crate::ops::kernel_fit::RunningKernel::current(), [&project.manifest])?;
    }
    let objects = build_packages(
        ctx,
        &[BuildInput { root: &project.dir, digest: project.digest()?, manifest: &project.manifest }],
        &opts.build,
    )?
    .pop()
    .unwrap_or_default();
    let stats = if opts.verify {
        crate::ops::require_privileges("build --verify")?;
        verify_objects(ctx, &project.manifest.package.id(), &objects)?
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    for object in objects {
        let path = match &opts.out_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| fail(Failure::Input, format!("{}: {e}", dir.display())))?;
                let name = format!("{}.{}.o", object.object_name.replace('/', "_"), object.hook.name());
                let dest = dir.join(name);
                std::fs::copy(&object.path, &dest)
                    .map_err(|e| fail(Failure::Input, format!("{}: {e}", dest.display())))?;
                dest
            }
            None => object.path.clone(),
        };
        out.push(BuiltObject { object, path });
    }
    Ok(BuiltProject { objects: out, stats })
}
