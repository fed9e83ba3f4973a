//! Generations kept for rollback: with every install, what it deployed is saved
//! in the state directory (`generations/<deployment>/<generation>/`: the plan as
//! JSON, the manifests as TOML, and a copy of every object), so that
//! `ebpkg rollback` reinstalls an earlier generation exactly — the same objects,
//! chains, loader configuration and parameters — without a registry (a chain's
//! native build is redone from the build cache, or runs interpreted without it).
//! The newest [`KEEP`] generations of each deployment are kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ebpkg_spec::types::{KeyId, Sha256Digest};
use ebpkg_spec::{Manifest, PackageId};
use hike_bytecode::Hook;
use hike_chainc::Artifact;
use serde::{Deserialize, Serialize};

use crate::error::{DeployError, Result};
use crate::plan::{ChainMode, DeployPlan, PlannedObject, PlannedPackage, PlannedScript};
use crate::record::{DeploymentRecord, FORMAT};
use crate::store::{Store, io};

/// How many generations of a deployment are kept (the running one included):
/// older ones are removed when a new one is committed.
pub const KEEP: usize = 5;

/// A generation as saved: its record, and the plan that installed it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SavedGeneration {
    pub format: u32,
    /// The record committed for it.
    pub record: DeploymentRecord,
    pub(crate) project_dir: Option<PathBuf>,
    pub(crate) packages: Vec<SavedPackage>,
    pub(crate) scripts: Vec<SavedScript>,
    pub(crate) chain_mode: ChainMode,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedPackage {
    id: PackageId,
    source: crate::source::PackageSource,
    checksum: Sha256Digest,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signer: Option<KeyId>,
    /// Where its files were (verifier messages quote its sources when still there).
    root: PathBuf,
    /// Its `ebpkg.toml`, canonical.
    manifest: String,
    objects: Vec<SavedObject>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedObject {
    /// The copy's file name in the generation's `objects/` (its SHA-256).
    file: String,
    object_name: String,
    hook: Hook,
    programs: Vec<String>,
    loaders: Vec<String>,
    /// Where the object first came from (absent in generations saved before
    /// origins were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    origin: Option<ebpkg_spec::types::ObjectOrigin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    compiler: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedScript {
    file: String,
    source: String,
    artifact: Artifact,
}

impl Store {
    fn generations_dir(&self, deployment: &str) -> PathBuf {
        self.dir().join("generations").join(deployment)
    }

    fn generation_dir(&self, deployment: &str, generation: u64) -> PathBuf {
        self.generations_dir(deployment).join(generation.to_string())
    }

    /// Saves what `plan` installed as `record`'s generation (before the record is
    /// committed: a committed generation always has its copy). Written beside and
    /// renamed into place, so a copy is whole or absent. Each object's bytes are
    /// `elf`'s (what the install read and checked), not read again.
    pub(crate) fn save_generation<'a>(
        &self,
        plan: &'a DeployPlan,
        record: &DeploymentRecord,
        elf: &dyn Fn(&'a PlannedPackage, &'a PlannedObject) -> Result<&'a [u8]>,
    ) -> Result<()> {
        let base = self.generations_dir(&record.name);
        make_dir(&base)?;
        let dest = self.generation_dir(&record.name, record.generation);
        let temp = base.join(format!("{}{}", ebpkg_fs::temp::prefix(), record.generation));
        remove_tree(&temp)?;
        make_dir(&temp.join("objects"))?;
        let earlier_generations = self.generation_numbers(&record.name)?;
        let mut packages = Vec::new();
        for p in &plan.packages {
            let mut objects = Vec::new();
            for o in &p.objects {
                let bytes = elf(p, o)?;
                // Checked against the digest the build gave when it was read (a plan
                // made without a build has none: hashed here).
                let sha256 = o.sha256.unwrap_or_else(|| Sha256Digest::of(bytes));
                let file = format!("{}.o", sha256.to_hex());
                let path = temp.join("objects").join(&file);
                // An object an earlier generation saved is linked, not written again.
                let earlier = earlier_generations.iter().rev().find_map(|n| {
                    let p = self.generation_dir(&record.name, *n).join("objects").join(&file);
                    p.is_file().then_some(p)
                });
                let linked = !path.exists() && earlier.is_some_and(|e| std::fs::hard_link(e, &path).is_ok());
                if !linked && !path.exists() {
                    ebpkg_fs::write_atomic(&path, bytes, 0o644).map_err(io("cannot write", &path))?;
                }
                objects.push(SavedObject {
                    file,
                    object_name: o.object_name.clone(),
                    hook: o.hook,
                    programs: o.programs.clone(),
                    loaders: o.loaders.clone(),
                    origin: o.origin,
                    compiler: o.compiler.clone(),
                });
            }
            packages.push(SavedPackage {
                id: p.id.clone(),
                source: p.source.clone(),
                checksum: p.checksum,
                signer: p.signer,
                root: p.root.clone(),
                manifest: p.manifest.to_toml_string(),
                objects,
            });
        }
        let saved = SavedGeneration {
            format: FORMAT,
            record: record.clone(),
            project_dir: plan.project_dir.clone(),
            packages,
            scripts: plan
                .scripts
                .iter()
                .map(|s| SavedScript { file: s.file.clone(), source: s.source.clone(), artifact: s.artifact.clone() })
                .collect(),
            chain_mode: plan.chain_mode,
        };
        let objects = temp.join("objects");
        ebpkg_fs::sync_dir(&objects).map_err(io("cannot sync", &objects))?;
        crate::store::write_json(&temp.join("generation.json"), &saved)?;
        remove_tree(&dest)?;
        std::fs::rename(&temp, &dest).map_err(io("cannot move into place", &dest))?;
        ebpkg_fs::sync_dir(&base).map_err(io("cannot sync", &base))?;
        Ok(())
    }

    /// The saved generations of a deployment, oldest first (copies that cannot be
    /// read are left out, with a warning).
    pub fn generations(&self, deployment: &str) -> Result<Vec<SavedGeneration>> {
        let mut out = Vec::new();
        for n in self.generation_numbers(deployment)? {
            match self.generation(deployment, n) {
                Ok(Some(g)) => out.push(g),
                Ok(None) => {}
                Err(e) => tracing::warn!("generation {n} of {deployment} cannot be read: {e}"),
            }
        }
        Ok(out)
    }

    pub fn generation(&self, deployment: &str, generation: u64) -> Result<Option<SavedGeneration>> {
        crate::store::read_json(&self.generation_dir(deployment, generation).join("generation.json"))
    }

    fn generation_numbers(&self, deployment: &str) -> Result<Vec<u64>> {
        let dir = self.generations_dir(deployment);
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io("cannot list", &dir)(e)),
        };
        let mut numbers: Vec<u64> = rd.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect();
        numbers.sort_unstable();
        Ok(numbers)
    }

    /// Removes the copy of a generation that was never committed (an undone install).
    pub(crate) fn forget_generation(&self, deployment: &str, generation: u64) -> Result<()> {
        remove_tree(&self.generation_dir(deployment, generation))
    }

    /// Keeps the newest [`KEEP`] generations of a deployment, and removes copies
    /// left half-written by a process that died.
    pub(crate) fn prune_generations(&self, deployment: &str) -> Result<()> {
        let numbers = self.generation_numbers(deployment)?;
        for n in &numbers[..numbers.len().saturating_sub(KEEP)] {
            remove_tree(&self.generation_dir(deployment, *n))?;
        }
        for entry in std::fs::read_dir(self.generations_dir(deployment)).into_iter().flatten().flatten() {
            if entry.file_name().to_str().is_some_and(ebpkg_fs::temp::is_stale) {
                remove_tree(&entry.path())?;
            }
        }
        Ok(())
    }

    /// Removes every generation of a deployment (it is uninstalled).
    pub(crate) fn forget_generations(&self, deployment: &str) -> Result<()> {
        remove_tree(&self.generations_dir(deployment))
    }
}

