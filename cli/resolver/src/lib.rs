//! Version resolution for ebpkg: chooses one version of every package a project needs, transitively,
//! so that every requirement holds — or explains, step by step, why no such choice exists.
//!
//! The solver is [PubGrub](https://docs.rs/pubgrub) over *candidate indices*: each package's published
//! versions are sorted and numbered, and a requirement becomes the exact set of numbers whose versions it
//! matches with cargo's rules (`semver::VersionReq::matches`). Unlike intervals of versions, such sets
//! represent pre-release rules exactly (`>=1.0.0` matches `1.4.0` and `1.5.0` but not `1.5.0-rc.1`
//! between them) and are closed under complement and intersection, as PubGrub needs. Explanations
//! translate them back into requirement texts and version numbers. Where versions come from is the
//! caller's business ([`VersionSource`]).
//!
//! ```
//! use ebpkg_resolver::{QualifiedName, Requirement, ResolveRequest, SourceError, VersionSource, Versions, resolve};
//! use ebpkg_spec::PackageName;
//! use semver::Version;
//! use std::sync::Arc;
//!
//! struct One;
//! impl VersionSource for One {
//!     fn versions(&self, pkg: &QualifiedName) -> Result<Versions, SourceError> {
//!         let none: Arc<[Requirement]> = Arc::from([]);
//!         Ok(match pkg.name.as_str() {
//!             "net" => Versions::of(
//!                 ["1.0.0", "1.1.0", "2.0.0"].iter().map(|v| (Version::parse(v).unwrap(), false, Arc::clone(&none))),
//!             ),
//!             _ => Versions::none(),
//!         })
//!     }
//! }
//!
//! let net = QualifiedName::new(PackageName::new("net").unwrap());
//! let req = ResolveRequest::new(
//!     PackageName::new("app").unwrap(),
//!     Version::new(0, 1, 0),
//!     vec![Requirement::parse(net.clone(), "^1").unwrap()],
//! );
//! let resolution = resolve(&req, &One).unwrap();
//! assert_eq!(resolution.version(&net), Some(&Version::new(1, 1, 0)));
//! ```

mod catalog;
mod error;
mod explain;
mod model;
mod provider;
mod settled;
mod suggest;
mod version_set;

use std::cell::RefCell;
use std::time::Instant;

use pubgrub::PubGrubError;

pub use crate::error::{Explanation, ResolveError, listed_without_index};
pub use crate::model::{
    Candidate, CandidateList, DamagedPin, DepLists, Origin, QualifiedName, Req, Requirement, Resolution,
    ResolveRequest, ResolvedPackage, SourceError, UpdatePolicy, VersionSource, Versions,
};

use crate::catalog::{Catalog, Pkg, ROOT};
use crate::provider::{Provider, SourceFailure};

/// Resolves `request` with candidates from `source`.
///
/// Semantics: requirements match as in cargo (pre-releases only when a requirement names one of the same
/// `MAJOR.MINOR.PATCH`); yanked versions are never chosen unless locked and not being updated; a
/// locked version is preferred while it still satisfies every requirement (per [`UpdatePolicy`]),
/// otherwise the highest allowed version is. The same input gives the same output.
pub fn resolve(request: &ResolveRequest, source: &dyn VersionSource) -> Result<Resolution, ResolveError> {
    resolve_with(request, source, Shortcut::Try).0
}

/// Whether [`resolve_with`] may answer without PubGrub when every choice is settled from the start.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shortcut {
    Try,
    Never,
}

/// [`resolve`], saying whether the answer was found without PubGrub: for tests that compare the two.
#[doc(hidden)]
pub fn resolve_with(
    request: &ResolveRequest,
    source: &dyn VersionSource,
    shortcut: Shortcut,
) -> (Result<Resolution, ResolveError>, bool) {
    let started = Instant::now();
    let mut catalog = Catalog::new(request, source);
    if let Err(e) = load_root_deps(&mut catalog, request, source) {
        return (Err(e), false);
    }
    if shortcut == Shortcut::Never {
        return (by_pubgrub(catalog, request, started), false);
    }
    let failed = match settled::resolve(&mut catalog) {
        settled::Walk::Unsettled(failed) => failed,
        settled::Walk::Settled(selected) => {
            let resolution = resolution(&catalog, selected);
            tracing::debug!(
                packages_seen = catalog.len() - 1,
                elapsed_us = started.elapsed().as_micros() as u64,
                "resolved {} (every choice settled: PubGrub not needed)",
                request.root
            );
            return (Ok(resolution), true);
        }
    };
    // From the start, as if the walk had not been tried (PubGrub's answers and explanations do not
    // depend on what the walk met first), though no package is asked for twice.
    let memo = settled::Memo::new(catalog.into_loaded(), failed, source);
    let mut catalog = Catalog::new(request, &memo);
    if let Err(e) = load_root_deps(&mut catalog, request, &memo) {
        return (Err(e), false);
    }
    (by_pubgrub(catalog, request, started), false)
}

