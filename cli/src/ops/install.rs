//! `ebpkg install`: manifest → resolve → lock → fetch → build → compile chains →
//! deploy (register, link, install, configure, switch) — all or nothing.

use std::collections::BTreeMap;

use anyhow::Result;
use ebpkg_deploy::{DeployPlan, Event, InstallOutcome, PackageRef, PlannedPackage};
use ebpkg_resolver::UpdatePolicy;
use ebpkg_spec::Manifest;

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::build::{BuildInput, BuildOptions, build_packages};
use crate::ops::chains::compile_chains;
use crate::ops::fetch::{Fetched, fetch_all};
use crate::ops::resolve::{resolve_manifest, resolve_project};
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
            let verb = match *how {
                "switched" => "Switched",
                "replaced" => "Replaced",
                _ => "Attached",
            };
            (verb, format!("{interface} to {instance}"))
        }
        Event::Removed { what } => ("Removed", what.clone()),
        Event::Kept { what } => ("Keeping", what.clone()),
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

pub fn install(ctx: &Ctx, target: Target, opts: InstallOptions) -> Result<InstallOutcome> {
    crate::ops::require_privileges("install")?;
    let deployer = ctx.deployer()?;
    deployer.recover(&|e| print_event(ctx, e))?;
    let regs = ctx.registries()?;

    // Resolve and fetch.
    // ebpkg.lock is written only once the install succeeded: a failed install
    // leaves the project as it was.
    let mut pending_lock = None;
    let (root_manifest, project_dir, lock) = match &target {
        Target::Project(p) => {
            let p = p.as_ref();
            let resolved = resolve_project(ctx, p, &regs, UpdatePolicy::Nothing)?;
            let lock = resolved.lock.clone();
            pending_lock = Some(resolved);
            (p.manifest.clone(), Some(p.dir.clone()), lock)
        }
        Target::Package { name, req } => {
            if ctx.locked {
                return Err(fail(
                    Failure::LockDrift,
                    "--locked needs a project with an ebpkg.lock; run in its directory",
                ));
            }
            let text = format!(
                "[package]\nname = \"ebpkg-install\"\nversion = \"0.0.0\"\n\n[dependencies]\n{name} = \"{req}\"\n"
            );
            let m = Manifest::parse(&text, "<install>")?;
            ctx.ui.status("Resolving", format!("{name}@{req}"));
            let lock = resolve_manifest(&m, None, UpdatePolicy::Nothing, &regs)?;
            (m, None, lock)
        }
    };
    let fetched = fetch_all(ctx, &regs, &lock)?;

    // The package whose chains are deployed.
    let (chain_pkg, chain_root, project_digest) = match (&target, &project_dir) {
        (Target::Project(_), Some(dir)) => {
            let packed = ebpkg_archive::pack(dir).map_err(|e| fail(Failure::Input, e.render().trim_end()))?;
            (root_manifest.clone(), dir.clone(), Some(packed.sha256))
        }
        (Target::Package { name, .. }, _) => {
            let f = fetched
                .iter()
                .find(|f| f.manifest.package.name.normalized() == name.normalized())
                .ok_or_else(|| fail(Failure::Resolution, format!("{name} was not resolved")))?;
            (f.manifest.clone(), f.root.clone(), None)
        }
        _ => return Err(fail(Failure::Input, "no project directory")),
    };

    // Build every package (the project too when it has programs or loaders).
    let mut inputs: Vec<BuildInput<'_>> = fetched
        .iter()
        .map(|f| BuildInput { root: &f.root, digest: f.locked.checksum, manifest: &f.manifest })
        .collect();
    if let Some(digest) = project_digest {
        inputs.push(BuildInput { root: &chain_root, digest, manifest: &chain_pkg });
    }
    let objects = build_packages(ctx, &inputs, &opts.build)?;

    let resolved: Vec<&Manifest> = fetched.iter().map(|f| &f.manifest).collect();
    let scripts = compile_chains(ctx, &chain_pkg, &chain_root, &resolved)?;

    let mut packages: Vec<PlannedPackage> = fetched
        .iter()
        .zip(&objects)
        .map(|(f, objs): (&Fetched, _)| PlannedPackage {
            name: f.manifest.package.name.to_string(),
            version: f.manifest.package.version.to_string(),
            source: f.locked.source.clone(),
            checksum: f.locked.checksum.to_hex(),
            root: f.root.clone(),
            manifest: f.manifest.clone(),
            objects: objs.clone(),
        })
        .collect();
    if let Some(digest) = project_digest {
        packages.push(PlannedPackage {
            name: chain_pkg.package.name.to_string(),
            version: chain_pkg.package.version.to_string(),
            source: format!(
                "path+file://{}",
                std::fs::canonicalize(&chain_root).unwrap_or(chain_root.clone()).display()
            ),
            checksum: digest.to_hex(),
            root: chain_root.clone(),
            manifest: chain_pkg.clone(),
            objects: objects.last().cloned().unwrap_or_default(),
        });
    }

    let deployment = opts.deployment.clone().unwrap_or_else(|| chain_pkg.package.name.to_string());
    check_deployment_name(&deployment)?;
    // Parameters not given again keep the values the deployment was installed with.
    let mut params = opts.params.clone();
    if let Some(prev) = deployer.store().record(&deployment)? {
        for s in &scripts {
            for p in &s.artifact.params {
                if !params.contains_key(p)
                    && let Some(v) = prev.params.get(p)
                {
                    ctx.ui.status("Keeping", format!("{p}={v} from the current deployment"));
                    params.insert(p.clone(), v.clone());
                }
            }
        }
    }
    let project_dir = match &target {
        Target::Project(_) => Some(std::fs::canonicalize(&chain_root).unwrap_or_else(|_| chain_root.clone())),
        Target::Package { .. } => None,
    };
    let plan = DeployPlan {
        deployment,
        project_dir,
        project: PackageRef {
            name: chain_pkg.package.name.to_string(),
            version: chain_pkg.package.version.to_string(),
        },
        packages,
        scripts,
        params,
        force: opts.force,
    };
    ctx.ui.status("Deploying", format!("{} to {}", plan.deployment, ctx.config.bpffs_root.display()));
    let outcome = deployer.install(&plan, &|e| print_event(ctx, e))?;
    if let (Some(resolved), Target::Project(p)) = (pending_lock, &target) {
        resolved.save(ctx, p)?;
    }
    Ok(outcome)
}

/// Deployment names become pin names: letters, digits, `-` and `_`.
fn check_deployment_name(name: &str) -> Result<()> {
    let ok =
        !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(fail(
            Failure::Usage,
            format!("deployment name `{name}`: use at most 64 ASCII letters, digits, `-` and `_`"),
        ))
    }
}
