//! Taking things away again: rolling back an uncommitted install from its
//! journal, and removing what a replaced (or uninstalled) deployment owned. Every
//! step checks what is really there first, so each can run any number of times —
//! a crash during recovery is recovered by the next run.

use std::collections::BTreeSet;

use ebpkg_spec::PackageName;
use hike_bytecode::Hook;
use hike_runtime::{AttachMode, Runtime, RuntimeError};
use semver::Version;

use crate::deployer::Deployer;
use crate::error::{DeployError, Result};
use crate::journal::{ConfigEntry, Journal, Step};
use crate::netns;
use crate::record::DeploymentRecord;

/// What undoing a journal does to the host, each operation checking what is
/// really there first (so undoing can run any number of times). The runtime
/// implements it ([`KernelHost`]); the unit tests below use a model of a host.
pub(crate) trait UndoHost {
    fn has_loader(&self, instance: &str) -> bool;
    fn attached(&self, instance: &str, interface: &str) -> bool;
    /// Moves `interface`'s link from `from` to `to`.
    fn switch_loader(&self, from: &str, to: &str, interface: &str) -> std::result::Result<(), String>;
    fn detach(&self, instance: &str, interface: &str) -> std::result::Result<(), String>;
    fn attach(&self, instance: &str, interface: &str, mode: AttachMode) -> std::result::Result<(), String>;
    fn unload_loader(&self, instance: &str) -> std::result::Result<(), String>;
    fn remove_owned_chains(&self, owner: &str) -> std::result::Result<(), String>;
    /// Gives chain `id` back to `owner`, if it is still installed.
    fn give_chain(&self, id: hike_runtime::ChainId, owner: &str) -> std::result::Result<(), String>;
    /// Writes a kept loader's configuration map back to what it held.
    fn restore_config(&self, instance: &str, map: &str, entries: &[ConfigEntry]) -> std::result::Result<(), String>;
    fn unregister(&self, package: &str, version: &str, name: &str, hook: Hook) -> std::result::Result<(), String>;
}

/// The runtime of a deployment's root, in its network namespace.
struct KernelHost<'a> {
    deployer: &'a Deployer,
    rt: &'a Runtime,
    netns: Option<&'a str>,
}

impl UndoHost for KernelHost<'_> {
    fn has_loader(&self, instance: &str) -> bool {
        has_loader(self.rt, instance)
    }
    fn attached(&self, instance: &str, interface: &str) -> bool {
        attached(self.rt, instance, interface)
    }
    fn switch_loader(&self, from: &str, to: &str, interface: &str) -> std::result::Result<(), String> {
        ignore_missing(self.rt.switch_loader(from, to, interface))
    }
    fn detach(&self, instance: &str, interface: &str) -> std::result::Result<(), String> {
        ignore_missing(self.rt.detach_loader(instance, interface))
    }
    fn attach(&self, instance: &str, interface: &str, mode: AttachMode) -> std::result::Result<(), String> {
        self.deployer.attach(self.rt, self.netns, instance, interface, mode).map_err(|e| e.to_string())
    }
    fn unload_loader(&self, instance: &str) -> std::result::Result<(), String> {
        ignore_missing(self.rt.unload_loader(instance))
    }
    fn remove_owned_chains(&self, owner: &str) -> std::result::Result<(), String> {
        remove_owned_chains(self.rt, owner)
    }
    fn give_chain(&self, id: hike_runtime::ChainId, owner: &str) -> std::result::Result<(), String> {
        ignore_missing(self.rt.set_chain_owner(id, owner))
    }
    fn restore_config(&self, instance: &str, map: &str, entries: &[ConfigEntry]) -> std::result::Result<(), String> {
        let entries: Vec<hike_runtime::MapEntry> =
            entries.iter().map(|e| hike_runtime::MapEntry { key: e.key.clone(), value: e.value.clone() }).collect();
        ignore_missing(self.rt.flip_loader_chains(instance, map, &entries))
    }
    fn unregister(&self, package: &str, version: &str, name: &str, hook: Hook) -> std::result::Result<(), String> {
        unregister(self.rt, package, version, name, hook)
    }
}

