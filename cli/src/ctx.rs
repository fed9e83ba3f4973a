//! What every command works with: output, settings and the global flags, and
//! what it reads once (the project, the trust policy).

use std::path::PathBuf;
use std::sync::{Mutex, OnceLock, PoisonError};

use anyhow::Result;
use ebpkg_deploy::Deployer;
use ebpkg_signing::TrustPolicy;
use ebpkg_sources::Cache;
use ebpkg_spec::names::PackageGlob;
use ebpkg_spec::types::KeyId;

use crate::config::Config;
use crate::exit::{Failure, fail, failure_of, message};
use crate::project::Project;
use crate::registries::Registries;
use crate::ui::Ui;

pub struct Ctx {
    pub ui: Ui,
    pub config: Config,
    /// Only the cache and local registries.
    pub offline: bool,
    /// ebpkg.lock must not change.
    pub locked: bool,
    /// Trust on first use: `--trust-new-keys`.
    pub trust_new_keys: bool,
    /// The network namespace interfaces are in.
    pub netns: Option<String>,
    pub manifest_path: Option<PathBuf>,
    /// The cache directory's check, done once by the first command step that
    /// reads the cache (`Ctx::checked_cache`).
    pub cache_checked: std::sync::OnceLock<std::result::Result<(), crate::cache_safety::UnsafeCache>>,
    /// What the command has read of the project and the trust policy (empty at
    /// first: `Loaded::default()`).
    pub loaded: Loaded,
}

/// What a command reads at most once, however many of its steps ask for it (as
/// cargo's `Workspace` holds the manifests): the project's ebpkg.toml, and the
/// trust policy in force (the user's policy merged with the project's).
#[derive(Default)]
pub struct Loaded {
    /// The project, or why there is none (said again to each step that asks).
    project: OnceLock<std::result::Result<Project, NoProject>>,
    /// Keys trusted on first use during the command are added to it.
    trust_policy: Mutex<Option<TrustPolicy>>,
}

/// Why the project could not be loaded: the failure and its message, so that
/// each step that asks fails as the first did (same text, same exit code).
#[derive(Debug, Clone)]
struct NoProject {
    failure: Failure,
    message: String,
}

impl Ctx {
    /// The project around the current directory (or at --manifest-path), found
    /// and read on the first call only.
    pub fn project(&self) -> Result<&Project> {
        let loaded = self.loaded.project.get_or_init(|| {
            Project::find(self.manifest_path.as_deref())
                .map_err(|e| NoProject { failure: failure_of(&e), message: message(&e) })
        });
        loaded.as_ref().map_err(|e| fail(e.failure, &e.message))
    }

    /// The trust policy in force: the user's, merged with the project's when
    /// there is a project. Read on the first call only; a key trusted on first
    /// use since ([`Ctx::trusted_on_first_use`]) is in it.
    pub fn trust_policy(&self) -> Result<TrustPolicy> {
        let mut cached = self.loaded.trust_policy.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(policy) = cached.as_ref() {
            return Ok(policy.clone());
        }
        let policy = crate::trust_files::effective_policy(&self.config.trust_path, self.project().ok())?;
        *cached = Some(policy.clone());
        Ok(policy)
    }

    /// Notes that the command trusted `key` for exactly `name` on its first use
    /// (recorded in the user's policy file by the caller), so that later steps
    /// see the policy as that file now says.
    pub fn trusted_on_first_use(&self, name: PackageGlob, key: KeyId) {
        let mut cached = self.loaded.trust_policy.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(policy) = cached.as_mut() {
            policy.trust(name, key);
        }
    }

    /// Checks that the cache directory is private (creating it 0700 when
    /// missing), once per command: before anything reads from it.
    pub fn checked_cache(&self) -> std::result::Result<(), crate::cache_safety::UnsafeCache> {
        self.cache_checked.get_or_init(|| crate::cache_safety::check(&self.config.cache_dir)).clone()
    }

    /// The registries; their index files and TUF metadata are kept in the cache,
    /// which is checked first.
    pub fn registries(&self) -> Result<Registries<'_>> {
        self.checked_cache()?;
        Registries::new(&self.config, self.offline)
    }

    /// The download cache, once the cache directory is found private.
    pub fn cache(&self) -> Result<Cache> {
        self.checked_cache()?;
        Ok(Cache::new(self.config.cache_dir.clone()))
    }

    /// The deployer of the configured state directory and HIKe root.
    pub fn deployer(&self) -> Result<Deployer> {
        Ok(Deployer::new(&self.config.state_dir, &self.config.bpffs_root, self.netns.clone())?)
    }
}
