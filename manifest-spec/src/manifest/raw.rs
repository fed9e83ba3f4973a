//! The shape of `ebpkg.toml` exactly as serde reads it, with the span of every value
//! that is checked later. The JSON Schema `schemas/ebpkg.toml.schema.json` is
//! generated from these types, so doc comments here are the schema's descriptions.

use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use toml::Spanned;

use crate::types::{EndsPacket, FieldType, Hook, IntType};

/// An `ebpkg.toml` package manifest.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "ebpkg.toml")]
#[schemars(rename = "Manifest")]
pub(crate) struct RawManifest {
    /// What the package is: its name, version and metadata.
    pub package: RawPackage,
    /// Packages this one uses, by semver requirement.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, RawDependency>")]
    pub dependencies: BTreeMap<Spanned<String>, Spanned<RawDependency>>,
    /// Programs of dependencies that this package offers to chain scripts under its
    /// own name, by dependency: `meter = ["ip6_dst_tbmon"]`.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, Vec<String>>")]
    pub reexports: BTreeMap<Spanned<String>, Vec<Spanned<String>>>,
    /// HIKe programs: eBPF functions that chains call by name.
    #[serde(default, rename = "program")]
    pub programs: Vec<RawProgram>,
    /// Chain loaders: programs attached to an interface that start chains.
    #[serde(default, rename = "loader")]
    pub loaders: Vec<RawLoader>,
    /// Chain scripts.
    #[serde(default, rename = "chain")]
    pub chains: Vec<RawChain>,
}

/// The `[package]` table.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Package")]
pub(crate) struct RawPackage {
    /// Lowercase ASCII letters, digits, `-` and `_`; starts with a letter; at most 64 characters.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// A semantic version (semver 2.0), e.g. "1.4.0".
    #[schemars(with = "String")]
    pub version: Spanned<String>,
    /// One sentence saying what the package does; shown by `ebpkg search`.
    #[schemars(with = "Option<String>")]
    pub description: Option<Spanned<String>>,
    /// An SPDX license expression, e.g. "MIT OR Apache-2.0" or "GPL-2.0-only".
    #[schemars(with = "Option<String>")]
    pub license: Option<Spanned<String>>,
    /// People responsible for the package, e.g. "Ada <ada@example.org>".
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub authors: Vec<Spanned<String>>,
    /// URL of the source repository.
    #[schemars(with = "Option<String>")]
    pub repository: Option<Spanned<String>>,
    /// URL of the package's home page.
    #[schemars(with = "Option<String>")]
    pub homepage: Option<Spanned<String>>,
    /// At most 5 search keywords of at most 20 characters each.
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub keywords: Vec<Spanned<String>>,
    /// Path of the README, relative to this file.
    #[schemars(with = "Option<String>")]
    pub readme: Option<Spanned<String>>,
    /// Which versions of the HIKe SDK the package's C code builds with, as a semver requirement.
    #[serde(rename = "hike-sdk")]
    #[schemars(with = "Option<String>")]
    pub hike_sdk: Option<Spanned<String>>,
    /// What the package needs from the kernel.
    pub kernel: Option<RawKernel>,
}

/// The `[package.kernel]` table.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Kernel")]
pub(crate) struct RawKernel {
    /// Oldest kernel the package works on, e.g. "5.15".
    #[schemars(with = "Option<String>")]
    pub min: Option<Spanned<String>>,
    /// Why `min`: what the package uses that older kernels lack, in a few words (shown when an install on an older
    /// kernel is refused), e.g. "counts with atomic compare-and-exchange (BPF_ATOMIC)".
    #[schemars(with = "Option<String>")]
    pub reason: Option<Spanned<String>>,
    /// BPF program types the package loads, as the kernel names them without `BPF_PROG_TYPE_`, lowercase.
    #[serde(default, rename = "program-types")]
    #[schemars(with = "Vec<String>")]
    pub program_types: Vec<Spanned<String>>,
    /// BPF helpers or kfuncs the package calls, e.g. "bpf_fib_lookup".
    #[serde(default)]
    #[schemars(with = "Vec<String>")]
    pub helpers: Vec<Spanned<String>>,
    /// Which kernel types the C code is compiled against: "portable" (the default: the HIKe SDK's reference
    /// types, one object for every kernel, relocated by libbpf at load) or "local" (the vmlinux.h of the kernel it
    /// is built on, rebuilt for each kernel; for code that needs types only that kernel has).
    #[schemars(with = "Option<crate::manifest::KernelBuild>")]
    pub build: Option<Spanned<String>>,
}

/// A dependency: either a requirement string (`net = "^1.2"`) or a table.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
#[schemars(rename = "Dependency")]
pub(crate) enum RawDependency {
    /// A semver requirement with cargo's syntax: "1.2", "^1.2", "~1.2.3", "1.*", ">=1.2, <2".
    Req(String),
    /// A requirement with options.
    Table(RawDependencyTable),
}

