//! Who manages a root. A root holds the programs, chains and loaders of the
//! deployments one manager (an ebpkg state directory) records; a second manager
//! with its own records would remove what the first still uses. The owner is a
//! string in a pinned map beside the VM's (`vm/hike_owner`), so it lives and dies
//! with the root and cannot be steered by files elsewhere.

use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use crate::error::{KernelContext, Result, RuntimeError};
use crate::runtime::{Runtime, key};

const OWNER_SIZE: usize = 256;

impl Runtime {
    /// The root's owner, if one claimed it.
    pub fn owner(&self) -> Result<Option<String>> {
        let path = self.layout.vm_map("hike_owner");
        if !path.exists() {
            return Ok(None);
        }
        let map = MapHandle::from_pinned_path(&path).kernel(|| format!("open {}", path.display()))?;
        let v = map.lookup(&key(0), MapFlags::ANY).kernel(|| "read hike_owner".into())?.unwrap_or_default();
        let end = v.iter().position(|b| *b == 0).unwrap_or(v.len());
        Ok((end > 0).then(|| String::from_utf8_lossy(&v[..end]).into_owned()))
    }

    /// Makes `owner` the root's owner unless another one already is; returns the
    /// other owner then. Claiming twice is a no-op.
    pub fn claim(&self, owner: &str) -> Result<std::result::Result<(), String>> {
        if owner.is_empty() || owner.len() >= OWNER_SIZE || owner.contains('\0') {
            return Err(RuntimeError::BadName(owner.to_owned()));
        }
        let _lock = self.lock()?;
        match self.owner()? {
            Some(o) if o == owner => return Ok(Ok(())),
            Some(o) => return Ok(Err(o)),
            None => {}
        }
        let path = self.layout.vm_map("hike_owner");
        let mut value = vec![0u8; OWNER_SIZE];
        value[..owner.len()].copy_from_slice(owner.as_bytes());
        if path.exists() {
            let map = MapHandle::from_pinned_path(&path).kernel(|| format!("open {}", path.display()))?;
            map.update(&key(0), &value, MapFlags::ANY).kernel(|| "write hike_owner".into())?;
        } else {
            // Read-only to programs, which could otherwise rewrite the owner.
            let opts = crate::vm_access::read_only_create_opts();
            let mut map = MapHandle::create(MapType::Array, Some("hike_owner"), 4, OWNER_SIZE as u32, 1, &opts)
                .kernel(|| "create hike_owner".into())?;
            // Written before it is pinned: a pinned owner map is always complete.
            map.update(&key(0), &value, MapFlags::ANY).kernel(|| "write hike_owner".into())?;
            map.pin(&path).kernel(|| format!("pin {}", path.display()))?;
        }
        ebpkg_crashpoint::hit("claimed");
        Ok(Ok(()))
    }
}
