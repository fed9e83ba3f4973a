//! `ebpkg install`: manifest → resolve → lock → fetch → build → compile chains →
//! deploy (register, link, install, configure, switch) — all or nothing.

use std::collections::BTreeMap;

use anyhow::Result;
use ebpkg_deploy::{Attached, ChainMode, DeployPlan, Event, InstallOutcome, PackageSource, PlannedPackage, Tier};
use ebpkg_resolver::UpdatePolicy;
use ebpkg_signing::PrebuiltObjects;
use ebpkg_spec::Manifest;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::build::{BuildInput, BuildOptions};
use crate::ops::chains::compile_chains;
use crate::ops::fetch::{Fetched, fetch_all};
use crate::ops::resolve::{Root, resolve, resolve_project};
use crate::project::Project;

/// What to install.
pub enum Target {
    /// The project (its chains, with its dependencies).
    Project(Box<Project>),
    /// A package of the registry (its chains), like `cargo install`.
    Package { name: ebpkg_spec::PackageName, req: semver::VersionReq },
}

pub struct InstallOptions {
    pub params: BTreeMap<String, String>,
    pub force: bool,
    pub deployment: Option<String>,
    pub build: BuildOptions,
    /// How chains run (`--chain-mode`).
    pub chain_mode: ChainMode,
    /// Start empty the maps whose layout changed instead of refusing (`--reset-state`).
    pub reset_state: bool,
}

/// What a deployment event says, as a status line.
pub fn describe(e: &Event) -> (&'static str, String) {
    match e {
        Event::Recovered { deployment, how } => ("Recovered", format!("{deployment}: {how}")),
        Event::Registered { package, program, id, reused } => {
            (if *reused { "Reusing" } else { "Registered" }, format!("{package} {program} as program {id}"))
        }
        Event::ChainInstalled { script, chain, id } => ("Installed", format!("chain {chain} ({script}) as chain {id}")),
        Event::LoaderLoaded { instance } => ("Loaded", format!("loader instance {instance}")),
        Event::Attached { instance, interface, how } => {
            let verb = match how {
                Attached::Switched => "Switched",
                Attached::Replaced => "Replaced",
                Attached::New => "Attached",
            };
            (verb, format!("{interface} to {instance}"))
        }
        Event::Removed { what } => ("Removed", what.clone()),
        Event::Tiered { chain, id, tier } => match tier {
            Tier::Native { bpf_id, insns, verified_insns, build_ms, load_ms, .. } => (
                "Native",
                format!(
                    "chain {chain} ({id}) runs as program {bpf_id} ({insns} instructions): built in {build_ms} ms; loaded, \
                     verified ({verified_insns} instructions processed) and swapped in within {load_ms} ms"
                ),
            ),
            Tier::Interpreted { reason: None } => ("Interpreted", format!("chain {chain} ({id}), as asked")),
            Tier::Interpreted { reason: Some(r) } => ("Interpreted", format!("chain {chain} ({id}): {r}")),
        },
        Event::Kept { what } => ("Keeping", what.clone()),
        Event::MapState(s) => {
            let what = format!("map {} of {} {} → {}", s.map, s.package, s.from, s.to);
            match (s.fate, &s.reason) {
                (ebpkg_deploy::Fate::Kept, _) => ("Kept", format!("{what}: the new programs use it as it is")),
                (ebpkg_deploy::Fate::Extended, _) => {
                    ("Extended", format!("{what}: entries copied, the fields the new version adds zeroed"))
                }
                (ebpkg_deploy::Fate::Fresh, _) => ("Fresh", format!("{what}: starts empty (`on-upgrade = \"fresh\"`)")),
                (ebpkg_deploy::Fate::Reset, reason) => (
                    "Reset",
                    format!(
                        "{what}: starts empty (--reset-state){}",
                        reason.as_ref().map(|r| format!("; {r}")).unwrap_or_default()
                    ),
                ),
            }
        }
        Event::RecoveryFailed { deployment, error } => (
            "Warning",
            format!(
                "could not finish or undo the interrupted transaction of deployment {deployment} (it is left as it is; \
                 `ebpkg doctor` shows it): {error}"
            ),
        ),
    }
}

