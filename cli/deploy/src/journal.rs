//! The install journal: before each change to the kernel, the change is written
//! here (write-ahead), so a process killed at any point leaves enough behind for
//! the next run to undo what it did, or — once the new record is committed — to
//! finish cleaning up the previous deployment.

use hike_bytecode::AttachMode;
use std::path::PathBuf;

use hike_bytecode::Hook;
use serde::{Deserialize, Serialize};

use crate::record::{DeploymentRecord, FORMAT, chain_owner};

/// What the interrupted transaction was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JournalKind {
    Install,
    Uninstall,
}

/// One transaction in progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Journal {
    pub format: u32,
    pub kind: JournalKind,
    pub deployment: String,
    /// The generation being installed (or, for an uninstall, removed).
    pub generation: u64,
    pub bpffs_root: PathBuf,
    #[serde(default)]
    pub netns: Option<String>,
    /// The deployment being replaced (install) or removed (uninstall).
    pub previous: Option<DeploymentRecord>,
    /// Changes about to be made or made, in order.
    pub steps: Vec<Step>,
}

/// A change to the kernel, recorded before it is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum Step {
    /// Programs of a package version that were not registered before.
    Register { package: ebpkg_spec::PackageName, version: semver::Version, hook: Hook, programs: Vec<String> },
    /// A new loader instance.
    LoadLoader { instance: String },
    /// The interface's link moves from the previous deployment's instance to `to`.
    Switch { interface: String, from: String, to: String },
    /// The previous instance (attached with `from_mode`) is detached and `to` attached
    /// with another mode: links cannot change mode in place.
    Replace { interface: String, from: String, from_mode: AttachMode, to: String, mode: AttachMode },
    /// `to` is attached where nothing of the previous deployment was.
    Attach { interface: String, mode: AttachMode, to: String },
    /// An unchanged chain of the previous generation (owned by `from`) is kept
    /// by this one; undone, it goes back to `from`.
    AdoptChain { id: hike_runtime::ChainId, from: String },
    /// A kept loader instance's configuration map is rewritten; `before` is what
    /// it held, written back if the install is undone.
    Configure { instance: String, map: String, before: Vec<ConfigEntry> },
}

/// A configuration map entry, as a journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigEntry {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

impl Journal {
    pub fn install(
        deployment: &str,
        generation: u64,
        root: PathBuf,
        netns: Option<String>,
        previous: Option<DeploymentRecord>,
    ) -> Journal {
        Journal {
            format: FORMAT,
            kind: JournalKind::Install,
            deployment: deployment.to_owned(),
            generation,
            bpffs_root: root,
            netns,
            previous,
            steps: Vec::new(),
        }
    }

    pub fn uninstall(record: &DeploymentRecord) -> Journal {
        Journal {
            format: FORMAT,
            kind: JournalKind::Uninstall,
            deployment: record.name.clone(),
            generation: record.generation,
            bpffs_root: record.bpffs_root.clone(),
            netns: record.netns.clone(),
            previous: Some(record.clone()),
            steps: Vec::new(),
        }
    }

    /// The owner of the chains this transaction installs.
    pub fn chain_owner(&self) -> String {
        chain_owner(&self.deployment, self.generation)
    }
}

