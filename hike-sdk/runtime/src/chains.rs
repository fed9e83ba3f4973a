//! Installing chains: validate against what is registered, give the chain an id,
//! write its bytecode. Replacing a chain installs the new one under a new id and
//! flips the loader entries that pointed at the old one, each in one map update.

use hike_bytecode::limits::{MAX_CHAINS, MAX_DEPTH};
use hike_bytecode::{ChainSig, Env, Hook, Insn, Op, ProgramSig, validate};
use libbpf_rs::{MapCore, MapFlags};

use crate::abi;
use crate::error::{IoContext, KernelContext, Result, RuntimeError};
use crate::meta::{ChainMeta, RecordState};
use crate::runtime::{Runtime, key, now_ns};
use crate::sys;
use hike_bytecode::ChainId;

/// A chain to install.
#[derive(Debug, Clone, Copy)]
pub struct ChainSpec<'a> {
    /// The chain's name, for status and errors.
    pub name: &'a str,
    /// Who installs it (a deployment or package), for status.
    pub owner: &'a str,
    pub hook: Hook,
    pub insns: &'a [Insn],
    /// Parameters it takes in r1..r4.
    pub nargs: u8,
}

impl Runtime {
    /// The programs and chains a chain of `hook` can call, as the validator and the
    /// chain compiler's linker need them.
    pub fn env(&self, hook: Hook) -> Result<Env> {
        let mut env = Env::default();
        for (id, m) in self.prog_records()? {
            if id != 0 && m.state == RecordState::Ready && m.hook == hook {
                env.programs
                    .insert(id, ProgramSig { name: format!("{}@{} {}", m.package, m.version, m.name), nargs: m.nargs });
            }
        }
        for (id, m) in self.chain_records()? {
            if m.state == RecordState::Ready && m.hook == hook {
                env.chains.insert(id, ChainSig { name: m.name.clone(), nargs: m.nargs, depth: usize::from(m.depth) });
            }
        }
        Ok(env)
    }

    /// Validates and installs a chain; returns its id. It can be called by chains
    /// installed after it and started by loaders from then on.
    pub fn install_chain(&self, spec: &ChainSpec<'_>) -> Result<ChainId> {
        let _lock = self.lock()?;
        self.install_chain_locked(spec)
    }

    fn install_chain_locked(&self, spec: &ChainSpec<'_>) -> Result<ChainId> {
        let env = self.env(spec.hook)?;
        let facts = validate(spec.insns, &env)
            .map_err(|error| RuntimeError::InvalidChain { name: spec.name.to_owned(), error })?;
        let taken: Vec<u32> = self.chain_records()?.into_iter().map(|(id, _)| id).collect();
        let id = (1..MAX_CHAINS)
            .find(|id| !taken.contains(id))
            .ok_or(RuntimeError::IdsExhausted { kind: "chain", max: MAX_CHAINS - 1 })?;
        let runs_base = self.counters()?.chain_runs.get(id as usize).copied().unwrap_or(0);
        let mut meta = ChainMeta {
            state: RecordState::Pending,
            hook: spec.hook,
            nargs: spec.nargs,
            depth: facts.depth.min(MAX_DEPTH) as u8,
            len: spec.insns.len() as u32,
            installed_unix_ns: now_ns(),
            runs_base,
            name: spec.name.to_owned(),
            owner: spec.owner.to_owned(),
        };
        self.set_chain_meta(id, &meta)?;
        ebpkg_crashpoint::hit("chain-pending");
        let value = abi::encode_chain(spec.insns, spec.nargs);
        if let Err(e) = self.maps.chains.update(&key(id), &value, MapFlags::ANY).kernel(|| format!("write chain {id}"))
        {
            let _ = self.set_chain_meta(id, &ChainMeta::free());
            return Err(e);
        }
        ebpkg_crashpoint::hit("chain-written");
        meta.state = RecordState::Ready;
        self.set_chain_meta(id, &meta)?;
        ebpkg_crashpoint::hit("chain-ready");
        Ok(ChainId(id))
    }

    /// Installs `spec` as the successor of chain `old`: the new chain gets a new id,
    /// every loader entry that started `old` is switched to it (one map update per
    /// entry, so a packet sees either chain whole), and `old` is removed once no
    /// packet can still be in it. Refused while another chain calls `old`: those
    /// callers must be replaced too.
    pub fn replace_chain(&self, old: ChainId, spec: &ChainSpec<'_>) -> Result<ChainId> {
        let ChainId(old) = old;
        let _lock = self.lock()?;
        let old_meta = self.chain_meta(old)?;
        if old_meta.state != RecordState::Ready {
            return Err(RuntimeError::NotFound(format!("chain id {old}")));
        }
        let callers = self.chains_calling(|op| matches!(op, Op::CallChain { id, .. } if id == old))?;
        if !callers.is_empty() {
            return Err(RuntimeError::InUse {
                what: format!("chain {} (id {old})", old_meta.name),
                users: callers.join(", "),
            });
        }
        let new = self.install_chain_locked(spec)?;
        self.retarget_loader_entries(old, new.0)?;
        self.remove_chain_locked(old)?;
        Ok(new)
    }

