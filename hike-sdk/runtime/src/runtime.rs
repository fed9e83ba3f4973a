//! One VM instance: creating it under a root, opening it, and the maps and records
//! every operation works with.

use std::os::fd::AsFd;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use hike_bytecode::Hook;
use hike_bytecode::limits::{ABI_VERSION, DEFAULT_BUDGET, MAGIC, MAX_CHAINS, MAX_PROGS};
use hike_bytecode::vm_maps::{self, VmMap};
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use crate::abi;
use crate::clock::Clock;
use crate::error::{IoContext, KernelContext, Result, RuntimeError};
use crate::layout::Layout;
use crate::load::{self, LoadRequest};
use crate::meta::{CHAIN_META_SIZE, ChainMeta, PROG_META_SIZE, ProgMeta, RecordState};
use crate::objects;
use crate::sys::DirLock;

/// The magic number of a bpffs mount (`BPF_FS_MAGIC`).
const BPF_FS_MAGIC: u64 = 0xcafe_4a11;

/// Options for [`Runtime::init`].
#[derive(Debug, Clone)]
pub struct InitOptions {
    /// Executed-instruction budget per packet.
    pub budget: u32,
}

impl Default for InitOptions {
    fn default() -> Self {
        InitOptions { budget: DEFAULT_BUDGET }
    }
}

/// Handles on the instance's maps.
pub(crate) struct VmMaps {
    pub progs_xdp: MapHandle,
    pub progs_tc: MapHandle,
    pub native_xdp: MapHandle,
    pub native_tc: MapHandle,
    pub chains: MapHandle,
    pub state: MapHandle,
    pub config: MapHandle,
    pub prog_meta: MapHandle,
    pub chain_meta: MapHandle,
}

impl VmMaps {
    pub fn progs(&self, hook: Hook) -> &MapHandle {
        match hook {
            Hook::Xdp => &self.progs_xdp,
            Hook::Tc => &self.progs_tc,
        }
    }

    /// The hook's native chain slots (docs/NATIVE.md).
    pub fn native(&self, hook: Hook) -> &MapHandle {
        match hook {
            Hook::Xdp => &self.native_xdp,
            Hook::Tc => &self.native_tc,
        }
    }
}

/// A HIKe VM instance rooted at a bpffs directory.
pub struct Runtime {
    pub(crate) layout: Layout,
    pub(crate) maps: VmMaps,
}

pub(crate) fn key(id: u32) -> [u8; 4] {
    id.to_le_bytes()
}

pub(crate) fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

impl Runtime {
    /// Creates the instance at `root`, or opens it when it already exists (then
    /// only the budget is updated). Refuses a root made by another ABI version.
    pub fn init(root: &Path, opts: InitOptions) -> Result<Runtime> {
        check_bpffs(root)?;
        let existed = root.exists();
        if existed {
            crate::root_safety::check_root(root)?;
        } else {
            crate::root_safety::create_root(root)?;
        }
        let layout = Layout::new(root);
        let _lock = DirLock::acquire(root).io("cannot lock", root)?;
        let vm = layout.vm_dir();
        if layout.vm_map("hike_config").exists() {
            match Runtime::open_locked(root) {
                Ok(rt) => {
                    rt.set_budget(opts.budget)?;
                    return Ok(rt);
                }
                // open_locked removed what a killed init left; start over.
                Err(RuntimeError::NotInitialized { .. }) if !layout.vm_dir().exists() => {}
                Err(e) => return Err(e),
            }
        }
        std::fs::create_dir_all(&vm).io("cannot create", &vm)?;
        match create_vm(&layout, &opts) {
            Ok(()) => Runtime::open_locked(root),
            Err(e) => {
                // Leave the root as it was: nothing half-made, and no empty root
                // directory where there was none (one that is not a HIKe root,
                // which later commands would refuse to remove).
                let _ = remove_tree(&vm);
                if !existed {
                    let _ = std::fs::remove_dir(root);
                }
                Err(e)
            }
        }
    }

    /// Opens an existing instance, repairing records a crashed process left pending.
    pub fn open(root: &Path) -> Result<Runtime> {
        if root.exists() {
            crate::root_safety::check_root(root)?;
        }
        let _lock = DirLock::acquire(root)
            .map_err(|e| RuntimeError::NotInitialized { root: root.to_owned(), reason: e.to_string() })?;
        Runtime::open_locked(root)
    }