/// Undoes an uncommitted install on `host`, newest step first: traffic goes back
/// to the previous deployment's loaders, then the new loaders, chains and
/// programs go, in the order that keeps every reference valid (loaders start
/// chains, chains call programs). Programs of a version in `in_use` (by a
/// committed deployment) stay; when that is unknown (`Err`), no program goes.
/// Returns what could not be undone; a step that fails does not stop the others.
pub(crate) fn undo_install(
    host: &dyn UndoHost,
    journal: &Journal,
    in_use: std::result::Result<&BTreeSet<(PackageName, Version, Hook)>, String>,
) -> Vec<String> {
    let mut errors = Vec::new();
    let mut note = |r: std::result::Result<(), String>| {
        if let Err(e) = r {
            errors.push(e);
        }
    };
    for step in journal.steps.iter().rev() {
        match step {
            Step::Switch { interface, from, to } => {
                if host.has_loader(from) && host.has_loader(to) {
                    note(
                        host.switch_loader(to, from, interface)
                            .map_err(|e| format!("cannot switch {interface} back from {to} to {from}: {e}")),
                    );
                }
            }
            Step::Replace { interface, from, from_mode, to, .. } => {
                if host.attached(to, interface) {
                    note(host.detach(to, interface));
                }
                if host.has_loader(from) && !host.attached(from, interface) {
                    note(host.attach(from, interface, *from_mode));
                }
            }
            Step::Attach { interface, to, .. } => {
                if host.attached(to, interface) {
                    note(host.detach(to, interface));
                }
            }
            // Before this generation's chains are removed below: it keeps none.
            Step::AdoptChain { id, from } => note(host.give_chain(*id, from)),
            // Before the chains its new entries start are removed below.
            Step::Configure { instance, map, before } => {
                if host.has_loader(instance) {
                    note(host.restore_config(instance, map, before));
                }
            }
            Step::LoadLoader { .. } | Step::Register { .. } => {}
        }
    }
    for step in journal.steps.iter().rev() {
        if let Step::LoadLoader { instance } = step
            && host.has_loader(instance)
        {
            note(host.unload_loader(instance));
        }
    }
    note(host.remove_owned_chains(&journal.chain_owner()));
    let in_use = match in_use {
        Ok(in_use) => in_use,
        Err(e) => {
            errors.push(e);
            return errors;
        }
    };
    for step in journal.steps.iter().rev() {
        if let Step::Register { package, version, hook, programs } = step {
            if in_use.contains(&(package.clone(), version.clone(), *hook)) {
                continue;
            }
            for name in programs {
                note(host.unregister(package.as_str(), &version.to_string(), name, *hook));
            }
        }
    }
    errors
}

