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
    /// reads the cache (`ops::cache::checked`).
    pub cache_checked: std::sync::OnceLock<std::result::Result<(), crate::ops::cache::UnsafeCache>>,
}

impl Ctx {
    /// The project around the current directory (or at --manifest-path).
    pub fn project(&self) -> Result<Project> {
        Project::find(self.manifest_path.as_deref())
    }

    /// The registries; their index files and TUF metadata are kept in the cache,
    /// which is checked first.
    pub fn registries(&self) -> Result<Registries<'_>> {
        crate::ops::cache::checked(self)?;
        Registries::new(&self.config, self.offline)
    }

    /// The download cache, once the cache directory is found private.
    pub fn cache(&self) -> Result<Cache> {
        crate::ops::cache::checked(self)?;
        Ok(Cache::new(self.config.cache_dir.clone()))
    }

    /// The deployer of the configured state directory and HIKe root.
    pub fn deployer(&self) -> Result<Deployer> {
        Ok(Deployer::new(&self.config.state_dir, &self.config.bpffs_root, self.netns.clone())?)
    }
}
