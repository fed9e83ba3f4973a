//! The work behind the commands.

pub mod build;
pub mod chains;
pub mod fetch;
pub mod install;
pub mod resolve;
pub mod test;

use anyhow::Result;

use crate::exit::{Failure, fail};

/// Capability numbers (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;

/// The effective capabilities of this process.
pub fn effective_caps() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or(0)
}

/// Loading and attaching eBPF needs CAP_BPF (or CAP_SYS_ADMIN) and CAP_NET_ADMIN.
pub fn require_privileges(what: &str) -> Result<()> {
    let caps = effective_caps();
    let has = |c: u32| caps & (1u64 << c) != 0;
    if (has(CAP_BPF) || has(CAP_SYS_ADMIN)) && has(CAP_NET_ADMIN) {
        return Ok(());
    }
    Err(fail(
        Failure::Environment,
        format!(
            "`ebpkg {what}` loads eBPF programs into the kernel and attaches them: run it as root \
             (it needs CAP_BPF and CAP_NET_ADMIN)"
        ),
    ))
}

/// A HIKe root of one command's own (`<bpffs root>-<what>-<pid>`), for tests and
/// verification runs; destroyed when dropped, even on errors.
pub struct TempRoot {
    pub path: std::path::PathBuf,
    pub rt: hike_runtime::Runtime,
}

impl TempRoot {
    pub fn create(ctx: &crate::Ctx, what: &str) -> Result<TempRoot> {
        let path =
            std::path::PathBuf::from(format!("{}-{what}-{}", ctx.config.bpffs_root.display(), std::process::id()));
        let rt = hike_runtime::Runtime::init(&path, hike_runtime::InitOptions::default())
            .map_err(|e| fail(Failure::Environment, format!("cannot create a HIKe root at {}: {e}", path.display())))?;
        Ok(TempRoot { path, rt })
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        if let Err(e) = hike_runtime::Runtime::destroy(&self.path) {
            tracing::warn!("cannot remove {}: {e}", self.path.display());
        }
    }
}
