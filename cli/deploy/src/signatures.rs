//! What chain scripts may call, derived from package manifests: each package's
//! programs and loaders, and the programs it re-exports from its dependencies.

use std::collections::BTreeMap;

use ebpkg_spec::Manifest;
use hike_chainc::{CompileEnv, LoaderSig, MapLayout, PackageExports, ProgramSig};

/// A problem with the packages given: a re-export of something that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("{package} re-exports `{name}` from {from}, which {reason}")]
pub struct ReexportError {
    pub package: String,
    pub name: String,
    pub from: String,
    pub reason: String,
}

/// The compile environment offering every package of `manifests` to scripts.
pub fn env_from_manifests(manifests: &[Manifest]) -> Result<CompileEnv, ReexportError> {
    let mut env = CompileEnv::new();
    for m in manifests {
        let mut exports = PackageExports { name: m.package.name.to_string(), ..Default::default() };
        for p in &m.programs {
            exports.programs.insert(
                p.name.to_string(),
                ProgramSig {
                    package: m.package.name.to_string(),
                    hook: p.hook,
                    args: p.args.iter().map(|a| (a.name.to_string(), a.ty)).collect(),
                    ret: p.returns.as_ref().map(|r| r.ty),
                    ends_packet: p.ends_packet,
                },
            );
        }
        for l in &m.loaders {
            let maps: BTreeMap<String, MapLayout> = l
                .maps
                .iter()
                .map(|cm| {
                    let fields =
                        |f: &[ebpkg_spec::manifest::Field]| f.iter().map(|f| (f.name.to_string(), f.ty)).collect();
                    (cm.name.to_string(), MapLayout { key: fields(&cm.key), value: fields(&cm.value) })
                })
                .collect();
            exports
                .loaders
                .insert(l.name.to_string(), LoaderSig { package: m.package.name.to_string(), hook: l.hook, maps });
        }
        env.packages.insert(m.package.name.normalized(), exports);
    }
    // Re-exports point at the defining package's signature (chains of re-exports
    // resolve too, one level per pass).
    let mut changed = true;
    let mut passes = 0;
    while changed && passes <= manifests.len() {
        changed = false;
        passes += 1;
        for m in manifests {
            for (dep, names) in &m.reexports {
                for n in names {
                    let key = m.package.name.normalized();
                    if env.packages.get(&key).is_some_and(|e| e.programs.contains_key(n.as_str())) {
                        continue;
                    }
                    let Some(source) = env.packages.get(&dep.normalized()) else { continue };
                    if let Some(sig) = source.programs.get(n.as_str()).cloned()
                        && let Some(target) = env.packages.get_mut(&key)
                    {
                        target.programs.insert(n.to_string(), sig);
                        changed = true;
                    }
                }
            }
        }
    }
    for m in manifests {
        for (dep, names) in &m.reexports {
            for n in names {
                let ok =
                    env.packages.get(&m.package.name.normalized()).is_some_and(|e| e.programs.contains_key(n.as_str()));
                if !ok {
                    let reason = if env.packages.contains_key(&dep.normalized()) {
                        "it does not define".to_owned()
                    } else {
                        "is not among the packages given".to_owned()
                    };
                    return Err(ReexportError {
                        package: m.package.name.to_string(),
                        name: n.to_string(),
                        from: dep.to_string(),
                        reason,
                    });
                }
            }
        }
    }
    Ok(env)
}