    /// Removes chain `id`. Refused while a chain calls it or a loader starts it;
    /// returns once no packet can still be running it.
    pub fn remove_chain(&self, id: ChainId) -> Result<()> {
        let _lock = self.lock()?;
        self.remove_chains_locked(&[id.0])
    }

    /// Removes several chains with one wait for running packets (what replacing a
    /// generation removes). Chains of the batch may call each other; a chain
    /// outside it calling one, or a loader starting one, refuses them all.
    pub fn remove_chains(&self, ids: &[ChainId]) -> Result<()> {
        let _lock = self.lock()?;
        self.remove_chains_locked(&ids.iter().map(|c| c.0).collect::<Vec<_>>())
    }

    fn remove_chain_locked(&self, id: u32) -> Result<()> {
        self.remove_chains_locked(&[id])
    }

    fn remove_chains_locked(&self, batch: &[u32]) -> Result<()> {
        let mut going = Vec::new();
        for &id in batch {
            let meta = self.chain_meta(id)?;
            if meta.state == RecordState::Free {
                return Err(RuntimeError::NotFound(format!("chain id {id}")));
            }
            let mut users: Vec<String> = self
                .chain_callers(|op| matches!(op, Op::CallChain { id: c, .. } if c == id))?
                .into_iter()
                .filter(|(caller, _)| !batch.contains(caller))
                .map(|(_, name)| name)
                .collect();
            users.extend(self.loader_entries_starting(id)?);
            if !users.is_empty() {
                return Err(RuntimeError::InUse {
                    what: format!("chain {} (id {id})", meta.name),
                    users: users.join(", "),
                });
            }
            going.push(id);
        }
        // Their native programs first (the slots are cleared, not waited for: the
        // wait below covers them).
        for &id in &going {
            for hook in [Hook::Xdp, Hook::Tc] {
                if self.native_program(hook, id)?.is_some() {
                    self.maps.native(hook).delete(&key(id)).kernel(|| format!("clear native slot {id}"))?;
                }
            }
        }
        ebpkg_crashpoint::hit("chain-native-cleared");
        if going.is_empty() {
            return Ok(());
        }
        // Packets that entered before the last reference went away may still be
        // inside; the bytecode must outlive them.
        sys::wait_for_readers().io("cannot wait for running packets", self.root())?;
        for &id in &going {
            self.maps
                .chains
                .update(&key(id), &vec![0u8; abi::chain::SIZE], MapFlags::ANY)
                .kernel(|| format!("clear chain {id}"))?;
            ebpkg_crashpoint::hit("chain-cleared");
            self.set_chain_meta(id, &ChainMeta::free())?;
        }
        Ok(())
    }

    /// Gives installed chain `id` to `owner`: a deployment's new generation keeps
    /// a chain it did not change (same code, same id, its native program and
    /// counters), and the previous generation's removal leaves it alone.
    pub fn set_chain_owner(&self, id: ChainId, owner: &str) -> Result<()> {
        let _lock = self.lock()?;
        let mut meta = self.chain_meta(id.0)?;
        if meta.state != RecordState::Ready {
            return Err(RuntimeError::NotFound(format!("chain id {id}")));
        }
        meta.owner = owner.to_owned();
        self.set_chain_meta(id.0, &meta)
    }

    /// The owner of installed chain `id`.
    pub fn chain_owner(&self, id: ChainId) -> Result<Option<String>> {
        let meta = self.chain_meta(id.0)?;
        Ok((meta.state == RecordState::Ready).then_some(meta.owner))
    }

    /// The bytecode of installed chain `id` and the arguments it takes.
    pub fn chain_insns(&self, id: ChainId) -> Result<Option<(Vec<Insn>, u8)>> {
        self.chain_code(id.0)
    }

    /// The id of an installed chain with this name and owner.
    pub fn find_chain(&self, name: &str, owner: &str) -> Result<Option<ChainId>> {
        Ok(self
            .chain_records()?
            .into_iter()
            .find(|(_, m)| m.state == RecordState::Ready && m.name == name && m.owner == owner)
            .map(|(id, _)| ChainId(id)))
    }
}
