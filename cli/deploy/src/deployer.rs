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
    /// The network namespace given for this run; `None` keeps a deployment's own.
    pub(crate) netns: Option<String>,
    /// Compiles chains to native programs; without one every chain is interpreted.
    pub(crate) native: Option<std::sync::Arc<dyn crate::native::NativeCompiler>>,
}

/// Something a deployment operation did, for progress output.
/// How an interface got its new loader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attached {
    /// The previous loader's link was moved to the new one (one link update: no
    /// packet saw the interface without a program).
    Switched,
    /// The previous loader was detached and the new one attached (the mode changed).
    Replaced,
    /// Nothing was attached there before.
    New,
}

#[derive(Debug, Clone)]
pub enum Event {
    /// An interrupted transaction was finished or undone.
    Recovered {
        deployment: String,
        how: &'static str,
    },
    /// An interrupted transaction of another deployment could not be finished or
    /// undone; that deployment is left as it is and this operation goes on.
    RecoveryFailed {
        deployment: String,
        error: String,
    },
    Registered {
        package: ebpkg_spec::PackageId,
        program: String,
        id: hike_runtime::ProgId,
        reused: bool,
    },
    ChainInstalled {
        script: String,
        chain: String,
        id: hike_runtime::ChainId,
    },
    LoaderLoaded {
        instance: String,
    },
    Attached {
        instance: String,
        interface: String,
        how: Attached,
    },
    /// A map of a package whose version changed: kept, extended or started anew.
    MapState(crate::record::MapState),
    /// A setting of the current deployment carried over to the new generation.
    Kept {
        what: String,
    },
    Removed {
        what: String,
    },
    /// A chain a loader starts now runs natively, or stays interpreted (and why).
    Tiered {
        chain: String,
        id: hike_runtime::ChainId,
        tier: crate::native::Tier,
    },
}

/// What the points of `EBPKG_CRASH_AT` a deployment adds are called, in the
/// order an install reaches them (the runtime adds its own inside each step;
/// `EBPKG_CRASH_AFTER=N` counts them all, see [`ebpkg_crashpoint`]).
pub const CRASH_POINTS: &[&str] = &[
    "begin",
    "registering",
    "registered",
    "chains",
    "configuring",
    "loaders",
    "switching",
    "switched",
    "saved",
    "native",
    "committed",
    "cleaned",
    "uninstalling",
];

pub(crate) fn crash_point(point: &str) {
    ebpkg_crashpoint::hit(point);
}

impl Deployer {
    /// A deployer for the HIKe root `bpffs_root` (default
    /// [`hike_runtime::DEFAULT_ROOT`]) recording in `state_dir`. `netns` names the
    /// network namespace interfaces are looked up in (`None`: a deployment keeps
    /// the one it was installed in; a new one uses this process's).
    pub fn new(state_dir: &Path, bpffs_root: &Path, netns: Option<String>) -> Result<Deployer> {
        Ok(Deployer { store: Store::open(state_dir)?, root: bpffs_root.to_owned(), netns, native: None })
    }

