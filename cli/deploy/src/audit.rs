//! What `ebpkg doctor` sees: every way the host's state can disagree with the
//! records — interrupted or refused transactions, objects in a root that no
//! deployment owns (what a journal that could not be acted on leaves), links
//! whose interface is gone, records whose root is gone — and how to repair each.
//! [`Deployer::repair`] does the repairs that no ordinary command would.

use std::collections::BTreeSet;
use std::path::PathBuf;

use hike_runtime::Runtime;
use serde::Serialize;

use crate::deployer::Deployer;
use crate::error::{DeployError, Result};
use crate::record::DeploymentRecord;

/// One inconsistency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What is wrong, where.
    pub what: String,
    /// What repairs it.
    pub fix: Fix,
}

/// How a finding is repaired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Fix {
    /// The next `ebpkg install`, `uninstall` or `status` does it (finishing or
    /// undoing an interrupted transaction).
    NextCommand,
    /// `ebpkg install` of the deployment's project (a defunct link, a root
    /// emptied by a reboot); doctor cannot rebuild it.
    Reinstall {
        deployment: String,
    },
    /// Looked at by a person: doctor does not remove evidence (refused journals).
    Inspect {
        path: PathBuf,
    },
    /// `doctor --fix` removes these objects no deployment owns.
    RemoveChain {
        root: PathBuf,
        id: hike_runtime::ChainId,
    },
    UnloadLoader {
        root: PathBuf,
        instance: String,
    },
    UnregisterProgram {
        root: PathBuf,
        id: hike_runtime::ProgId,
    },
    /// `doctor --fix` removes a root with no deployment and nothing in it.
    RemoveRoot {
        root: PathBuf,
    },
    /// `doctor --fix` (or the next `install`, `uninstall` or `status`) removes a
    /// temporary file or directory a killed process left.
    RemoveFile {
        path: PathBuf,
    },
}

/// What [`Deployer::repair`] did.
#[derive(Debug, Default)]
pub struct Repaired {
    pub done: Vec<Finding>,
    /// What could not be repaired, and why.
    pub failed: Vec<(Finding, String)>,
}

impl Deployer {
    /// Everything inconsistent in the state directory and the roots its records
    /// (and this deployer) use. Changes nothing beyond what opening a root
    /// repairs by itself.
    pub fn audit(&self) -> Result<Vec<Finding>> {
        let _lock = self.store.lock()?;
        self.audit_locked()
    }

    fn audit_locked(&self) -> Result<Vec<Finding>> {
        let mut out = Vec::new();
        for name in self.store.journal_names()? {
            out.push(Finding {
                what: format!("deployment {name} has an interrupted transaction"),
                fix: Fix::NextCommand,
            });
        }
        let rejected = self.store.dir().join("journal").join("rejected");
        for e in std::fs::read_dir(&rejected).into_iter().flatten().flatten() {
            out.push(Finding {
                what: format!(
                    "{} is a journal ebpkg refused to act on (see the warning printed when it was moved); what its \
                     transaction made is reported below as owned by no deployment",
                    e.path().display()
                ),
                fix: Fix::Inspect { path: e.path() },
            });
        }
        for path in self.store.stale_temp_files() {
            out.push(Finding {
                what: format!("{} was being written by a process that died", path.display()),
                fix: Fix::RemoveFile { path },
            });
        }
        let records = self.store.records()?;
        let mut roots: BTreeSet<PathBuf> = records.iter().map(|r| r.bpffs_root.clone()).collect();
        roots.insert(self.root.clone());
        for root in &roots {
            let mine: Vec<&DeploymentRecord> = records.iter().filter(|r| &r.bpffs_root == root).collect();
            let rt = match self.existing_runtime(root) {
                Ok(Some(rt)) => rt,
                Ok(None) => {
                    for r in &mine {
                        out.push(Finding {
                            what: format!(
                                "deployment {} is recorded in {}, which does not exist (bpffs is emptied by a reboot)",
                                r.name,
                                root.display()
                            ),
                            fix: Fix::Reinstall { deployment: r.name.clone() },
                        });
                    }
                    continue;
                }
                Err(e @ DeployError::RootTaken { .. }) => {
                    out.push(Finding { what: e.to_string(), fix: Fix::Inspect { path: root.clone() } });
                    continue;
                }
                Err(e) => return Err(e),
            };
            // Only a root this state directory claimed is all ours: one made by
            // hand (hikectl) may hold what no record names, on purpose.
            let claimed = rt.owner().map_err(DeployError::runtime("cannot read the owner of the HIKe root"))?
                == Some(self.owner_tag());
            if claimed {
                out.extend(orphans(&rt, &mine)?);
            }
            for r in &mine {
                for p in crate::status::problems(&rt, r) {
                    out.push(Finding {
                        what: format!("deployment {}: {p}", r.name),
                        fix: Fix::Reinstall { deployment: r.name.clone() },
                    });
                }
            }
            if claimed && mine.is_empty() && self.store.journal_names()?.is_empty() {
                let s = rt.status().map_err(DeployError::runtime("cannot read the HIKe root"))?;
                if s.programs.is_empty() && s.chains.is_empty() && s.loaders.is_empty() {
                    out.push(Finding {
                        what: format!("{} holds nothing and no deployment uses it", root.display()),
                        fix: Fix::RemoveRoot { root: root.clone() },
                    });
                }
            }
        }
        Ok(out)
    }

