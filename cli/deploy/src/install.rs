//! Installing a deployment, all or nothing: register programs, install chains,
//! load and configure loader instances — all beside the current deployment, which
//! keeps running — then switch interfaces over, commit the record, and remove what
//! the previous generation owned. A failure before the commit undoes every step
//! (from the journal), leaving the previous deployment running untouched.

use std::collections::{BTreeMap, BTreeSet};

use ebpkg_spec::types::FieldType;
use hike_bytecode::AttachMode;
use hike_chainc::link::{Ids, ProgramRef, encode_entry, link_chain};
use hike_chainc::{Artifact, Device};
use hike_runtime::{ChainSpec, ConfigMapSpec, LoaderObject, MapEntry, ProgramObject, Runtime, RuntimeError};

use crate::deployer::{Attached, Deployer, Event, crash_point};
use crate::error::{DeployError, Result, VerifierError};
use crate::journal::{ConfigEntry, Journal, Step};
use crate::native::{self, NativeRequest, Tier};
use crate::plan::{ChainMode, DeployPlan, PlannedObject, PlannedPackage};
use crate::record::{
    DeploymentRecord, FORMAT, RecordedAttachment, RecordedChain, RecordedLoader, RecordedObject, RecordedPackage,
    RecordedProgram, loader_instance,
};

/// What an install did.
#[derive(Debug, Clone)]
pub enum InstallOutcome {
    /// A new generation runs; `previous` is the one it replaced.
    Installed { record: DeploymentRecord, previous: Option<Box<DeploymentRecord>> },
    /// The current deployment already has these inputs and is running.
    UpToDate(DeploymentRecord),
}

/// A loader instance to create: its configuration and where to attach it.
#[derive(Default)]
struct LoaderWork {
    entries: BTreeMap<String, Vec<MapEntry>>,
    attaches: BTreeSet<(String, AttachMode)>,
}

/// The chains of every script, linked and installed.
struct InstalledChains {
    chains: Vec<RecordedChain>,
    /// Each chain's linked instructions, by id (for native chains).
    linked: BTreeMap<u32, Vec<hike_bytecode::Insn>>,
    /// Per script: the program ids and its own chains' ids.
    script_ids: Vec<Ids>,
}

impl Deployer {
    /// Links the chains of every script (each script's chains see the programs
    /// and the chains it defines) and installs them — but for a chain of the
    /// previous generation whose linked code is the same, which this generation
    /// keeps (same id, counters and native program) unless `--force`.
    fn install_chains(
        &self,
        rt: &Runtime,
        plan: &DeployPlan,
        journal: &mut Journal,
        ids: &Ids,
        on: &dyn Fn(&Event),
    ) -> Result<InstalledChains> {
        let owner = journal.chain_owner();
        let mut chains = Vec::new();
        let mut linked: BTreeMap<u32, Vec<hike_bytecode::Insn>> = BTreeMap::new();
        let mut script_ids = Vec::new();
        for script in &plan.scripts {
            let mut sids = Ids { programs: ids.programs.clone(), chains: Default::default() };
            for c in &script.artifact.chains {
                let insns =
                    link_chain(c, &sids).map_err(|cause| DeployError::Link { script: script.file.clone(), cause })?;
                let kept = if plan.force { None } else { kept_chain(rt, plan, journal, &script.file, c, &insns)? };
                let (id, tier) = match kept {
                    Some((id, from, tier)) => {
                        journal.steps.push(Step::AdoptChain { id, from });
                        self.store.save_journal(journal)?;
                        rt.set_chain_owner(id, &owner).map_err(DeployError::runtime(format!(
                            "cannot keep chain `{}` of {}",
                            c.name, script.file
                        )))?;
                        on(&Event::Kept {
                            what: format!("chain {} ({}) as chain {id}, unchanged", c.name, script.file),
                        });
                        (id, tier)
                    }
                    None => {
                        let spec = ChainSpec {
                            name: &c.name,
                            owner: &owner,
                            hook: script.artifact.hook,
                            insns: &insns,
                            nargs: c.nargs,
                        };
                        let id = rt.install_chain(&spec).map_err(DeployError::runtime(format!(
                            "cannot install chain `{}` of {}",
                            c.name, script.file
                        )))?;
                        on(&Event::ChainInstalled { script: script.file.clone(), chain: c.name.clone(), id });
                        (id, None)
                    }
                };
                sids.chains.insert(c.name.clone(), id);
                linked.insert(id.0, insns);
                chains.push(RecordedChain {
                    script: script.file.clone(),
                    name: c.name.clone(),
                    id,
                    hook: script.artifact.hook,
                    tier,
                });
            }
            script_ids.push(sids);
        }
        Ok(InstalledChains { chains, linked, script_ids })
    }
}

/// A loader instance of the previous generation this one keeps, and the maps whose
/// entries it rewrites: `(map, what it holds, what it will hold)`.
struct KeptLoader {
    record: RecordedLoader,
    rewrite: Vec<(String, Vec<MapEntry>, Vec<MapEntry>)>,
}