    fn open_locked(root: &Path) -> Result<Runtime> {
        let layout = Layout::new(root);
        let config_path = layout.vm_map(vm_maps::CONFIG.name);
        if !config_path.exists() {
            return Err(RuntimeError::NotInitialized {
                root: root.to_owned(),
                reason: "it has no vm/hike_config".into(),
            });
        }
        let pinned = |map: VmMap| -> Result<MapHandle> {
            let path = layout.vm_map(map.name);
            MapHandle::from_pinned_path(&path).kernel(|| format!("open {}", path.display()))
        };
        let config = pinned(vm_maps::CONFIG)?;
        let value = config.lookup(&key(0), MapFlags::ANY).kernel(|| "read hike_config".into())?.unwrap_or_default();
        let (magic, abi_version) =
            (abi::u32_at(&value, abi::config::MAGIC), abi::u32_at(&value, abi::config::ABI_VERSION));
        if magic != MAGIC {
            // An init that died before writing the configuration (its last step)
            // left maps but no magic; nothing can have used them, and we hold the
            // lock any init holds, so it is not still running. Remove them.
            if value.iter().all(|b| *b == 0) {
                tracing::warn!(root = %root.display(), "removing a half-created HIKe root");
                let vm = layout.vm_dir();
                remove_tree(&vm).io("cannot remove", &vm)?;
                return Err(RuntimeError::NotInitialized {
                    root: root.to_owned(),
                    reason: "it was half-created by a process that died; what it left was removed".into(),
                });
            }
            return Err(RuntimeError::NotInitialized {
                root: root.to_owned(),
                reason: "hike_config has no HIKe magic".into(),
            });
        }
        if abi_version != ABI_VERSION {
            return Err(RuntimeError::IncompatibleRoot {
                root: root.to_owned(),
                found: abi_version,
                expected: ABI_VERSION,
            });
        }
        // A root made before the clock existed gets one here, read-only to
        // programs: a package's object may not create a VM map (load.rs).
        if !layout.vm_map("hike_clock").exists() {
            crate::clock::create(&layout.vm_dir())?;
        }
        let rt = Runtime {
            maps: VmMaps {
                progs_xdp: pinned(vm_maps::PROGS_XDP)?,
                progs_tc: pinned(vm_maps::PROGS_TC)?,
                native_xdp: pinned(vm_maps::NATIVE_XDP)?,
                native_tc: pinned(vm_maps::NATIVE_TC)?,
                chains: pinned(vm_maps::CHAINS)?,
                state: pinned(vm_maps::STATE)?,
                config,
                prog_meta: pinned(vm_maps::PROG_META)?,
                chain_meta: pinned(vm_maps::CHAIN_META)?,
            },
            layout,
        };
        rt.repair()?;
        Ok(rt)
    }

    /// The instance's root directory.
    pub fn root(&self) -> &Path {
        self.layout.root()
    }

    /// Takes the instance's lock for a change.
    pub(crate) fn lock(&self) -> Result<DirLock> {
        DirLock::acquire(self.root()).io("cannot lock", self.root())
    }

    /// Sets the executed-instruction budget per packet.
    pub fn set_budget(&self, budget: u32) -> Result<()> {
        let mut v =
            self.maps.config.lookup(&key(0), MapFlags::ANY).kernel(|| "read hike_config".into())?.unwrap_or_default();
        if v.len() != abi::config::SIZE {
            v = vec![0; abi::config::SIZE];
        }
        v[abi::config::BUDGET..abi::config::BUDGET + 4].copy_from_slice(&budget.to_le_bytes());
        self.maps.config.update(&key(0), &v, MapFlags::ANY).kernel(|| "write hike_config".into())
    }

    /// The executed-instruction budget per packet.
    pub fn budget(&self) -> Result<u32> {
        let v =
            self.maps.config.lookup(&key(0), MapFlags::ANY).kernel(|| "read hike_config".into())?.unwrap_or_default();
        Ok(abi::u32_at(&v, abi::config::BUDGET))
    }

    /// Sets what `hike_ktime_ns()` returns, for every program of the instance.
    pub fn set_clock(&self, clock: Clock) -> Result<()> {
        crate::clock::write(&self.layout, clock)
    }

    /// What `hike_ktime_ns()` returns.
    pub fn clock(&self) -> Result<Clock> {
        crate::clock::read(&self.layout)
    }

    pub(crate) fn prog_meta(&self, id: u32) -> Result<ProgMeta> {
        let v = self.maps.prog_meta.lookup(&key(id), MapFlags::ANY).kernel(|| format!("read program record {id}"))?;
        Ok(v.map_or_else(ProgMeta::free, |v| ProgMeta::decode(&v)))
    }

