//! The maps of registered package versions (`progs/<package>@<version>/maps/`),
//! for tests and tools: write an entry before a run, read what a run changed, or
//! clear everything between test cases. Per-CPU maps are written on every CPU and
//! read on one (the CPU a test run used).

use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use std::collections::BTreeMap;

use crate::error::{IoContext, KernelContext, Result, RuntimeError};
use crate::map_shape::{MapShape, pinned_map_shape};
use crate::runtime::Runtime;

/// A map entry: the key, and the value of each CPU (one value for maps that are
/// not per-CPU).
pub type Entry = (Vec<u8>, Vec<Vec<u8>>);

/// Entries of a map without those a filter hid ([`PackageMap::entries_except`]).
#[derive(Debug, Default)]
pub struct FilteredEntries {
    pub entries: Vec<Entry>,
    /// How many entries the filter hid.
    pub hidden: usize,
    /// Entries the filter kept were left out by the limit.
    pub more: bool,
}

/// One map of a package version.
#[derive(Debug)]
pub struct PackageMap {
    pub name: String,
    handle: MapHandle,
}

impl PackageMap {
    pub fn key_size(&self) -> usize {
        self.handle.key_size() as usize
    }

    pub fn value_size(&self) -> usize {
        self.handle.value_size() as usize
    }

    /// True for per-CPU maps.
    pub fn per_cpu(&self) -> bool {
        matches!(self.handle.map_type(), MapType::PercpuArray | MapType::PercpuHash | MapType::LruPercpuHash)
    }

    /// True for arrays (per-CPU or not): every slot exists, written or not.
    pub fn is_array(&self) -> bool {
        matches!(self.handle.map_type(), MapType::Array | MapType::PercpuArray)
    }

    fn check_sizes(&self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let bad = key.len() != self.key_size() || value.is_some_and(|v| v.len() != self.value_size());
        if bad {
            return Err(RuntimeError::BadObject {
                name: self.name.clone(),
                reason: format!(
                    "map `{}` takes {}-byte keys and {}-byte values, not {} and {}",
                    self.name,
                    self.key_size(),
                    self.value_size(),
                    key.len(),
                    value.map_or(0, <[u8]>::len)
                ),
            });
        }
        Ok(())
    }

    /// Writes `value` under `key` (on every CPU for per-CPU maps).
    pub fn write(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_sizes(key, Some(value))?;
        if self.per_cpu() {
            let n = libbpf_rs::num_possible_cpus()
                .map_err(|e| RuntimeError::Kernel { what: "count the possible CPUs".into(), cause: e })?;
            let values = vec![value.to_vec(); n];
            self.handle.update_percpu(key, &values, MapFlags::ANY)
        } else {
            self.handle.update(key, value, MapFlags::ANY)
        }
        .kernel(|| format!("write map `{}`", self.name))
    }

    /// The value under `key` (the one of `cpu` for per-CPU maps).
    pub fn read(&self, key: &[u8], cpu: usize) -> Result<Option<Vec<u8>>> {
        self.check_sizes(key, None)?;
        if self.per_cpu() {
            let all = self.handle.lookup_percpu(key, MapFlags::ANY).kernel(|| format!("read map `{}`", self.name))?;
            Ok(all.and_then(|v| v.into_iter().nth(cpu)))
        } else {
            self.handle.lookup(key, MapFlags::ANY).kernel(|| format!("read map `{}`", self.name))
        }
    }

    /// How many entries the map holds (keys present; an array has all its slots).
    pub fn count(&self) -> usize {
        self.handle.keys().count()
    }

    /// Up to `limit` entries, each with its value per CPU (one value for maps that
    /// are not per-CPU), sorted by key: keys of up to 8 bytes as little-endian
    /// integers (ids, counters' slots), longer ones byte by byte (addresses are in
    /// network order), so listings are stable and read in order.
    pub fn entries(&self, limit: usize) -> Result<Vec<Entry>> {
        let mut out = Vec::new();
        for k in self.sorted_keys().into_iter().take(limit) {
            if let Some(values) = self.values(&k)? {
                out.push((k, values));
            }
        }
        Ok(out)
    }

    /// [`PackageMap::entries`] without those `hide` is true of (given the values, one
    /// per CPU): up to `limit` of the others, with how many were hidden and whether more
    /// were left out by `limit`. Every entry is read, to count the hidden ones, but
    /// only the shown ones are kept (an array can have a million slots).
    pub fn entries_except(&self, limit: usize, hide: impl Fn(&[Vec<u8>]) -> bool) -> Result<FilteredEntries> {
        let mut out = FilteredEntries::default();
        for k in self.sorted_keys() {
            let Some(values) = self.values(&k)? else { continue };
            if hide(&values) {
                out.hidden += 1;
            } else if out.entries.len() < limit {
                out.entries.push((k, values));
            } else {
                out.more = true;
            }
        }
        Ok(out)
    }

