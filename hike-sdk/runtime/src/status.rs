//! What an instance holds and how it has been used: registered programs, installed
//! chains, loaders and their attachments, and the counters summed over CPUs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hike_bytecode::{AbortReason, Hook};
use libbpf_rs::{MapCore, MapFlags};
use serde::Serialize;

use crate::abi::{self, state};
use crate::error::{KernelContext, Result};
use crate::loaders::LoaderInfo;
use crate::meta::RecordState;
use crate::runtime::{Runtime, key};
use hike_bytecode::{ChainId, ProgId};

/// A registered program and how often chains called it (since it got its id).
#[derive(Debug, Clone, Serialize)]
pub struct ProgramStatus {
    pub id: ProgId,
    pub name: String,
    pub package: String,
    pub version: String,
    pub hook: Hook,
    pub nargs: u8,
    pub bpf_id: u32,
    pub calls: u64,
}

/// An installed chain and how often it ran.
#[derive(Debug, Clone, Serialize)]
pub struct ChainStatus {
    pub id: ChainId,
    pub name: String,
    pub owner: String,
    pub hook: Hook,
    pub instructions: u32,
    pub nargs: u8,
    pub depth: u8,
    pub runs: u64,
}

/// Everything about an instance.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub root: PathBuf,
    pub abi_version: u32,
    pub budget: u32,
    pub programs: Vec<ProgramStatus>,
    pub chains: Vec<ChainStatus>,
    pub loaders: Vec<LoaderInfo>,
    /// Aborted packets by reason (only reasons that happened).
    pub aborts: BTreeMap<String, u64>,
}

/// Counters summed over all CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    pub prog_calls: Vec<u64>,
    pub chain_runs: Vec<u64>,
    pub aborts: Vec<u64>,
}

impl Counters {
    /// Aborts for one reason.
    pub fn aborted(&self, reason: AbortReason) -> u64 {
        self.aborts.get(reason as usize).copied().unwrap_or(0)
    }
}

impl Runtime {
    /// The per-CPU state values, one per possible CPU.
    pub fn raw_states(&self) -> Result<Vec<Vec<u8>>> {
        Ok(self
            .maps
            .state
            .lookup_percpu(&key(0), MapFlags::ANY)
            .kernel(|| "read hike_state".into())?
            .unwrap_or_default())
    }

    /// The counters, summed over CPUs.
    pub fn counters(&self) -> Result<Counters> {
        let states = self.raw_states()?;
        let sum = |base: usize, n: usize| -> Vec<u64> {
            (0..n).map(|i| states.iter().map(|s| abi::u64_at(s, base + i * 8)).sum()).collect()
        };
        Ok(Counters {
            prog_calls: sum(state::PROG_CALLS, hike_bytecode::limits::MAX_PROGS as usize),
            chain_runs: sum(state::CHAIN_RUNS, hike_bytecode::limits::MAX_CHAINS as usize),
            aborts: sum(state::ABORTS, abi::ABORT_MAX),
        })
    }

    /// Everything about the instance.
    pub fn status(&self) -> Result<Status> {
        let counters = self.counters()?;
        let config =
            self.maps.config.lookup(&key(0), MapFlags::ANY).kernel(|| "read hike_config".into())?.unwrap_or_default();
        let programs = self
            .prog_records()?
            .into_iter()
            // Id 0 is the VM's own continuation, not a user's program.
            .filter(|(id, m)| *id != 0 && m.state == RecordState::Ready)
            .map(|(id, m)| ProgramStatus {
                id: ProgId(id),
                name: m.name,
                package: m.package,
                version: m.version,
                hook: m.hook,
                nargs: m.nargs,
                bpf_id: m.bpf_id,
                calls: counters.prog_calls.get(id as usize).copied().unwrap_or(0).saturating_sub(m.calls_base),
            })
            .collect();
        let chains = self
            .chain_records()?
            .into_iter()
            .filter(|(_, m)| m.state == RecordState::Ready)
            .map(|(id, m)| ChainStatus {
                id: ChainId(id),
                name: m.name,
                owner: m.owner,
                hook: m.hook,
                instructions: m.len,
                nargs: m.nargs,
                depth: m.depth,
                runs: counters.chain_runs.get(id as usize).copied().unwrap_or(0).saturating_sub(m.runs_base),
            })
            .collect();
        let aborts = AbortReason::ALL
            .into_iter()
            .filter_map(|r| {
                let n = counters.aborted(r);
                (n > 0).then(|| (r.name().to_owned(), n))
            })
            .collect();
        Ok(Status {
            root: self.root().to_owned(),
            abi_version: abi::u32_at(&config, abi::config::ABI_VERSION),
            budget: abi::u32_at(&config, abi::config::BUDGET),
            programs,
            chains,
            loaders: self.loaders()?,
            aborts,
        })
    }
}
