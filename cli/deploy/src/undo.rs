//! Taking things away again: rolling back an uncommitted install from its
//! journal, and removing what a replaced (or uninstalled) deployment owned. Every
//! step checks what is really there first, so each can run any number of times —
//! a crash during recovery is recovered by the next run.

use std::collections::BTreeSet;

use hike_bytecode::Hook;
use hike_runtime::{AttachMode, Runtime, RuntimeError};

use crate::deployer::Deployer;
use crate::error::{DeployError, Result};
use crate::journal::{Journal, Step};
use crate::netns;
use crate::record::DeploymentRecord;

impl Deployer {
    /// Undoes an uncommitted install, newest step first. Returns what could not be
    /// undone (empty when everything was).
    pub(crate) fn rollback(&self, rt: &Runtime, journal: &Journal) -> Vec<String> {
        let mut errors = Vec::new();
        let mut note = |r: std::result::Result<(), String>| {
            if let Err(e) = r {
                errors.push(e);
            }
        };
        // Traffic first goes back to the previous deployment's loaders...
        for step in journal.steps.iter().rev() {
            match step {
                Step::Switch { interface, from, to } => {
                    if has_loader(rt, from) && has_loader(rt, to) {
                        note(
                            ignore_missing(rt.switch_loader(to, from, interface))
                                .map_err(|e| format!("cannot switch {interface} back from {to} to {from}: {e}")),
                        );
                    }
                }
                Step::Replace { interface, from, from_mode, to, .. } => {
                    if attached(rt, to, interface) {
                        note(ignore_missing(rt.detach_loader(to, interface)).map_err(|e| e.to_string()));
                    }
                    if has_loader(rt, from) && !attached(rt, from, interface) {
                        note(
                            self.attach(rt, journal.netns.as_deref(), from, interface, *from_mode)
                                .map_err(|e| e.to_string()),
                        );
                    }
                }
                Step::Attach { interface, to, .. } => {
                    if attached(rt, to, interface) {
                        note(ignore_missing(rt.detach_loader(to, interface)).map_err(|e| e.to_string()));
                    }
                }
                Step::LoadLoader { .. } | Step::Register { .. } => {}
            }
        }
        // ...then the new loaders, chains and programs go, in the order that keeps
        // every reference valid (loaders start chains, chains call programs).
        for step in journal.steps.iter().rev() {
            if let Step::LoadLoader { instance } = step
                && has_loader(rt, instance)
            {
                note(ignore_missing(rt.unload_loader(instance)).map_err(|e| e.to_string()));
            }
        }
        note(remove_owned_chains(rt, &journal.chain_owner()));
        // Programs the install registered go unless a committed deployment uses
        // their version (a journal never removes what a record names).
        let in_use: BTreeSet<(String, String, Hook)> = match self.store.records() {
            Ok(records) => records
                .iter()
                .filter(|r| r.bpffs_root == journal.bpffs_root)
                .flat_map(|r| r.program_versions())
                .collect(),
            Err(e) => {
                errors.push(e.to_string());
                return errors;
            }
        };
        for step in journal.steps.iter().rev() {
            if let Step::Register { package, version, hook, programs } = step {
                if in_use.contains(&(package.clone(), version.clone(), *hook)) {
                    continue;
                }
                for name in programs {
                    note(unregister(rt, package, version, name, *hook));
                }
            }
        }
        errors
    }

    /// Removes what `previous` owned and `current` (the deployment replacing it, if
    /// any) does not use. Programs stay while any deployment uses their version.
    pub(crate) fn finish_cleanup(
        &self,
        rt: &Runtime,
        previous: Option<&DeploymentRecord>,
        current: Option<&DeploymentRecord>,
    ) -> Result<()> {
        let Some(prev) = previous else { return Ok(()) };
        let fail = |e: String| DeployError::Runtime {
            what: format!("cannot remove what the previous generation of {} installed", prev.name),
            cause: RuntimeError::Loader { loader: prev.name.clone(), reason: e },
        };
        for l in &prev.loaders {
            if current.is_some_and(|c| c.loaders.iter().any(|n| n.instance == l.instance)) {
                continue;
            }
            if has_loader(rt, &l.instance) {
                ignore_missing(rt.unload_loader(&l.instance)).map_err(|e| fail(e.to_string()))?;
            }
        }
        if current.is_none_or(|c| c.chain_owner() != prev.chain_owner()) {
            remove_owned_chains(rt, &prev.chain_owner()).map_err(fail)?;
        }
        let mut keep: BTreeSet<(String, String, Hook)> = BTreeSet::new();
        if let Some(c) = current {
            keep.extend(c.program_versions());
        }
        for other in self.store.records()? {
            if other.name != prev.name && other.bpffs_root == prev.bpffs_root {
                keep.extend(other.program_versions());
            }
        }
        for p in &prev.programs {
            if !keep.contains(&(p.package.clone(), p.version.clone(), p.hook)) {
                unregister(rt, &p.package, &p.version, &p.name, p.hook).map_err(fail)?;
            }
        }
        Ok(())
    }

    /// Attaches `instance` to `interface` in the deployment's network namespace.
    pub(crate) fn attach(
        &self,
        rt: &Runtime,
        netns: Option<&str>,
        instance: &str,
        interface: &str,
        mode: AttachMode,
    ) -> Result<()> {
        let root = rt.root().to_owned();
        let (i, n) = (instance.to_owned(), interface.to_owned());
        // The namespace is entered on another thread, which opens its own handle.
        netns::run_in(netns, move || Runtime::open(&root).and_then(|rt| rt.attach_loader(&i, &n, mode)))?
            .map_err(DeployError::runtime(format!("cannot attach {instance} to {interface}")))
    }
}

fn has_loader(rt: &Runtime, instance: &str) -> bool {
    rt.loader_info(instance).is_ok()
}

fn attached(rt: &Runtime, instance: &str, interface: &str) -> bool {
    rt.loader_info(instance).is_ok_and(|i| i.attachments.iter().any(|a| a.interface == interface))
}

fn ignore_missing(r: hike_runtime::Result<()>) -> std::result::Result<(), String> {
    match r {
        Ok(()) | Err(RuntimeError::NotFound(_)) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Removes every chain of `owner`; chains called by others go after their callers.
pub(crate) fn remove_owned_chains(rt: &Runtime, owner: &str) -> std::result::Result<(), String> {
    loop {
        let status = rt.status().map_err(|e| e.to_string())?;
        let owned: Vec<_> = status.chains.iter().filter(|c| c.owner == owner).collect();
        if owned.is_empty() {
            return Ok(());
        }
        let mut last_error = None;
        let mut removed = false;
        for c in owned {
            match rt.remove_chain(c.id) {
                Ok(()) | Err(RuntimeError::NotFound(_)) => removed = true,
                Err(e) => last_error = Some(e.to_string()),
            }
        }
        if !removed {
            return Err(last_error.unwrap_or_else(|| format!("cannot remove the chains of {owner}")));
        }
    }
}

/// Unregisters one program if it is registered.
fn unregister(rt: &Runtime, package: &str, version: &str, name: &str, hook: Hook) -> std::result::Result<(), String> {
    match rt.find_program(package, version, name, hook) {
        Ok(Some(id)) => ignore_missing(rt.unregister_program(id)),
        Ok(None) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}
