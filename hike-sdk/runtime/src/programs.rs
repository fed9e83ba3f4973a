//! Registering HIKe programs: load, pin under `progs/<package>@<version>/`, give
//! each an id and put it in its hook's program array.

use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;

use hike_bytecode::limits::MAX_PROGS;
use hike_bytecode::{Hook, Op, decode};
use libbpf_rs::{MapCore, MapFlags};

use crate::error::{IoContext, KernelContext, Result, RuntimeError};
use crate::load::{self, LoadRequest};
use crate::meta::{ProgMeta, RecordState};
use crate::runtime::{Runtime, key, now_ns, remove_tree};
use crate::signature::{self, Signature};
use crate::sys;
use hike_bytecode::ProgId;

/// An object file holding HIKe programs of one package version.
#[derive(Debug, Clone, Copy)]
pub struct ProgramObject<'a> {
    pub package: &'a str,
    pub version: &'a str,
    /// Shown in errors, e.g. the source file the object was built from.
    pub object_name: &'a str,
    pub elf: &'a [u8],
    pub hook: Hook,
}

/// Maps of another version of a package that a version being registered uses as
/// its own, by name: `from` is that other version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedMaps {
    pub from: Option<String>,
    pub maps: Vec<String>,
}

/// A registered program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredProgram {
    pub id: ProgId,
    pub name: String,
    pub package: String,
    pub version: String,
    pub hook: Hook,
    pub signature: Signature,
    /// Where the program is pinned.
    pub pin: PathBuf,
    /// The kernel's id for it.
    pub bpf_id: u32,
    /// True when it was already registered and nothing was loaded.
    pub reused: bool,
}

impl Runtime {
    /// Registers every HIKe program of the object and returns them sorted by id.
    /// Programs of the same package version already registered keep their ids
    /// (nothing is loaded again). All or nothing: on failure no new id, pin or
    /// program array entry remains.
    pub fn register_object(&self, obj: &ProgramObject<'_>) -> Result<Vec<RegisteredProgram>> {
        let sigs = signature::read(obj.object_name, obj.elf)?;
        self.register_read_object(obj, &sigs, &SharedMaps::default())
    }

