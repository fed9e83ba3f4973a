//! The entry point: a [`Deployer`] works on one state directory and one HIKe root,
//! and every operation first finishes or undoes whatever an interrupted run left.

use std::path::{Path, PathBuf};

use hike_runtime::{InitOptions, Layout, Runtime, RuntimeError};

use crate::error::{DeployError, Result};
use crate::journal::{Journal, JournalKind};
use crate::record::DeploymentRecord;
use crate::store::Store;

/// Installs, replaces and removes deployments.
#[derive(Debug)]
pub struct Deployer {
    pub(crate) store: Store,
    pub(crate) root: PathBuf,
    pub(crate) netns: Option<String>,
    /// Test hook: `EBPKG_CRASH_AT=<point>` makes the process kill itself with
    /// SIGKILL at that point, as `kill -9` would (see [`crate::CRASH_POINTS`]).
    crash_at: Option<String>,
}

/// Something a deployment operation did, for progress output.
#[derive(Debug, Clone)]
pub enum Event {
    /// An interrupted transaction was finished or undone.
    Recovered {
        deployment: String,
        how: &'static str,
    },
    Registered {
        package: String,
        program: String,
        id: u32,
        reused: bool,
    },
    ChainInstalled {
        script: String,
        chain: String,
        id: u32,
    },
    LoaderLoaded {
        instance: String,
    },
    Attached {
        instance: String,
        interface: String,
        how: &'static str,
    },
    Removed {
        what: String,
    },
}

/// What the points of `EBPKG_CRASH_AT` are called, in the order an install
/// reaches them.
pub const CRASH_POINTS: &[&str] = &[
    "begin",
    "registering",
    "registered",
    "chains",
    "loaders",
    "switching",
    "switched",
    "committed",
    "cleaned",
    "uninstalling",
];

impl Deployer {
    /// A deployer for the HIKe root `bpffs_root` (default
    /// [`hike_runtime::DEFAULT_ROOT`]) recording in `state_dir`. `netns` names the
    /// network namespace interfaces are looked up in.
    pub fn new(state_dir: &Path, bpffs_root: &Path, netns: Option<String>) -> Result<Deployer> {
        Ok(Deployer {
            store: Store::open(state_dir)?,
            root: bpffs_root.to_owned(),
            netns,
            crash_at: std::env::var("EBPKG_CRASH_AT").ok().filter(|s| !s.is_empty()),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub(crate) fn crash_point(&self, point: &str) {
        if self.crash_at.as_deref() == Some(point) {
            tracing::warn!(point, "EBPKG_CRASH_AT: killing this process");
            let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        }
    }

    /// The runtime at the root, created when missing.
    pub(crate) fn runtime(&self) -> Result<Runtime> {
        let layout = Layout::new(&self.root);
        let what = format!("the HIKe root {}", self.root.display());
        if layout.vm_map("hike_config").exists() {
            Runtime::open(&self.root).map_err(DeployError::runtime(format!("cannot open {what}")))
        } else {
            Runtime::init(&self.root, InitOptions::default())
                .map_err(DeployError::runtime(format!("cannot create {what}")))
        }
    }

    /// Finishes or undoes transactions interrupted by a crash or `kill -9`.
    /// Every other operation calls it first.
    pub fn recover(&self, on: &dyn Fn(&Event)) -> Result<()> {
        let _lock = self.store.lock()?;
        self.recover_locked(on)
    }

    pub(crate) fn recover_locked(&self, on: &dyn Fn(&Event)) -> Result<()> {
        for journal in self.store.journals()? {
            let how = self.recover_one(&journal)?;
            on(&Event::Recovered { deployment: journal.deployment.clone(), how });
        }
        Ok(())
    }

    fn recover_one(&self, journal: &Journal) -> Result<&'static str> {
        let rt = open_existing(&journal.bpffs_root)?;
        let how = match journal.kind {
            JournalKind::Install => {
                let committed = self.store.record(&journal.deployment)?.filter(|r| r.generation == journal.generation);
                match committed {
                    Some(record) => {
                        if let Some(rt) = &rt {
                            self.finish_cleanup(rt, journal.previous.as_ref(), Some(&record))?;
                        }
                        "finished the interrupted install"
                    }
                    None => {
                        if let Some(rt) = &rt {
                            let errors = self.rollback(rt, journal);
                            if !errors.is_empty() {
                                return Err(DeployError::RollbackFailed {
                                    error: Box::new(DeployError::CorruptState {
                                        path: self.store.dir().join("journal"),
                                        reason: format!("the install of {} was interrupted", journal.deployment),
                                    }),
                                    rollback: errors,
                                });
                            }
                        }
                        "rolled back the interrupted install"
                    }
                }
            }
            JournalKind::Uninstall => {
                if let Some(rt) = &rt {
                    self.finish_cleanup(rt, journal.previous.as_ref(), None)?;
                }
                self.store.remove_record(&journal.deployment)?;
                if let Some(rt) = rt {
                    self.destroy_if_unused(rt, &journal.bpffs_root)?;
                }
                "finished the interrupted uninstall"
            }
        };
        self.store.remove_journal(&journal.deployment)?;
        Ok(how)
    }

    /// Removes a deployment: its attachments, loaders, chains, and the programs no
    /// other deployment uses. The HIKe root goes too when nothing is left in it.
    pub fn uninstall(&self, name: &str, on: &dyn Fn(&Event)) -> Result<DeploymentRecord> {
        let _lock = self.store.lock()?;
        self.recover_locked(on)?;
        let Some(record) = self.store.record(name)? else {
            let known = self.store.records()?.into_iter().map(|r| r.name).collect();
            return Err(DeployError::NotDeployed { name: name.to_owned(), known });
        };
        let journal = Journal::uninstall(&record);
        self.store.save_journal(&journal)?;
        self.crash_point("uninstalling");
        if let Some(rt) = open_existing(&record.bpffs_root)? {
            self.finish_cleanup(&rt, Some(&record), None)?;
            on(&Event::Removed { what: format!("deployment {} (generation {})", record.name, record.generation) });
            self.store.remove_record(name)?;
            self.destroy_if_unused(rt, &record.bpffs_root)?;
        } else {
            self.store.remove_record(name)?;
        }
        self.store.remove_journal(name)?;
        Ok(record)
    }

    /// Removes the HIKe root when no deployment uses it and it holds nothing.
    fn destroy_if_unused(&self, rt: Runtime, root: &Path) -> Result<()> {
        if self.store.records()?.iter().any(|r| r.bpffs_root == root) {
            return Ok(());
        }
        let status = rt.status().map_err(DeployError::runtime("cannot read the HIKe root"))?;
        if status.programs.is_empty() && status.chains.is_empty() && status.loaders.is_empty() {
            drop(rt);
            Runtime::destroy(root).map_err(DeployError::runtime(format!("cannot remove {}", root.display())))?;
        }
        Ok(())
    }
}

/// The runtime at `root`, or None when there is none (after a reboot, bpffs is
/// empty: nothing of any deployment is left in the kernel).
pub(crate) fn open_existing(root: &Path) -> Result<Option<Runtime>> {
    if !Layout::new(root).vm_map("hike_config").exists() {
        return Ok(None);
    }
    match Runtime::open(root) {
        Ok(rt) => Ok(Some(rt)),
        Err(RuntimeError::NotInitialized { .. }) => Ok(None),
        Err(e) => {
            Err(DeployError::Runtime { what: format!("cannot open the HIKe root {}", root.display()), source: e })
        }
    }
}