impl SavedGeneration {
    /// The plan that installs this generation again, from its saved objects.
    pub(crate) fn plan(&self, store: &Store, reset_state: bool) -> Result<DeployPlan> {
        let dir = store.generation_dir(&self.record.name, self.record.generation);
        let mut packages = Vec::new();
        for p in &self.packages {
            let origin = format!("{} (generation {})", dir.join("generation.json").display(), self.record.generation);
            let manifest = Manifest::parse(&p.manifest, &origin).map_err(|d| DeployError::CorruptState {
                path: dir.join("generation.json"),
                reason: format!("the manifest of {} does not parse: {}", p.id, d.to_string().trim_end()),
            })?;
            let objects = p
                .objects
                .iter()
                .map(|o| PlannedObject {
                    path: dir.join("objects").join(&o.file),
                    object_name: o.object_name.clone(),
                    hook: o.hook,
                    programs: o.programs.clone(),
                    loaders: o.loaders.clone(),
                    // The copy is named by its digest: what was saved is loaded.
                    sha256: o.file.strip_suffix(".o").and_then(Sha256Digest::from_canonical_hex),
                    origin: o.origin,
                    compiler: o.compiler.clone(),
                })
                .collect();
            packages.push(PlannedPackage {
                id: p.id.clone(),
                source: p.source.clone(),
                checksum: p.checksum,
                signer: p.signer,
                root: p.root.clone(),
                manifest,
                objects,
            });
        }
        Ok(DeployPlan {
            deployment: self.record.name.clone(),
            project: self.record.project.clone(),
            project_dir: self.project_dir.clone(),
            packages,
            scripts: self
                .scripts
                .iter()
                .map(|s| PlannedScript { file: s.file.clone(), source: s.source.clone(), artifact: s.artifact.clone() })
                .collect(),
            params: self.record.params.clone(),
            force: false,
            chain_mode: self.chain_mode,
            reset_state,
            restores: Some(self.record.generation),
        })
    }