    /// [`Runtime::register_object`] for a caller that has already read the
    /// object's programs: `sigs` must be what [`signature::read`] returned for
    /// `obj.object_name` and `obj.elf` (an installer checks them against its
    /// manifest first, and the object is not parsed twice). When the version's
    /// maps are made, those `shared` names are the maps another version of the
    /// package has pinned, used as they are (an upgrade keeping state).
    pub fn register_read_object(
        &self,
        obj: &ProgramObject<'_>,
        sigs: &std::collections::BTreeMap<String, Signature>,
        shared: &SharedMaps,
    ) -> Result<Vec<RegisteredProgram>> {
        if sigs.is_empty() {
            return Err(RuntimeError::BadObject {
                name: obj.object_name.to_owned(),
                reason: "it declares no HIKe program (use HIKE_PROGRAM from <hike/program.h>)".into(),
            });
        }
        let pkg_dir = self.layout.package_dir(obj.package, obj.version)?;
        let _lock = self.lock()?;
        let records = self.prog_records()?;
        let mut out = Vec::new();
        let mut to_load = Vec::new();
        for (name, sig) in sigs {
            let existing = records.iter().find(|(_, m)| {
                m.state == RecordState::Ready
                    && m.name == *name
                    && m.package == obj.package
                    && m.version == obj.version
                    && m.hook == obj.hook
            });
            match existing {
                Some((id, m)) => out.push(RegisteredProgram {
                    id: ProgId(*id),
                    name: name.clone(),
                    package: obj.package.to_owned(),
                    version: obj.version.to_owned(),
                    hook: obj.hook,
                    signature: sig.clone(),
                    pin: pkg_dir.join(name),
                    bpf_id: m.bpf_id,
                    reused: true,
                }),
                None => to_load.push(name.clone()),
            }
        }
        if to_load.is_empty() {
            out.sort_by_key(|r| r.id);
            return Ok(out);
        }

        let maps_dir = pkg_dir.join("maps");
        let pkg_dir_existed = pkg_dir.exists();
        std::fs::create_dir_all(&maps_dir).io("cannot create", &maps_dir)?;
        ebpkg_crashpoint::hit("register-dir");
        let undo_dir = |_: &RuntimeError| {
            if !pkg_dir_existed {
                let _ = remove_tree(&pkg_dir);
            }
        };
        // Pinned where this version's maps go before the load, which then uses
        // them (libbpf reuses a pinned map, refusing one that does not match). A
        // process killed before a program is recorded leaves a directory with no
        // program, which the next open removes.
        self.pin_shared_maps(obj.package, shared, &maps_dir).inspect_err(undo_dir)?;
        let vm_dir = self.layout.vm_dir();
        let loaded = load::load(&LoadRequest {
            object_name: &format!("{}@{} ({})", obj.package, obj.version, obj.object_name),
            elf: obj.elf,
            vm_dir: &vm_dir,
            maps: load::Maps::Pin(&|name| Some(maps_dir.join(name))),
            programs: &to_load,
            mmapable: &[],
            runtime_object: false,
        })
        .inspect_err(undo_dir)?;
        ebpkg_crashpoint::hit("register-loaded");
        let counters = self.counters()?;

        let mut done: Vec<RegisteredProgram> = Vec::new();
        let result = (|| -> Result<()> {
            let mut taken: Vec<u32> = records.iter().map(|(id, _)| *id).collect();
            for mut prog in loaded.progs_mut() {
                let name = prog.name().to_string_lossy().into_owned();
                let Some(sig) = sigs.get(&name) else { continue };
                let id = (1..MAX_PROGS)
                    .find(|id| !taken.contains(id))
                    .ok_or(RuntimeError::IdsExhausted { kind: "program", max: MAX_PROGS - 1 })?;
                taken.push(id);
                let bpf_id = libbpf_rs::Program::id_from_fd(prog.as_fd()).kernel(|| format!("query program {name}"))?;
                let mut meta = ProgMeta {
                    state: RecordState::Pending,
                    hook: obj.hook,
                    nargs: sig.nargs(),
                    bpf_id,
                    registered_unix_ns: now_ns(),
                    calls_base: counters.prog_calls.get(id as usize).copied().unwrap_or(0),
                    name: name.clone(),
                    package: obj.package.to_owned(),
                    version: obj.version.to_owned(),
                };
                self.set_prog_meta(id, &meta)?;
                ebpkg_crashpoint::hit("register-pending");
                let pin = pkg_dir.join(&name);
                if pin.exists() {
                    // An orphan from a process that died before recording it.
                    let _ = std::fs::remove_file(&pin);
                }
                let reg = RegisteredProgram {
                    id: ProgId(id),
                    name: name.clone(),
                    package: obj.package.to_owned(),
                    version: obj.version.to_owned(),
                    hook: obj.hook,
                    signature: sig.clone(),
                    pin: pin.clone(),
                    bpf_id,
                    reused: false,
                };
                done.push(reg);
                prog.pin(&pin).kernel(|| format!("pin {}", pin.display()))?;
                ebpkg_crashpoint::hit("register-pinned");
                let fd = prog.as_fd().as_raw_fd() as u32;
                self.maps
                    .progs(obj.hook)
                    .update(&key(id), &fd.to_le_bytes(), MapFlags::ANY)
                    .kernel(|| format!("put program {name} in hike_progs_{} at id {id}", obj.hook))?;
                ebpkg_crashpoint::hit("register-in-array");
                meta.state = RecordState::Ready;
                self.set_prog_meta(id, &meta)?;
                ebpkg_crashpoint::hit("register-ready");
            }
            Ok(())
        })();
        if let Err(e) = result {
            for reg in &done {
                let _ = self.vacate_slot(obj.hook, reg.id.0);
                let _ = std::fs::remove_file(&reg.pin);
                let _ = self.set_prog_meta(reg.id.0, &ProgMeta::free());
            }
            undo_dir(&e);
            return Err(e);
        }
        out.extend(done);
        out.sort_by_key(|r| r.id);
        Ok(out)
    }

    fn pin_shared_maps(&self, package: &str, shared: &SharedMaps, maps_dir: &std::path::Path) -> Result<()> {
        let Some(from) = &shared.from else { return Ok(()) };
        let from_dir = self.layout.package_dir(package, from)?.join("maps");
        for name in &shared.maps {
            let component = crate::layout::component(name)?;
            let (source, target) = (from_dir.join(component), maps_dir.join(component));
            if target.exists() {
                continue;
            }
            let mut map = libbpf_rs::MapHandle::from_pinned_path(&source)
                .kernel(|| format!("open map `{name}` of {package}@{from}"))?;
            map.pin(&target).kernel(|| format!("pin map `{name}` of {package}@{from} at {}", target.display()))?;
        }
        ebpkg_crashpoint::hit("register-shared-maps");
        Ok(())
    }

    /// Removes program `id` from the VM. Refused while an installed chain calls it;
    /// returns once no packet can still be running it.
    pub fn unregister_program(&self, id: ProgId) -> Result<()> {
        self.unregister_programs(&[id])
    }