impl Journal {
    /// Checks that recovering this journal can touch only what its own
    /// transaction made: it names the deployment its file is named after, its
    /// previous deployment is the committed one (or the one the committed
    /// generation replaced), and every loader instance it would remove or switch
    /// to is of its own generation. `current` is the committed record.
    pub fn check(&self, file_name: &str, current: Option<&DeploymentRecord>) -> Result<(), String> {
        let valid_name = !self.deployment.is_empty()
            && self.deployment.len() <= 64
            && self.deployment.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid_name || self.deployment != file_name {
            return Err(format!("it is named {file_name}.json but is for deployment `{}`", self.deployment));
        }
        if let Some(p) = &self.previous {
            if p.name != self.deployment {
                return Err(format!("its previous deployment is `{}`, not `{}`", p.name, self.deployment));
            }
            if p.bpffs_root != self.bpffs_root {
                return Err("its previous deployment lives in another HIKe root".into());
            }
            // An instance is named for the generation that loaded it: the previous
            // one's, or an earlier one's that it kept.
            let ours = |instance: &str| {
                instance
                    .strip_prefix(&format!("{}-", p.name))
                    .and_then(|rest| rest.split_once('-'))
                    .and_then(|(g, _)| g.parse::<u64>().ok())
                    .is_some_and(|g| g >= 1 && g <= p.generation)
            };
            if let Some(l) = p.loaders.iter().find(|l| !ours(&l.instance)) {
                return Err(format!("its previous deployment names loader instance {} of another", l.instance));
            }
        }
        match self.kind {
            JournalKind::Uninstall => {
                let Some(p) = &self.previous else { return Err("an uninstall that names no deployment".into()) };
                if p.generation != self.generation || current.is_some_and(|c| c != p) {
                    return Err("it would remove a deployment other than the one recorded".into());
                }
            }
            JournalKind::Install => {
                // Generations skip numbers a refused transaction's leftovers use.
                let after = self.previous.as_ref().map_or(0, |p| p.generation);
                if self.generation <= after {
                    return Err(format!("generation {} does not follow its previous deployment", self.generation));
                }
                match current {
                    Some(c) if c.generation == self.generation => {}
                    Some(c) if self.previous.as_ref() != Some(c) => {
                        return Err("its previous deployment is not the one recorded".into());
                    }
                    None if self.previous.is_some() => {
                        return Err("it replaces a deployment that is not recorded".into());
                    }
                    _ => {}
                }
            }
        }
        let own = format!("{}-{}-", self.deployment, self.generation);
        let previous: Vec<&str> = self.previous.iter().flat_map(|p| &p.loaders).map(|l| l.instance.as_str()).collect();
        for step in &self.steps {
            let (to, from, loads) = match step {
                Step::LoadLoader { instance } => (instance, None, true),
                Step::Switch { to, from, .. } | Step::Replace { to, from, .. } => (to, Some(from), false),
                Step::Attach { to, .. } => (to, None, false),
                Step::Register { .. } => continue,
                Step::Configure { instance, .. } => {
                    if !previous.contains(&instance.as_str()) {
                        return Err(format!(
                            "it rewrites loader instance {instance}, which its previous deployment does not own"
                        ));
                    }
                    continue;
                }
                Step::AdoptChain { id, from } => {
                    let owned = self
                        .previous
                        .as_ref()
                        .is_some_and(|p| &p.chain_owner() == from && p.chains.iter().any(|c| c.id == *id));
                    if !owned {
                        return Err(format!(
                            "it gives chain {id} to {from}, which its previous deployment does not own"
                        ));
                    }
                    continue;
                }
            };
            // Traffic may go to an instance this install loaded, or to one it kept.
            let kept = !loads && previous.contains(&to.as_str());
            if !to.starts_with(&own) && !kept {
                return Err(format!("it names loader instance {to}, which this install did not create"));
            }
            if let Some(from) = from
                && !previous.contains(&from.as_str())
            {
                return Err(format!(
                    "it would move traffic back to {from}, which its previous deployment does not own"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A journal an earlier release wrote (names and versions were plain
    /// strings in memory then) reads, and writes back the same JSON.
    #[test]
    fn journals_of_earlier_releases_still_load() {
        let text = include_str!("../fuzz/seeds/state_files/journal.json");
        let journal: Journal = serde_json::from_str(text).unwrap();
        let again: serde_json::Value = serde_json::to_value(&journal).unwrap();
        assert_eq!(again, serde_json::from_str::<serde_json::Value>(text).unwrap());
        let register = r#"{"step":"register","package":"flow","version":"1.1.0","hook":"xdp","programs":["count"]}"#;
        let step: Step = serde_json::from_str(register).unwrap();
        assert!(matches!(&step, Step::Register { package, .. } if package.as_str() == "flow"), "{step:?}");
        assert_eq!(serde_json::to_string(&step).unwrap(), register);
    }

    /// A redeploy keeps an earlier generation's loader and chains: its journal
    /// names them, and only them.
    #[test]
    fn a_journal_may_name_what_it_kept_of_its_previous_deployment_and_nothing_else() {
        let previous: DeploymentRecord =
            serde_json::from_str(include_str!("../fuzz/seeds/state_files/record.json")).unwrap();
        let journal = |steps: Vec<Step>| {
            let mut j =
                Journal::install("app", 2, previous.bpffs_root.clone(), previous.netns.clone(), Some(previous.clone()));
            j.steps = steps;
            j.check("app", Some(&previous))
        };
        let kept = "app-1-classify-l3_classifier".to_owned();
        let chain = previous.chains[0].id;
        let ok = vec![
            Step::AdoptChain { id: chain, from: previous.chain_owner() },
            Step::Attach { interface: "eth1".into(), mode: AttachMode::Xdp, to: kept.clone() },
        ];
        assert_eq!(journal(ok), Ok(()));
        assert!(journal(vec![Step::LoadLoader { instance: kept.clone() }]).is_err(), "loaded again: not its own");
        let other = Step::Attach { interface: "eth1".into(), mode: AttachMode::Xdp, to: "other-1-x-l".into() };
        assert!(journal(vec![other]).is_err());
        let foreign = Step::AdoptChain { id: hike_runtime::ChainId(chain.0 + 1), from: previous.chain_owner() };
        assert!(journal(vec![foreign]).is_err());
        let stolen = Step::AdoptChain { id: chain, from: "other#1".into() };
        assert!(journal(vec![stolen]).is_err());
    }
}