/// The table form of a dependency.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "DependencyTable")]
pub(crate) struct RawDependencyTable {
    /// A semver requirement with cargo's syntax.
    #[schemars(with = "String")]
    pub version: Spanned<String>,
    /// URL of the registry to take it from, when it is not the default one.
    #[schemars(with = "Option<String>")]
    pub registry: Option<Spanned<String>>,
}

// Untagged enums lose serde's error positions and messages, so dependencies are
// read with a visitor that says exactly what it expected.
impl<'de> Deserialize<'de> for RawDependency {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawDependency;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a version requirement such as \"^1.2\", or a table such as { version = \"^1.2\" }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawDependency, E> {
                Ok(RawDependency::Req(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawDependency, A::Error> {
                RawDependencyTable::deserialize(de::value::MapAccessDeserializer::new(map)).map(RawDependency::Table)
            }
        }
        d.deserialize_any(V)
    }
}

/// A prebuilt CO-RE object, for packages produced by other toolchains.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Prebuilt")]
pub(crate) struct RawPrebuilt {
    /// Path of the ELF object, relative to this file.
    #[schemars(with = "String")]
    pub object: Spanned<String>,
    /// SHA-256 of the object, 64 hex digits. The object is used only when it matches.
    #[schemars(with = "String")]
    pub sha256: Spanned<String>,
}

/// A `[[program]]`: a HIKe program chains call like a function.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Program")]
pub(crate) struct RawProgram {
    /// The program's name: the C function's name and the name chains call.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// The C source file, relative to this file. Required unless `prebuilt` is given.
    #[schemars(with = "Option<String>")]
    pub source: Option<Spanned<String>>,
    /// A prebuilt object to use instead of compiling `source`.
    pub prebuilt: Option<RawPrebuilt>,
    /// The hook it runs at: "xdp" or "tc".
    pub hook: Hook,
    /// What the program does.
    pub description: Option<String>,
    /// Its arguments, in order; at most 4.
    #[serde(default, rename = "arg")]
    pub args: Vec<RawArg>,
    /// What its result means. Absent when the program has no meaningful result.
    pub returns: Option<RawReturns>,
    /// Whether a call can end the packet instead of returning to the chain. Default "may".
    #[serde(rename = "ends-packet")]
    pub ends_packet: Option<EndsPacket>,
    /// Maps the program owns and documents for users and tools.
    #[serde(default, rename = "map")]
    pub maps: Vec<RawMap>,
}

/// A `[[program.arg]]`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Arg")]
pub(crate) struct RawArg {
    /// The argument's name, as the C code reads it.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Its integer type.
    #[serde(rename = "type")]
    pub ty: IntType,
    /// What it means and which values it takes.
    pub doc: String,
}

/// A program's `returns` table.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Returns")]
pub(crate) struct RawReturns {
    /// The result's integer type.
    #[serde(rename = "type")]
    pub ty: IntType,
    /// What each result means.
    pub doc: String,
}

/// A `[[program.map]]` or `[[loader.map]]`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Map")]
pub(crate) struct RawMap {
    /// The map's name in the C code.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// What it holds and who writes it.
    pub doc: String,
    /// Fields of its key, in order. Required for loader configuration maps.
    pub key: Option<Vec<RawField>>,
    /// Fields of its value, in order. Required for loader configuration maps.
    pub value: Option<Vec<RawField>>,
    /// What an upgrade does with its contents (program maps only): `keep` (the
    /// default: kept while its layout is unchanged), `fresh` (starts empty), or
    /// `extend` (kept, also when the value gained fields at its end, zeroed).
    #[serde(rename = "on-upgrade")]
    #[schemars(with = "Option<super::model::OnUpgrade>")]
    pub on_upgrade: Option<Spanned<super::model::OnUpgrade>>,
}

/// A field of a map key or value.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Field")]
pub(crate) struct RawField {
    /// The field's name.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: FieldType,
    /// What it means.
    pub doc: Option<String>,
}

/// A `[[loader]]`: a program attached to an interface that picks a chain per packet.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Loader")]
pub(crate) struct RawLoader {
    /// The loader's name: the C function's name and the name chain scripts import.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// The C source file, relative to this file. Required unless `prebuilt` is given.
    #[schemars(with = "Option<String>")]
    pub source: Option<Spanned<String>>,
    /// A prebuilt object to use instead of compiling `source`.
    pub prebuilt: Option<RawPrebuilt>,
    /// The hook it attaches to: "xdp" or "tc".
    pub hook: Hook,
    /// What the loader does and how it picks a chain.
    pub description: Option<String>,
    /// Its configuration maps, which chain scripts fill.
    #[serde(default, rename = "map")]
    pub maps: Vec<RawMap>,
}

/// A `[[chain]]`: a chain script.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "Chain")]
pub(crate) struct RawChain {
    /// The script's name.
    #[schemars(with = "String")]
    pub name: Spanned<String>,
    /// The script file, relative to this file.
    #[schemars(with = "String")]
    pub source: Spanned<String>,
    /// What the chains in it do.
    pub description: Option<String>,
}
