//! Chain tiers (hike-sdk/docs/NATIVE.md): inside an install's transaction, once
//! its chains run interpreted on the interfaces, each chain a loader starts is
//! compiled to a native program and put in its slot. The compiling (clang,
//! package sources) is the caller's: a [`NativeCompiler`] given to the
//! [`Deployer`](crate::Deployer). What became of each chain is recorded.

use std::collections::BTreeMap;
use std::time::Duration;

use hike_bytecode::{Hook, Insn};
use hike_runtime::{ChainId, NativeModule, NativeObject, Runtime};
use serde::{Deserialize, Serialize};

use crate::plan::PlannedPackage;

/// What to compile: one chain loaders start, with what it calls.
pub struct NativeRequest<'a> {
    pub hook: Hook,
    pub chain: ChainId,
    pub name: &'a str,
    /// It and every chain it calls, linked (program and chain ids filled in).
    pub chains: &'a BTreeMap<u32, Vec<Insn>>,
    /// Each program id it may call: the package providing it and its name.
    pub programs: &'a BTreeMap<u32, (&'a PlannedPackage, &'a str)>,
}

/// A compiled native program.
pub struct NativeBuild {
    pub elf: Vec<u8>,
    pub entry: String,
    /// The package version of each module of the object (module 1 first).
    pub modules: Vec<NativeModule>,
    /// Budget its longest path needs.
    pub worst_steps: u32,
    pub build_time: Duration,
}

/// Compiles chains to native programs.
pub trait NativeCompiler: Send + Sync + std::fmt::Debug {
    /// The object for `request`, or why there is none (the chain stays interpreted).
    fn compile(&self, request: &NativeRequest<'_>) -> Result<NativeBuild, String>;
}

/// How a chain runs, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "tier", rename_all = "lowercase")]
pub enum Tier {
    Native {
        /// The kernel's id of the native program.
        bpf_id: u32,
        /// Its instructions, and what the verifier processed to accept it.
        insns: u32,
        verified_insns: u64,
        /// Budget its longest path needs (a packet with less is interpreted).
        worst_steps: u32,
        build_ms: u64,
        load_ms: u64,
        /// The SHA-256 of the native object loaded (absent in records written
        /// before ebpkg said what runs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<ebpkg_spec::types::Sha256Digest>,
    },
    Interpreted {
        /// Why it is not native (`None`: interpreted was asked for).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// Compiles and installs chain `chain`'s native program; the tier to record.
pub fn tier_up(rt: &Runtime, compiler: &dyn NativeCompiler, request: &NativeRequest<'_>) -> Result<Tier, String> {
    let build = compiler.compile(request)?;
    let installed = rt
        .install_native(&NativeObject {
            chain: request.chain,
            entry: &build.entry,
            elf: &build.elf,
            modules: &build.modules,
        })
        .map_err(|e| e.to_string())?;
    Ok(Tier::Native {
        bpf_id: installed.bpf_id,
        insns: installed.verifier.insns,
        verified_insns: installed.verifier.insns_processed,
        worst_steps: build.worst_steps,
        build_ms: build.build_time.as_millis() as u64,
        load_ms: installed.load_time.as_millis() as u64,
        sha256: Some(ebpkg_spec::types::Sha256Digest::of(&build.elf)),
    })
}
