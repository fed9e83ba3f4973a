//! The install journal: before each change to the kernel, the change is written
//! here (write-ahead), so a process killed at any point leaves enough behind for
//! the next run to undo what it did, or — once the new record is committed — to
//! finish cleaning up the previous deployment.

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
    Register { package: String, version: String, hook: Hook, programs: Vec<String> },
    /// A new loader instance.
    LoadLoader { instance: String },
    /// The interface's link moves from the previous deployment's instance to `to`.
    Switch { interface: String, from: String, to: String },
    /// The previous instance (attached with `from_mode`) is detached and `to` attached
    /// with another mode: links cannot change mode in place.
    Replace { interface: String, from: String, from_mode: String, to: String, mode: String },
    /// `to` is attached where nothing of the previous deployment was.
    Attach { interface: String, mode: String, to: String },
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
