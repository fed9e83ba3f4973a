//! The registries one command talks to: the default one and any a dependency
//! names, opened once each (through a mirror when one is configured), with each
//! package's index read once. Also the resolver's source of versions, read ahead
//! of it by [`loader`].

mod loader;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use anyhow::Result;
use ebpkg_resolver::{CandidateList, Origin, QualifiedName, SourceError, VersionSource, Versions};
use ebpkg_sources::{Registry, RegistryId, open_registry, warn_skipped_line};
use ebpkg_spec::PackageName;
use ebpkg_spec::index::{EntryPin, IndexEntry};

use crate::config::Config;
use crate::exit::Failure;

/// A package's index entries, shared.
type Index = Arc<Vec<IndexEntry>>;

pub struct Registries<'c> {
    config: &'c Config,
    offline: bool,
    /// The default registry.
    pub default: RegistryId,
    opened: RefCell<HashMap<RegistryId, Arc<dyn Registry>>>,
    /// The default registry once opened: asked for every package a resolution reads.
    default_opened: std::cell::OnceCell<Arc<dyn Registry>>,
    indexes: RefCell<HashMap<(RegistryId, String), Option<Index>>>,
    /// What resolutions read (see [`loader`]).
    loader: loader::Loader,
    /// Packages whose skipped lines were warned about.
    warned: RefCell<HashSet<(RegistryId, String)>>,
    /// Versions a resolution chose whose lines turned out damaged, or whose signer
    /// the trust policy refuses: not offered again.
    rejected: RefCell<HashSet<(RegistryId, String, semver::Version)>>,
}

/// A version whose index line is damaged beyond what resolution reads of it (its
/// checksum, say): it cannot be locked or fetched.
#[derive(Debug, thiserror::Error)]
#[error(
    "{name}@{version} cannot be used: {problem} ({origin}); the registry {url} needs repair (restore the file, or tell \
     its operator)"
)]
pub struct DamagedLine {
    pub url: RegistryId,
    pub name: PackageName,
    pub version: semver::Version,
    pub origin: String,
    pub problem: ebpkg_spec::index::IndexError,
}

impl DamagedLine {
    fn new(
        url: &RegistryId,
        name: &PackageName,
        version: &semver::Version,
        index: &ebpkg_resolution_cache::LoadedIndex,
        problem: ebpkg_spec::index::IndexError,
    ) -> DamagedLine {
        let (url, name, version) = (url.clone(), name.clone(), version.clone());
        DamagedLine { url, name, version, origin: index.origin().to_owned(), problem }
    }
}

