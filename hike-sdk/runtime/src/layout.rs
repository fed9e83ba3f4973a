//! Where everything of one VM instance is pinned, under its root:
//!
//! ```text
//! <root>/vm/hike_progs_xdp, hike_progs_tc   program arrays (program id -> program)
//! <root>/vm/hike_chains                     chain id -> bytecode
//! <root>/vm/hike_state                      per-CPU packet state and counters
//! <root>/vm/hike_config                     ABI version, budget
//! <root>/vm/hike_prog_meta, hike_chain_meta what each id is (see meta.rs)
//! <root>/vm/hike_clock                      what hike_ktime_ns() returns (clock.rs)
//! <root>/vm/hike_entry_map, entry_xdp, entry_tc   the test entry (loaded by the first test run)
//! <root>/vm/cont_xdp, cont_tc               the continuation programs (id 0)
//! <root>/vm/gone_xdp, gone_tc               what a removed program's slot holds
//! <root>/progs/<package>@<version>/<program>       registered programs
//! <root>/progs/<package>@<version>/maps/<map>      their maps
//!                                  (bpffs refuses `.` in names, so the version is
//!                                  written with `_`: `meter@1_2_0`)
//! <root>/loaders/<instance>/prog                   a loader instance
//! <root>/loaders/<instance>/maps/<map>             its configuration maps
//! <root>/loaders/<instance>/meta                   what the runtime knows of it
//! <root>/loaders/<instance>/link@<ifname>          its attachment to an interface
//! ```
//!
//! Versioned package directories let an upgrade load a new version beside the old
//! one and switch.

use std::path::{Path, PathBuf};

use crate::error::{Result, RuntimeError};

/// The default root.
pub const DEFAULT_ROOT: &str = "/sys/fs/bpf/hike";

/// Paths of one instance.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

/// Checks that `s` is safe as one path component of the pin tree. bpffs refuses
/// `.` in names, so it is not allowed here either.
pub fn component(s: &str) -> Result<&str> {
    let ok = !s.is_empty() && s.len() <= 200 && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-@+".contains(c));
    if ok { Ok(s) } else { Err(RuntimeError::BadName(s.to_owned())) }
}

/// A semver version as a pin-tree component: `1.2.0-rc.1` becomes `1_2_0-rc_1`
/// (semver versions never contain `_`, so the mapping is reversible).
pub fn version_component(version: &str) -> Result<String> {
    let v = version.replace('.', "_");
    component(&v)?;
    Ok(v)
}

impl Layout {
    pub fn new(root: &Path) -> Self {
        Layout { root: root.to_owned() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn vm_dir(&self) -> PathBuf {
        self.root.join("vm")
    }

    /// The pinned `hike_gone` of `hook`.
    pub fn tombstone(&self, hook: hike_bytecode::Hook) -> PathBuf {
        self.vm_dir().join(format!("gone_{hook}"))
    }

    pub fn vm_map(&self, name: &str) -> PathBuf {
        self.vm_dir().join(name)
    }

    pub fn progs_dir(&self) -> PathBuf {
        self.root.join("progs")
    }

    pub fn package_dir(&self, package: &str, version: &str) -> Result<PathBuf> {
        Ok(self.progs_dir().join(format!("{}@{}", component(package)?, version_component(version)?)))
    }

    pub fn loaders_dir(&self) -> PathBuf {
        self.root.join("loaders")
    }

    pub fn loader_dir(&self, instance: &str) -> Result<PathBuf> {
        Ok(self.loaders_dir().join(component(instance)?))
    }
}
