//! What chain scripts may call, derived from package manifests: each package's
//! programs and loaders, and the programs it re-exports from its dependencies.

use std::collections::BTreeMap;

use ebpkg_spec::Manifest;
use ebpkg_spec::types::{EndsPacket as SpecEnds, FieldType as SpecField, Hook as SpecHook, IntType as SpecInt};
use hike_bytecode::Hook;
use hike_chainc::{CompileEnv, EndsPacket, FieldType, IntType, LoaderSig, MapLayout, PackageExports, ProgramSig};

pub fn hook(h: SpecHook) -> Hook {
    match h {
        SpecHook::Xdp => Hook::Xdp,
        SpecHook::Tc => Hook::Tc,
    }
}

pub fn int_type(t: SpecInt) -> IntType {
    match t {
        SpecInt::U8 => IntType::U8,
        SpecInt::U16 => IntType::U16,
        SpecInt::U32 => IntType::U32,
        SpecInt::U64 => IntType::U64,
        SpecInt::S8 => IntType::S8,
        SpecInt::S16 => IntType::S16,
        SpecInt::S32 => IntType::S32,
        SpecInt::S64 => IntType::S64,
    }
}

fn field_type(t: SpecField) -> FieldType {
    match t {
        SpecField::Chain => FieldType::Chain,
        SpecField::Ipv4 => FieldType::Ipv4,
        SpecField::Ipv6 => FieldType::Ipv6,
        SpecField::Mac => FieldType::Mac,
        SpecField::Ipv4Prefix => FieldType::Ipv4Prefix,
        SpecField::Ipv6Prefix => FieldType::Ipv6Prefix,
        other => FieldType::Int(other.int().map_or(IntType::U64, int_type)),
    }
}

fn ends(e: SpecEnds) -> EndsPacket {
    match e {
        SpecEnds::Never => EndsPacket::Never,
        SpecEnds::May => EndsPacket::May,
        SpecEnds::Always => EndsPacket::Always,
    }
}

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
                    hook: hook(p.hook),
                    args: p.args.iter().map(|a| (a.name.to_string(), int_type(a.ty))).collect(),
                    ret: p.returns.as_ref().map(|r| int_type(r.ty)),
                    ends_packet: ends(p.ends_packet),
                },
            );
        }
        for l in &m.loaders {
            let maps: BTreeMap<String, MapLayout> = l
                .maps
                .iter()
                .map(|cm| {
                    let fields = |f: &[ebpkg_spec::manifest::Field]| {
                        f.iter().map(|f| (f.name.to_string(), field_type(f.ty))).collect()
                    };
                    (cm.name.to_string(), MapLayout { key: fields(&cm.key), value: fields(&cm.value) })
                })
                .collect();
            exports.loaders.insert(
                l.name.to_string(),
                LoaderSig { package: m.package.name.to_string(), hook: hook(l.hook), maps },
            );
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
