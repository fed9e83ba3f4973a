//! HIKe roots of one's own — for a test, a benchmark, a verification run —
//! removed with everything under them when their guard is dropped, so a failing
//! test or an early return leaves nothing pinned.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::{InitOptions, Result, Runtime};

/// A bpffs path reserved for a HIKe root, destroyed (with whatever was made
/// there) when dropped. The root itself may be made by someone else, e.g. a
/// deployer installing into it.
#[derive(Debug)]
pub struct ScratchPath {
    path: PathBuf,
}

impl ScratchPath {
    /// `<parent>/<prefix>-<pid>-<n>`, unique within this process; whatever an
    /// earlier process with the same pid left there is removed first.
    pub fn unique(parent: &Path, prefix: &str) -> ScratchPath {
        static N: AtomicU32 = AtomicU32::new(0);
        let path = parent.join(format!("{prefix}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
        ScratchPath::at(path)
    }

    /// Exactly `path` (removing what is there first).
    pub fn at(path: PathBuf) -> ScratchPath {
        if let Err(e) = Runtime::destroy(&path) {
            tracing::warn!("cannot clear {}: {e}", path.display());
        }
        ScratchPath { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchPath {
    fn drop(&mut self) {
        if let Err(e) = Runtime::destroy(&self.path) {
            tracing::warn!("cannot remove {}: {e}", self.path.display());
        }
    }
}

/// A HIKe root initialised at a [`ScratchPath`]: the runtime handle closes
/// before the root is destroyed.
pub struct ScratchRoot {
    pub rt: Runtime,
    pub path: PathBuf,
    // Dropped last: after `rt`.
    _guard: ScratchPath,
}

impl ScratchRoot {
    /// Initialises a root at `guard`'s path; on failure nothing stays there.
    pub fn init(guard: ScratchPath, opts: InitOptions) -> Result<ScratchRoot> {
        let rt = Runtime::init(guard.path(), opts)?;
        Ok(ScratchRoot { rt, path: guard.path().to_owned(), _guard: guard })
    }
}

impl std::ops::Deref for ScratchRoot {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        &self.rt
    }
}
