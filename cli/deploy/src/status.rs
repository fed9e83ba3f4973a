//! What is deployed and whether it is really running: each record checked against
//! the kernel, with the VM's counters.

use serde::Serialize;

use hike_runtime::Runtime;

use crate::deployer::Deployer;
use crate::error::Result;
use crate::record::DeploymentRecord;

/// A deployment as recorded and as found.
#[derive(Debug, Clone, Serialize)]
pub struct DeploymentStatus {
    #[serde(flatten)]
    pub record: DeploymentRecord,
    /// True when everything recorded is in place.
    pub running: bool,
    /// What is recorded but missing (after a reboot: everything).
    pub problems: Vec<String>,
    /// Calls per program id since the id was assigned. A program version is
    /// shared by every deployment of the root that uses it, so these count the
    /// calls of all of them (`shared_with` names the others).
    pub program_calls: Vec<(hike_runtime::ProgId, u64)>,
    /// Runs per chain id since the chain was installed (chains are the
    /// deployment's own).
    pub chain_runs: Vec<(hike_runtime::ChainId, u64)>,
    /// Other deployments of the same root using some of the same program versions.
    pub shared_with: Vec<String>,
    /// Packets the VM aborted (budget, depth, …) on the deployment's root, by
    /// reason: counted per root, for all its deployments together.
    pub root_aborts: std::collections::BTreeMap<String, u64>,
}

impl Deployer {
    /// Every deployment of the state directory (finishing interrupted work first).
    pub fn status(&self, on: &dyn Fn(&crate::Event)) -> Result<Vec<DeploymentStatus>> {
        self.recover(on)?;
        let records = self.store.records()?;
        let mut out = Vec::new();
        for record in &records {
            let shared_with = records
                .iter()
                .filter(|o| o.name != record.name && o.bpffs_root == record.bpffs_root)
                .filter(|o| o.program_versions().iter().any(|v| record.program_versions().contains(v)))
                .map(|o| o.name.clone())
                .collect();
            let rt = match self.existing_runtime(&record.bpffs_root) {
                Ok(rt) => rt,
                Err(e) => {
                    out.push(DeploymentStatus {
                        running: false,
                        record: record.clone(),
                        problems: vec![e.to_string()],
                        program_calls: Vec::new(),
                        chain_runs: Vec::new(),
                        shared_with,
                        root_aborts: Default::default(),
                    });
                    continue;
                }
            };
            let (problems, program_calls, chain_runs, root_aborts) = match &rt {
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
                    let status = rt.status().ok();
                    let calls = record
                        .programs
                        .iter()
                        .map(|p| {
                            let n =
                                status.iter().flat_map(|s| &s.programs).find(|s| s.id == p.id).map_or(0, |s| s.calls);
                            (p.id, n)
                        })
                        .collect();
                    let runs = record
                        .chains
                        .iter()
                        .map(|c| {
                            let n = status.iter().flat_map(|s| &s.chains).find(|s| s.id == c.id).map_or(0, |s| s.runs);
                            (c.id, n)
                        })
                        .collect();
                    let aborts = status.map(|s| s.aborts).unwrap_or_default();
                    (problems(rt, record), calls, runs, aborts)
                }
            };
            out.push(DeploymentStatus {
                running: problems.is_empty(),
                record: record.clone(),
                problems,
                program_calls,
                chain_runs,
                shared_with,
                root_aborts,
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
            s.id == p.id
                && s.name == p.name
                && s.package == p.package.as_str()
                && s.version == p.version.to_string()
                && s.hook == p.hook
        });
        if !ok {
            out.push(format!("program {}@{} {} (id {}) is not registered", p.package, p.version, p.name, p.id));
        }
    }
    let owner = record.chain_owner();
    for c in &record.chains {
        if !status.chains.iter().any(|s| s.id == c.id && s.owner == owner) {
            out.push(format!("chain {} (id {}) is not installed", c.name, c.id));
        } else if let Some(crate::native::Tier::Native { bpf_id, .. }) = &c.tier {
            let found = rt.native_of(c.id).ok().flatten();
            if found != Some(*bpf_id) {
                out.push(format!(
                    "chain {} (id {}) should run as native program {bpf_id}, but {}; `ebpkg install --force` compiles it again",
                    c.name,
                    c.id,
                    match found {
                        None => "its slot is empty (it is interpreted)".to_owned(),
                        Some(other) => format!("its slot holds program {other}"),
                    }
                ));
            }
        }
    }
    for l in &record.loaders {
        match status.loaders.iter().find(|s| s.instance == l.instance) {
            None => out.push(format!("loader instance {} is not loaded", l.instance)),
            Some(s) => {
                let mut want = l.attachments.clone();
                want.sort();
                for a in &want {
                    match s.attachments.iter().find(|x| x.interface == a.interface && x.mode == a.mode) {
                        None => {
                            out.push(format!("loader {} is not attached to {} ({})", l.instance, a.interface, a.mode))
                        }
                        Some(x) if x.defunct => out.push(format!(
                            "loader {}'s link to {} ({}) is defunct: the interface was deleted (perhaps re-created); \
                             `ebpkg install` attaches it again",
                            l.instance, a.interface, a.mode
                        )),
                        Some(_) => {}
                    }
                }
            }
        }
    }
    out
}
