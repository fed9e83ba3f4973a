//! Moving a running loader to other chains without loading it again: the chain
//! ids in its configuration map are rewritten in place, each with one atomic
//! 4-byte store through a shared mapping of the map, so a packet reads an entry's
//! old chain or its new one, never a mix of their bytes (a map update copies the
//! value with `memcpy`, which promises no such thing). Only arrays created
//! mmapable (every configuration array a loader instance gets since this was
//! written) can be flipped, and only when nothing but chain fields change.

use std::sync::atomic::{AtomicU32, Ordering};

use libbpf_rs::{MapCore, MapHandle, MapType};

use crate::abi;
use crate::error::{KernelContext, Result, RuntimeError};
use crate::loaders::{ConfigMapSpec, MapEntry};
use crate::runtime::Runtime;

/// Why a configuration map cannot move to `entries` in place, or `None` when it can.
fn refusal(handle: &MapHandle, spec: &ConfigMapSpec, running: &[MapEntry], entries: &[MapEntry]) -> Option<String> {
    if handle.map_type() != MapType::Array {
        return Some("it is not an array".into());
    }
    let info = match handle.info() {
        Ok(info) => info,
        Err(e) => return Some(format!("its flags cannot be read: {e}")),
    };
    if info.info.map_flags & crate::load::MMAPABLE == 0 {
        return Some("it was created before loaders' arrays were mmapable".into());
    }
    if spec.chain_offsets.iter().any(|o| !o.is_multiple_of(4)) {
        return Some("a chain field is not 4-byte aligned".into());
    }
    let keys = |e: &[MapEntry]| e.iter().map(|e| e.key.clone()).collect::<Vec<_>>();
    if keys(running) != keys(entries) {
        return Some("its keys change".into());
    }
    for (old, new) in running.iter().zip(entries) {
        if old.value.len() != new.value.len() {
            return Some("its value size changes".into());
        }
        let mut masked = (old.value.clone(), new.value.clone());
        for off in &spec.chain_offsets {
            let at = *off as usize..*off as usize + 4;
            if at.end > old.value.len() {
                return Some("a chain field lies outside the value".into());
            }
            masked.0[at.clone()].fill(0);
            masked.1[at].fill(0);
        }
        if masked.0 != masked.1 {
            return Some("values change outside their chain fields".into());
        }
    }
    None
}

impl Runtime {
    /// Why `instance`'s map `map` cannot move from what it holds to `entries` by
    /// rewriting chain ids in place (see the module's comment), or `None`.
    pub fn flip_refusal(&self, instance: &str, map: &str, entries: &[MapEntry]) -> Result<Option<String>> {
        let (handle, spec, _) = self.config_map(instance, map)?;
        let running = self.loader_config(instance, map)?;
        let mut sorted = entries.to_vec();
        sorted.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(refusal(&handle, &spec, &running, &sorted))
    }

    /// Moves `instance`'s map `map` to `entries`, which differ from what it holds
    /// only in chain ids, one atomic store per changed chain field. The new chains
    /// are checked as [`Runtime::configure_loader`] checks them.
    pub fn flip_loader_chains(&self, instance: &str, map: &str, entries: &[MapEntry]) -> Result<()> {
        let _lock = self.lock()?;
        let (handle, spec, meta) = self.config_map(instance, map)?;
        let running = self.loader_config(instance, map)?;
        let mut sorted = entries.to_vec();
        sorted.sort_by(|a, b| a.key.cmp(&b.key));
        let refuse = |reason: String| RuntimeError::Loader {
            loader: instance.to_owned(),
            reason: format!("map `{map}` cannot be rewritten in place: {reason}"),
        };
        if let Some(reason) = refusal(&handle, &spec, &running, &sorted) {
            return Err(refuse(reason));
        }
        self.check_entries(instance, &meta, &spec, &handle, &sorted)?;
        let elem = (handle.value_size() as usize).next_multiple_of(8);
        let len = elem * handle.info().kernel(|| format!("read map `{map}` of {instance}"))?.info.max_entries as usize;
        let mapping = Mapping::new(&handle, len).kernel(|| format!("map `{map}` of {instance} into memory"))?;
        for e in &sorted {
            let index = abi::u32_at(&e.key, 0) as usize;
            for off in &spec.chain_offsets {
                let at = index * elem + *off as usize;
                if at + 4 > len {
                    return Err(refuse(format!("entry {index} lies outside the map")));
                }
                mapping.store_u32(at, abi::u32_at(&e.value, *off as usize));
                ebpkg_crashpoint::hit("loader-entry");
            }
        }
        Ok(())
    }

    /// A loader's configuration map, its spec and the loader's record.
    fn config_map(&self, instance: &str, map: &str) -> Result<(MapHandle, ConfigMapSpec, crate::loaders::LoaderMeta)> {
        let (dir, _, meta) = self.loader_meta(instance)?;
        let spec = meta.maps.iter().find(|m| m.name == map).cloned().ok_or_else(|| RuntimeError::Loader {
            loader: instance.to_owned(),
            reason: format!("it has no configuration map `{map}`"),
        })?;
        let path = dir.join("maps").join(crate::layout::component(map)?);
        let handle = MapHandle::from_pinned_path(&path).kernel(|| format!("open {}", path.display()))?;
        Ok((handle, spec, meta))
    }
}

/// A shared, writable mapping of an mmapable array's values.
struct Mapping {
    ptr: std::ptr::NonNull<std::ffi::c_void>,
    len: usize,
}

impl Mapping {
    fn new(handle: &MapHandle, len: usize) -> std::result::Result<Mapping, libbpf_rs::Error> {
        use std::os::fd::AsFd;
        // SAFETY: a fresh mapping (no address hint) of a map the caller holds open;
        // the kernel checks `len` against the map's size.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
                handle.as_fd(),
                0,
            )
        }
        .map_err(|e| libbpf_rs::Error::from(std::io::Error::from(e)))?;
        let ptr = std::ptr::NonNull::new(ptr).ok_or_else(|| libbpf_rs::Error::from(std::io::Error::other("null")))?;
        Ok(Mapping { ptr, len })
    }

    /// One atomic 4-byte store at `at`, which the caller checked is in bounds and
    /// 4-byte aligned (values start 8-byte aligned, chain offsets are multiples of 4).
    fn store_u32(&self, at: usize, value: u32) {
        debug_assert!(at + 4 <= self.len && at.is_multiple_of(4));
        // SAFETY: in bounds and aligned (above); the mapping lives while `self`
        // does, and the kernel's readers of the word are eBPF loads, which an
        // aligned 4-byte store cannot tear.
        let word = unsafe { &*(self.ptr.as_ptr().cast::<u8>().add(at).cast::<AtomicU32>()) };
        word.store(value, Ordering::Release);
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr(), self.len) };
    }
}
