//! Compiling a package's chain scripts against the packages it depends on.

use std::path::Path;

use anyhow::{Context, Result};
use ebpkg_deploy::PlannedScript;
use ebpkg_spec::Manifest;

use crate::Ctx;
use crate::exit::{Failure, fail};

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
    let mut all: Vec<Manifest> = resolved.iter().map(|m| (*m).clone()).collect();
    if !all.iter().any(|m| m.package.name == package.package.name) {
        all.push(package.clone());
    }
    let mut env = ebpkg_deploy::signatures::env_from_manifests(&all).map_err(|e| fail(Failure::Input, e))?;
    // Like cargo, a script sees its package's direct dependencies, not theirs.
    let visible: Vec<String> = std::iter::once(package.package.name.normalized())
        .chain(package.dependencies.keys().map(|n| n.normalized()))
        .collect();
    env.packages.retain(|k, _| visible.contains(k));

    let mut out = Vec::new();
    let mut failed = Vec::new();
    for chain in &package.chains {
        let path = root.join(chain.source.as_str());
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        match hike_chainc::compile(&text, chain.source.as_str(), &env) {
            Ok(c) => {
                if !c.warnings.items.is_empty() && !ctx.ui.quiet {
                    eprint!("{}", c.warnings.render());
                }
                out.push(PlannedScript { file: chain.source.to_string(), source: text, artifact: c.artifact });
            }
            Err(d) => {
                eprint!("{}", d.render());
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
