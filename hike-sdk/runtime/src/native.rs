//! Native chains (docs/NATIVE.md): a chain's compiled program in the loader's
//! chain slot. A loader starting chain `id` tail-calls slot `id` of its hook's
//! `hike_native_<hook>` array before interpreting, so putting a program there is
//! one map update — every packet runs either the VM or the native program,
//! whole — and taking it out falls back to the VM the same way.

use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hike_bytecode::Hook;
use libbpf_rs::{MapCore, MapFlags};

use crate::error::{IoContext, KernelContext, Result, RuntimeError};
use crate::load::{self, LoadRequest};
use crate::meta::RecordState;
use crate::runtime::{Runtime, key};
use crate::sys;
use crate::verify::VerifierStats;
use hike_bytecode::ChainId;

/// Which package version each module of a native object came from, in module
/// order (module 1 first): its maps are that version's pinned maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeModule {
    pub package: String,
    pub version: String,
}

/// A chain's native program to install.
#[derive(Debug, Clone, Copy)]
pub struct NativeObject<'a> {
    pub chain: ChainId,
    /// The entry program's name in the object.
    pub entry: &'a str,
    pub elf: &'a [u8],
    pub modules: &'a [NativeModule],
}

/// What installing a native program took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeInstalled {
    /// The kernel's id of the program.
    pub bpf_id: u32,
    pub verifier: VerifierStats,
    /// From opening the object to the slot update.
    pub load_time: Duration,
}

impl Runtime {
    /// Loads the native program of an installed chain (the kernel verifies it,
    /// with the maps of the VM and of the packages reused, none created) and
    /// puts it in the chain's slot, replacing any program there.
    pub fn install_native(&self, obj: &NativeObject<'_>) -> Result<NativeInstalled> {
        let started = Instant::now();
        let ChainId(chain) = obj.chain;
        let _lock = self.lock()?;
        let meta = self.chain_meta(chain)?;
        if meta.state != RecordState::Ready {
            return Err(RuntimeError::NotFound(format!("chain id {chain}")));
        }
        let mut package_dirs = Vec::new();
        for m in obj.modules {
            package_dirs.push(self.layout.package_dir(&m.package, &m.version)?.join("maps"));
        }
        let vm_dir = self.layout.vm_dir();
        let find = |name: &str| -> Option<PathBuf> {
            let (module, map) = match hike_native::map_origin(name) {
                Some((module, map)) => (module, map),
                None => (0, name),
            };
            if map.starts_with("hike_") {
                return Some(vm_dir.join(map));
            }
            let dir = package_dirs.get(module.checked_sub(1)?)?;
            Some(dir.join(map))
        };
        let object_name = format!("native chain {} (id {chain})", meta.name);
        let entry = obj.entry.to_owned();
        let (loaded, logs) = load::load_with_stats(&LoadRequest {
            object_name: &object_name,
            elf: obj.elf,
            vm_dir: &vm_dir,
            maps: load::Maps::Existing(&find),
            programs: std::slice::from_ref(&entry),
            mmapable: &[],
            runtime_object: false,
        })?;
        let prog = loaded.progs().find(|p| p.name().to_string_lossy() == entry).ok_or_else(|| {
            RuntimeError::BadObject { name: object_name.clone(), reason: format!("no program `{entry}` after loading") }
        })?;
        let log = logs.iter().find(|(n, _)| *n == entry).map(|(_, l)| l.as_str()).unwrap_or("");
        let verifier = VerifierStats::from_log(&entry, prog.insn_cnt() as u32, log);
        let fd = prog.as_fd();
        let bpf_id = libbpf_rs::Program::id_from_fd(fd).kernel(|| format!("query {object_name}"))?;
        let raw = fd.as_raw_fd() as u32;
        self.maps
            .native(meta.hook)
            .update(&key(chain), &raw.to_le_bytes(), MapFlags::ANY)
            .kernel(|| format!("put {object_name} in its slot"))?;
        ebpkg_crashpoint::hit("native-installed");
        Ok(NativeInstalled { bpf_id, verifier, load_time: started.elapsed() })
    }

    /// Takes chain `id`'s native program out of its slot: packets are
    /// interpreted again. Returns once no packet can still be running it.
    pub fn remove_native(&self, id: ChainId) -> Result<()> {
        let _lock = self.lock()?;
        self.remove_native_locked(id.0)
    }

    pub(crate) fn remove_native_locked(&self, chain: u32) -> Result<()> {
        let mut removed = false;
        for hook in [Hook::Xdp, Hook::Tc] {
            if self.native_program(hook, chain)?.is_some() {
                self.maps.native(hook).delete(&key(chain)).kernel(|| format!("clear native slot {chain}"))?;
                removed = true;
            }
        }
        if removed {
            sys::wait_for_readers().io("cannot wait for running packets", self.root())?;
        }
        Ok(())
    }

    /// The kernel id of the native program in chain `id`'s slot of `hook`.
    pub(crate) fn native_program(&self, hook: Hook, chain: u32) -> Result<Option<u32>> {
        let v =
            self.maps.native(hook).lookup(&key(chain), MapFlags::ANY).kernel(|| format!("read native slot {chain}"))?;
        Ok(v.filter(|v| v.len() >= 4).map(|v| u32::from_le_bytes([v[0], v[1], v[2], v[3]])))
    }

    /// The kernel id of chain `id`'s native program, if it has one.
    pub fn native_of(&self, id: ChainId) -> Result<Option<u32>> {
        let meta = self.chain_meta(id.0)?;
        if meta.state == RecordState::Free {
            return Ok(None);
        }
        self.native_program(meta.hook, id.0)
    }
}
