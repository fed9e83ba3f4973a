//! The work behind the commands.

pub mod account;
pub mod attest;
pub mod build;
pub mod cache;
pub mod chain_script;
pub mod chains;
pub mod deployments;
pub mod doctor;
pub mod edit;
pub mod fetch;
pub mod info;
pub mod install;
pub mod kernel_attestations;
pub mod kernel_fit;
pub mod keys;
pub mod lock;
pub mod mirror;
pub mod native;
pub mod new;
pub mod owner;
pub mod publish;
pub mod resolve;
pub mod search;
pub mod ship_objects;
pub mod shipped;
pub mod test;
pub mod token;
pub mod trust;
pub mod tuf;
pub mod verify;
pub mod yank;

#[cfg(test)]
mod tests;

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
/// verification runs; destroyed when dropped, even on errors, and when the
/// process is interrupted (SIGINT, SIGTERM, SIGHUP). One left by a process that
/// died otherwise (`kill -9`) is removed by the next command that makes one, and
/// reported by `ebpkg doctor`.
pub struct TempRoot {
    pub root: hike_runtime::ScratchRoot,
}

/// VM tables programs can still write in the HIKe root `bpffs_root` (one made
/// before they were read-only to programs), as what was found and the fix, for
/// `doctor`, `install` and `status`. `None` when there are none, or when their
/// flags cannot be read (without the privileges the commands check themselves).
pub fn writable_vm_tables(bpffs_root: &std::path::Path) -> Option<(String, &'static str)> {
    match hike_runtime::vm_access::writable_vm_tables(bpffs_root) {
        Ok(tables) if tables.is_empty() => None,
        Ok(tables) => Some((
            format!(
                "programs of any package deployed in {} can write {}: the root was made before the VM's tables were \
                 read-only to programs, and a map's flags cannot change",
                bpffs_root.display(),
                tables.join(", ")
            ),
            "uninstall every deployment in it, then install them again: a root made anew has them read-only",
        )),
        Err(e) => {
            tracing::debug!("cannot read the flags of the VM's tables: {e}");
            None
        }
    }
}

/// The kinds of temporary roots commands make.
const TEMP_ROOT_KINDS: &[&str] = &["test", "verify", "attest"];

/// Temporary roots beside `bpffs_root` whose process is gone.
pub fn stale_temp_roots(bpffs_root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let (Some(parent), Some(base)) = (bpffs_root.parent(), bpffs_root.file_name()) else { return Vec::new() };
    let base = base.to_string_lossy();
    let mut out = Vec::new();
    for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = TEMP_ROOT_KINDS
            .iter()
            .find_map(|k| name.strip_prefix(&format!("{base}-{k}-")))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid
            && !std::path::Path::new("/proc").join(pid.to_string()).exists()
        {
            out.push(e.path());
        }
    }
    out.sort();
    out
}

/// Roots to remove if a signal ends the process.
static LIVE_TEMP_ROOTS: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// On SIGINT, SIGTERM or SIGHUP: remove the live temporary roots, then die of
/// the signal as the process would have.
fn remove_temp_roots_on_signals() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            tracing::warn!("cannot watch for signals: an interrupted run leaves its temporary root to the next one");
            return;
        };
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let roots = LIVE_TEMP_ROOTS.lock().map(|r| r.clone()).unwrap_or_default();
                for root in roots {
                    if let Err(e) = hike_runtime::Runtime::destroy(&root) {
                        crate::ui::stderr(&format!("cannot remove {}: {e}\n", root.display()));
                    }
                }
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        });
    });
}

impl TempRoot {
    pub fn create(ctx: &crate::Ctx, what: &str) -> Result<TempRoot> {
        for stale in stale_temp_roots(&ctx.config.bpffs_root) {
            match hike_runtime::Runtime::destroy(&stale) {
                Ok(()) => tracing::info!("removed {}, left by a process that died", stale.display()),
                Err(e) => tracing::warn!("cannot remove {}: {e}", stale.display()),
            }
        }
        remove_temp_roots_on_signals();
        let path =
            std::path::PathBuf::from(format!("{}-{what}-{}", ctx.config.bpffs_root.display(), std::process::id()));
        if let Ok(mut live) = LIVE_TEMP_ROOTS.lock() {
            live.push(path.clone());
        }
        let guard = hike_runtime::ScratchPath::at(path.clone());
        let root = hike_runtime::ScratchRoot::init(guard, hike_runtime::InitOptions::default())
            .map_err(|e| fail(Failure::Environment, format!("cannot create a HIKe root at {}: {e}", path.display())))?;
        Ok(TempRoot { root })
    }
}

impl Drop for TempRoot {
    fn drop(&mut self) {
        // The root itself goes with `self.root`, right after this.
        if let Ok(mut live) = LIVE_TEMP_ROOTS.lock() {
            live.retain(|p| p != &self.root.path);
        }
    }
}