/// The previous generation's instance of `loader` of `pkg`, when this generation
/// would make one like it: the same package version and object, in the same
/// network namespace, with configuration maps holding the same keys and values
/// that differ at most in the chains they start (rewritten in place, one atomic
/// store per chain field: `hike_runtime::Runtime::flip_loader_chains`). Where it
/// is attached is settled like any loader's (an interface it stays on is left as
/// it is).
fn kept_loader(
    rt: &Runtime,
    journal: &Journal,
    pkg: &PlannedPackage,
    loader: &str,
    w: &LoaderWork,
) -> Result<Option<KeptLoader>> {
    let Some(prev) = journal.previous.as_ref().filter(|p| p.netns == journal.netns) else { return Ok(None) };
    let same_package = prev.packages.iter().any(|p| p.id() == pkg.id && p.checksum == pkg.checksum);
    let Some(old) =
        prev.loaders.iter().find(|l| l.package == pkg.id.name && l.version == pkg.id.version && l.loader == loader)
    else {
        return Ok(None);
    };
    if !same_package {
        return Ok(None);
    }
    let Ok(info) = rt.loader_info(&old.instance) else { return Ok(None) };
    if info.attachments.iter().any(|a| a.defunct) {
        return Ok(None);
    }
    if w.entries.keys().any(|m| !info.maps.contains(m)) {
        return Ok(None);
    }
    let mut rewrite = Vec::new();
    for map in &info.maps {
        let mut wanted = w.entries.get(map).cloned().unwrap_or_default();
        wanted.sort_by(|a, b| a.key.cmp(&b.key));
        let running = rt
            .loader_config(&old.instance, map)
            .map_err(DeployError::runtime(format!("cannot read loader instance {}", old.instance)))?;
        if running == wanted {
            continue;
        }
        let refusal = rt
            .flip_refusal(&old.instance, map, &wanted)
            .map_err(DeployError::runtime(format!("cannot read loader instance {}", old.instance)))?;
        if let Some(reason) = refusal {
            tracing::debug!(instance = %old.instance, map, "loaded anew, not rewritten in place: {reason}");
            return Ok(None);
        }
        rewrite.push((map.clone(), running, wanted));
    }
    Ok(Some(KeptLoader { record: RecordedLoader { attachments: Vec::new(), ..old.clone() }, rewrite }))
}

/// The previous generation's chain `c` of `script`, when its installed code is
/// `insns` exactly: its id, its owner, and the tier it keeps (a native chain
/// stays native unless interpreted is asked for, in which case it is not kept;
/// an interpreted one is tiered again).
fn kept_chain(
    rt: &Runtime,
    plan: &DeployPlan,
    journal: &Journal,
    script: &str,
    c: &hike_chainc::artifact::CompiledChain,
    insns: &[hike_bytecode::Insn],
) -> Result<Option<(hike_runtime::ChainId, String, Option<Tier>)>> {
    let Some(prev) = &journal.previous else { return Ok(None) };
    let Some(old) = prev.chains.iter().find(|o| o.script == script && o.name == c.name) else { return Ok(None) };
    let owner = prev.chain_owner();
    let read = |e| DeployError::runtime(format!("cannot read chain {}", old.id))(e);
    if rt.chain_owner(old.id).map_err(read)?.as_deref() != Some(owner.as_str()) {
        return Ok(None);
    }
    if rt.chain_insns(old.id).map_err(read)? != Some((insns.to_vec(), c.nargs)) {
        return Ok(None);
    }
    let tier = match &old.tier {
        Some(Tier::Native { .. }) if plan.chain_mode == ChainMode::Interpreted => return Ok(None),
        Some(native @ Tier::Native { .. }) => {
            let present = rt.native_of(old.id).map_err(read)?.is_some();
            if !present {
                return Ok(None);
            }
            Some(native.clone())
        }
        _ => None,
    };
    Ok(Some((old.id, owner, tier)))
}

impl Deployer {
    /// Installs `plan`, replacing the deployment of the same name if there is one.
    pub fn install(&self, plan: &DeployPlan, on: &dyn Fn(&Event)) -> Result<InstallOutcome> {
        check_deployment_name(&plan.deployment)?;
        let _lock = self.store.lock()?;
        self.recover_locked(on, Some(&plan.deployment))?;
        let previous = self.store.record(&plan.deployment)?;
        let kept = keep_params(plan, previous.as_ref(), on);
        let plan = kept.as_ref().unwrap_or(plan);
        check_params(plan)?;
        // Everything that can fail without the kernel fails here, before the
        // journal opens and anything changes.
        let checked = preflight(plan)?;
        let netns = match (&self.netns, &previous) {
            (Some(n), _) => Some(n.clone()),
            (None, Some(p)) => {
                if let Some(n) = &p.netns {
                    on(&Event::Kept { what: format!("network namespace {n} from the current deployment") });
                }
                p.netns.clone()
            }
            (None, None) => None,
        };
        self.check_identity(plan, previous.as_ref(), netns.as_deref())?;
        let inputs = plan.inputs_digest(&self.root);
        // Refused here, before the journal, when another state directory owns the root.
        let existing = self.existing_runtime(&self.root)?;
        if let Some(p) = &previous
            && !plan.force
            && p.inputs == inputs
            && p.netns == netns
            && let Some(rt) = &existing
            && crate::status::problems(rt, p).is_empty()
        {
            return Ok(InstallOutcome::UpToDate(p.clone()));
        }
        // A generation is never used twice: what a refused journal's transaction
        // left may carry the next number (its loader instances, its chains' owner).
        let generation = next_generation(existing.as_ref(), &plan.deployment, previous.as_ref());
        drop(existing);
        // Journaled before the root is created, so that a first install killed
        // while creating it is undone (the root removed) like any other.
        let mut journal = Journal::install(&plan.deployment, generation, self.root.clone(), netns, previous.clone());
        self.store.save_journal(&journal)?;
        crash_point("begin");
        let applied = self
            .runtime_for_install(&self.root)
            .and_then(|rt| self.apply(&rt, plan, &checked, &mut journal, &inputs, on).map(|record| (rt, record)));
        let (rt, record) = match applied.and_then(|(rt, record)| {
            crash_point("switched");
            self.store.save_generation(plan, &record, &|pkg, obj| checked.elf(pkg, obj))?;
            crash_point("saved");
            self.store.save_record(&record)?;
            Ok((rt, record))
        }) {
            Ok(done) => done,
            Err(error) => {
                let rollback = match self.existing_runtime(&self.root) {
                    Ok(Some(rt)) => self.rollback(&rt, &journal),
                    Ok(None) => Vec::new(),
                    Err(e) => vec![e.to_string()],
                };
                if !rollback.is_empty() {
                    return Err(DeployError::RollbackFailed { error: Box::new(error), rollback });
                }
                // A first install leaves no root behind.
                if let Err(e) = self.destroy_if_unused(&self.root) {
                    return Err(DeployError::RollbackFailed { error: Box::new(error), rollback: vec![e.to_string()] });
                }
                self.store.remove_journal(&plan.deployment)?;
                return Err(error);
            }
        };
        // Committed: the new generation is the deployment. What remains is tidying
        // up; if that fails, the journal stays and the next run finishes it.
        crash_point("committed");
        match self.finish_cleanup(&rt, previous.as_ref(), Some(&record)) {
            Ok(()) => {
                crash_point("cleaned");
                self.store.remove_journal(&plan.deployment)?;
            }
            Err(e) => tracing::warn!("the new deployment runs, but removing the previous one failed: {e}"),
        }
        if let Err(e) = self.store.prune_generations(&plan.deployment) {
            tracing::warn!("cannot remove old generations of {}: {e}", plan.deployment);
        }
        Ok(InstallOutcome::Installed { record, previous: previous.map(Box::new) })
    }

