//! The validated manifest: every value here has passed the rules in SPEC.md.

use std::collections::BTreeMap;

use semver::{Version, VersionReq};
use serde::Serialize;

use crate::names::{ItemName, PackageName};
use crate::registry_id::RegistryId;
use crate::types::{EndsPacket, FieldType, Hook, IntType, KernelVersion, RelPath, Sha256Digest};

/// Most arguments a HIKe program takes (VM registers r1–r4).
pub const MAX_PROGRAM_ARGS: usize = 4;

/// A validated `ebpkg.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Manifest {
    pub package: Package,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub dependencies: BTreeMap<PackageName, Dependency>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reexports: BTreeMap<PackageName, Vec<ItemName>>,
    #[serde(rename = "program", skip_serializing_if = "Vec::is_empty")]
    pub programs: Vec<Program>,
    #[serde(rename = "loader", skip_serializing_if = "Vec::is_empty")]
    pub loaders: Vec<Loader>,
    #[serde(rename = "chain", skip_serializing_if = "Vec::is_empty")]
    pub chains: Vec<Chain>,
}

/// The `[package]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Package {
    pub name: PackageName,
    pub version: Version,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// An SPDX expression, as written (it has been checked to parse).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readme: Option<RelPath>,
    #[serde(rename = "hike-sdk", skip_serializing_if = "Option::is_none")]
    pub hike_sdk: Option<VersionReq>,
    #[serde(skip_serializing_if = "KernelReq::is_empty")]
    pub kernel: KernelReq,
}

impl Package {
    /// `name@version`, typed.
    pub fn id(&self) -> crate::PackageId {
        crate::PackageId::new(self.name.clone(), self.version.clone())
    }
}

/// What a package needs from the kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct KernelReq {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub min: Option<KernelVersion>,
    /// Why `min`, in a few words: what older kernels lack.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    #[serde(rename = "program-types", skip_serializing_if = "Vec::is_empty", default)]
    pub program_types: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub helpers: Vec<String>,
    /// Which kernel types the C code is compiled against.
    #[serde(skip_serializing_if = "KernelBuild::is_portable", default)]
    pub build: KernelBuild,
}

impl KernelReq {
    /// True when the package states no requirement.
    pub fn is_empty(&self) -> bool {
        self.min.is_none()
            && self.reason.is_none()
            && self.program_types.is_empty()
            && self.helpers.is_empty()
            && self.build.is_portable()
    }
}

/// Which kernel types a package's C code is compiled against (`[package.kernel] build`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KernelBuild {
    /// Against the SDK's reference kernel types: one object, relocated by libbpf
    /// (CO-RE) on whatever kernel loads it, so it is built once and can be cached,
    /// shipped and signed independently of the kernel.
    #[default]
    Portable,
    /// Against the `vmlinux.h` of the kernel it is built on, for code that needs
    /// types only that kernel has; built again for every kernel.
    Local,
}

impl KernelBuild {
    pub fn is_portable(&self) -> bool {
        *self == KernelBuild::Portable
    }

    /// As written in a manifest.
    pub fn name(self) -> &'static str {
        match self {
            KernelBuild::Portable => "portable",
            KernelBuild::Local => "local",
        }
    }
}

/// A dependency's requirement and where to find it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dependency {
    pub version: VersionReq,
    /// The registry; `None` means the default registry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<RegistryId>,
}

/// Where a program's or loader's object comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Prebuilt {
    pub object: RelPath,
    pub sha256: Sha256Digest,
}

/// A HIKe program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Program {
    pub name: ItemName,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<RelPath>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prebuilt: Option<Prebuilt>,
    pub hook: Hook,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "ends-packet")]
    pub ends_packet: EndsPacket,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub returns: Option<Returns>,
    #[serde(rename = "arg", skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<Arg>,
    #[serde(rename = "map", skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<MapDoc>,
}

/// A program argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Arg {
    pub name: ItemName,
    #[serde(rename = "type")]
    pub ty: IntType,
    pub doc: String,
}

/// A program's documented result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Returns {
    #[serde(rename = "type")]
    pub ty: IntType,
    pub doc: String,
}

/// A documented map; `key`/`value` layouts are required for loader maps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MapDoc {
    pub name: ItemName,
    pub doc: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<Vec<Field>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Vec<Field>>,
    /// What an upgrade from another version of the package does with the map's
    /// contents (program maps only).
    #[serde(rename = "on-upgrade", skip_serializing_if = "OnUpgrade::is_keep")]
    pub on_upgrade: OnUpgrade,
}

/// What happens to a program map's contents when the package is upgraded (or
/// rolled back) to this version while another version runs (`on-upgrade`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnUpgrade {
    /// The new programs use the running map when its kind, sizes, flags and key
    /// and value layouts (BTF) are unchanged; a changed one refuses the install
    /// (unless `--reset-state`).
    #[default]
    Keep,
    /// The map starts empty in this version, whatever ran before.
    Fresh,
    /// Like `keep`, and also across a value that gained fields after its last
    /// one: entries are copied with the new fields zeroed.
    Extend,
}

impl OnUpgrade {
    pub fn is_keep(&self) -> bool {
        *self == OnUpgrade::Keep
    }

    pub fn name(self) -> &'static str {
        match self {
            OnUpgrade::Keep => "keep",
            OnUpgrade::Fresh => "fresh",
            OnUpgrade::Extend => "extend",
        }
    }
}

/// A field of a map key or value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Field {
    pub name: ItemName,
    #[serde(rename = "type")]
    pub ty: FieldType,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub doc: Option<String>,
}

/// A chain loader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Loader {
    pub name: ItemName,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<RelPath>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prebuilt: Option<Prebuilt>,
    pub hook: Hook,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "map", skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<ConfigMap>,
}

/// A loader's configuration map, with the layouts chain scripts write into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigMap {
    pub name: ItemName,
    pub doc: String,
    pub key: Vec<Field>,
    pub value: Vec<Field>,
}

/// A chain script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Chain {
    pub name: ItemName,
    pub source: RelPath,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Manifest {
    /// `name@version` of the package.
    pub fn id(&self) -> crate::PackageId {
        crate::PackageId::new(self.package.name.clone(), self.package.version.clone())
    }

    /// The manifest as canonical TOML: keys in a fixed order, empty sections left
    /// out. Parsing the result gives back an equal `Manifest`.
    pub fn to_toml_string(&self) -> String {
        // Every field is a string, integer, table or array of those: serializing
        // cannot fail for these types.
        toml::to_string(self).unwrap_or_else(|e| format!("# could not serialize manifest: {e}\n"))
    }

    /// Every item name this package defines or re-exports, for collision checks.
    pub fn item_names(&self) -> impl Iterator<Item = &ItemName> {
        self.programs
            .iter()
            .map(|p| &p.name)
            .chain(self.loaders.iter().map(|l| &l.name))
            .chain(self.chains.iter().map(|c| &c.name))
            .chain(self.reexports.values().flatten())
    }

    /// The program with this name, if the package defines it.
    pub fn program(&self, name: &str) -> Option<&Program> {
        self.programs.iter().find(|p| p.name.as_str() == name)
    }

    /// The loader with this name, if the package defines it.
    pub fn loader(&self, name: &str) -> Option<&Loader> {
        self.loaders.iter().find(|l| l.name.as_str() == name)
    }
}
