//! Compiling a package's chain scripts against the packages it depends on.

use std::path::Path;

use anyhow::Result;
use ebpkg_deploy::PlannedScript;
use ebpkg_spec::Manifest;

use crate::Ctx;
use crate::exit::{Failure, fail};

/// What the chain scripts of `package` may import: the package itself and its
/// direct dependencies (like cargo, not theirs), with `resolved` holding the
/// manifests of every resolved package (re-exports may reach further).
pub fn environment(package: &Manifest, resolved: &[&Manifest]) -> Result<hike_chainc::CompileEnv> {
    let mut all: Vec<Manifest> = resolved.iter().map(|m| (*m).clone()).collect();
    if !all.iter().any(|m| m.package.name == package.package.name) {
        all.push(package.clone());
    }
    let mut env = ebpkg_deploy::signatures::env_from_manifests(&all)?;
    let visible: Vec<String> = std::iter::once(package.package.name.normalized())
        .chain(package.dependencies.keys().map(|n| n.normalized()))
        .collect();
    env.packages.retain(|k, _| visible.contains(k));
    Ok(env)
}

/// Compiles every `[[chain]]` of `package` (whose files are in `root`). Scripts may
/// import from the package itself and its direct dependencies; `resolved` holds
/// the manifests of every resolved package (re-exports may reach further).
pub fn compile_chains(
    ctx: &Ctx,
    package: &Manifest,
    root: &Path,
    resolved: &[&Manifest],
) -> Result<Vec<PlannedScript>> {
    if package.chains.is_empty() {
        return Ok(Vec::new());
    }
    let env = environment(package, resolved)?;

    let mut out = Vec::new();
    let mut failed = Vec::new();
    for chain in &package.chains {
        let path = root.join(chain.source.as_str());
        let text = read_chain_source(&path)?;
        match hike_chainc::compile(&text, chain.source.as_str(), &env) {
            Ok(c) => {
                if !c.warnings.items.is_empty() && !ctx.ui.quiet {
                    crate::ui::stderr(&c.warnings.render());
                }
                out.push(PlannedScript { file: chain.source.to_string(), source: text, artifact: c.artifact });
            }
            Err(d) => {
                crate::ui::stderr(&d.render());
                failed.push(chain.source.to_string());
            }
        }
    }
    if !failed.is_empty() {
        return Err(fail(
            Failure::Input,
            format!(
                "chain script{} {} of {}@{} did not compile (see above)",
                if failed.len() == 1 { "" } else { "s" },
                failed.join(", "),
                package.package.name,
                package.package.version
            ),
        ));
    }
    Ok(out)
}

/// Largest chain script read. A chain compiles to at most 256 VM instructions;
/// a megabyte of script is far past anything that can fit.
pub const MAX_CHAIN_SOURCE_BYTES: u64 = 1024 * 1024;

/// A chain script's text, read by the rules for input files (regular file, capped).
pub fn read_chain_source(path: &std::path::Path) -> Result<String> {
    ebpkg_fs::read_text(path, MAX_CHAIN_SOURCE_BYTES).map_err(|e| crate::exit::fail(crate::exit::Failure::Input, e))
}