/// Prints what deployments do.
pub fn print_event(ctx: &Ctx, e: &Event) {
    let (verb, msg) = describe(e);
    ctx.ui.status(verb, msg);
}

/// How long each phase of an install took, in order (`ebpkg install --timings`,
/// and `timings` in its `--json`). The deployment's phases are told apart by the
/// events it reports: each lasts until its last event.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Timings {
    /// `(phase, milliseconds)`.
    pub phases: Vec<(&'static str, f64)>,
    pub total_ms: f64,
}

/// Marks phase boundaries as an install goes.
struct Clock {
    start: std::time::Instant,
    last: std::time::Instant,
    phases: Vec<(&'static str, f64)>,
}

impl Clock {
    fn new() -> Clock {
        let now = std::time::Instant::now();
        Clock { start: now, last: now, phases: Vec::new() }
    }

    /// Ends phase `name` now.
    fn lap(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.phases.push((name, (now - self.last).as_secs_f64() * 1e3));
        self.last = now;
    }

    fn finish(self) -> Timings {
        Timings { phases: self.phases, total_ms: self.start.elapsed().as_secs_f64() * 1e3 }
    }
}

/// The deployment's phase an event ends (the phase lasts until its last event).
fn phase_of(e: &Event) -> Option<&'static str> {
    match e {
        Event::Recovered { .. } | Event::RecoveryFailed { .. } | Event::Kept { .. } => None,
        Event::Registered { .. } | Event::MapState(_) => Some("verify+register"),
        Event::ChainInstalled { .. } => Some("link+install chains"),
        Event::LoaderLoaded { .. } => Some("load+configure loaders"),
        Event::Attached { .. } => Some("attach"),
        Event::Tiered { .. } => Some("native"),
        Event::Removed { .. } => Some("commit+clean up"),
    }
}

/// What an install did, how long each phase took, and what the packages'
/// kernel verification attestations said of this kernel.
pub struct Installed {
    pub outcome: InstallOutcome,
    pub timings: Timings,
    pub kernels: Vec<crate::ops::kernel_attestations::Coverage>,
}

pub fn install(ctx: &Ctx, target: Target, opts: InstallOptions) -> Result<Installed> {
    let mut clock = Clock::new();
    let (outcome, kernels) = install_timed(ctx, target, opts, &mut clock)?;
    Ok(Installed { outcome, timings: clock.finish(), kernels })
}

/// What an install deploys, made but not deployed ([`plan`]).
pub struct Planned {
    pub plan: DeployPlan,
    /// What the packages' kernel verification attestations say of this kernel.
    pub kernels: Vec<crate::ops::kernel_attestations::Coverage>,
    /// The project's resolution, for ebpkg.lock once the plan is deployed.
    pub resolved: Option<crate::ops::resolve::Resolved>,
}

/// What `ebpkg install` would deploy: resolved, fetched, checked against this
/// kernel and the trust policy, built and chains compiled, with nothing deployed
/// and ebpkg.lock not written. Needs no privileges.
pub fn plan(ctx: &Ctx, target: &Target, opts: &InstallOptions) -> Result<Planned> {
    let builder = crate::ops::build::builder(ctx, &opts.build)?;
    let regs = ctx.registries()?;
    plan_timed(ctx, target, opts, &builder, &regs, &mut Clock::new())
}