    /// Compiles the chains loaders start to native programs with `compiler`
    /// when a plan's chain mode asks for it.
    pub fn with_native_compiler(mut self, compiler: std::sync::Arc<dyn crate::native::NativeCompiler>) -> Deployer {
        self.native = Some(compiler);
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What this state directory writes as the owner of the roots it manages.
    pub(crate) fn owner_tag(&self) -> String {
        let dir = std::fs::canonicalize(self.store.dir()).unwrap_or_else(|_| self.store.dir().to_owned());
        format!("ebpkg:{}", dir.display())
    }

    /// The runtime at `root`, created when missing, claimed for this state
    /// directory; refused when another state directory manages it.
    pub(crate) fn runtime_for_install(&self, root: &Path) -> Result<Runtime> {
        let layout = Layout::new(root);
        let what = format!("the HIKe root {}", root.display());
        let rt = if layout.vm_map("hike_config").exists() {
            match Runtime::open(root) {
                Ok(rt) => rt,
                Err(RuntimeError::NotInitialized { .. }) => Runtime::init(root, InitOptions::default())
                    .map_err(DeployError::runtime(format!("cannot create {what}")))?,
                Err(e) => return Err(DeployError::Runtime { what: format!("cannot open {what}"), cause: e }),
            }
        } else {
            Runtime::init(root, InitOptions::default())
                .map_err(DeployError::runtime(format!("cannot create {what}")))?
        };
        self.claim(&rt)?;
        Ok(rt)
    }

    fn claim(&self, rt: &Runtime) -> Result<()> {
        match rt.claim(&self.owner_tag()).map_err(DeployError::runtime("cannot read the owner of the HIKe root"))? {
            Ok(()) => Ok(()),
            Err(owner) => Err(DeployError::RootTaken { root: rt.root().to_owned(), owner }),
        }
    }

    /// The runtime at `root` if there is one this state directory may act on.
    pub(crate) fn existing_runtime(&self, root: &Path) -> Result<Option<Runtime>> {
        let Some(rt) = open_existing(root)? else { return Ok(None) };
        match rt.owner().map_err(DeployError::runtime("cannot read the owner of the HIKe root"))? {
            Some(owner) if owner != self.owner_tag() => Err(DeployError::RootTaken { root: root.to_owned(), owner }),
            _ => Ok(Some(rt)),
        }
    }

    /// Finishes or undoes transactions interrupted by a crash or `kill -9` (and
    /// removes the temporary files such a process left in the state directory). A
    /// transaction that cannot be is reported (`Event::RecoveryFailed`) and left
    /// for `ebpkg doctor`; it does not stop the others or this operation.
    pub fn recover(&self, on: &dyn Fn(&Event)) -> Result<()> {
        let _lock = self.store.lock()?;
        self.recover_locked(on, None)
    }

    /// Recovery before an operation on deployment `focus`: its own journal must
    /// recover (or the operation stops); the others' failures are reported.
    pub(crate) fn recover_locked(&self, on: &dyn Fn(&Event), focus: Option<&str>) -> Result<()> {
        self.store.remove_stale_temp_files();
        for name in self.store.journal_names()? {
            let result = self.recover_named(&name);
            match result {
                Ok(Some((deployment, how))) => on(&Event::Recovered { deployment, how }),
                Ok(None) => {}
                Err(e) if focus == Some(name.as_str()) => return Err(e),
                Err(e) => on(&Event::RecoveryFailed { deployment: name.clone(), error: e.to_string() }),
            }
        }
        Ok(())
    }

    fn recover_named(&self, name: &str) -> Result<Option<(String, &'static str)>> {
        let path = self.store.dir().join("journal").join(format!("{name}.json"));
        let journal = match self.store.journal(name) {
            Ok(Some(j)) => j,
            Ok(None) => return Ok(None),
            Err(e @ (DeployError::UnsafeState { .. } | DeployError::CorruptState { .. })) => {
                let moved = self.store.reject_journal(name)?;
                return Err(DeployError::RejectedJournal { path, reason: e.to_string(), moved });
            }
            Err(e) => return Err(e),
        };
        let current = self.store.record(&journal.deployment)?;
        if let Err(reason) = journal.check(name, current.as_ref()) {
            let moved = self.store.reject_journal(name)?;
            return Err(DeployError::RejectedJournal { path, reason, moved });
        }
        let how = self.recover_one(&journal, current)?;
        Ok(Some((journal.deployment.clone(), how)))
    }

    fn recover_one(&self, journal: &Journal, current: Option<DeploymentRecord>) -> Result<&'static str> {
        let rt = self.existing_runtime(&journal.bpffs_root)?;
        let how = match journal.kind {
            JournalKind::Install => match current.filter(|r| r.generation == journal.generation) {
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
                    drop(rt);
                    self.destroy_if_unused(&journal.bpffs_root)?;
                    "rolled back the interrupted install"
                }
            },
            JournalKind::Uninstall => {
                if let Some(rt) = &rt {
                    self.finish_cleanup(rt, journal.previous.as_ref(), None)?;
                }
                self.store.remove_record(&journal.deployment)?;
                drop(rt);
                self.destroy_if_unused(&journal.bpffs_root)?;
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
        self.recover_locked(on, Some(name))?;
        let Some(record) = self.store.record(name)? else {
            let known = self.store.records()?.into_iter().map(|r| r.name).collect();
            return Err(DeployError::NotDeployed { name: name.to_owned(), known });
        };
        let rt = self.existing_runtime(&record.bpffs_root)?;
        let journal = Journal::uninstall(&record);
        self.store.save_journal(&journal)?;
        crash_point("uninstalling");
        if let Some(rt) = &rt {
            self.finish_cleanup(rt, Some(&record), None)?;
        }
        on(&Event::Removed { what: format!("deployment {} (generation {})", record.name, record.generation) });
        self.store.remove_record(name)?;
        crash_point("uninstalled");
        self.store.forget_generations(name)?;
        drop(rt);
        self.destroy_if_unused(&record.bpffs_root)?;
        self.store.remove_journal(name)?;
        Ok(record)
    }

    /// Removes the HIKe root when no deployment of this state directory uses it
    /// and it holds nothing (half-made roots included).
    pub(crate) fn destroy_if_unused(&self, root: &Path) -> Result<()> {
        if !root.exists() || self.store.records()?.iter().any(|r| r.bpffs_root == root) {
            return Ok(());
        }
        let empty = match self.existing_runtime(root)? {
            Some(rt) => {
                let status = rt.status().map_err(DeployError::runtime("cannot read the HIKe root"))?;
                status.programs.is_empty() && status.chains.is_empty() && status.loaders.is_empty()
            }
            // No runtime: an init that died (what it left was never used), or an
            // empty directory.
            None => true,
        };
        if !empty {
            return Ok(());
        }
        let layout = Layout::new(root);
        if layout.vm_dir().exists() || layout.vm_map("hike_config").exists() {
            Runtime::destroy(root).map_err(DeployError::runtime(format!("cannot remove {}", root.display())))?;
        } else if std::fs::read_dir(root).is_ok_and(|mut d| d.next().is_none()) {
            std::fs::remove_dir(root).map_err(|cause| DeployError::Io {
                what: "cannot remove",
                path: root.to_owned(),
                cause,
            })?;
        }
        Ok(())
    }
}

/// The runtime at `root`, or None when there is none (after a reboot, bpffs is
/// empty: nothing of any deployment is left in the kernel; or an init died).
pub(crate) fn open_existing(root: &Path) -> Result<Option<Runtime>> {
    if !Layout::new(root).vm_map("hike_config").exists() {
        return Ok(None);
    }
    match Runtime::open(root) {
        Ok(rt) => Ok(Some(rt)),
        Err(RuntimeError::NotInitialized { .. }) => Ok(None),
        Err(e) => Err(DeployError::Runtime { what: format!("cannot open the HIKe root {}", root.display()), cause: e }),
    }
}
