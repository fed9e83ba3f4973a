//! What package programs may do to the VM's maps. Every HIKe object gets the
//! VM's maps by name from `<root>/vm` (`hike/maps.h`), so every package's programs
//! could write them; the ones that decide what runs are created
//! `BPF_F_RDONLY_PROG`, so the verifier refuses a program that writes them, while
//! the runtime still writes them from user space (the flag binds programs only).
//!
//! - The chain table, the configuration, the clock, the test entry's chain, the
//!   runtime's records and the root's owner: read-only to programs
//!   ([`vm_maps::read_only_to_programs`], one table with the formats'). A package's object cannot add a map to `vm/`
//!   either (`load.rs`).
//! - The program arrays and native chain slots: a program can only tail-call
//!   through them (the kernel refuses a prog array to every map helper but
//!   `bpf_tail_call`).
//! - `hike_state`: writable. It is the VM state of the packet the CPU is running,
//!   which a program in the packet's chain already controls (it decides the
//!   packet's verdict), and its counters; a loader resets it for every packet.
//!
//! A root made before this kept its maps as they were: the kernel cannot change a
//! map's flags, and its programs hold the maps. It keeps working (objects load
//! with the flags the pinned maps have, whatever they declare), and
//! [`writable_vm_tables`] names what stays writable until it is made anew.

use std::os::fd::AsFd;

use hike_bytecode::vm_maps;
use std::path::Path;

use libbpf_rs::{MapHandle, MapInfo};

use crate::error::{KernelContext, Result};
use crate::layout::Layout;

/// `BPF_F_RDONLY_PROG`: programs may read the map but not write it.
pub(crate) const RDONLY_PROG: u32 = 1 << 7;

/// Options creating one of [`vm_maps::read_only_to_programs`] from user space
/// (`hike/maps.h`, `hike/time.h` and `bpf/hike_entry.bpf.c` declare the flag for
/// the maps an object creates).
pub(crate) fn read_only_create_opts() -> libbpf_rs::libbpf_sys::bpf_map_create_opts {
    libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
        map_flags: RDONLY_PROG,
        ..Default::default()
    }
}

/// The flags of the map pinned at `path`.
pub(crate) fn pinned_flags(path: &Path) -> Result<u32> {
    let handle = MapHandle::from_pinned_path(path).kernel(|| format!("open {}", path.display()))?;
    let info = MapInfo::new(handle.as_fd()).kernel(|| format!("read the definition of {}", path.display()))?;
    Ok(info.info.map_flags)
}

/// The maps of [`vm_maps::read_only_to_programs`] pinned in the instance at `root` that
/// programs can write: made by a runtime older than the flag. Reads only; empty
/// for a root that does not exist.
pub fn writable_vm_tables(root: &Path) -> Result<Vec<&'static str>> {
    let layout = Layout::new(root);
    let mut out = Vec::new();
    for name in vm_maps::read_only_to_programs() {
        let path = layout.vm_map(name);
        if path.exists() && pinned_flags(&path)? & RDONLY_PROG == 0 {
            out.push(name);
        }
    }
    Ok(out)
}