impl<'c> Registries<'c> {
    pub fn new(config: &'c Config, offline: bool) -> Result<Registries<'c>> {
        let default = config.registry.clone();
        Ok(Registries {
            config,
            offline,
            loader: loader::Loader::new(default.clone(), config.cache_dir()),
            default,
            opened: RefCell::default(),
            default_opened: std::cell::OnceCell::new(),
            indexes: RefCell::default(),
            warned: RefCell::default(),
            rejected: RefCell::default(),
        })
    }

    /// A registry named in a manifest or index (`None`: the default registry).
    pub fn url(&self, registry: Option<&RegistryId>) -> RegistryId {
        registry.unwrap_or(&self.default).clone()
    }

    /// The resolver's name for a registry: `None` for the default one.
    pub fn id_registry(&self, url: &RegistryId) -> Option<RegistryId> {
        (*url != self.default).then(|| url.clone())
    }

    /// The registry at `url` (or its mirror).
    pub fn open(&self, url: &RegistryId) -> Result<Arc<dyn Registry>> {
        if let Some(r) = self.opened.borrow().get(url) {
            return Ok(r.clone());
        }
        let fetch_url = self.read_from(url);
        // Offline, an HTTP registry answers from its cached index files only.
        let mut options = self.config.open_options(&fetch_url, self.offline);
        // A mirror stands in for its origin: the origin's TUF root checks it.
        options.tuf = self.config.tuf_trust(url);
        let r: Arc<dyn Registry> = Arc::from(open_registry(&fetch_url, &options)?);
        self.opened.borrow_mut().insert(url.clone(), r.clone());
        Ok(r)
    }

    /// Where the packages of the registry at `url` are read from: its mirror when one
    /// is configured (what [`Registries::open`] opens), else `url` itself.
    pub fn read_from(&self, url: &RegistryId) -> RegistryId {
        self.config.fetch_url(url).clone()
    }

    /// The error for a package `url` has no index file for: the close names its listing
    /// holds, or, when the listing holds the very name, that the two disagree.
    pub fn not_found(&self, url: &RegistryId, name: &PackageName) -> anyhow::Error {
        let names = self.open(url).ok().and_then(|r| r.names().ok()).unwrap_or_default();
        let hint = if names.iter().any(|n| n.normalized() == name.normalized()) {
            format!(": {}", ebpkg_resolver::listed_without_index(name))
        } else {
            let mut close: Vec<(usize, &PackageName)> = names
                .iter()
                .map(|n| (strsim::levenshtein(&n.normalized(), &name.normalized()), n))
                .filter(|(d, _)| *d <= 2)
                .collect();
            close.sort();
            match close.as_slice() {
                [] => format!("; `ebpkg search {name}` lists similar packages"),
                close => {
                    let close: Vec<String> = close.iter().take(3).map(|(_, n)| format!("`{n}`")).collect();
                    format!("; did you mean {}?", close.join(" or "))
                }
            }
        };
        crate::exit::fail(Failure::Registry, format!("package `{name}` is not in {url}{hint}"))
    }

    /// The registry at `url` itself, for writes (publish, yank) and accounts
    /// (owners): never its mirror, which only stands in for reads of packages.
    /// `progress` is told how a publish's upload goes.
    pub fn open_origin(
        &self,
        url: &RegistryId,
        progress: Option<ebpkg_sources::Progress>,
    ) -> Result<Box<dyn Registry>> {
        let mut options = self.config.open_options(url, self.offline);
        options.upload_progress = progress;
        Ok(open_registry(url, &options)?)
    }

    /// The index entries of `name` in `url`, read once per command.
    pub fn index(&self, url: &RegistryId, name: &PackageName) -> Result<Option<Arc<Vec<IndexEntry>>>> {
        let key = (url.clone(), name.normalized());
        if let Some(hit) = self.indexes.borrow().get(&key) {
            return Ok(hit.clone());
        }
        let entries = self.open(url)?.index(name)?.map(Arc::new);
        self.indexes.borrow_mut().insert(key, entries.clone());
        Ok(entries)
    }

    /// The entry of `name@version` in `url`. A version a resolution read whose
    /// line is damaged beyond what resolution reads fails with [`DamagedLine`].
    pub fn entry(&self, url: &RegistryId, name: &PackageName, version: &semver::Version) -> Result<IndexEntry> {
        if let Some(index) = self.loader.loaded(url, name)
            && let Some(entry) = index.entry(version)
        {
            return entry.map_err(|problem| DamagedLine::new(url, name, version, &index, problem).into());
        }
        let entries = self.index(url, name)?.ok_or_else(|| {
            crate::exit::fail(Failure::Registry, format!("package `{name}` is not in registry {url}"))
        })?;
        entries
            .iter()
            .find(|e| e.vers == *version)
            .cloned()
            .ok_or_else(|| crate::exit::fail(Failure::Registry, format!("{name}@{version} is not in registry {url}")))
    }

    /// What ebpkg.lock pins of `name@version` (of `url`), found in the index the resolution
    /// read it from (`origin`), its line checked whole as [`Registries::entry`] does (only
    /// the first time: the resolution cache keeps what lines pin). Needs no `Registries`, so
    /// that the thousands of packages of a large resolution are pinned on every CPU. `None`
    /// when `origin` is no such index or has no line of `version`: [`Registries::entry`] then.
    pub fn pin_where_read(
        url: &RegistryId,
        name: &PackageName,
        version: &semver::Version,
        origin: &Origin,
    ) -> Option<std::result::Result<EntryPin, DamagedLine>> {
        let pin = origin.lists.pin_of(origin.position, version)?;
        Some(pin.map_err(|d| DamagedLine {
            url: url.clone(),
            name: name.clone(),
            version: version.clone(),
            origin: d.origin,
            problem: d.problem,
        }))
    }

    /// Whether cached records turned out damaged since last asked: their index
    /// files are read from now on, and a resolution that met one is done again.
    pub fn reread_damaged(&self) -> bool {
        self.loader.reread_damaged()
    }

    /// Leaves a version whose line is damaged out of later resolutions, with a warning.
    pub fn reject(&self, damaged: &DamagedLine) {
        tracing::warn!("{damaged}; resolving again without it");
        self.leave_out(&damaged.url, &damaged.name, &damaged.version);
    }

    /// Leaves `name@version` of `url` out of later resolutions.
    pub fn leave_out(&self, url: &RegistryId, name: &PackageName, version: &semver::Version) {
        self.rejected.borrow_mut().insert((url.clone(), name.normalized(), version.clone()));
    }
}

impl VersionSource for Registries<'_> {
    fn versions(&self, pkg: &QualifiedName) -> std::result::Result<Versions, SourceError> {
        // Asked for every package of a resolution: nothing is built that is not needed.
        let url = pkg.registry.as_ref().unwrap_or(&self.default);
        // (Borrowed: its count is touched by every read ahead, on other threads.)
        let opened;
        let registry = match (pkg.registry.is_none(), self.default_opened.get()) {
            (true, Some(registry)) => registry,
            (is_default, _) => {
                opened = self.open(url).map_err(SourceFailure::boxed)?;
                if is_default {
                    let _ = self.default_opened.set(Arc::clone(&opened));
                }
                &opened
            }
        };
        let Some(index) = self.loader.get(registry, url, &pkg.name).map_err(SourceFailure::boxed)? else {
            return Ok(Versions::none());
        };
        let key = || (url.clone(), pkg.name.normalized());
        if !index.problems().is_empty() && self.warned.borrow_mut().insert(key()) {
            for problem in index.problems() {
                warn_skipped_line(url, index.origin(), problem);
            }
        }
        // (Leaving rejected versions out keeps the order.)
        let mut versions = Versions { candidates: index.clone(), deps: index.clone(), ascending: index.ascending() };
        let rejected = self.rejected.borrow();
        if rejected.is_empty() {
            return Ok(versions);
        }
        let key = key();
        if rejected.iter().any(|(u, n, _)| (u, n) == (&key.0, &key.1)) {
            let kept = (0..index.len())
                .map(|k| index.get(k).into_owned())
                .filter(|c| !rejected.contains(&(key.0.clone(), key.1.clone(), c.version.clone())));
            versions.candidates = Arc::new(kept.collect::<Vec<_>>());
        }
        Ok(versions)
    }

    fn known_names(&self, registry: Option<&RegistryId>) -> Vec<PackageName> {
        let url = self.url(registry);
        let mut names = self.open(&url).ok().and_then(|r| r.names().ok()).unwrap_or_default();
        // A name whose versions were left out (refused by the trust policy, or damaged) has an
        // index file: listing it would read as "the registry lists it but serves no index".
        let rejected = self.rejected.borrow();
        names.retain(|n| !rejected.iter().any(|(u, r, _)| *u == url && *r == n.normalized()));
        names
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
