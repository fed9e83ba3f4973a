//! What an install does with the maps of a package whose other version runs in
//! the deployment it replaces (an upgrade, a downgrade, a rollback): each map of
//! the new version is matched by name with the running one's, and is kept (the
//! new programs use the running map itself, so counters continue through the
//! switch), extended (copied into the new map, fields added at the end of the
//! value zeroed), or started fresh — as the manifest's `on-upgrade` says and the
//! two maps' shapes (kind, sizes, flags, BTF layouts) allow.

use std::collections::BTreeMap;

use ebpkg_spec::manifest::OnUpgrade;

use hike_runtime::map_shape::{MapShape, object_map_shapes};
use hike_runtime::{Runtime, SharedMaps};

use crate::error::{DeployError, LayoutRefusal, Result};
use crate::plan::PlannedPackage;
use crate::record::{DeploymentRecord, Fate, MapState};

/// For one package of the plan: the maps its registration takes from the
/// running version, what becomes of every map both versions have, and which to
/// copy once the new version is registered.
#[derive(Debug, Default)]
pub(crate) struct Carry {
    pub shared: SharedMaps,
    pub states: Vec<MapState>,
}

/// Decides the fate of `pkg`'s maps against the version `previous` runs. Nothing
/// to decide when `previous` has no other version of the package, or when the new
/// version is already registered (its maps exist: another deployment runs it).
pub(crate) fn carry(
    rt: &Runtime,
    pkg: &PlannedPackage,
    elfs: &[(&str, &[u8])],
    previous: Option<&DeploymentRecord>,
    reset_state: bool,
) -> Result<Carry> {
    let mut running = previous.into_iter().flat_map(|r| &r.packages).filter(|p| p.name == pkg.id.name);
    let (Some(old), None) = (running.next(), running.next()) else { return Ok(Carry::default()) };
    if old.version == pkg.id.version || pkg_registered(rt, pkg)? {
        return Ok(Carry::default());
    }
    let from = old.version.to_string();
    let running: BTreeMap<String, MapShape> = rt
        .package_map_shapes(pkg.name(), &from)
        .map_err(DeployError::runtime(format!("cannot read the maps of {}@{from}", pkg.id.name)))?;
    let mut wanted: BTreeMap<String, MapShape> = BTreeMap::new();
    for (name, elf) in elfs {
        let shapes = object_map_shapes(name, elf)
            .map_err(|cause| DeployError::Package { package: pkg.id.clone(), reason: cause.to_string() })?;
        wanted.extend(shapes);
    }
    let mut out = Carry { shared: SharedMaps { from: Some(from), maps: Vec::new() }, states: Vec::new() };
    for (map, new) in &wanted {
        let Some(old_shape) = running.get(map) else { continue };
        let on_upgrade = on_upgrade(pkg, map);
        let state = |fate, reason: Option<String>| MapState {
            package: pkg.id.name.clone(),
            from: old.version.clone(),
            to: pkg.id.version.clone(),
            map: map.clone(),
            fate,
            reason,
        };
        if on_upgrade == OnUpgrade::Fresh {
            out.states.push(state(Fate::Fresh, None));
            continue;
        }
        match difference(old_shape, new) {
            None => {
                out.shared.maps.push(map.clone());
                out.states.push(state(Fate::Kept, None));
            }
            Some(_) if on_upgrade == OnUpgrade::Extend && extends(old_shape, new) => {
                out.states.push(state(Fate::Extended, None));
            }
            Some(reason) if reset_state => out.states.push(state(Fate::Reset, Some(reason))),
            Some(reason) => {
                return Err(DeployError::MapLayout(Box::new(LayoutRefusal {
                    package: pkg.id.clone(),
                    from: old.version.clone(),
                    map: map.clone(),
                    reason,
                    extend_would_do: on_upgrade == OnUpgrade::Keep && extends(old_shape, new),
                })));
            }
        }
    }
    Ok(out)
}

/// Copies the maps `carry` says are extended, once the new version's maps exist.
pub(crate) fn copy_extended(rt: &Runtime, states: &[MapState]) -> Result<()> {
    for s in states.iter().filter(|s| s.fate == Fate::Extended) {
        let (from, to) = (s.from.to_string(), s.to.to_string());
        let what = || format!("cannot copy map `{}` of {}@{from} into {}", s.map, s.package, s.to);
        let source = rt.package_map(s.package.as_str(), &from, &s.map).map_err(DeployError::runtime(what()))?;
        let dest = rt.package_map(s.package.as_str(), &to, &s.map).map_err(DeployError::runtime(what()))?;
        source.copy_into(&dest).map_err(DeployError::runtime(what()))?;
    }
    Ok(())
}

