//! What a script is compiled against: the packages it may import and what each
//! exports. The caller (ebpkg) builds this from the project's dependencies; tests
//! build it by hand.

use std::collections::BTreeMap;

use hike_bytecode::Hook;
use serde::{Deserialize, Serialize};

use crate::types::{EndsPacket, FieldType, IntType};

/// The packages a script may import from, by name as the script writes it (the
/// normalized package name: lowercase, `-` as `_`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CompileEnv {
    pub packages: BTreeMap<String, PackageExports>,
    /// Executed-instruction budget per packet of the target VM (for loop checks).
    pub budget: u32,
}

/// What one package offers to chain scripts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PackageExports {
    /// The package's real name (for messages and relocations).
    pub name: String,
    pub programs: BTreeMap<String, ProgramSig>,
    pub loaders: BTreeMap<String, LoaderSig>,
}

/// A program's calling signature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramSig {
    /// Where the program really lives: its package (differs from the importing
    /// package when that one re-exports it).
    pub package: String,
    pub hook: Hook,
    /// `(name, type)` of each argument.
    pub args: Vec<(String, IntType)>,
    /// The result type; `None` when the program returns nothing meaningful.
    pub ret: Option<IntType>,
    pub ends_packet: EndsPacket,
}

/// A loader and its configuration maps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoaderSig {
    pub package: String,
    pub hook: Hook,
    pub maps: BTreeMap<String, MapLayout>,
}

/// A configuration map's key and value fields, in memory order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapLayout {
    pub key: Vec<(String, FieldType)>,
    pub value: Vec<(String, FieldType)>,
}

impl CompileEnv {
    /// An environment with the default budget and no packages.
    pub fn new() -> Self {
        CompileEnv { packages: BTreeMap::new(), budget: hike_bytecode::limits::DEFAULT_BUDGET }
    }
}
