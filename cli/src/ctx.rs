//! What every command works with: output, settings and the global flags.

use std::path::PathBuf;

use anyhow::Result;
use ebpkg_deploy::Deployer;
use ebpkg_sources::Cache;

use crate::config::Config;
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
}

impl Ctx {
    /// The project around the current directory (or at --manifest-path).
    pub fn project(&self) -> Result<Project> {
        Project::find(self.manifest_path.as_deref())
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
