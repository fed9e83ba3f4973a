//! `ebpkg chain`: one chain script compiled on its own, with the packages it may
//! import from directories, a signatures file, or its project.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_spec::Manifest;
use hike_chainc::{CompileEnv, Diagnostics};

use crate::Ctx;

/// A chain script and what it may import.
pub struct ChainSource {
    pub file: PathBuf,
    /// Package directories (with an ebpkg.toml).
    pub packages: Vec<PathBuf>,
    /// Package signatures as JSON (a `hike_chainc::CompileEnv`).
    pub signatures: Option<PathBuf>,
}

/// The script's text and what compiling it gave.
pub struct CompiledScript {
    pub text: String,
    pub result: std::result::Result<hike_chainc::Compiled, Diagnostics>,
}

/// Compiles one chain script (with the environment `source` gives it); errors in the
/// script are in `result`, the error returned is about reading what it needs.
pub fn compile(ctx: &Ctx, source: &ChainSource) -> Result<CompiledScript> {
    let text = crate::ops::chains::read_chain_source(&source.file)?;
    let mut env = environment(&source.packages, source.signatures.as_deref())?;
    if let Some(project) = project_of(ctx, &source.file)? {
        // The project's own view wins over nothing, never over what was given.
        for (name, sigs) in project_environment(ctx, &project)?.packages {
            env.packages.entry(name).or_insert(sigs);
        }
    }
    let name = source.file.display().to_string();
    let result = hike_chainc::compile(&text, &name, &env);
    Ok(CompiledScript { text, result })
}

/// Largest signatures file read.
const MAX_SIGNATURES_BYTES: u64 = 16 * 1024 * 1024;

/// The project the script belongs to: the nearest ebpkg.toml above it (or the
/// `--manifest-path` one).
fn project_of(ctx: &Ctx, file: &Path) -> Result<Option<crate::project::Project>> {
    if ctx.manifest_path.is_some() {
        return ctx.project().cloned().map(Some);
    }
    let abs = std::path::absolute(file).with_context(|| format!("cannot resolve {}", file.display()))?;
    match abs.ancestors().skip(1).map(|d| d.join(ebpkg_spec::manifest::MANIFEST_FILE)).find(|p| p.is_file()) {
        Some(manifest) => crate::project::Project::load(&manifest).map(Some),
        None => Ok(None),
    }
}

/// What the project's chain scripts may import, as `ebpkg install` sees it: the
/// locked packages (resolved and fetched as needed, ebpkg.lock kept up to date).
fn project_environment(ctx: &Ctx, project: &crate::project::Project) -> Result<CompileEnv> {
    let m = &project.manifest;
    if m.dependencies.is_empty() {
        return crate::ops::chains::environment(m, &[]);
    }
    let regs = ctx.registries()?;
    let locked = crate::ops::resolve::lock_project(ctx, project, &regs, ebpkg_resolver::UpdatePolicy::Nothing)?;
    let fetched = crate::ops::fetch::fetch_all(ctx, &regs, &locked.lock)?;
    let resolved: Vec<&Manifest> = fetched.iter().map(|f| &f.manifest).collect();
    crate::ops::chains::environment(m, &resolved)
}

/// The packages the script may use: from package directories and/or a JSON file.
fn environment(packages: &[PathBuf], signatures: Option<&Path>) -> Result<CompileEnv> {
    let mut env = match signatures {
        Some(path) => {
            let text = ebpkg_fs::read_text(path, MAX_SIGNATURES_BYTES)
                .map_err(|e| crate::exit::fail(crate::exit::Failure::Input, e))?;
            serde_json::from_str(&text).with_context(|| format!("{} is not a signatures file", path.display()))?
        }
        None => CompileEnv::new(),
    };
    let mut manifests = Vec::new();
    for dir in packages {
        let path = dir.join(ebpkg_spec::manifest::MANIFEST_FILE);
        let m = Manifest::load(&path).map_err(|e| anyhow::anyhow!("{}", e.render().trim_end()))?;
        manifests.push(m);
    }
    let from_manifests = ebpkg_deploy::signatures::env_from_manifests(&manifests)?;
    env.packages.extend(from_manifests.packages);
    Ok(env)
}