    /// The map's keys in [`PackageMap::entries`]' order.
    fn sorted_keys(&self) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = self.handle.keys().collect();
        keys.sort_by_cached_key(|k| key_order(k));
        keys
    }

    /// The value under `k`, one per CPU for per-CPU maps; `None` once removed.
    fn values(&self, k: &[u8]) -> Result<Option<Vec<Vec<u8>>>> {
        Ok(if self.per_cpu() {
            self.handle.lookup_percpu(k, MapFlags::ANY).kernel(|| format!("read map `{}`", self.name))?
        } else {
            self.handle.lookup(k, MapFlags::ANY).kernel(|| format!("read map `{}`", self.name))?.map(|v| vec![v])
        })
    }

    /// Writes every entry of this map into `dest` (for each CPU of per-CPU maps),
    /// each value zero-extended to `dest`'s value size: what moves entries into a
    /// new version whose value gained fields at its end. Returns how many.
    pub fn copy_into(&self, dest: &PackageMap) -> Result<usize> {
        if self.key_size() != dest.key_size()
            || self.value_size() > dest.value_size()
            || self.per_cpu() != dest.per_cpu()
        {
            return Err(RuntimeError::BadObject {
                name: dest.name.clone(),
                reason: format!(
                    "map `{}` ({}-byte keys, {}-byte values) cannot take the entries of `{}` ({}-byte keys, {}-byte values)",
                    dest.name,
                    dest.key_size(),
                    dest.value_size(),
                    self.name,
                    self.key_size(),
                    self.value_size()
                ),
            });
        }
        let widen = |mut v: Vec<u8>| {
            v.resize(dest.value_size(), 0);
            v
        };
        let keys: Vec<Vec<u8>> = self.handle.keys().collect();
        let mut copied = 0;
        for k in keys {
            if self.per_cpu() {
                let Some(values) =
                    self.handle.lookup_percpu(&k, MapFlags::ANY).kernel(|| format!("read map `{}`", self.name))?
                else {
                    continue;
                };
                let values: Vec<Vec<u8>> = values.into_iter().map(widen).collect();
                dest.handle.update_percpu(&k, &values, MapFlags::ANY)
            } else {
                let Some(value) =
                    self.handle.lookup(&k, MapFlags::ANY).kernel(|| format!("read map `{}`", self.name))?
                else {
                    continue;
                };
                dest.handle.update(&k, &widen(value), MapFlags::ANY)
            }
            .kernel(|| format!("write map `{}`", dest.name))?;
            copied += 1;
        }
        Ok(copied)
    }

    /// Removes every entry (arrays, whose entries cannot be removed, are zeroed).
    pub fn clear(&self) -> Result<()> {
        let keys: Vec<Vec<u8>> = self.handle.keys().collect();
        let zero = vec![0u8; self.value_size()];
        for k in keys {
            match self.handle.map_type() {
                MapType::Array | MapType::PercpuArray => self.write(&k, &zero)?,
                _ => {
                    let _ = self.handle.delete(&k);
                }
            }
        }
        Ok(())
    }
}

impl Runtime {
    /// Names of the maps of a registered package version.
    pub fn package_maps(&self, package: &str, version: &str) -> Result<Vec<String>> {
        let dir = self.layout.package_dir(package, version)?.join("maps");
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e).io("cannot list", &dir),
        };
        let mut names: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        Ok(names)
    }

    /// One map of a registered package version.
    pub fn package_map(&self, package: &str, version: &str, map: &str) -> Result<PackageMap> {
        let path = self.layout.package_dir(package, version)?.join("maps").join(crate::layout::component(map)?);
        if !path.exists() {
            let known = self.package_maps(package, version)?;
            return Err(RuntimeError::NotFound(format!(
                "map `{map}` of {package}@{version} (its maps: {})",
                if known.is_empty() { "none".to_owned() } else { known.join(", ") }
            )));
        }
        let handle = MapHandle::from_pinned_path(&path).kernel(|| format!("open {}", path.display()))?;
        Ok(PackageMap { name: map.to_owned(), handle })
    }

    /// The shapes of the maps a registered package version has pinned, by name.
    pub fn package_map_shapes(&self, package: &str, version: &str) -> Result<BTreeMap<String, MapShape>> {
        let dir = self.layout.package_dir(package, version)?.join("maps");
        let mut out = BTreeMap::new();
        for name in self.package_maps(package, version)? {
            let shape = pinned_map_shape(&dir.join(crate::layout::component(&name)?))?;
            out.insert(name, shape);
        }
        Ok(out)
    }

    /// Clears every map of a package version (between test cases).
    pub fn clear_package_maps(&self, package: &str, version: &str) -> Result<()> {
        for name in self.package_maps(package, version)? {
            self.package_map(package, version, &name)?.clear()?;
        }
        Ok(())
    }
}

fn key_order(k: &[u8]) -> (u64, Vec<u8>) {
    if k.len() <= 8 {
        let mut b = [0u8; 8];
        b[..k.len()].copy_from_slice(k);
        (u64::from_le_bytes(b), Vec::new())
    } else {
        (0, k.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::key_order;

    #[test]
    fn short_keys_sort_as_integers_long_ones_as_bytes() {
        let mut keys: Vec<Vec<u8>> = vec![vec![0, 1, 0, 0], vec![2, 0, 0, 0], vec![1, 0, 0, 0]];
        keys.sort_by_cached_key(|k| key_order(k));
        assert_eq!(keys, [vec![1, 0, 0, 0], vec![2, 0, 0, 0], vec![0, 1, 0, 0]]);
        let mut addrs: Vec<Vec<u8>> = vec![vec![0x20, 2, 0, 0, 0, 0, 0, 0, 0], vec![0x20, 1, 0xff, 0, 0, 0, 0, 0, 0]];
        addrs.sort_by_cached_key(|k| key_order(k));
        assert_eq!(addrs[0][1], 1);
    }
}
