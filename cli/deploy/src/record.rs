//! What a deployment put on the host, as recorded in the state directory: enough
//! to show it, to replace it and to remove exactly it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hike_bytecode::Hook;
use serde::{Deserialize, Serialize};

use ebpkg_spec::PackageId;

/// Format version of records and journals.
pub const FORMAT: u32 = 1;

/// One deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeploymentRecord {
    pub format: u32,
    pub name: String,
    /// Increases with every install; names its chains' owner and its loader instances.
    pub generation: u64,
    /// The HIKe root it lives in.
    pub bpffs_root: PathBuf,
    /// The network namespace its loaders were attached in (None: the default one).
    #[serde(default)]
    pub netns: Option<String>,
    pub project: PackageId,
    /// The project's directory (canonical), for a project's deployment; `None`
    /// for a package installed by name. Two projects never share a deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_dir: Option<PathBuf>,
    /// Digest of the inputs (packages, scripts, parameters): equal digests mean
    /// reinstalling would change nothing.
    pub inputs: String,
    /// Seconds since the epoch.
    pub installed_at: u64,
    pub packages: Vec<RecordedPackage>,
    pub programs: Vec<RecordedProgram>,
    pub chains: Vec<RecordedChain>,
    pub loaders: Vec<RecordedLoader>,
    pub params: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordedPackage {
    pub name: String,
    pub version: String,
    pub source: String,
    pub checksum: String,
    /// The maps of its programs whose layouts the manifest documents, for
    /// `ebpkg status --maps`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<RecordedMap>,
}

/// A program map and its layout: `(field name, field type)` lists as in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordedMap {
    pub name: String,
    pub key: Vec<(String, String)>,
    pub value: Vec<(String, String)>,
}

/// A registered program. Several deployments may use the same `package@version`;
/// it is unregistered when the last one goes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordedProgram {
    pub package: String,
    pub version: String,
    pub name: String,
    pub hook: Hook,
    pub id: hike_runtime::ProgId,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedChain {
    /// The script it comes from.
    pub script: String,
    pub name: String,
    pub id: hike_runtime::ChainId,
    pub hook: Hook,
    /// How it runs, for chains a loader starts (`None`: called by chains only,
    /// or recorded before tiers existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<crate::native::Tier>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedLoader {
    pub instance: String,
    pub package: String,
    pub version: String,
    pub loader: String,
    pub hook: Hook,
    pub attachments: Vec<RecordedAttachment>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordedAttachment {
    pub interface: String,
    pub mode: hike_bytecode::AttachMode,
}

impl DeploymentRecord {
    /// The owner string its chains carry in the runtime.
    pub fn chain_owner(&self) -> String {
        chain_owner(&self.name, self.generation)
    }

    /// `(package, version, hook)` of every program version it registered.
    pub fn program_versions(&self) -> Vec<(String, String, Hook)> {
        let mut v: Vec<_> = self.programs.iter().map(|p| (p.package.clone(), p.version.clone(), p.hook)).collect();
        v.sort();
        v.dedup();
        v
    }
}

/// The owner of a generation's chains.
pub fn chain_owner(deployment: &str, generation: u64) -> String {
    format!("{deployment}#{generation}")
}

/// The name of a generation's loader instance (a pin-tree component).
pub fn loader_instance(deployment: &str, generation: u64, package: &str, loader: &str) -> String {
    format!("{deployment}-{generation}-{package}-{loader}")
}
