//! The dependencies of a realistic project in the synthetic registry: 30
//! packages spread over it, each needing few others. In this registry a
//! package needs either a few dozen packages at most or thousands (its
//! dependencies reach back into one large web), so 30 evenly spaced packages
//! taken as they come would lock most of the registry, as the 10,000-package
//! project does; a project of 30 dependencies usually locks tens to hundreds.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};

use super::name;

/// Direct dependencies of the project.
pub const DEPENDENCIES: usize = 30;
/// Most packages one dependency may need, itself included (its newest 2.x).
pub const MOST_NEEDED: usize = 50;

/// `DEPENDENCIES` packages of the `n` in `registry`: for each of as many evenly
/// spaced places, the first package from there that needs at most
/// `MOST_NEEDED` packages.
pub fn dependencies(registry: &Path, n: usize) -> Result<Vec<String>> {
    let step = (n / DEPENDENCIES).max(1);
    let mut chosen = Vec::new();
    for k in 0..DEPENDENCIES {
        let found = (k * step..n).map(name).find_map(|p| match needs_few(registry, &p) {
            Ok(true) => Some(Ok(p)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        });
        chosen.push(found.with_context(|| format!("no package from {} needs at most {MOST_NEEDED}", name(k * step)))??);
    }
    Ok(chosen)
}

/// Whether `package` at 2.x needs at most `MOST_NEEDED` packages in all.
fn needs_few(registry: &Path, package: &str) -> Result<bool> {
    let mut seen = BTreeSet::from([package.to_owned()]);
    let mut todo = vec![package.to_owned()];
    while let Some(p) = todo.pop() {
        for dep in dependencies_of(registry, &p)? {
            if seen.insert(dep.clone()) {
                if seen.len() > MOST_NEEDED {
                    return Ok(false);
                }
                todo.push(dep);
            }
        }
    }
    Ok(true)
}

/// The dependencies of the newest 2.x version of `package` (the generator
/// gives every version of a package the same ones).
fn dependencies_of(registry: &Path, package: &str) -> Result<Vec<String>> {
    let path = registry.join("index").join(ebpkg_spec::index_path(package));
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let Some(line) = text.lines().rev().find(|l| l.contains("\"vers\":\"2.")) else {
        return Ok(Vec::new());
    };
    let entry: serde_json::Value =
        serde_json::from_str(line).with_context(|| format!("a line of {}", path.display()))?;
    let deps = entry.get("deps").and_then(|d| d.as_array()).map(Vec::as_slice).unwrap_or_default();
    Ok(deps.iter().filter_map(|d| d.get("name")?.as_str().map(str::to_owned)).collect())
}