    pub(crate) fn set_prog_meta(&self, id: u32, meta: &ProgMeta) -> Result<()> {
        self.maps
            .prog_meta
            .update(&key(id), &meta.encode(), MapFlags::ANY)
            .kernel(|| format!("write program record {id}"))
    }

    pub(crate) fn chain_meta(&self, id: u32) -> Result<ChainMeta> {
        let v = self.maps.chain_meta.lookup(&key(id), MapFlags::ANY).kernel(|| format!("read chain record {id}"))?;
        Ok(v.map_or_else(ChainMeta::free, |v| ChainMeta::decode(&v)))
    }

    pub(crate) fn set_chain_meta(&self, id: u32, meta: &ChainMeta) -> Result<()> {
        self.maps
            .chain_meta
            .update(&key(id), &meta.encode(), MapFlags::ANY)
            .kernel(|| format!("write chain record {id}"))
    }

    /// Every program record that is not free, by id.
    pub(crate) fn prog_records(&self) -> Result<Vec<(u32, ProgMeta)>> {
        let mut out = Vec::new();
        for id in 0..MAX_PROGS {
            let m = self.prog_meta(id)?;
            if m.state != RecordState::Free {
                out.push((id, m));
            }
        }
        Ok(out)
    }

    /// Every chain record that is not free, by id.
    pub(crate) fn chain_records(&self) -> Result<Vec<(u32, ChainMeta)>> {
        let mut out = Vec::new();
        for id in 1..MAX_CHAINS {
            let m = self.chain_meta(id)?;
            if m.state != RecordState::Free {
                out.push((id, m));
            }
        }
        Ok(out)
    }

    /// The instructions of installed chain `id`.
    pub(crate) fn chain_code(&self, id: u32) -> Result<Option<(Vec<hike_bytecode::Insn>, u8)>> {
        let v = self.maps.chains.lookup(&key(id), MapFlags::ANY).kernel(|| format!("read chain {id}"))?;
        Ok(v.and_then(|v| abi::decode_chain(&v)))
    }

    /// Removes the whole instance at `root`: detaches its loaders and unpins
    /// everything. Refuses a directory that is not a HIKe root.
    pub fn destroy(root: &Path) -> Result<()> {
        let layout = Layout::new(root);
        if !root.exists() {
            return Ok(());
        }
        if !layout.vm_map("hike_config").exists() && !layout.vm_dir().exists() {
            return Err(RuntimeError::NotInitialized {
                root: root.to_owned(),
                reason: "refusing to remove a directory that is not a HIKe root".into(),
            });
        }
        let _lock = DirLock::acquire(root).io("cannot lock", root)?;
        // Links first, so no packet enters a chain while the rest goes away.
        if let Ok(loaders) = std::fs::read_dir(layout.loaders_dir()) {
            for entry in loaders.flatten() {
                if let Ok(files) = std::fs::read_dir(entry.path()) {
                    for f in files.flatten() {
                        if f.file_name().to_string_lossy().starts_with("link@") {
                            let _ = std::fs::remove_file(f.path());
                        }
                    }
                }
            }
        }
        ebpkg_crashpoint::hit("destroy-unlinked");
        remove_tree(root).io("cannot remove", root)?;
        Ok(())
    }
}

/// Refuses a root that is not on a bpffs mount, with the command that fixes it.
fn check_bpffs(root: &Path) -> Result<()> {
    let mut probe = root.to_path_buf();
    while !probe.exists() {
        if !probe.pop() {
            break;
        }
    }
    let st = rustix::fs::statfs(&probe).map_err(std::io::Error::from).io("cannot inspect", &probe)?;
    if st.f_type as u64 != BPF_FS_MAGIC {
        return Err(RuntimeError::NotInitialized {
            root: root.to_owned(),
            reason: format!(
                "{} is not on a bpffs mount; mount one with `mount -t bpf -o mode=0700 bpf /sys/fs/bpf`",
                probe.display()
            ),
        });
    }
    Ok(())
}