    /// What changed from `before` to this generation, for people: packages
    /// added, removed or moved to another version, and parameters changed.
    pub fn changes_from(&self, before: Option<&SavedGeneration>) -> Vec<String> {
        let versions = |g: &SavedGeneration| -> BTreeMap<String, String> {
            g.record.packages.iter().map(|p| (p.name.to_string(), p.version.to_string())).collect()
        };
        let Some(before) = before else { return vec!["first install".to_owned()] };
        let (old, new) = (versions(before), versions(self));
        let mut out = Vec::new();
        for (name, v) in &new {
            match old.get(name) {
                None => out.push(format!("+{name} {v}")),
                Some(o) if o != v => out.push(format!("{name} {o} → {v}")),
                _ => {}
            }
        }
        out.extend(old.keys().filter(|n| !new.contains_key(*n)).map(|n| format!("-{n}")));
        for (k, v) in &self.record.params {
            if before.record.params.get(k) != Some(v) {
                out.push(format!("{k}={v}"));
            }
        }
        let scripts = |g: &SavedGeneration| -> Vec<(String, String)> {
            g.scripts.iter().map(|s| (s.file.clone(), s.source.clone())).collect()
        };
        if scripts(before) != scripts(self) {
            out.push("chain scripts changed".to_owned());
        }
        out
    }
}

impl crate::Deployer {
    /// Installs generation `to` of deployment `name` again (by default the newest
    /// one before the running generation), as a new generation, with the same
    /// zero-loss switch and state rules as any install.
    pub fn restore(
        &self,
        name: &str,
        to: Option<u64>,
        reset_state: bool,
        on: &dyn Fn(&crate::Event),
    ) -> Result<crate::InstallOutcome> {
        let Some(current) = self.store.record(name)? else {
            let known = self.store.records()?.into_iter().map(|r| r.name).collect();
            return Err(DeployError::NotDeployed { name: name.to_owned(), known });
        };
        let saved = self.store.generations(name)?;
        let target = match to {
            Some(n) => saved.iter().find(|g| g.record.generation == n && n != current.generation),
            None => saved.iter().rev().find(|g| g.record.generation < current.generation),
        };
        let Some(target) = target else {
            let kept = saved.iter().map(|g| g.record.generation).collect();
            return Err(DeployError::NoGeneration { name: name.to_owned(), wanted: to, kept, keep: KEEP });
        };
        self.install(&target.plan(&self.store, reset_state)?, on)
    }
}

impl crate::store::HasFormat for SavedGeneration {
    fn format(&self) -> u32 {
        self.format
    }
}

fn make_dir(dir: &Path) -> Result<()> {
    ebpkg_fs::create_dirs(dir, 0o755).map_err(io("cannot create", dir))
}

fn remove_tree(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("cannot remove", path)(e)),
        _ => Ok(()),
    }
}