/// Loads the root's dependencies first, so that a name that does not exist is reported as such
/// rather than as a conflict.
fn load_root_deps(
    catalog: &mut Catalog<'_>,
    request: &ResolveRequest,
    source: &dyn VersionSource,
) -> Result<(), ResolveError> {
    match catalog.load_root_deps() {
        Ok(None) => Ok(()),
        Ok(Some(missing)) => {
            let suggestions = suggest::close_names(&missing.name, &source.known_names(missing.registry.as_ref()));
            Err(ResolveError::UnknownPackage { pkg: missing, required_by: request.root.clone(), suggestions })
        }
        Err((pkg, cause)) => Err(ResolveError::Source { pkg, cause }),
    }
}

fn by_pubgrub(catalog: Catalog<'_>, request: &ResolveRequest, started: Instant) -> Result<Resolution, ResolveError> {
    let provider = Provider { catalog: RefCell::new(catalog) };
    let outcome = pubgrub::resolve(&provider, ROOT, 0u32);
    let catalog = provider.catalog.into_inner();
    let result = match outcome {
        Ok(selected) => Ok(resolution(&catalog, selected)),
        Err(PubGrubError::NoSolution(tree)) => Err(ResolveError::NoSolution(explain::explain(&tree, &catalog))),
        Err(PubGrubError::ErrorRetrievingDependencies { source, .. })
        | Err(PubGrubError::ErrorChoosingVersion { source, .. })
        | Err(PubGrubError::ErrorInShouldCancel(source)) => {
            let SourceFailure { pkg, cause } = source;
            Err(ResolveError::Source { pkg, cause })
        }
    };
    tracing::debug!(
        packages_seen = catalog.len() - 1,
        ok = result.is_ok(),
        elapsed_us = started.elapsed().as_micros() as u64,
        "resolved {}",
        request.root
    );
    result
}

/// Builds the [`Resolution`] from the chosen candidate of every package.
fn resolution(catalog: &Catalog<'_>, selected: impl IntoIterator<Item = (Pkg, u32)>) -> Resolution {
    const NOT_CHOSEN: u32 = u32::MAX;
    let mut chosen = vec![NOT_CHOSEN; catalog.len() as usize];
    for (p, v) in selected {
        chosen[p.0 as usize] = v;
    }
    // Every chosen package sorted by id (by an 8-byte prefix of the normalized name first, which
    // settles nearly every comparison); `rank` then orders dependency lists by plain integers.
    let mut picked: Vec<(u64, Pkg, &QualifiedName)> = Vec::with_capacity(catalog.len() as usize);
    for p in (1..catalog.len()).map(Pkg) {
        if let (Some(id), true) = (catalog.id(p), chosen[p.0 as usize] != NOT_CHOSEN) {
            picked.push((id.sort_prefix(), p, id));
        }
    }
    picked.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.2.cmp(b.2)));
    let mut rank = vec![u32::MAX; catalog.len() as usize];
    for (r, (_, p, _)) in picked.iter().enumerate() {
        rank[p.0 as usize] = r as u32;
    }
    // A dependency is its position in the sorted packages: its rank.
    let deps_of = |p: Pkg| -> Vec<u32> {
        let deps = catalog.dep_pkgs(p, chosen[p.0 as usize]);
        let mut out: Vec<u32> = deps.iter().map(|d| rank[d.0 as usize]).filter(|&r| r != u32::MAX).collect();
        out.sort_unstable();
        out.dedup();
        out
    };
    let root_deps = deps_of(ROOT);
    // Made in the order the packages were met, which is about the order their versions lie in
    // the source's memory (a resolution cache is laid out in the order they were read), and
    // put in place by rank: made in name order, reading the chosen versions was a cache miss
    // each, a tenth of the resolution's time.
    let mut packages: Vec<Option<(QualifiedName, ResolvedPackage)>> = Vec::with_capacity(picked.len());
    packages.resize_with(picked.len(), || None);
    for p in (1..catalog.len()).map(Pkg) {
        let (r, v) = (rank[p.0 as usize], chosen[p.0 as usize]);
        if let (Some(place), Some(id)) = (packages.get_mut(r as usize), catalog.id(p)) {
            let version = catalog.version(p, v).into_owned();
            *place = Some((id.clone(), ResolvedPackage { version, deps: deps_of(p), origin: catalog.origin(p, v) }));
        }
    }
    // Every place was filled (each picked package has its rank and an id). Collected in place.
    let packages = packages.into_iter().collect::<Option<Vec<_>>>().unwrap_or_else(|| {
        unreachable!("a package picked by the resolution has no place in it");
    });
    Resolution { root_deps, packages }
}
