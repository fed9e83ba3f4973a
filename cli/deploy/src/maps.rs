//! The contents of a deployment's program maps, decoded with the layouts their
//! manifests document (`ebpkg status --maps`): integers in host order, addresses
//! written as people write them, per-CPU values summed.

use std::net::{Ipv4Addr, Ipv6Addr};

use ebpkg_spec::types::FieldType;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::deployer::{Deployer, open_existing};
use crate::error::Result;
use crate::record::{DeploymentRecord, RecordedMap, RecordedPackage};

/// One map's entries.
#[derive(Debug, Clone, Serialize)]
pub struct MapDump {
    pub package: ebpkg_spec::PackageName,
    pub version: semver::Version,
    pub map: String,
    pub entries: Vec<MapEntryView>,
    /// More entries exist than were read.
    pub truncated: bool,
    /// How many entries the map holds.
    pub total: usize,
    /// Entries of an array left out because their value is zero on every CPU
    /// (slots never written, most of a sparse array); none with
    /// [`MapView::zero_entries`].
    pub zero_entries_hidden: usize,
    /// Why the map could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Which maps of a deployment, and which of their entries, `status --maps` shows.
#[derive(Debug, Clone)]
pub struct MapView {
    /// At most this many entries per map (of those shown).
    pub limit: usize,
    /// Only the maps of this name (in any package).
    pub only: Option<String>,
    /// Also the entries of arrays whose value is zero on every CPU.
    pub zero_entries: bool,
}

/// One entry, field by field.
#[derive(Debug, Clone, Serialize)]
pub struct MapEntryView {
    pub key: Map<String, Value>,
    pub value: Map<String, Value>,
}

fn field_type(s: &str) -> Option<FieldType> {
    FieldType::ALL.into_iter().find(|t| t.name() == s)
}

fn int(bytes: &[u8], ty: FieldType) -> i128 {
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    let u = u64::from_le_bytes(b);
    match ty {
        FieldType::S8 => i128::from(u as u8 as i8),
        FieldType::S16 => i128::from(u as u16 as i16),
        FieldType::S32 => i128::from(u as u32 as i32),
        FieldType::S64 => i128::from(u as i64),
        _ => i128::from(u),
    }
}

fn text(bytes: &[u8], ty: FieldType) -> Value {
    let v = |s: String| Value::String(s);
    match ty {
        FieldType::Ipv4 => v(Ipv4Addr::from(<[u8; 4]>::try_from(bytes).unwrap_or_default()).to_string()),
        FieldType::Ipv6 => v(Ipv6Addr::from(<[u8; 16]>::try_from(bytes).unwrap_or_default()).to_string()),
        FieldType::Mac => v(bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")),
        FieldType::Ipv4Prefix if bytes.len() == 8 => {
            let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            v(format!("{}/{len}", Ipv4Addr::new(bytes[4], bytes[5], bytes[6], bytes[7])))
        }
        FieldType::Ipv6Prefix if bytes.len() == 20 => {
            let len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            let a: [u8; 16] = bytes[4..20].try_into().unwrap_or_default();
            v(format!("{}/{len}", Ipv6Addr::from(a)))
        }
        _ => Value::from(int(bytes, ty) as i64),
    }
}

/// Decodes `values` (one per CPU, or one) with `fields`; integer fields are
/// summed over the CPUs. None when the sizes do not match the layout.
fn decode(fields: &[(String, String)], values: &[Vec<u8>]) -> Option<Map<String, Value>> {
    let first = values.first()?;
    let mut out = Map::new();
    let mut at = 0;
    for (name, ty) in fields {
        let ty = field_type(ty)?;
        let end = at + ty.size();
        let bytes = first.get(at..end)?;
        let value = if ty.int().is_some() {
            let sum: i128 = values.iter().filter_map(|v| v.get(at..end)).map(|b| int(b, ty)).sum();
            serde_json::Number::from_i128(sum).map_or(Value::Null, Value::Number)
        } else {
            text(bytes, ty)
        };
        out.insert(name.clone(), value);
        at = end;
    }
    (at == first.len()).then_some(out)
}

impl Deployer {
    /// The documented program maps of a deployment, as `view` asks.
    pub fn map_dumps(&self, record: &DeploymentRecord, view: &MapView) -> Result<Vec<MapDump>> {
        let Some(rt) = open_existing(&record.bpffs_root)? else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        for p in &record.packages {
            for m in p.maps.iter().filter(|m| view.only.as_ref().is_none_or(|only| *only == m.name)) {
                out.push(dump(&rt, p, m, view));
            }
        }
        Ok(out)
    }
}

/// Whether every CPU's value is all zero bytes.
fn is_zero(values: &[Vec<u8>]) -> bool {
    values.iter().all(|v| v.iter().all(|b| *b == 0))
}

fn dump(rt: &hike_runtime::Runtime, p: &RecordedPackage, m: &RecordedMap, view: &MapView) -> MapDump {
    let limit = view.limit;
    let (package, version) = (p.name.as_str(), &p.version.to_string());
    let mut d = MapDump {
        package: p.name.clone(),
        version: p.version.clone(),
        map: m.name.clone(),
        entries: Vec::new(),
        truncated: false,
        total: 0,
        zero_entries_hidden: 0,
        error: None,
    };
    let entries = rt.package_map(package, version, &m.name).and_then(|map| {
        d.total = map.count();
        // An array has every slot whether written or not: its zero ones are noise, unless
        // asked for. A hash map's entry was put there, zero or not.
        if !view.zero_entries && map.is_array() {
            return map.entries_except(limit, is_zero);
        }
        let mut entries = map.entries(limit + 1)?;
        let more = entries.len() > limit;
        entries.truncate(limit);
        Ok(hike_runtime::FilteredEntries { entries, hidden: 0, more })
    });
    match entries {
        Ok(shown) => {
            d.truncated = shown.more;
            d.zero_entries_hidden = shown.hidden;
            for (k, values) in shown.entries {
                match (decode(&m.key, std::slice::from_ref(&k)), decode(&m.value, &values)) {
                    (Some(key), Some(value)) => d.entries.push(MapEntryView { key, value }),
                    _ => {
                        d.error = Some("its entries do not match the layout in ebpkg.toml".into());
                        break;
                    }
                }
            }
        }
        Err(e) => d.error = Some(e.to_string()),
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fields: &[(&str, &str)]) -> Vec<(String, String)> {
        fields.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn decodes_and_sums_per_cpu_values() {
        let layout = f(&[("packets", "u64"), ("delta", "s16")]);
        let cpu = |p: u64, d: i16| [p.to_le_bytes().to_vec(), d.to_le_bytes().to_vec()].concat();
        let m = decode(&layout, &[cpu(3, -2), cpu(4, -5)]).unwrap();
        assert_eq!((m["packets"].as_i64(), m["delta"].as_i64()), (Some(7), Some(-7)));
        assert!(decode(&layout, &[vec![0; 9]]).is_none(), "size mismatch");
    }

    #[test]
    fn writes_addresses_as_people_do() {
        let layout = f(&[("src", "ipv6"), ("p", "ipv4-prefix"), ("mac", "mac")]);
        let mut b = "2001:db8::1".parse::<Ipv6Addr>().unwrap().octets().to_vec();
        b.extend(24u32.to_le_bytes());
        b.extend([192, 0, 2, 0]);
        b.extend([2, 0, 0, 0, 0, 1]);
        let m = decode(&layout, &[b]).unwrap();
        assert_eq!(m["src"], "2001:db8::1");
        assert_eq!(m["p"], "192.0.2.0/24");
        assert_eq!(m["mac"], "02:00:00:00:00:01");
    }
}