    /// Refuses, before anything changes, to replace another project's deployment,
    /// to move a deployment to another root, or to attach where another
    /// deployment is attached.
    fn check_identity(
        &self,
        plan: &DeployPlan,
        previous: Option<&DeploymentRecord>,
        netns: Option<&str>,
    ) -> Result<()> {
        if let Some(p) = previous {
            if p.project_dir != plan.project_dir {
                return Err(DeployError::NameTaken {
                    name: plan.deployment.clone(),
                    theirs: p.project_dir.clone(),
                    ours: plan.project_dir.clone(),
                });
            }
            if p.bpffs_root != self.root {
                return Err(DeployError::Package {
                    package: plan.project.clone(),
                    reason: format!(
                        "deployment `{}` lives in the HIKe root {}; install it there (--bpffs-root {}) or uninstall it first",
                        p.name,
                        p.bpffs_root.display(),
                        p.bpffs_root.display()
                    ),
                });
            }
        }
        let wanted = planned_attachments(plan)?;
        for other in self.store.records()? {
            if other.name == plan.deployment || other.netns.as_deref() != netns {
                continue;
            }
            for l in &other.loaders {
                for a in &l.attachments {
                    if let Some((interface, _)) =
                        wanted.iter().find(|(i, m)| *i == a.interface && m.attach_point() == a.mode.attach_point())
                    {
                        return Err(DeployError::InterfaceTaken {
                            interface: interface.clone(),
                            point: a.mode.attach_point().to_owned(),
                            deployment: other.name.clone(),
                            project: other.project_dir.clone(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    fn apply(
        &self,
        rt: &Runtime,
        plan: &DeployPlan,
        checked: &Checked,
        journal: &mut Journal,
        inputs: &str,
        on: &dyn Fn(&Event),
    ) -> Result<DeploymentRecord> {
        let mut ids = Ids::default();
        let mut programs = Vec::new();
        let mut state = Vec::new();
        for pkg in &plan.packages {
            let carry = self.carry_state(rt, pkg, checked, journal, plan.reset_state)?;
            for p in self.register_package(rt, pkg, checked, journal, &carry.shared, on)? {
                ids.programs.insert(ProgramRef::new(p.package.as_str(), p.name.as_str()), p.id);
                programs.push(p);
            }
            state.extend(carry.states);
        }
        crate::state::copy_extended(rt, &state)?;
        for s in &state {
            on(&Event::MapState(s.clone()));
        }
        crash_point("registered");

        let InstalledChains { mut chains, linked, script_ids } = self.install_chains(rt, plan, journal, &ids, on)?;
        crash_point("chains");

        let mut work: BTreeMap<(String, String), LoaderWork> = BTreeMap::new();
        let mut seen_keys = BTreeSet::new();
        for (script, sids) in plan.scripts.iter().zip(&script_ids) {
            collect_loader_work(&script.artifact, &script.file, sids, &plan.params, &mut work, &mut seen_keys)?;
        }
        let mut loaders = self.load_loaders(rt, plan, checked, journal, &work, on)?;
        crash_point("loaders");

        self.switch_interfaces(rt, journal, &mut loaders, &work, on)?;

        self.tier_up_chains(rt, plan, &programs, &linked, &mut chains, on)?;
        crash_point("native");

        let mut packages = Vec::new();
        for p in &plan.packages {
            packages.push(RecordedPackage {
                name: p.id.name.clone(),
                version: p.id.version.clone(),
                source: p.source.clone(),
                checksum: p.checksum,
                signer: p.signer,
                maps: documented_maps(&p.manifest),
                objects: recorded_objects(p, checked)?,
            });
        }
        packages.sort();
        programs.sort();
        Ok(DeploymentRecord {
            format: FORMAT,
            name: plan.deployment.clone(),
            generation: journal.generation,
            bpffs_root: self.root.clone(),
            netns: journal.netns.clone(),
            project: plan.project.clone(),
            project_dir: plan.project_dir.clone(),
            inputs: inputs.to_owned(),
            installed_at: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()),
            packages,
            programs,
            chains,
            loaders,
            params: plan.params.clone(),
            state,
            restores: plan.restores,
        })
    }

    /// What `pkg`'s registration keeps of the maps of the version the previous
    /// generation runs.
    fn carry_state(
        &self,
        rt: &Runtime,
        pkg: &PlannedPackage,
        checked: &Checked,
        journal: &Journal,
        reset_state: bool,
    ) -> Result<crate::state::Carry> {
        let elfs: Vec<(&str, &[u8])> = pkg
            .objects
            .iter()
            .filter_map(|o| checked.objects.get(&o.path).map(|c| (o.object_name.as_str(), &c.elf[..])))
            .collect();
        crate::state::carry(rt, pkg, &elfs, journal.previous.as_ref(), reset_state)
    }

    /// Loads and configures a loader instance of this generation for each loader
    /// the scripts use.
    fn load_loaders(
        &self,
        rt: &Runtime,
        plan: &DeployPlan,
        checked: &Checked,
        journal: &mut Journal,
        work: &BTreeMap<(String, String), LoaderWork>,
        on: &dyn Fn(&Event),
    ) -> Result<Vec<RecordedLoader>> {
        let mut loaders = Vec::new();
        for ((package, loader), w) in work {
            let pkg = package_of(plan, package)?;
            if !plan.force
                && let Some(KeptLoader { record, rewrite }) = kept_loader(rt, journal, pkg, loader, w)?
            {
                for (map, before, after) in &rewrite {
                    let before = before.iter().map(|e| ConfigEntry { key: e.key.clone(), value: e.value.clone() });
                    journal.steps.push(Step::Configure {
                        instance: record.instance.clone(),
                        map: map.clone(),
                        before: before.collect(),
                    });
                    self.store.save_journal(journal)?;
                    crash_point("configuring");
                    rt.flip_loader_chains(&record.instance, map, after).map_err(DeployError::runtime(format!(
                        "cannot rewrite map `{map}` of loader instance {}",
                        record.instance
                    )))?;
                }
                let how = if rewrite.is_empty() { "unchanged" } else { "its entries rewritten in place" };
                on(&Event::Kept { what: format!("loader instance {} ({how})", record.instance) });
                loaders.push(record);
                continue;
            }
            let instance = loader_instance(&plan.deployment, journal.generation, package, loader);
            journal.steps.push(Step::LoadLoader { instance: instance.clone() });
            self.store.save_journal(journal)?;
            self.load_loader(rt, pkg, checked, loader, &instance)?;
            for (map, entries) in &w.entries {
                rt.configure_loader(&instance, map, entries).map_err(DeployError::runtime(format!(
                    "cannot configure map `{map}` of loader {package}::{loader}"
                )))?;
            }
            on(&Event::LoaderLoaded { instance: instance.clone() });
            loaders.push(RecordedLoader {
                instance,
                package: pkg.id.name.clone(),
                version: pkg.id.version.clone(),
                loader: loader.clone(),
                hook: hook_of_loader(pkg, loader)?,
                attachments: Vec::new(),
            });
        }
        Ok(loaders)
    }

    /// The switch: each interface moves to its new loader in one link update.
    /// Links whose interface went away are not switched (nothing runs through
    /// them): the new loader is attached afresh and they go with the old one.
    fn switch_interfaces(
        &self,
        rt: &Runtime,
        journal: &mut Journal,
        loaders: &mut [RecordedLoader],
        work: &BTreeMap<(String, String), LoaderWork>,
        on: &dyn Fn(&Event),
    ) -> Result<()> {
        let same_netns = journal.previous.as_ref().is_some_and(|p| p.netns == journal.netns);
        let previous: Vec<(String, String, AttachMode)> = journal
            .previous
            .iter()
            .filter(|_| same_netns)
            .flat_map(|p| &p.loaders)
            .flat_map(|l| l.attachments.iter().map(|a| (a.interface.clone(), l.instance.clone(), a.mode)))
            .filter(|(interface, instance, _)| {
                rt.loader_info(instance)
                    .is_ok_and(|i| i.attachments.iter().any(|a| &a.interface == interface && !a.defunct))
            })
            .collect();
        for l in loaders.iter_mut() {
            let Some(w) = work.get(&(l.package.as_str().to_owned(), l.loader.clone())) else { continue };
            for (interface, mode) in &w.attaches {
                // A kept loader stays where it is attached.
                if previous.iter().any(|(i, from, m)| i == interface && *from == l.instance && m == mode) {
                    l.attachments.push(RecordedAttachment { interface: interface.clone(), mode: *mode });
                    continue;
                }
                let before =
                    previous.iter().find(|(i, _, m)| i == interface && m.attach_point() == mode.attach_point());
                match before {
                    Some((_, from, from_mode)) if from_mode == mode => {
                        journal.steps.push(Step::Switch {
                            interface: interface.clone(),
                            from: from.clone(),
                            to: l.instance.clone(),
                        });
                        self.store.save_journal(journal)?;
                        crash_point("switching");
                        rt.switch_loader(from, &l.instance, interface)
                            .map_err(DeployError::runtime(format!("cannot switch {interface} to the new loader")))?;
                        on(&Event::Attached {
                            instance: l.instance.clone(),
                            interface: interface.clone(),
                            how: Attached::Switched,
                        });
                    }
                    Some((_, from, from_mode)) => {
                        journal.steps.push(Step::Replace {
                            interface: interface.clone(),
                            from: from.clone(),
                            from_mode: *from_mode,
                            to: l.instance.clone(),
                            mode: *mode,
                        });
                        self.store.save_journal(journal)?;
                        crash_point("switching");
                        rt.detach_loader(from, interface).map_err(DeployError::runtime(format!(
                            "cannot detach the previous loader from {interface}"
                        )))?;
                        self.attach(rt, journal.netns.as_deref(), &l.instance, interface, *mode)?;
                        on(&Event::Attached {
                            instance: l.instance.clone(),
                            interface: interface.clone(),
                            how: Attached::Replaced,
                        });
                    }
                    None => {
                        journal.steps.push(Step::Attach {
                            interface: interface.clone(),
                            mode: *mode,
                            to: l.instance.clone(),
                        });
                        self.store.save_journal(journal)?;
                        crash_point("switching");
                        self.attach(rt, journal.netns.as_deref(), &l.instance, interface, *mode)?;
                        on(&Event::Attached {
                            instance: l.instance.clone(),
                            interface: interface.clone(),
                            how: Attached::New,
                        });
                    }
                }
                l.attachments.push(RecordedAttachment { interface: interface.clone(), mode: *mode });
            }
        }
        Ok(())
    }

    /// Moves each chain a loader starts to its native tier as the plan's chain
    /// mode says, recording the tier of each.
    fn tier_up_chains(
        &self,
        rt: &Runtime,
        plan: &DeployPlan,
        programs: &[RecordedProgram],
        linked: &BTreeMap<u32, Vec<hike_bytecode::Insn>>,
        chains: &mut [RecordedChain],
        on: &dyn Fn(&Event),
    ) -> Result<()> {
        let started: BTreeSet<(&str, &str)> = plan
            .scripts
            .iter()
            .flat_map(|s| {
                s.artifact.loader_configs.iter().flat_map(move |c| {
                    c.entries.iter().flat_map(|e| &e.value).filter_map(move |v| match v {
                        hike_chainc::artifact::FieldValue::Chain(name) => Some((s.file.as_str(), name.as_str())),
                        _ => None,
                    })
                })
            })
            .collect();
        let mut refs: BTreeMap<u32, (&PlannedPackage, &str)> = BTreeMap::new();
        for p in programs {
            if let Some(pkg) = plan.packages.iter().find(|k| k.id.name == p.package && k.id.version == p.version) {
                refs.insert(p.id.0, (pkg, p.name.as_str()));
            }
        }
        for c in chains.iter_mut().filter(|c| started.contains(&(c.script.as_str(), c.name.as_str()))) {
            // A kept chain keeps the native program in its slot.
            if c.tier.is_some() {
                continue;
            }
            let tier = match (plan.chain_mode, &self.native) {
                (ChainMode::Interpreted, _) => Tier::Interpreted { reason: None },
                (_, None) => Tier::Interpreted { reason: Some("no native compiler was given".into()) },
                (mode, Some(compiler)) => {
                    let request =
                        NativeRequest { hook: c.hook, chain: c.id, name: &c.name, chains: linked, programs: &refs };
                    match native::tier_up(rt, compiler.as_ref(), &request) {
                        Ok(tier) => tier,
                        Err(reason) if mode == ChainMode::Native => {
                            return Err(DeployError::Native { chain: c.name.clone(), reason });
                        }
                        Err(reason) => Tier::Interpreted { reason: Some(reason) },
                    }
                }
            };
            on(&Event::Tiered { chain: c.name.clone(), id: c.id, tier: tier.clone() });
            c.tier = Some(tier);
        }
        Ok(())
    }

    /// Registers every HIKe program of a package (programs already registered for
    /// this version keep their ids).
    fn register_package(
        &self,
        rt: &Runtime,
        pkg: &PlannedPackage,
        checked: &Checked,
        journal: &mut Journal,
        shared: &hike_runtime::SharedMaps,
        on: &dyn Fn(&Event),
    ) -> Result<Vec<RecordedProgram>> {
        let mut out = Vec::new();
        for obj in pkg.objects.iter().filter(|o| !o.programs.is_empty()) {
            // Read and checked by preflight: not read or parsed again.
            let CheckedObject { elf, sigs } = checked.objects.get(&obj.path).ok_or_else(|| DeployError::Package {
                package: pkg.id.clone(),
                reason: format!("its object {} was not checked before installing", obj.path.display()),
            })?;
            let mut new = Vec::new();
            for name in sigs.keys() {
                let known = rt
                    .find_program(pkg.name(), &pkg.version(), name, obj.hook)
                    .map_err(DeployError::runtime("cannot read the registered programs"))?;
                if known.is_none() {
                    new.push(name.clone());
                }
            }
            if !new.is_empty() {
                journal.steps.push(Step::Register {
                    package: pkg.id.name.clone(),
                    version: pkg.id.version.clone(),
                    hook: obj.hook,
                    programs: new,
                });
                self.store.save_journal(journal)?;
            }
            crash_point("registering");
            let regs = rt
                .register_read_object(
                    &ProgramObject {
                        package: pkg.name(),
                        version: &pkg.version(),
                        object_name: &obj.object_name,
                        elf: &elf[..],
                        hook: obj.hook,
                    },
                    sigs,
                    shared,
                )
                .map_err(|e| self.load_error(e, pkg))?;
            for r in regs {
                on(&Event::Registered { package: pkg.id.clone(), program: r.name.clone(), id: r.id, reused: r.reused });
                out.push(RecordedProgram {
                    package: pkg.id.name.clone(),
                    version: pkg.id.version.clone(),
                    name: r.name,
                    hook: r.hook,
                    id: r.id,
                });
            }
        }
        Ok(out)
    }

    fn load_loader(
        &self,
        rt: &Runtime,
        pkg: &PlannedPackage,
        checked: &Checked,
        loader: &str,
        instance: &str,
    ) -> Result<()> {
        let (manifest_loader, obj) = loader_object(pkg, loader)?;
        // Read and checked by preflight: not read again.
        let elf = checked.elf(pkg, obj)?;
        let config_maps = manifest_loader
            .maps
            .iter()
            .map(|m| {
                let mut offset = 0u32;
                let mut chain_offsets = Vec::new();
                for f in &m.value {
                    if f.ty == FieldType::Chain {
                        chain_offsets.push(offset);
                    }
                    offset += f.ty.size() as u32;
                }
                ConfigMapSpec { name: m.name.to_string(), chain_offsets }
            })
            .collect();
        rt.load_loader(&LoaderObject {
            instance,
            package: pkg.name(),
            version: &pkg.version(),
            object_name: &obj.object_name,
            elf,
            program: loader,
            hook: obj.hook,
            config_maps,
        })
        .map_err(|e| self.load_error(e, pkg))?;
        Ok(())
    }

    /// A load failure; a verifier rejection gets its log saved and its source line.
    fn load_error(&self, e: RuntimeError, pkg: &PlannedPackage) -> DeployError {
        match e {
            RuntimeError::Verifier(failure) => {
                let file = format!("{}-{}-{}.verifier.log", pkg.name(), pkg.version(), failure.program);
                let log_path = self.store.save_log(&file, &failure.log).ok();
                let file = failure.source.as_ref().and_then(|s| source_path(pkg, &s.file));
                let line_text = failure.source.as_ref().zip(file.as_ref()).and_then(|(s, f)| {
                    let text = ebpkg_fs::read_text(&pkg.root.join(f), 16 << 20).ok()?;
                    text.lines().nth((s.line as usize).checked_sub(1)?).map(str::to_owned)
                });
                DeployError::Verifier(Box::new(VerifierError {
                    package: pkg.id.clone(),
                    failure: *failure,
                    file,
                    line_text,
                    log_path,
                }))
            }
            other => DeployError::Runtime { what: format!("cannot load {}", pkg.id), cause: other },
        }
    }
}

/// The package path of a file the verifier names by its base name (`flow.bpf.c`
/// → `src/flow.bpf.c`), looked for among the sources the manifest names.
fn source_path(pkg: &PlannedPackage, file: &str) -> Option<String> {
    if pkg.root.join(file).is_file() {
        return Some(file.to_owned());
    }
    let m = &pkg.manifest;
    let sources =
        m.programs.iter().filter_map(|p| p.source.as_ref()).chain(m.loaders.iter().filter_map(|l| l.source.as_ref()));
    sources
        .map(|s| s.as_str().to_owned())
        .find(|s| std::path::Path::new(s).file_name().is_some_and(|n| n.to_string_lossy() == file))
        .filter(|s| pkg.root.join(s).is_file())
}

/// The program maps whose key and value layouts the manifest gives.
fn documented_maps(m: &ebpkg_spec::Manifest) -> Vec<crate::record::RecordedMap> {
    let fields = |f: &[ebpkg_spec::manifest::Field]| -> Vec<(String, String)> {
        f.iter().map(|f| (f.name.to_string(), f.ty.name().to_owned())).collect()
    };
    let mut out: Vec<crate::record::RecordedMap> = m
        .programs
        .iter()
        .flat_map(|p| &p.maps)
        .filter_map(|mp| {
            Some(crate::record::RecordedMap {
                name: mp.name.to_string(),
                key: fields(mp.key.as_ref()?),
                value: fields(mp.value.as_ref()?),
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The bytes of `obj`, when they are the bytes the build checked: a file
/// changed between the build and the load is refused, never loaded.
fn read_object(pkg: &PlannedPackage, obj: &PlannedObject) -> Result<Vec<u8>> {
    obj.read().inspect_err(|e| tracing::debug!(package = %pkg.id, "object not read: {e}"))
}

/// What the record says of `pkg`'s objects: their digests, origins and compilers.
fn recorded_objects(pkg: &PlannedPackage, checked: &Checked) -> Result<Vec<RecordedObject>> {
    let mut out = Vec::new();
    for o in &pkg.objects {
        let sha256 = match (o.sha256, checked.objects.get(&o.path)) {
            (Some(d), _) => d,
            (None, Some(c)) => ebpkg_spec::types::Sha256Digest::of(&c.elf),
            (None, None) => ebpkg_spec::types::Sha256Digest::of(&read_object(pkg, o)?),
        };
        out.push(RecordedObject {
            object: o.object_name.clone(),
            hook: o.hook,
            sha256,
            origin: o.origin,
            compiler: o.compiler.clone(),
        });
    }
    out.sort();
    Ok(out)
}

/// What preflight read of each object with programs (by path): its bytes and
/// the HIKe programs it holds, checked against its manifest. Registration uses
/// them rather than reading and parsing each object a second time; loading a
/// loader and saving the generation use the bytes of every object, loaders'
/// included, rather than reading them again.
struct Checked {
    objects: BTreeMap<std::path::PathBuf, CheckedObject>,
    /// The bytes of the objects without programs (loaders only).
    others: BTreeMap<std::path::PathBuf, Vec<u8>>,
}

impl Checked {
    /// The bytes preflight read of `obj` (of `pkg`), checked against its digest.
    fn elf(&self, pkg: &PlannedPackage, obj: &PlannedObject) -> Result<&[u8]> {
        let with_programs = self.objects.get(&obj.path).map(|c| &c.elf[..]);
        with_programs.or_else(|| self.others.get(&obj.path).map(Vec::as_slice)).ok_or_else(|| DeployError::Package {
            package: pkg.id.clone(),
            reason: format!("its object {} was not checked before installing", obj.path.display()),
        })
    }
}

struct CheckedObject {
    elf: Vec<u8>,
    sigs: BTreeMap<String, hike_runtime::Signature>,
}

/// What can be checked of a plan without the kernel: every object holds the
/// programs and loaders its manifest declares in it and nothing its manifest
/// does not declare (`ebpkg_spec::object_items`), the programs with the declared
/// argument counts, and every loader a script configures or attaches is one its
/// package declares and was built.
fn preflight(plan: &DeployPlan) -> Result<Checked> {
    let mut objects = BTreeMap::new();
    let mut others = BTreeMap::new();
    for pkg in &plan.packages {
        for obj in &pkg.objects {
            let elf = read_object(pkg, obj)?;
            check_items(pkg, obj, &elf)?;
            if obj.programs.is_empty() {
                others.insert(obj.path.clone(), elf);
                continue;
            }
            let sigs = hike_runtime::signature::read(&obj.object_name, &elf)
                .map_err(DeployError::runtime(format!("cannot read the programs of {}", pkg.id)))?;
            check_signatures(pkg, &obj.programs, &sigs)?;
            objects.insert(obj.path.clone(), CheckedObject { elf, sigs });
        }
    }
    for script in &plan.scripts {
        let art = &script.artifact;
        let used = art
            .loader_configs
            .iter()
            .map(|c| (&c.package, &c.loader))
            .chain(art.attaches.iter().map(|a| (&a.package, &a.loader)));
        for (package, loader) in used {
            let pkg = package_of(plan, package)?;
            loader_object(pkg, loader)?;
        }
    }
    Ok(Checked { objects, others })
}

/// The object defines the programs and loaders the manifest builds into it, and
/// no program, loader or map the manifest does not declare.
fn check_items(pkg: &PlannedPackage, obj: &PlannedObject, elf: &[u8]) -> Result<()> {
    let problem = |reason: String| DeployError::Package {
        package: pkg.id.clone(),
        reason: format!("its object {} ({}) {reason}", obj.object_name, obj.path.display()),
    };
    let items = ebpkg_spec::object_items::ObjectItems::read(elf).map_err(|e| problem(e.to_string()))?;
    let built: Vec<&str> = obj.programs.iter().chain(&obj.loaders).map(String::as_str).collect();
    items.check(&pkg.manifest, &built).map_err(|e| problem(e.to_string()))
}

/// The manifest's loader `loader` of `pkg` and the object it was built into.
fn loader_object<'a>(
    pkg: &'a PlannedPackage,
    loader: &str,
) -> Result<(&'a ebpkg_spec::manifest::Loader, &'a PlannedObject)> {
    let manifest_loader = pkg.manifest.loader(loader).ok_or_else(|| DeployError::Package {
        package: pkg.id.clone(),
        reason: format!("it has no loader `{loader}`"),
    })?;
    let obj = pkg.objects.iter().find(|o| o.loaders.iter().any(|l| l == loader)).ok_or_else(|| {
        DeployError::Package { package: pkg.id.clone(), reason: format!("loader `{loader}` was not built") }
    })?;
    Ok((manifest_loader, obj))
}

/// The manifest's programs must be in the object, with the argument counts it declares.
fn check_signatures(
    pkg: &PlannedPackage,
    names: &[String],
    sigs: &BTreeMap<String, hike_runtime::Signature>,
) -> Result<()> {
    for name in names {
        let Some(sig) = sigs.get(name) else {
            return Err(DeployError::Package {
                package: pkg.id.clone(),
                reason: format!(
                    "ebpkg.toml declares program `{name}`, but its object has no HIKe program of that name \
                     (declare it with HIKE_PROGRAM({name}, …))"
                ),
            });
        };
        if let Some(p) = pkg.manifest.program(name)
            && p.args.len() != sig.args.len()
        {
            return Err(DeployError::Package {
                package: pkg.id.clone(),
                reason: format!(
                    "program `{name}` takes {} argument(s) in its C source but ebpkg.toml declares {}; make them agree",
                    sig.args.len(),
                    p.args.len()
                ),
            });
        }
    }
    Ok(())
}

fn package_of<'a>(plan: &'a DeployPlan, name: &str) -> Result<&'a PlannedPackage> {
    plan.packages.iter().find(|p| p.name() == name).ok_or_else(|| DeployError::Package {
        package: plan.project.clone(),
        reason: format!("its chains use package `{name}`, which is not among the deployment's packages"),
    })
}

fn hook_of_loader(pkg: &PlannedPackage, loader: &str) -> Result<hike_bytecode::Hook> {
    pkg.objects.iter().find(|o| o.loaders.iter().any(|l| l == loader)).map(|o| o.hook).ok_or_else(|| {
        DeployError::Package { package: pkg.id.clone(), reason: format!("loader `{loader}` was not built") }
    })
}

/// The generation after `previous` whose name nothing in the root uses yet.
fn next_generation(rt: Option<&Runtime>, deployment: &str, previous: Option<&DeploymentRecord>) -> u64 {
    let mut generation = previous.map_or(1, |p| p.generation + 1);
    let Some(status) = rt.and_then(|rt| rt.status().ok()) else { return generation };
    while status.loaders.iter().any(|l| l.instance.starts_with(&format!("{deployment}-{generation}-")))
        || status.chains.iter().any(|c| c.owner == crate::record::chain_owner(deployment, generation))
    {
        generation += 1;
    }
    generation
}

/// Deployment names become pin names: letters, digits, `-` and `_`.
fn check_deployment_name(name: &str) -> Result<()> {
    let ok =
        !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok { Ok(()) } else { Err(DeployError::BadDeploymentName { name: name.to_owned() }) }
}

/// The plan with the parameters it does not give taken from the deployment it
/// replaces (`--set` need not be repeated on every upgrade); `None` when it
/// needs none of them.
fn keep_params(plan: &DeployPlan, previous: Option<&DeploymentRecord>, on: &dyn Fn(&Event)) -> Option<DeployPlan> {
    let previous = previous?;
    let mut filled: Option<DeployPlan> = None;
    for p in plan.scripts.iter().flat_map(|s| &s.artifact.params) {
        let have = filled.as_ref().unwrap_or(plan).params.contains_key(p);
        if let (false, Some(v)) = (have, previous.params.get(p)) {
            on(&Event::Kept { what: format!("{p}={v} from the current deployment") });
            filled.get_or_insert_with(|| plan.clone()).params.insert(p.clone(), v.clone());
        }
    }
    filled
}

/// Every parameter a script uses has a value and every value is used.
fn check_params(plan: &DeployPlan) -> Result<()> {
    let mut known = BTreeSet::new();
    for s in &plan.scripts {
        for p in &s.artifact.params {
            known.insert(p.clone());
            if !plan.params.contains_key(p) {
                let example =
                    s.artifact.attaches.iter().any(|a| a.device == Device::Param(p.clone())).then(|| "eth0".to_owned());
                return Err(DeployError::MissingParam { script: s.file.clone(), name: p.clone(), example });
            }
        }
    }
    for name in plan.params.keys() {
        if !known.contains(name) {
            return Err(DeployError::UnknownParam { name: name.clone(), known: known.iter().cloned().collect() });
        }
    }
    Ok(())
}

/// Gathers the loader entries (encoded with this script's chain ids) and the
/// attachments of a script.
fn collect_loader_work(
    art: &Artifact,
    file: &str,
    ids: &Ids,
    params: &BTreeMap<String, String>,
    work: &mut BTreeMap<(String, String), LoaderWork>,
    seen: &mut BTreeSet<(String, String, String, Vec<u8>)>,
) -> Result<()> {
    for cfg in &art.loader_configs {
        let w = work.entry((cfg.package.clone(), cfg.loader.clone())).or_default();
        for e in &cfg.entries {
            let (key, value) =
                encode_entry(e, ids, file).map_err(|cause| DeployError::Link { script: file.to_owned(), cause })?;
            if !seen.insert((cfg.package.clone(), cfg.loader.clone(), cfg.map.clone(), key.clone())) {
                return Err(DeployError::DuplicateEntry {
                    package: cfg.package.clone(),
                    loader: cfg.loader.clone(),
                    map: cfg.map.clone(),
                });
            }
            w.entries.entry(cfg.map.clone()).or_default().push(MapEntry { key, value });
        }
    }
    for (a, interface) in script_attachments(art, file, params)? {
        work.entry((a.package.clone(), a.loader.clone())).or_default().attaches.insert((interface, a.mode));
    }
    Ok(())
}

/// A script's attachments with their interfaces (parameters filled in).
fn script_attachments<'a>(
    art: &'a Artifact,
    file: &str,
    params: &BTreeMap<String, String>,
) -> Result<Vec<(&'a hike_chainc::Attach, String)>> {
    art.attaches
        .iter()
        .map(|a| {
            let interface = match &a.device {
                Device::Name(n) => n.clone(),
                Device::Param(p) => params.get(p).cloned().ok_or_else(|| DeployError::MissingParam {
                    script: file.to_owned(),
                    name: p.clone(),
                    example: Some("eth0".into()),
                })?,
            };
            Ok((a, interface))
        })
        .collect()
}

/// `(interface, mode)` of every attachment the plan makes.
fn planned_attachments(plan: &DeployPlan) -> Result<Vec<(String, AttachMode)>> {
    let mut out = Vec::new();
    for s in &plan.scripts {
        for (a, interface) in script_attachments(&s.artifact, &s.file, &plan.params)? {
            out.push((interface, a.mode));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_names_are_pin_names() {
        for good in ["app", "my-app_2", &"a".repeat(64)] {
            assert!(check_deployment_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a/b", "..", "app.1", "é", &"a".repeat(65)] {
            let e = check_deployment_name(bad).unwrap_err();
            assert!(matches!(e, DeployError::BadDeploymentName { .. }), "{bad}: {e}");
        }
    }
}
