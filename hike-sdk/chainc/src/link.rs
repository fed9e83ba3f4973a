//! Linking: once the runtime has given programs and chains their ids, fill them
//! into the call instructions and encode loader entries as map keys and values.

use std::collections::HashMap;

use hike_bytecode::{ChainId, Insn, ProgId};

use crate::artifact::{CompiledChain, FieldValue, MapEntry, Target};

/// A reference the linker could not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("chain `{chain}` calls program {package}::{name}, which has no id (is the package installed?)")]
    NoProgram { chain: String, package: String, name: String },
    #[error("`{from}` refers to chain `{name}`, which has no id yet (install chains in the artifact's order)")]
    NoChain { from: String, name: String },
}

/// A program as chains call it: by its package's name and its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProgramRef {
    pub package: String,
    pub program: String,
}

impl ProgramRef {
    pub fn new(package: impl Into<String>, program: impl Into<String>) -> ProgramRef {
        ProgramRef { package: package.into(), program: program.into() }
    }
}

/// Ids assigned by the runtime.
#[derive(Debug, Clone, Default)]
pub struct Ids {
    pub programs: HashMap<ProgramRef, ProgId>,
    /// chain name → chain id.
    pub chains: HashMap<String, ChainId>,
}

/// The chain's instructions with every call target filled in.
pub fn link_chain(chain: &CompiledChain, ids: &Ids) -> Result<Vec<Insn>, LinkError> {
    let mut insns = chain.insns.clone();
    for r in &chain.relocations {
        let id = match &r.target {
            Target::Program { package, name } => {
                ids.programs
                    .get(&ProgramRef::new(package.as_str(), name.as_str()))
                    .ok_or_else(|| LinkError::NoProgram {
                        chain: chain.name.clone(),
                        package: package.clone(),
                        name: name.clone(),
                    })?
                    .0
            }
            Target::Chain { name } => {
                ids.chains
                    .get(name)
                    .ok_or_else(|| LinkError::NoChain { from: chain.name.clone(), name: name.clone() })?
                    .0
            }
        };
        insns[r.insn].imm = id as i32;
    }
    Ok(insns)
}

/// A loader entry as map key and value bytes.
pub fn encode_entry(entry: &MapEntry, ids: &Ids, from: &str) -> Result<(Vec<u8>, Vec<u8>), LinkError> {
    let encode = |fields: &[FieldValue]| -> Result<Vec<u8>, LinkError> {
        let mut out = Vec::new();
        for f in fields {
            match f {
                FieldValue::Int { value, size } => out.extend_from_slice(&value.to_le_bytes()[..*size]),
                FieldValue::Chain(name) => {
                    let id = ids
                        .chains
                        .get(name)
                        .ok_or_else(|| LinkError::NoChain { from: from.to_owned(), name: name.clone() })?;
                    out.extend_from_slice(&id.0.to_le_bytes());
                }
                FieldValue::Bytes(b) => out.extend_from_slice(b),
            }
        }
        Ok(out)
    };
    Ok((encode(&entry.key)?, encode(&entry.value)?))
}

/// Byte offsets of the chain fields in an entry's value (for the runtime, which
/// tracks which loader entries start which chain).
pub fn chain_offsets(value: &[FieldValue]) -> Vec<u32> {
    let mut off = 0u32;
    let mut out = Vec::new();
    for f in value {
        let size = match f {
            FieldValue::Int { size, .. } => *size as u32,
            FieldValue::Chain(_) => {
                out.push(off);
                4
            }
            FieldValue::Bytes(b) => b.len() as u32,
        };
        off += size;
    }
    out
}