    /// Finishes interrupted transactions, then removes what no deployment owns
    /// (loaders before the chains they start, chains before the programs they
    /// call). Returns what was repaired and what could not be; what needs a
    /// person or a reinstall stays as it is.
    pub fn repair(&self, on: &dyn Fn(&crate::Event)) -> Result<Repaired> {
        let _lock = self.store.lock()?;
        // Recovery removes these too; done first, so they are reported as repaired.
        let mut done: Vec<Finding> = self
            .store
            .remove_stale_temp_files()
            .into_iter()
            .map(|path| Finding {
                what: format!("{} was being written by a process that died", path.display()),
                fix: Fix::RemoveFile { path },
            })
            .collect();
        self.recover_locked(on, None)?;
        let findings = self.audit_locked()?;
        let mut failed = Vec::new();
        let order = |f: &Finding| match f.fix {
            Fix::UnloadLoader { .. } => 0,
            Fix::RemoveChain { .. } => 1,
            Fix::UnregisterProgram { .. } => 2,
            Fix::RemoveRoot { .. } | Fix::RemoveFile { .. } => 3,
            _ => 4,
        };
        let mut todo: Vec<&Finding> = findings.iter().filter(|f| order(f) < 4).collect();
        todo.sort_by_key(|f| order(f));
        for f in todo {
            let result = match &f.fix {
                Fix::UnloadLoader { root, instance } => Runtime::open(root).and_then(|rt| rt.unload_loader(instance)),
                Fix::RemoveChain { root, id } => Runtime::open(root).and_then(|rt| rt.remove_chain(*id)),
                Fix::UnregisterProgram { root, id } => Runtime::open(root).and_then(|rt| rt.unregister_program(*id)),
                Fix::RemoveRoot { root } => Runtime::destroy(root),
                Fix::RemoveFile { path } if path.is_dir() => std::fs::remove_dir_all(path).map_err(|cause| {
                    hike_runtime::RuntimeError::Io { what: "cannot remove", path: path.clone(), cause }
                }),
                Fix::RemoveFile { path } => std::fs::remove_file(path).map_err(|cause| {
                    hike_runtime::RuntimeError::Io { what: "cannot remove", path: path.clone(), cause }
                }),
                _ => continue,
            };
            match result {
                Ok(()) => done.push(f.clone()),
                Err(e) => failed.push((f.clone(), e.to_string())),
            }
        }
        Ok(Repaired { done, failed })
    }
}

/// Loaders, chains and programs in `rt` that none of `records` owns.
fn orphans(rt: &Runtime, records: &[&DeploymentRecord]) -> Result<Vec<Finding>> {
    let status = rt.status().map_err(DeployError::runtime("cannot read the HIKe root"))?;
    let root = rt.root().to_owned();
    let mut out = Vec::new();
    for l in &status.loaders {
        if !records.iter().any(|r| r.loaders.iter().any(|x| x.instance == l.instance)) {
            out.push(Finding {
                what: format!("loader instance {} in {} belongs to no deployment", l.instance, root.display()),
                fix: Fix::UnloadLoader { root: root.clone(), instance: l.instance.clone() },
            });
        }
    }
    for c in &status.chains {
        if !records.iter().any(|r| r.chain_owner() == c.owner && r.chains.iter().any(|x| x.id == c.id)) {
            out.push(Finding {
                what: format!(
                    "chain {} (id {}, owner {}) in {} belongs to no deployment",
                    c.name,
                    c.id,
                    c.owner,
                    root.display()
                ),
                fix: Fix::RemoveChain { root: root.clone(), id: c.id },
            });
        }
    }
    for p in &status.programs {
        if !records.iter().any(|r| r.programs.iter().any(|x| x.id == p.id && x.name == p.name)) {
            out.push(Finding {
                what: format!(
                    "program {}@{} {} (id {}) in {} belongs to no deployment",
                    p.package,
                    p.version,
                    p.name,
                    p.id,
                    root.display()
                ),
                fix: Fix::UnregisterProgram { root: root.clone(), id: p.id },
            });
        }
    }
    Ok(out)
}