impl Deployer {
    /// Undoes an uncommitted install, newest step first. Returns what could not be
    /// undone (empty when everything was).
    pub(crate) fn rollback(&self, rt: &Runtime, journal: &Journal) -> Vec<String> {
        // A journal never removes what a committed record names.
        let in_use = self.store.records().map_err(|e| e.to_string()).map(|records| {
            records
                .iter()
                .filter(|r| r.bpffs_root == journal.bpffs_root)
                .flat_map(|r| r.program_versions())
                .collect::<BTreeSet<(PackageName, Version, Hook)>>()
        });
        let host = KernelHost { deployer: self, rt, netns: journal.netns.as_deref() };
        let mut errors = undo_install(&host, journal, in_use.as_ref().map_err(Clone::clone));
        // The generation's saved copy goes with it, unless it was committed.
        let committed = self.store.record(&journal.deployment).ok().flatten().map(|r| r.generation);
        if committed != Some(journal.generation)
            && let Err(e) = self.store.forget_generation(&journal.deployment, journal.generation)
        {
            errors.push(e.to_string());
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
            if let Some(kept) = current.and_then(|c| c.loaders.iter().find(|n| n.instance == l.instance)) {
                // Kept by the new generation: off the interfaces it no longer serves.
                for a in l.attachments.iter().filter(|a| !kept.attachments.iter().any(|k| k.interface == a.interface)) {
                    if attached(rt, &l.instance, &a.interface) {
                        ignore_missing(rt.detach_loader(&l.instance, &a.interface)).map_err(|e| fail(e.to_string()))?;
                    }
                }
                continue;
            }
            if has_loader(rt, &l.instance) {
                ignore_missing(rt.unload_loader(&l.instance)).map_err(|e| fail(e.to_string()))?;
            }
        }
        if current.is_none_or(|c| c.chain_owner() != prev.chain_owner()) {
            remove_owned_chains(rt, &prev.chain_owner()).map_err(fail)?;
        }
        let mut keep: BTreeSet<(PackageName, Version, Hook)> = BTreeSet::new();
        if let Some(c) = current {
            keep.extend(c.program_versions());
        }
        for other in self.store.records()? {
            if other.name != prev.name && other.bpffs_root == prev.bpffs_root {
                keep.extend(other.program_versions());
            }
        }
        // Together, with one wait for running packets.
        let mut going = Vec::new();
        for p in prev.programs.iter().filter(|p| !keep.contains(&(p.package.clone(), p.version.clone(), p.hook))) {
            let found = rt.find_program(p.package.as_str(), &p.version.to_string(), &p.name, p.hook);
            if let Some(id) = found.map_err(|e| fail(e.to_string()))? {
                going.push(id);
            }
        }
        ignore_missing(rt.unregister_programs(&going)).map_err(fail)
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

/// Removes every chain of `owner`, together (they may call each other), with one
/// wait for running packets.
pub(crate) fn remove_owned_chains(rt: &Runtime, owner: &str) -> std::result::Result<(), String> {
    let status = rt.status().map_err(|e| e.to_string())?;
    let owned: Vec<hike_runtime::ChainId> = status.chains.iter().filter(|c| c.owner == owner).map(|c| c.id).collect();
    ignore_missing(rt.remove_chains(&owned))
}

/// Unregisters one program if it is registered.
fn unregister(rt: &Runtime, package: &str, version: &str, name: &str, hook: Hook) -> std::result::Result<(), String> {
    match rt.find_program(package, version, name, hook) {
        Ok(Some(id)) => ignore_missing(rt.unregister_program(id)),
        Ok(None) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    //! Undoing a journal against a model of the host: what is there, and every
    //! change made to it, in order. No kernel needed.

    use std::cell::RefCell;
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::PathBuf;

    use super::*;

    #[derive(Default)]
    struct Model {
        loaders: BTreeSet<String>,
        /// interface → (instance, mode)
        links: BTreeMap<String, (String, AttachMode)>,
        /// owner → chain count
        chains: BTreeMap<String, u32>,
        /// The owner of each chain an install kept from its previous generation.
        adopted: BTreeMap<u32, String>,
        programs: BTreeSet<(String, String, String, Hook)>,
        /// Operations that fail, by name.
        failing: BTreeSet<&'static str>,
    }

    #[derive(Default)]
    struct Host {
        m: RefCell<Model>,
        log: RefCell<Vec<String>>,
    }

    impl Host {
        fn changed(&self, op: &'static str, what: String) -> std::result::Result<(), String> {
            if self.m.borrow().failing.contains(op) {
                return Err(format!("{op} {what} failed"));
            }
            self.log.borrow_mut().push(format!("{op} {what}"));
            Ok(())
        }
    }

    impl UndoHost for Host {
        fn has_loader(&self, instance: &str) -> bool {
            self.m.borrow().loaders.contains(instance)
        }
        fn attached(&self, instance: &str, interface: &str) -> bool {
            self.m.borrow().links.get(interface).is_some_and(|(i, _)| i == instance)
        }
        fn switch_loader(&self, from: &str, to: &str, interface: &str) -> std::result::Result<(), String> {
            self.changed("switch", format!("{interface} {from}->{to}"))?;
            let mut m = self.m.borrow_mut();
            if let Some(link) = m.links.get_mut(interface).filter(|(i, _)| i == from) {
                link.0 = to.to_owned();
            }
            Ok(())
        }
        fn detach(&self, instance: &str, interface: &str) -> std::result::Result<(), String> {
            self.changed("detach", format!("{instance} {interface}"))?;
            self.m.borrow_mut().links.remove(interface);
            Ok(())
        }
        fn attach(&self, instance: &str, interface: &str, mode: AttachMode) -> std::result::Result<(), String> {
            self.changed("attach", format!("{instance} {interface} {mode}"))?;
            self.m.borrow_mut().links.insert(interface.to_owned(), (instance.to_owned(), mode));
            Ok(())
        }
        fn unload_loader(&self, instance: &str) -> std::result::Result<(), String> {
            self.changed("unload", instance.to_owned())?;
            self.m.borrow_mut().loaders.remove(instance);
            Ok(())
        }
        fn restore_config(
            &self,
            instance: &str,
            map: &str,
            entries: &[ConfigEntry],
        ) -> std::result::Result<(), String> {
            self.changed("configure", format!("{instance} {map} {}", entries.len()))
        }
        fn give_chain(&self, id: hike_runtime::ChainId, owner: &str) -> std::result::Result<(), String> {
            if self.m.borrow().adopted.get(&id.0).is_none_or(|o| o == owner) {
                return Ok(());
            }
            self.changed("give", format!("chain {id} to {owner}"))?;
            self.m.borrow_mut().adopted.insert(id.0, owner.to_owned());
            Ok(())
        }
        fn remove_owned_chains(&self, owner: &str) -> std::result::Result<(), String> {
            if !self.m.borrow().chains.contains_key(owner) {
                return Ok(());
            }
            self.changed("chains", owner.to_owned())?;
            self.m.borrow_mut().chains.remove(owner);
            Ok(())
        }
        fn unregister(&self, package: &str, version: &str, name: &str, hook: Hook) -> std::result::Result<(), String> {
            let key = (package.to_owned(), version.to_owned(), name.to_owned(), hook);
            if !self.m.borrow().programs.contains(&key) {
                return Ok(());
            }
            self.changed("unregister", format!("{package}@{version} {name}"))?;
            self.m.borrow_mut().programs.remove(&key);
            Ok(())
        }
    }

    /// Generation 2 of `app` on eth0 (switched from generation 1's loader) and
    /// eth1 (newly attached), with one new package version registered.
    fn journal() -> Journal {
        let mut j = Journal::install("app", 2, PathBuf::from("/sys/fs/bpf/hike"), None, None);
        j.steps = vec![
            Step::Register {
                package: PackageName::new("p").unwrap(),
                version: semver::Version::new(2, 0, 0),
                hook: Hook::Xdp,
                programs: vec!["a".into()],
            },
            Step::AdoptChain { id: hike_runtime::ChainId(5), from: "app#1".into() },
            Step::LoadLoader { instance: "app-2-l".into() },
            Step::Switch { interface: "eth0".into(), from: "app-1-l".into(), to: "app-2-l".into() },
            Step::Attach { interface: "eth1".into(), mode: AttachMode::Xdp, to: "app-2-l".into() },
        ];
        j
    }

    /// The host as the install left it when it was killed after the last step.
    fn host_after_install() -> Host {
        let h = Host::default();
        {
            let mut m = h.m.borrow_mut();
            m.loaders.extend(["app-1-l".to_owned(), "app-2-l".to_owned()]);
            m.links.insert("eth0".into(), ("app-2-l".into(), AttachMode::Xdp));
            m.links.insert("eth1".into(), ("app-2-l".into(), AttachMode::Xdp));
            m.chains.insert(journal().chain_owner(), 3);
            m.chains.insert("other#1".into(), 1);
            m.adopted.insert(5, journal().chain_owner());
            m.programs.insert(("p".into(), "1.0.0".into(), "a".into(), Hook::Xdp));
            m.programs.insert(("p".into(), "2.0.0".into(), "a".into(), Hook::Xdp));
        }
        h
    }

    #[test]
    fn an_install_is_undone_in_the_order_that_keeps_references_valid() {
        let h = host_after_install();
        let errors = undo_install(&h, &journal(), Ok(&BTreeSet::new()));
        assert!(errors.is_empty(), "{errors:?}");
        let owner = journal().chain_owner();
        assert_eq!(
            *h.log.borrow(),
            [
                "detach app-2-l eth1".to_owned(),
                "switch eth0 app-2-l->app-1-l".to_owned(),
                "give chain 5 to app#1".to_owned(),
                "unload app-2-l".to_owned(),
                format!("chains {owner}"),
                "unregister p@2.0.0 a".to_owned(),
            ]
        );
        let m = h.m.borrow();
        assert_eq!(m.loaders, BTreeSet::from(["app-1-l".to_owned()]));
        assert_eq!(m.links.get("eth0"), Some(&("app-1-l".to_owned(), AttachMode::Xdp)));
        assert!(!m.links.contains_key("eth1"));
        assert!(m.chains.contains_key("other#1"), "another deployment's chains stay");
        assert!(m.programs.contains(&("p".into(), "1.0.0".into(), "a".into(), Hook::Xdp)));
    }

    #[test]
    fn undoing_twice_changes_nothing_the_second_time() {
        let h = host_after_install();
        assert!(undo_install(&h, &journal(), Ok(&BTreeSet::new())).is_empty());
        h.log.borrow_mut().clear();
        assert!(undo_install(&h, &journal(), Ok(&BTreeSet::new())).is_empty());
        assert!(h.log.borrow().is_empty(), "{:?}", h.log.borrow());
    }

    #[test]
    fn a_crash_before_any_change_is_undone_without_touching_anything() {
        // Killed right after journaling the first step: nothing of it exists.
        let h = Host::default();
        h.m.borrow_mut().loaders.insert("app-1-l".into());
        h.m.borrow_mut().links.insert("eth0".into(), ("app-1-l".into(), AttachMode::Xdp));
        assert!(undo_install(&h, &journal(), Ok(&BTreeSet::new())).is_empty());
        assert!(h.log.borrow().is_empty(), "{:?}", h.log.borrow());
        assert_eq!(h.m.borrow().links.get("eth0"), Some(&("app-1-l".to_owned(), AttachMode::Xdp)));
    }

    #[test]
    fn programs_a_committed_deployment_uses_stay() {
        let h = host_after_install();
        let in_use = BTreeSet::from([(PackageName::new("p").unwrap(), semver::Version::new(2, 0, 0), Hook::Xdp)]);
        assert!(undo_install(&h, &journal(), Ok(&in_use)).is_empty());
        assert!(h.m.borrow().programs.contains(&("p".into(), "2.0.0".into(), "a".into(), Hook::Xdp)));
        // Unknown use: no program goes, and that is reported.
        let h = host_after_install();
        let errors = undo_install(&h, &journal(), Err("records unreadable".into()));
        assert_eq!(errors, ["records unreadable"]);
        assert_eq!(h.m.borrow().programs.len(), 2);
        assert!(!h.m.borrow().loaders.contains("app-2-l"), "the rest is still undone");
    }

    #[test]
    fn a_failing_step_is_reported_and_the_others_still_run() {
        let h = host_after_install();
        h.m.borrow_mut().failing.insert("switch");
        let errors = undo_install(&h, &journal(), Ok(&BTreeSet::new()));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("cannot switch eth0 back from app-2-l to app-1-l"), "{errors:?}");
        let log = h.log.borrow();
        assert!(log.contains(&"detach app-2-l eth1".to_owned()) && log.contains(&"unregister p@2.0.0 a".to_owned()));
    }

    #[test]
    fn a_replaced_mode_is_attached_back_as_it_was() {
        let mut j = journal();
        j.steps = vec![
            Step::LoadLoader { instance: "app-2-l".into() },
            Step::Replace {
                interface: "eth0".into(),
                from: "app-1-l".into(),
                from_mode: AttachMode::XdpGeneric,
                to: "app-2-l".into(),
                mode: AttachMode::Xdp,
            },
        ];
        let h = Host::default();
        h.m.borrow_mut().loaders.extend(["app-1-l".to_owned(), "app-2-l".to_owned()]);
        h.m.borrow_mut().links.insert("eth0".into(), ("app-2-l".into(), AttachMode::Xdp));
        assert!(undo_install(&h, &j, Ok(&BTreeSet::new())).is_empty());
        assert_eq!(h.m.borrow().links.get("eth0"), Some(&("app-1-l".to_owned(), AttachMode::XdpGeneric)));
        assert_eq!(
            h.log.borrow()[..2],
            ["detach app-2-l eth0".to_owned(), "attach app-1-l eth0 xdpgeneric".to_owned()]
        );
    }
}