fn on_upgrade(pkg: &PlannedPackage, map: &str) -> OnUpgrade {
    pkg.manifest
        .programs
        .iter()
        .flat_map(|p| &p.maps)
        .find(|m| m.name.as_str() == map)
        .map_or(OnUpgrade::Keep, |m| m.on_upgrade)
}

fn pkg_registered(rt: &Runtime, pkg: &PlannedPackage) -> Result<bool> {
    Ok(!rt
        .package_maps(pkg.name(), &pkg.version())
        .map_err(DeployError::runtime(format!("cannot read the maps of {}", pkg.id)))?
        .is_empty())
}

/// How `new` differs from `old`, said for a person; `None` when the new programs
/// can use the running map as it is.
fn difference(old: &MapShape, new: &MapShape) -> Option<String> {
    let sized = |what: &str, a: u32, b: u32| (a != b).then(|| format!("{what} {a} → {b}"));
    let mut out: Vec<String> = [
        sized("map type", old.map_type, new.map_type),
        sized("key size", old.key_size, new.key_size),
        sized("value size", old.value_size, new.value_size),
        sized("max entries", old.max_entries, new.max_entries),
        sized("flags", old.flags, new.flags),
    ]
    .into_iter()
    .flatten()
    .collect();
    // A side without BTF (declared by sizes) is judged by its sizes alone.
    for (what, a, b) in [("key", &old.key, &new.key), ("value", &old.value, &new.value)] {
        if let (Some(a), Some(b)) = (a, b)
            && a != b
        {
            out.push(format!("{what} {a} → {b}"));
        }
    }
    (!out.is_empty()).then(|| out.join("; "))
}

/// `new` differs from `old` only by a value struct that gained fields at its end.
fn extends(old: &MapShape, new: &MapShape) -> bool {
    let same_but_value = old.map_type == new.map_type
        && old.key_size == new.key_size
        && old.max_entries == new.max_entries
        && old.flags == new.flags
        && old.key == new.key;
    match (&old.value, &new.value) {
        (Some(a), Some(b)) => same_but_value && a.is_extended_by(b),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use hike_runtime::map_shape::{FieldLayout, TypeLayout};

    use super::*;

    fn field(name: &str, at: u32) -> FieldLayout {
        FieldLayout {
            name: name.into(),
            offset_bits: at * 8,
            bits: None,
            ty: TypeLayout::Int { bytes: 8, signed: false },
        }
    }

    fn shape(fields: &[(&str, u32)]) -> MapShape {
        let bytes = fields.len() as u32 * 8;
        MapShape {
            map_type: 1,
            key_size: 4,
            value_size: bytes,
            max_entries: 64,
            flags: 0,
            key: Some(TypeLayout::Int { bytes: 4, signed: false }),
            value: Some(TypeLayout::Struct { bytes, fields: fields.iter().map(|(n, at)| field(n, *at)).collect() }),
        }
    }

    #[test]
    fn the_same_shape_is_kept_and_a_changed_one_says_how() {
        let old = shape(&[("packets", 0), ("bytes", 8)]);
        assert_eq!(difference(&old, &old), None);
        let renamed = shape(&[("pkts", 0), ("bytes", 8)]);
        assert_eq!(
            difference(&old, &renamed).as_deref(),
            Some("value { packets: u64 @0, bytes: u64 @8 } → { pkts: u64 @0, bytes: u64 @8 }")
        );
        let mut bigger = old.clone();
        bigger.max_entries = 128;
        assert_eq!(difference(&old, &bigger).as_deref(), Some("max entries 64 → 128"));
        // Sizes alone when a side has no BTF types.
        let mut sized = renamed.clone();
        sized.value = None;
        assert_eq!(difference(&old, &sized), None);
    }

    #[test]
    fn fields_added_at_the_end_extend_and_nothing_else_does() {
        let old = shape(&[("packets", 0), ("bytes", 8)]);
        assert!(extends(&old, &shape(&[("packets", 0), ("bytes", 8), ("drops", 16)])));
        assert!(!extends(&old, &shape(&[("drops", 0), ("packets", 8), ("bytes", 16)])));
        assert!(!extends(&old, &shape(&[("packets", 0)])));
        assert!(!extends(&old, &old));
        let mut other_key = shape(&[("packets", 0), ("bytes", 8), ("drops", 16)]);
        other_key.key = Some(TypeLayout::Int { bytes: 4, signed: true });
        assert!(!extends(&old, &other_key));
    }
}
