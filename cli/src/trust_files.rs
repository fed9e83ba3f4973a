//! The trust policy files: the user's (`trust.toml` beside the configuration)
//! and a project's (`ebpkg-trust.toml` beside its `ebpkg.toml`). Below both the
//! command's context, which reads the policy in force once per command
//! (`Ctx::trust_policy`), and `ops::trust`, which applies it and edits the files.

use std::path::Path;

use anyhow::Result;
use ebpkg_signing::TrustPolicy;

use crate::exit::{Failure, fail};
use crate::project::Project;

/// A project's own trust policy, committed with it.
pub const PROJECT_TRUST_FILE: &str = "ebpkg-trust.toml";

/// Reads one policy file; a missing file is an empty policy.
pub fn read_policy(path: &Path) -> Result<TrustPolicy> {
    match ebpkg_fs::read_text(path, ebpkg_signing::policy::MAX_POLICY_BYTES) {
        Ok(text) => TrustPolicy::parse(&text).map_err(|e| fail(Failure::Input, format!("{}: {e}", path.display()))),
        Err(e) if e.is_not_found() => Ok(TrustPolicy::default()),
        Err(e) => Err(e.into()),
    }
}

/// The policy in force: the user's (`user`), merged with the project's when
/// there is one. Read from the files: a command asks `Ctx::trust_policy`, which
/// reads them once.
pub fn effective_policy(user: &Path, project: Option<&Project>) -> Result<TrustPolicy> {
    let mut policy = read_policy(user)?;
    if let Some(project) = project {
        policy.merge(&read_policy(&project.dir.join(PROJECT_TRUST_FILE))?);
    }
    Ok(policy)
}
