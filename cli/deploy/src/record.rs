//! What a deployment put on the host, as recorded in the state directory: enough
//! to show it, to replace it and to remove exactly it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use hike_bytecode::Hook;
use serde::{Deserialize, Serialize};

use ebpkg_spec::types::Sha256Digest;
use ebpkg_spec::{PackageId, PackageName};

use crate::source::PackageSource;
use semver::Version;

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
    /// What became of the maps of packages whose version changed with this
    /// generation (absent in records written before ebpkg kept state).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state: Vec<MapState>,
    /// The earlier generation this one installed again (`ebpkg rollback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restores: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordedPackage {
    pub name: PackageName,
    pub version: Version,
    pub source: PackageSource,
    pub checksum: Sha256Digest,
    /// The key its archive's signature was verified with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<ebpkg_spec::types::KeyId>,
    /// The maps of its programs whose layouts the manifest documents, for
    /// `ebpkg status --maps`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<RecordedMap>,
    /// The objects loaded from it (absent in records written before ebpkg said
    /// what runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<RecordedObject>,
}

/// One object of a package as it was loaded: what `ebpkg status` says runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RecordedObject {
    /// The file the package builds it from (`src/tb.bpf.c`) or ships (`obj/tb.o`).
    pub object: String,
    pub hook: Hook,
    /// The SHA-256 of the bytes loaded.
    pub sha256: Sha256Digest,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<ebpkg_spec::types::ObjectOrigin>,
    /// The compiler the object names (`.comment` or the DWARF producer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
}

impl RecordedPackage {
    /// `name@version`, typed.
    pub fn id(&self) -> PackageId {
        PackageId::new(self.name.clone(), self.version.clone())
    }
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
    pub package: PackageName,
    pub version: Version,
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
    pub package: PackageName,
    pub version: Version,
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
    pub fn program_versions(&self) -> Vec<(PackageName, Version, Hook)> {
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

/// What happened to one map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fate {
    /// The new version uses the running map: nothing was copied or lost.
    Kept,
    /// Copied into the new version's map, the fields it added zeroed.
    Extended,
    /// Started empty: its layout changed and `--reset-state` was given.
    Reset,
    /// Started empty: the package says so (`on-upgrade = "fresh"`).
    Fresh,
}

impl Fate {
    pub fn name(self) -> &'static str {
        match self {
            Fate::Kept => "kept",
            Fate::Extended => "extended",
            Fate::Reset => "reset",
            Fate::Fresh => "fresh",
        }
    }
}

/// A map of a package version that replaced another, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapState {
    pub package: PackageName,
    pub from: Version,
    pub to: Version,
    pub map: String,
    pub fate: Fate,
    /// Why it was not kept (a changed layout, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A record written by an earlier release (when names,
    /// versions and checksums were plain strings in memory): the typed fields
    /// read them, and write them back byte for byte the same JSON.
    #[test]
    fn records_of_earlier_releases_still_load() {
        let text = include_str!("../fuzz/seeds/state_files/record.json");
        let record: DeploymentRecord = serde_json::from_str(text).unwrap();
        let flow = record.packages.iter().find(|p| p.name.as_str() == "flow").unwrap();
        assert_eq!(flow.id().to_string(), "flow@1.0.0");
        assert_eq!(flow.checksum.to_hex(), "98d3fc30de4577561c33dbca395fd8dc46c35ec3c88bdfcac1b5034c10375d22");
        assert!(record.programs.iter().all(|p| p.version == Version::new(1, 0, 0)));
        // Written before records said what runs: no objects, and none invented.
        assert!(record.packages.iter().all(|p| p.objects.is_empty()));
        let again: serde_json::Value = serde_json::to_value(&record).unwrap();
        assert_eq!(again, serde_json::from_str::<serde_json::Value>(text).unwrap());
    }

    /// What a record says of a loaded object, as `status --json` shows it; an
    /// object recorded without origin or compiler (a plan made without a build)
    /// still reads.
    #[test]
    fn loaded_objects_keep_their_digest_origin_and_compiler() {
        let text = include_str!("../fuzz/seeds/state_files/record.json");
        let mut record: DeploymentRecord = serde_json::from_str(text).unwrap();
        let o = RecordedObject {
            object: "src/flow.bpf.c".into(),
            hook: Hook::Xdp,
            sha256: Sha256Digest([7; 32]),
            origin: Some(ebpkg_spec::types::ObjectOrigin::RebuiltAndMatched),
            compiler: Some("Debian clang version 19.1.7".into()),
        };
        record.packages[0].objects = vec![o.clone(), RecordedObject { origin: None, compiler: None, ..o }];
        let json = serde_json::to_value(&record).unwrap();
        let objects = &json["packages"][0]["objects"];
        assert_eq!(objects[0]["origin"], "rebuilt-and-matched");
        assert_eq!(objects[0]["sha256"], "07".repeat(32));
        assert!(objects[1].get("origin").is_none() && objects[1].get("compiler").is_none(), "{objects}");
        assert_eq!(serde_json::from_value::<DeploymentRecord>(json).unwrap(), record);
    }

    /// What the types refuse, a string field took: a record naming a package
    /// that cannot exist is damaged, and says where.
    #[test]
    fn a_record_with_an_impossible_package_is_refused() {
        let text = include_str!("../fuzz/seeds/state_files/record.json").replacen("\"flow\"", "\"Flow Counter!\"", 1);
        let e = serde_json::from_str::<DeploymentRecord>(&text).unwrap_err();
        assert!(e.to_string().contains("line"), "{e}");
        let text = include_str!("../fuzz/seeds/state_files/record.json").replacen("\"1.0.0\"", "\"one\"", 1);
        assert!(serde_json::from_str::<DeploymentRecord>(&text).is_err());
    }

    use ebpkg_spec::RegistryId;

    /// Sources are typed as they are read: a registry by its URL (the rules every
    /// registry named anywhere follows), the project by its directory.
    #[test]
    fn sources_read_as_registries_or_the_project() {
        let text = include_str!("../fuzz/seeds/state_files/record.json");
        let record: DeploymentRecord = serde_json::from_str(text).unwrap();
        let source = |name: &str| &record.packages.iter().find(|p| p.name.as_str() == name).unwrap().source;
        assert_eq!(source("app"), &PackageSource::Path(PathBuf::from("/tmp/kl/app")));
        let registry = RegistryId::parse("/tmp/kl/registry").unwrap();
        assert_eq!(source("flow"), &PackageSource::Registry(registry.clone()));
        assert_eq!(source("flow").registry(), Some(&registry));
        let bad = text.replacen("\"file:///tmp/kl/registry/\"", "\"https://user:secret@registry.example/\"", 1);
        let e = serde_json::from_str::<DeploymentRecord>(&bad).unwrap_err().to_string();
        assert!(e.contains("is not a registry URL: it contains credentials") && e.contains("line 24"), "{e}");
    }
}