/// Removes a directory tree in bpffs (pins are files; `remove_dir_all` works).
pub(crate) fn remove_tree(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Loads one of the runtime's own programs (`program` of `elf`) into the instance
/// whose VM maps are in `vm`: the maps it declares are shared by name, created
/// when missing.
pub(crate) fn load_vm_program(vm: &Path, hook: Hook, elf: &[u8], program: &str) -> Result<libbpf_rs::Object> {
    load::load(&LoadRequest {
        object_name: &format!("{program}_{hook}"),
        elf,
        vm_dir: vm,
        maps: load::Maps::Pin(&|_| None),
        programs: &[program.to_owned()],
        mmapable: &[],
        runtime_object: true,
    })
}

/// Loads and pins the hook's tombstone (`hike_gone`, see `Runtime::vacate_slot`)
/// and returns a descriptor of it.
pub(crate) fn load_tombstone(layout: &Layout, hook: Hook) -> Result<std::os::fd::OwnedFd> {
    let vm = layout.vm_dir();
    let mut obj = load_vm_program(&vm, hook, objects::continuation(hook), "hike_gone")?;
    let mut prog = vm_program(&mut obj, "hike_gone")?;
    let pin_path = layout.tombstone(hook);
    prog.pin(&pin_path).kernel(|| format!("pin {}", pin_path.display()))?;
    libbpf_rs::Program::fd_from_pinned_path(&pin_path).kernel(|| format!("open {}", pin_path.display()))
}

/// Program `name` of a loaded object.
pub(crate) fn vm_program<'o>(obj: &'o mut libbpf_rs::Object, name: &str) -> Result<libbpf_rs::ProgramMut<'o>> {
    obj.progs_mut()
        .find(|p| p.name() == name)
        .ok_or_else(|| RuntimeError::BadObject { name: name.into(), reason: "program missing after load".into() })
}

/// Creates and pins the VM maps, the continuation programs, the record maps, and
/// last the configuration that marks the instance as ready. The test entry
/// programs are loaded by the first test run that needs them
/// ([`Runtime::test_entry`]): an install does not pay for their verification.
fn create_vm(layout: &Layout, opts: &InitOptions) -> Result<()> {
    let vm = layout.vm_dir();
    for hook in [Hook::Xdp, Hook::Tc] {
        let mut obj = load_vm_program(&vm, hook, objects::continuation(hook), "hike_cont")?;
        let mut prog = vm_program(&mut obj, "hike_cont")?;
        ebpkg_crashpoint::hit("init-loaded");
        let pin_path = vm.join(format!("cont_{hook}"));
        prog.pin(&pin_path).kernel(|| format!("pin {}", pin_path.display()))?;
        ebpkg_crashpoint::hit("init-pinned");
        let progs = MapHandle::from_pinned_path(vm.join(format!("hike_progs_{hook}")))
            .kernel(|| format!("open hike_progs_{hook}"))?;
        let raw = std::os::fd::AsRawFd::as_raw_fd(&prog.as_fd()) as u32;
        progs.update(&key(0), &raw.to_le_bytes(), MapFlags::ANY).kernel(|| "register the continuation".into())?;
        load_tombstone(layout, hook)?;
    }
    crate::clock::create(&vm)?;
    let opts_create = crate::vm_access::read_only_create_opts();
    for (name, size, entries) in
        [("hike_prog_meta", PROG_META_SIZE, MAX_PROGS), ("hike_chain_meta", CHAIN_META_SIZE, MAX_CHAINS)]
    {
        let mut map = MapHandle::create(MapType::Array, Some(name), 4, size as u32, entries, &opts_create)
            .kernel(|| format!("create {name}"))?;
        let path = vm.join(name);
        map.pin(&path).kernel(|| format!("pin {}", path.display()))?;
        ebpkg_crashpoint::hit("init-records");
        if name == "hike_prog_meta" {
            let cont = ProgMeta {
                state: RecordState::Ready,
                hook: Hook::Xdp,
                nargs: 0,
                bpf_id: 0,
                registered_unix_ns: now_ns(),
                name: "hike_cont".into(),
                package: "hike-runtime".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                calls_base: 0,
            };
            map.update(&key(0), &cont.encode(), MapFlags::ANY).kernel(|| "reserve program id 0".into())?;
        }
    }
    ebpkg_crashpoint::hit("init-configuring");
    let config = MapHandle::from_pinned_path(vm.join("hike_config")).kernel(|| "open hike_config".into())?;
    let mut v = vec![0u8; abi::config::SIZE];
    v[abi::config::MAGIC..abi::config::MAGIC + 4].copy_from_slice(&MAGIC.to_le_bytes());
    v[abi::config::ABI_VERSION..abi::config::ABI_VERSION + 4].copy_from_slice(&ABI_VERSION.to_le_bytes());
    v[abi::config::BUDGET..abi::config::BUDGET + 4].copy_from_slice(&opts.budget.to_le_bytes());
    config.update(&key(0), &v, MapFlags::ANY).kernel(|| "write hike_config".into())
}