    /// Removes several programs with one wait for running packets (what replacing
    /// a package version removes): all are checked before any goes, and all are
    /// refused while an installed chain calls one of them.
    pub fn unregister_programs(&self, ids: &[ProgId]) -> Result<()> {
        let _lock = self.lock()?;
        let mut going = Vec::new();
        for &ProgId(id) in ids {
            let meta = self.prog_meta(id)?;
            if id == 0 || meta.state != RecordState::Ready {
                return Err(RuntimeError::NotFound(format!("program id {id}")));
            }
            let users = self.chains_calling(|op| matches!(op, Op::CallProg { id: p, .. } if p == id))?;
            if !users.is_empty() {
                return Err(RuntimeError::InUse {
                    what: format!("program {id} ({}@{} {})", meta.package, meta.version, meta.name),
                    users: users.join(", "),
                });
            }
            going.push((id, meta));
        }
        // The array updates are the point of no return; a process killed after
        // one leaves a record that `repair` finishes removing.
        for (id, meta) in &going {
            self.vacate_slot(meta.hook, *id)?;
            ebpkg_crashpoint::hit("unregister-out-of-array");
        }
        if going.is_empty() {
            return Ok(());
        }
        sys::wait_for_readers().io("cannot wait for running packets", self.root())?;
        for (id, meta) in &going {
            let pin = self.layout.package_dir(&meta.package, &meta.version)?.join(&meta.name);
            std::fs::remove_file(&pin).or_else(ignore_missing).io("cannot unpin", &pin)?;
            ebpkg_crashpoint::hit("unregister-unpinned");
            self.set_prog_meta(*id, &ProgMeta::free())?;
            ebpkg_crashpoint::hit("unregister-freed");
        }
        // A package version's maps go with its last program.
        let records = self.prog_records()?;
        for (_, meta) in &going {
            let others = records.iter().any(|(_, m)| m.package == meta.package && m.version == meta.version);
            let pkg_dir = self.layout.package_dir(&meta.package, &meta.version)?;
            if !others && pkg_dir.exists() {
                remove_tree(&pkg_dir).io("cannot remove", &pkg_dir)?;
            }
        }
        Ok(())
    }

    /// Takes the program out of slot `id`: the slot gets the hook's tombstone
    /// (`hike_gone`, which aborts the chain as an empty slot would). Emptying a
    /// slot the VM jumps to directly makes the kernel wait for an RCU grace period
    /// per slot on x86 (about 100 ms); replacing its program does not, and the
    /// caller waits once for all. A root made before tombstones gets one here.
    pub(crate) fn vacate_slot(&self, hook: Hook, id: u32) -> Result<()> {
        let path = self.layout.tombstone(hook);
        let gone = match libbpf_rs::Program::fd_from_pinned_path(&path) {
            Ok(fd) => fd,
            Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => crate::runtime::load_tombstone(&self.layout, hook)?,
            Err(e) => return Err(RuntimeError::Kernel { what: format!("open {}", path.display()), cause: e }),
        };
        let fd = gone.as_raw_fd() as u32;
        self.maps
            .progs(hook)
            .update(&key(id), &fd.to_le_bytes(), MapFlags::ANY)
            .kernel(|| format!("take program {id} out of hike_progs_{hook}"))
    }

    /// Names (`name (id N)`) of installed chains with an instruction matching `pred`.
    pub(crate) fn chains_calling(&self, pred: impl Fn(Op) -> bool) -> Result<Vec<String>> {
        Ok(self.chain_callers(pred)?.into_iter().map(|(_, name)| name).collect())
    }

    /// Ids and names (`name (id N)`) of installed chains with an instruction matching `pred`.
    pub(crate) fn chain_callers(&self, pred: impl Fn(Op) -> bool) -> Result<Vec<(u32, String)>> {
        let mut users = Vec::new();
        for (cid, cmeta) in self.chain_records()? {
            let Some((insns, _)) = self.chain_code(cid)? else { continue };
            let calls = (0..insns.len()).any(|pc| decode(&insns, pc).is_ok_and(&pred));
            if calls {
                users.push((cid, format!("chain {} (id {cid})", cmeta.name)));
            }
        }
        Ok(users)
    }

    /// The id of a registered program, if any.
    pub fn find_program(&self, package: &str, version: &str, name: &str, hook: Hook) -> Result<Option<ProgId>> {
        Ok(self
            .prog_records()?
            .into_iter()
            .find(|(_, m)| {
                m.state == RecordState::Ready
                    && m.package == package
                    && m.version == version
                    && m.name == name
                    && m.hook == hook
            })
            .map(|(id, _)| ProgId(id)))
    }
}

fn ignore_missing(e: std::io::Error) -> std::io::Result<()> {
    if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) }
}
