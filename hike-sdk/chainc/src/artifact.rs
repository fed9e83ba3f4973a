//! What the compiler produces: bytecode with references still by name, the loader
//! configuration and attach statements, and a line table. `link` turns it into
//! what the runtime installs once ids are known.

use std::fmt::Write as _;

use hike_bytecode::{AttachMode, Hook, Insn, asm};
use serde::{Deserialize, Serialize};

/// A compiled script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    /// The script's file name.
    pub file: String,
    /// The hook every program and loader of the script belongs to.
    pub hook: Hook,
    /// Chains in installation order: every chain comes after the chains it calls.
    pub chains: Vec<CompiledChain>,
    pub loader_configs: Vec<LoaderConfig>,
    pub attaches: Vec<Attach>,
    /// Names bound at install time (`ebpkg install --set NAME=value`).
    pub params: Vec<String>,
}

/// One chain (`def`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompiledChain {
    pub name: String,
    pub nargs: u8,
    #[serde(with = "insns_hex")]
    pub insns: Vec<Insn>,
    /// Call instructions whose `imm` is filled in when linking.
    pub relocations: Vec<Relocation>,
    /// Source position of each instruction.
    pub lines: Vec<LineEntry>,
}

/// A call whose target id is not known yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relocation {
    /// Index of the `call` instruction.
    pub insn: usize,
    pub target: Target,
}

/// What a call refers to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Target {
    /// A program of a package (the package that defines it, not a re-exporter).
    Program { package: String, name: String },
    /// A chain of this script.
    Chain { name: String },
}

/// Where an instruction comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineEntry {
    pub insn: usize,
    pub line: u32,
    pub column: u32,
}

/// `loader[map] = { key: value, ... }`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoaderConfig {
    /// The loader's package and name.
    pub package: String,
    pub loader: String,
    pub map: String,
    pub entries: Vec<MapEntry>,
}

/// One entry, field by field in the map's layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MapEntry {
    pub key: Vec<FieldValue>,
    pub value: Vec<FieldValue>,
}

/// The value of one field.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldValue {
    /// An integer field, already range-checked, stored little-endian in `size` bytes.
    Int { value: u64, size: usize },
    /// A chain of this script, stored as its id (u32).
    Chain(String),
    /// Bytes stored as they are (addresses in network order, prefix keys).
    Bytes(Vec<u8>),
}

/// `loader.attach(dev, mode)`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attach {
    pub package: String,
    pub loader: String,
    pub device: Device,
    pub mode: AttachMode,
}

/// An interface name, or a parameter bound at install time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    Name(String),
    Param(String),
}

mod insns_hex {
    use hike_bytecode::Insn;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(insns: &[Insn], s: S) -> Result<S::Ok, S::Error> {
        let hex: String = Insn::encode_all(insns).iter().map(|b| format!("{b:02x}")).collect();
        s.serialize_str(&hex)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Insn>, D::Error> {
        let s = String::deserialize(d)?;
        let bytes: Option<Vec<u8>> =
            (0..s.len()).step_by(2).map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect();
        bytes
            .and_then(|b| Insn::decode_all(&b))
            .ok_or_else(|| serde::de::Error::custom("instructions are not hex of 8-byte instructions"))
    }
}

impl CompiledChain {
    /// A readable listing: each source line that produced code, then its
    /// instructions, with call targets by name.
    pub fn disassemble(&self, source: &str) -> String {
        let lines: Vec<&str> = source.lines().collect();
        let mut out = format!("chain {} ({} argument(s), {} instructions)\n", self.name, self.nargs, self.insns.len());
        let mut last_line = 0;
        for (pc, text) in asm::disassemble(&self.insns) {
            if let Some(e) = self.lines.iter().find(|e| e.insn == pc)
                && e.line != last_line
            {
                last_line = e.line;
                let src = lines.get(e.line as usize - 1).map_or("", |l| l.trim());
                let _ = writeln!(out, "  ; {:>3} | {src}", e.line);
            }
            let target = self.relocations.iter().find(|r| r.insn == pc).map(|r| match &r.target {
                Target::Program { package, name } => format!("  ; {package}::{name}"),
                Target::Chain { name } => format!("  ; chain {name}"),
            });
            let _ = writeln!(out, "  {pc:>4}: {text}{}", target.unwrap_or_default());
        }
        out
    }
}
