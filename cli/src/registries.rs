//! The registries one command talks to: the default one and any a dependency
//! names, opened once each (through a mirror when one is configured), with each
//! package's index read once. Also the resolver's source of versions.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use anyhow::{Context, Result};
use ebpkg_resolver::{Candidate, QualifiedName, Requirement, SourceError, VersionSource};
use ebpkg_sources::{Registry, RegistryUrl, open_registry};
use ebpkg_spec::PackageName;
use ebpkg_spec::index::IndexEntry;

use crate::config::Config;
use crate::exit::Failure;

/// A package's index entries, shared.
type Index = Arc<Vec<IndexEntry>>;

pub struct Registries<'c> {
    config: &'c Config,
    offline: bool,
    /// The default registry.
    pub default: RegistryUrl,
    opened: RefCell<HashMap<String, Arc<dyn Registry>>>,
    indexes: RefCell<HashMap<(String, String), Option<Index>>>,
}

impl<'c> Registries<'c> {
    pub fn new(config: &'c Config, offline: bool) -> Result<Registries<'c>> {
        let default = RegistryUrl::parse(&config.registry)
            .with_context(|| format!("the default registry `{}`", config.registry))?;
        Ok(Registries { config, offline, default, opened: RefCell::default(), indexes: RefCell::default() })
    }

    /// The canonical URL of a registry named in a manifest or index (`None`: the
    /// default registry).
    pub fn url(&self, registry: Option<&str>) -> Result<RegistryUrl> {
        match registry {
            None => Ok(self.default.clone()),
            Some(u) => Ok(RegistryUrl::parse(u).with_context(|| format!("registry `{u}`"))?),
        }
    }

    /// The resolver's name for a registry: `None` for the default one.
    pub fn id_registry(&self, url: &RegistryUrl) -> Option<String> {
        (*url != self.default).then(|| url.to_string())
    }

    /// The registry at `url` (or its mirror).
    pub fn open(&self, url: &RegistryUrl) -> Result<Arc<dyn Registry>> {
        if let Some(r) = self.opened.borrow().get(url.as_str()) {
            return Ok(r.clone());
        }
        let fetch = self.config.fetch_url(url.as_str());
        let fetch_url = RegistryUrl::parse(fetch).with_context(|| format!("mirror `{fetch}` of {url}"))?;
        // Offline, an HTTP registry answers from its cached index files only.
        let mut options = self.config.open_options(&fetch_url, self.offline);
        // A mirror stands in for its origin: the origin's TUF root checks it.
        options.tuf = self.config.tuf_trust(url);
        let r: Arc<dyn Registry> = Arc::from(open_registry(&fetch_url, &options)?);
        self.opened.borrow_mut().insert(url.to_string(), r.clone());
        Ok(r)
    }

    /// The registry at `url` itself, for writes (publish, yank) and accounts
    /// (owners): never its mirror, which only stands in for reads of packages.
    /// `progress` is told how a publish's upload goes.
    pub fn open_origin(
        &self,
        url: &RegistryUrl,
        progress: Option<ebpkg_sources::Progress>,
    ) -> Result<Box<dyn Registry>> {
        let mut options = self.config.open_options(url, self.offline);
        options.upload_progress = progress;
        Ok(open_registry(url, &options)?)
    }

    /// The index entries of `name` in `url`, read once per command.
    pub fn index(&self, url: &RegistryUrl, name: &PackageName) -> Result<Option<Arc<Vec<IndexEntry>>>> {
        let key = (url.to_string(), name.normalized());
        if let Some(hit) = self.indexes.borrow().get(&key) {
            return Ok(hit.clone());
        }
        let entries = self.open(url)?.index(name)?.map(Arc::new);
        self.indexes.borrow_mut().insert(key, entries.clone());
        Ok(entries)
    }

    /// The entry of `name@version` in `url`.
    pub fn entry(&self, url: &RegistryUrl, name: &PackageName, version: &semver::Version) -> Result<IndexEntry> {
        let entries = self.index(url, name)?.ok_or_else(|| {
            crate::exit::fail(Failure::Registry, format!("package `{name}` is not in registry {url}"))
        })?;
        entries
            .iter()
            .find(|e| e.vers == *version)
            .cloned()
            .ok_or_else(|| crate::exit::fail(Failure::Registry, format!("{name}@{version} is not in registry {url}")))
    }

    /// Requirements of an index entry from registry `from`, as the resolver takes them.
    fn requirements(
        &self,
        from: &RegistryUrl,
        entry: &IndexEntry,
    ) -> std::result::Result<Vec<Requirement>, SourceError> {
        entry
            .deps
            .iter()
            .map(|d| {
                // A dependency without a registry is in the same registry as its dependent.
                let url = match &d.registry {
                    None => from.clone(),
                    Some(u) => RegistryUrl::parse(u)?,
                };
                let pkg = QualifiedName::in_registry(d.name.clone(), self.id_registry(&url));
                Ok(Requirement { pkg, req: d.req.clone(), req_text: d.req.to_string() })
            })
            .collect()
    }
}

impl VersionSource for Registries<'_> {
    fn versions(&self, pkg: &QualifiedName) -> std::result::Result<Arc<[Candidate]>, SourceError> {
        let url = self.url(pkg.registry.as_deref()).map_err(SourceFailure::boxed)?;
        let Some(entries) = self.index(&url, &pkg.name).map_err(SourceFailure::boxed)? else {
            return Ok(Arc::from([]));
        };
        entries
            .iter()
            .map(|e| Ok(Candidate { version: e.vers.clone(), yanked: e.yanked, deps: self.requirements(&url, e)? }))
            .collect()
    }

    fn known_names(&self, registry: Option<&str>) -> Vec<PackageName> {
        let Ok(url) = self.url(registry) else { return Vec::new() };
        self.open(&url).ok().and_then(|r| r.names().ok()).unwrap_or_default()
    }
}

/// A registry failure handed to the resolver: shown with its whole chain, and
/// kept as an error (not a string) so that the exit code can still tell a trust
/// refusal from an outage.
#[derive(Debug)]
struct SourceFailure(anyhow::Error);

impl SourceFailure {
    fn boxed(e: anyhow::Error) -> SourceError {
        Box::new(SourceFailure(e))
    }
}

impl std::fmt::Display for SourceFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for SourceFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.0.as_ref())
    }
}
