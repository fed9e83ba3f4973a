//! What is deployed and whether it is really running: each record checked against
//! the kernel, with the VM's counters.

use serde::Serialize;

use hike_runtime::Runtime;

use crate::deployer::{Deployer, open_existing};
use crate::error::Result;
use crate::record::{DeploymentRecord, RecordedAttachment};

/// A deployment as recorded and as found.
#[derive(Debug, Clone, Serialize)]
pub struct DeploymentStatus {
    #[serde(flatten)]
    pub record: DeploymentRecord,
    /// True when everything recorded is in place.
    pub running: bool,
    /// What is recorded but missing (after a reboot: everything).
    pub problems: Vec<String>,
    /// Calls per program id and runs per chain id, as the VM counted them.
    pub program_calls: Vec<(u32, u64)>,
    pub chain_runs: Vec<(u32, u64)>,
    /// Packets aborted by the VM (budget, depth, …) on this root, by reason.
    pub aborts: std::collections::BTreeMap<String, u64>,
}

impl Deployer {
    /// Every deployment of the state directory (finishing interrupted work first).
    pub fn status(&self, on: &dyn Fn(&crate::Event)) -> Result<Vec<DeploymentStatus>> {
        self.recover(on)?;
        let mut out = Vec::new();
        for record in self.store.records()? {
            let rt = open_existing(&record.bpffs_root)?;
            let (problems, program_calls, chain_runs, aborts) = match &rt {
                None => (
                    vec![format!(
                        "the HIKe root {} does not exist (bpffs is emptied by a reboot); run `ebpkg install` again",
                        record.bpffs_root.display()
                    )],
                    Vec::new(),
                    Vec::new(),
                    Default::default(),
                ),
                Some(rt) => {
                    let counters = rt.counters().ok();
                    let count =
                        |v: Option<&Vec<u64>>, id: u32| v.and_then(|v| v.get(id as usize)).copied().unwrap_or(0);
                    let calls = record
                        .programs
                        .iter()
                        .map(|p| (p.id, count(counters.as_ref().map(|c| &c.prog_calls), p.id)))
                        .collect();
                    let runs = record
                        .chains
                        .iter()
                        .map(|c| (c.id, count(counters.as_ref().map(|c| &c.chain_runs), c.id)))
                        .collect();
                    let aborts = rt.status().map(|s| s.aborts).unwrap_or_default();
                    (problems(rt, &record), calls, runs, aborts)
                }
            };
            out.push(DeploymentStatus {
                running: problems.is_empty(),
                record,
                problems,
                program_calls,
                chain_runs,
                aborts,
            });
        }
        Ok(out)
    }
}

/// What of `record` is not in the kernel as recorded.
pub(crate) fn problems(rt: &Runtime, record: &DeploymentRecord) -> Vec<String> {
    let status = match rt.status() {
        Ok(s) => s,
        Err(e) => return vec![format!("cannot read the HIKe root: {e}")],
    };
    let mut out = Vec::new();
    for p in &record.programs {
        let ok = status.programs.iter().any(|s| {
            s.id == p.id && s.name == p.name && s.package == p.package && s.version == p.version && s.hook == p.hook
        });
        if !ok {
            out.push(format!("program {}@{} {} (id {}) is not registered", p.package, p.version, p.name, p.id));
        }
    }
    let owner = record.chain_owner();
    for c in &record.chains {
        if !status.chains.iter().any(|s| s.id == c.id && s.owner == owner) {
            out.push(format!("chain {} (id {}) is not installed", c.name, c.id));
        }
    }
    for l in &record.loaders {
        match status.loaders.iter().find(|s| s.instance == l.instance) {
            None => out.push(format!("loader instance {} is not loaded", l.instance)),
            Some(s) => {
                let mut live: Vec<RecordedAttachment> = s
                    .attachments
                    .iter()
                    .map(|a| RecordedAttachment { interface: a.interface.clone(), mode: a.mode.clone() })
                    .collect();
                live.sort();
                let mut want = l.attachments.clone();
                want.sort();
                for a in want.iter().filter(|a| !live.contains(a)) {
                    out.push(format!("loader {} is not attached to {} ({})", l.instance, a.interface, a.mode));
                }
            }
        }
    }
    out
}
