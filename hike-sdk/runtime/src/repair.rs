//! Settling what a process killed in the middle of a runtime operation left
//! behind. Every operation writes the object that makes a change visible last
//! (a record's `Ready` state, a loader's `meta` pin, the configuration's magic),
//! so anything found without that last write was never in use and is removed,
//! and anything found with it but with later steps missing is finished.
//! [`Runtime::open`] runs this with the root's lock held, so no live operation
//! is mistaken for a dead one.

use std::path::Path;

use libbpf_rs::{MapCore, MapFlags};

use crate::error::{IoContext, KernelContext, Result};
use crate::meta::{ChainMeta, ProgMeta, RecordState};
use crate::runtime::{Runtime, key, remove_tree};

impl Runtime {
    /// Repairs records, loader instances and package directories left half-made
    /// or half-removed. Called with the lock held.
    pub(crate) fn repair(&self) -> Result<()> {
        self.repair_programs()?;
        self.repair_chains()?;
        self.repair_loaders()?;
        self.repair_package_dirs()
    }

    /// Whether slot `id` holds the program `m` records (not the tombstone a
    /// removal leaves, nor another program).
    fn in_array(&self, m: &ProgMeta, id: u32) -> bool {
        let slot = self.maps.progs(m.hook).lookup(&key(id), MapFlags::ANY).ok().flatten();
        slot.and_then(|v| <[u8; 4]>::try_from(v.as_slice()).ok()).is_some_and(|v| u32::from_le_bytes(v) == m.bpf_id)
    }

    fn repair_programs(&self) -> Result<()> {
        for (id, mut m) in self.prog_records()? {
            if id == 0 {
                continue;
            }
            let present = self.in_array(&m, id);
            match (m.state, present) {
                // Registering died after the program went into its array: finish.
                (RecordState::Pending, true) => {
                    tracing::warn!(id, program = %m.name, "finishing a program registration a dead process left");
                    m.state = RecordState::Ready;
                    self.set_prog_meta(id, &m)?;
                }
                // Registering died before the array update, or unregistering died
                // after it (the array update is the point of no return of both):
                // nothing can call the program, so its pin and record go.
                (RecordState::Pending, false) | (RecordState::Ready, false) => {
                    tracing::warn!(id, program = %m.name, "removing a program a dead process half-registered or half-removed");
                    // A record with names no pin can have has no pin to remove.
                    if let (Ok(dir), Ok(name)) =
                        (self.layout.package_dir(&m.package, &m.version), crate::layout::component(&m.name))
                    {
                        remove_file(&dir.join(name))?;
                    }
                    self.set_prog_meta(id, &ProgMeta::free())?;
                }
                _ => {}
            }
        }
        // A native program outlives its chain only if removing the chain died
        // between the two; the id may be given to another chain next.
        let ready: Vec<u32> = self
            .chain_records()?
            .into_iter()
            .filter(|(_, m)| m.state == RecordState::Ready)
            .map(|(id, _)| id)
            .collect();
        for id in 1..hike_bytecode::limits::MAX_CHAINS {
            if ready.contains(&id) {
                continue;
            }
            for hook in [hike_bytecode::Hook::Xdp, hike_bytecode::Hook::Tc] {
                if self.native_program(hook, id)?.is_some() {
                    tracing::warn!(id, "removing the native program of a chain that is gone");
                    self.maps.native(hook).delete(&key(id)).kernel(|| format!("clear native slot {id}"))?;
                }
            }
        }
        Ok(())
    }

    fn repair_chains(&self) -> Result<()> {
        for (id, mut m) in self.chain_records()? {
            let present = self.chain_code(id)?.is_some();
            match (m.state, present) {
                (RecordState::Pending, true) => {
                    tracing::warn!(id, chain = %m.name, "finishing a chain install a dead process left");
                    m.state = RecordState::Ready;
                    self.set_chain_meta(id, &m)?;
                }
                // Installing died before the bytecode was written, or removing
                // died after clearing it.
                (RecordState::Pending, false) | (RecordState::Ready, false) => {
                    tracing::warn!(id, chain = %m.name, "freeing a chain record a dead process left");
                    self.set_chain_meta(id, &ChainMeta::free())?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A loader instance exists once its `meta` is pinned (its last step); a
    /// directory without one is a load that died, or an unload that died after
    /// removing it, and nothing can be attached through it.
    fn repair_loaders(&self) -> Result<()> {
        let dir = self.layout.loaders_dir();
        let Ok(rd) = std::fs::read_dir(&dir) else { return Ok(()) };
        for entry in rd.flatten() {
            let path = entry.path();
            if !path.join("meta").exists() {
                tracing::warn!(instance = %entry.file_name().to_string_lossy(), "removing a half-made loader instance");
                for f in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                    if f.file_name().to_string_lossy().starts_with("link@") {
                        remove_file(&f.path())?;
                    }
                }
                remove_tree(&path).io("cannot remove", &path)?;
            }
        }
        Ok(())
    }

    /// Package directories hold the pins of registered programs and their maps;
    /// one without a registered program (a registration that died before its first
    /// record, or an unregistration that died before removing it) goes, and so does
    /// a program pin no record names.
    fn repair_package_dirs(&self) -> Result<()> {
        let dir = self.layout.progs_dir();
        let Ok(rd) = std::fs::read_dir(&dir) else { return Ok(()) };
        let records = self.prog_records()?;
        for entry in rd.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let mine: Vec<&ProgMeta> = records
                .iter()
                .map(|(_, m)| m)
                .filter(|m| self.layout.package_dir(&m.package, &m.version).is_ok_and(|d| d == path))
                .collect();
            if mine.is_empty() {
                tracing::warn!(package = %name, "removing the pins of a package no program is registered of");
                remove_tree(&path).io("cannot remove", &path)?;
                continue;
            }
            for f in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                let fname = f.file_name().to_string_lossy().into_owned();
                if fname != "maps" && !mine.iter().any(|m| m.name == fname) {
                    tracing::warn!(package = %name, program = %fname, "removing a program pin no record names");
                    remove_file(&f.path())?;
                }
            }
        }
        Ok(())
    }
}

fn remove_file(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e).io("cannot remove", path),
        _ => Ok(()),
    }
}