fn install_timed(
    ctx: &Ctx,
    target: Target,
    opts: InstallOptions,
    clock: &mut Clock,
) -> Result<(InstallOutcome, Vec<crate::ops::kernel_attestations::Coverage>)> {
    crate::ops::require_privileges("install")?;
    let mut deployer = ctx.deployer()?;
    // An interrupted install is repaired first, whatever this one's options are
    // (recovery compiles nothing).
    deployer.recover(&|e| print_event(ctx, e))?;
    if let Some((found, fix)) = crate::ops::writable_vm_tables(&ctx.config.bpffs_root) {
        ctx.ui.warn(format!("{found}\nhelp: {fix}"));
    }
    let builder = crate::ops::build::builder(ctx, &opts.build)?;
    if opts.chain_mode != ChainMode::Interpreted {
        let compiler = crate::ops::native::ClangCompiler::new(builder.clone());
        deployer = deployer.with_native_compiler(std::sync::Arc::new(compiler));
    }
    let regs = ctx.registries()?;
    let Planned { plan, kernels, resolved } = plan_timed(ctx, &target, &opts, &builder, &regs, clock)?;
    ctx.ui.status("Deploying", format!("{} to {}", plan.deployment, ctx.config.bpffs_root.display()));
    // Each deployment phase ends with its last event; a phase without events is
    // folded into the next.
    let marks: std::cell::RefCell<Vec<(&'static str, std::time::Instant)>> = Default::default();
    let outcome = deployer.install(&plan, &|e| {
        if let Some(phase) = phase_of(e) {
            let mut m = marks.borrow_mut();
            match m.last_mut() {
                Some((p, at)) if *p == phase => *at = std::time::Instant::now(),
                _ => m.push((phase, std::time::Instant::now())),
            }
        }
        print_event(ctx, e)
    })?;
    for (phase, at) in marks.into_inner() {
        clock.phases.push((phase, (at - clock.last).as_secs_f64() * 1e3));
        clock.last = at;
    }
    clock.lap("commit");
    if let (Some(resolved), Target::Project(p)) = (resolved, &target) {
        resolved.save(ctx, p)?;
    }
    Ok((outcome, kernels))
}

/// [`plan`], with the command's builder and registries, timing each phase.
fn plan_timed(
    ctx: &Ctx,
    target: &Target,
    opts: &InstallOptions,
    builder: &std::sync::Arc<ebpkg_build::Builder>,
    regs: &crate::registries::Registries<'_>,
    clock: &mut Clock,
) -> Result<Planned> {
    // Resolve and fetch.
    // ebpkg.lock is written only once the install succeeded: a failed install
    // leaves the project as it was.
    let mut pending_lock = None;
    let lock = match &target {
        Target::Project(p) => {
            let resolved = resolve_project(ctx, p, regs, UpdatePolicy::Nothing)?;
            let lock = resolved.lock.clone();
            pending_lock = Some(resolved);
            lock
        }
        Target::Package { name, req } => {
            if ctx.locked {
                return Err(fail(
                    Failure::LockDrift,
                    "--locked needs a project with an ebpkg.lock; run in its directory",
                ));
            }
            ctx.ui.status("Resolving", format!("{name}@{req}"));
            resolve(ctx, Root::of_package(name.clone(), req.clone())?, None, UpdatePolicy::Nothing, regs)?
        }
    };
    clock.lap("resolve");
    let fetched = fetch_all(ctx, regs, &lock)?;
    clock.lap("fetch");

    // The package whose chains are deployed, and the project's digest when it is
    // the project (a registry package is built as fetched).
    let (chain_pkg, chain_root, project_digest) = match &target {
        Target::Project(p) => (p.manifest.clone(), p.dir.clone(), Some(p.digest()?)),
        Target::Package { name, .. } => {
            let f = fetched
                .iter()
                .find(|f| f.manifest.package.name.normalized() == name.normalized())
                .ok_or_else(|| fail(Failure::Resolution, format!("{name} was not resolved")))?;
            (f.manifest.clone(), f.root.clone(), None)
        }
    };

    // A kernel older than a package says it works on is refused before any build.
    let kernel = crate::ops::kernel_fit::RunningKernel::current();
    crate::ops::kernel_fit::refuse_unmet(&kernel, fetched.iter().map(|f| &f.manifest).chain([&chain_pkg]))?;
    // So is one on which a trusted attestation saw a package refused.
    let attested = {
        let locked: Vec<&ebpkg_spec::LockedPackage> = fetched.iter().map(|f| &f.locked).collect();
        let coverage = crate::ops::kernel_attestations::check(ctx, regs, &locked, &kernel)?;
        crate::ops::kernel_attestations::enforce(ctx, &coverage, &kernel)?;
        coverage
    };
    clock.lap("kernel attestations");

    // Build every package (the project too when it has programs or loaders),
    // taking their shipped objects as the trust policy says.
    let prebuilt = ctx.trust_policy()?.prebuilt();
    let built_from: Vec<std::borrow::Cow<'_, Manifest>> = fetched
        .iter()
        .map(|f| match prebuilt {
            PrebuiltObjects::Never => crate::ops::shipped::without_shipped(&f.manifest).map(std::borrow::Cow::Owned),
            _ => Ok(std::borrow::Cow::Borrowed(&f.manifest)),
        })
        .collect::<Result<_>>()?;
    let mut inputs: Vec<BuildInput<'_>> = fetched
        .iter()
        .zip(&built_from)
        .map(|(f, m)| BuildInput { root: &f.root, digest: f.locked.checksum, manifest: m })
        .collect();
    if let Some(digest) = project_digest {
        inputs.push(BuildInput { root: &chain_root, digest, manifest: &chain_pkg });
    }
    let mut objects = crate::ops::build::build_with(ctx, builder, &inputs)?;
    if prebuilt == PrebuiltObjects::Rebuilt {
        let built: Vec<crate::ops::shipped::Built<'_>> = fetched
            .iter()
            .zip(&objects)
            .map(|(f, objects)| crate::ops::shipped::Built {
                id: f.manifest.id(),
                checksum: f.locked.checksum,
                root: &f.root,
                manifest: &f.manifest,
                objects,
            })
            .collect();
        // Only packages that ship objects need an attestation read.
        let locked: Vec<&ebpkg_spec::LockedPackage> = fetched
            .iter()
            .filter(|f| !crate::ops::shipped::shipped_objects(&f.manifest).is_empty())
            .map(|f| &f.locked)
            .collect();
        let attested = crate::ops::shipped::attested_matches(ctx, regs, &locked)?;
        let matched = crate::ops::shipped::require_rebuilt(ctx, builder, &built, &|archive, object| {
            attested.get(&(*archive, *object)).cloned()
        })?;
        for o in objects.iter_mut().flatten() {
            if o.sha256.is_some_and(|d| matched.contains(&d)) {
                o.origin = Some(ebpkg_spec::types::ObjectOrigin::RebuiltAndMatched);
            }
        }
    }
    clock.lap("build");
    let project_objects = objects.split_off(fetched.len()).pop().unwrap_or_default();

    let resolved: Vec<&Manifest> = fetched.iter().map(|f| &f.manifest).collect();
    let scripts = compile_chains(ctx, &chain_pkg, &chain_root, &resolved)?;
    clock.lap("compile chains");

    let mut packages: Vec<PlannedPackage> = fetched
        .iter()
        .zip(&objects)
        .map(|(f, objs): (&Fetched, _)| PlannedPackage {
            id: f.manifest.id(),
            source: PackageSource::Registry(f.locked.source.clone()),
            checksum: f.locked.checksum,
            root: f.root.clone(),
            manifest: f.manifest.clone(),
            objects: objs.clone(),
            signer: f.locked.signer,
        })
        .collect();
    if let Some(digest) = project_digest {
        packages.push(PlannedPackage {
            id: chain_pkg.id(),
            source: PackageSource::Path(std::fs::canonicalize(&chain_root).unwrap_or(chain_root.clone())),
            checksum: digest,
            root: chain_root.clone(),
            manifest: chain_pkg.clone(),
            objects: project_objects,
            signer: None,
        });
    }

    let deployment = opts.deployment.clone().unwrap_or_else(|| chain_pkg.package.name.to_string());
    let params = opts.params.clone();
    let project_dir = match &target {
        Target::Project(_) => Some(std::fs::canonicalize(&chain_root).unwrap_or_else(|_| chain_root.clone())),
        Target::Package { .. } => None,
    };
    let plan = DeployPlan {
        deployment,
        project_dir,
        project: chain_pkg.id(),
        packages,
        scripts,
        params,
        force: opts.force,
        chain_mode: opts.chain_mode,
        reset_state: opts.reset_state,
        restores: None,
    };
    Ok(Planned { plan, kernels: attested, resolved: pending_lock })
}
