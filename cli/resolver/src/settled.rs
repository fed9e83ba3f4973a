//! PubGrub's answer without PubGrub, when every choice is settled from the start.
//!
//! Walking from the root, each package reached takes the candidate [`Catalog::choose`] picks for the
//! first requirement met on it, and every further requirement on it must make `choose` pick that same
//! candidate. When that holds for every requirement of every package reached, the walk's choices are
//! exactly PubGrub's:
//!
//! PubGrub decides a package by `choose` over the intersection of the requirements of the packages it
//! has decided so far that depend on it: some non-empty subset `T` of the requirements the walk met.
//! Each of those requirements' sets contains the walk's candidate `c`, so their intersection does too.
//! If the lock prefers `c`, `choose` returns it. Otherwise the preferred candidate, if any, lies in
//! none of them (else `choose` would have picked it for that requirement), so not in the intersection
//! either, and `choose` returns the highest choosable candidate of the intersection: at least `c`,
//! which is in it, and at most the highest of any one requirement's set, which is `c`. By induction over
//! PubGrub's decisions, in whatever order it takes packages, it decides each one as the walk did,
//! every requirement it adds holds, and it never backtracks.
//!
//! A resolution of thousands of packages spends most of PubGrub's time on bookkeeping that such an
//! answer never needs (incompatibilities, derivations, priorities). Anything else — a requirement that
//! would choose differently, one no choosable candidate meets, a version that depends on itself, a
//! source that fails — ends the walk, and PubGrub resolves from the start (with the packages loaded so
//! far), reporting conflicts and errors as always.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Mutex;

use crate::catalog::{Catalog, Pkg, ROOT, WalkDeps};
use crate::model::{QualifiedName, SourceError, VersionSource, Versions};

const NONE: u32 = u32::MAX;

/// A package the source could not read, and why.
type Failure = (QualifiedName, SourceError);

/// Every package reached with its candidate, the root first, if every choice is settled.
///
/// The order packages are walked in does not change the answer (see the module comment), only how soon
/// a walk that cannot succeed stops: like PubGrub, the walk takes first the packages left with a single
/// choosable candidate by the requirement that reached them (then in the order met), so that a chain of
/// single versions leading to a conflict is followed before the thousands of packages around it. (It
/// counts only up to two: telling 5 candidates from 9 would cost matching every version.)
pub(crate) fn resolve(catalog: &mut Catalog<'_>) -> Walk {
    match walk(catalog) {
        Ok(Some(selected)) => Walk::Settled(selected),
        Ok(None) => Walk::Unsettled(None),
        Err(failed) => Walk::Unsettled(Some(failed)),
    }
}

/// How a walk ended.
pub(crate) enum Walk {
    /// Every package reached with its candidate, the root first: PubGrub's answer.
    Settled(Vec<(Pkg, u32)>),
    /// PubGrub must resolve; with the package the source failed to read, if that is what ended the walk.
    Unsettled(Option<Failure>),
}

fn walk(catalog: &mut Catalog<'_>) -> Result<Option<Vec<(Pkg, u32)>>, Failure> {
    let mut chosen = vec![NONE; catalog.len() as usize];
    chosen[ROOT.0 as usize] = 0;
    let mut selected = vec![(ROOT, 0)];
    // (choosable candidates, counted up to 2; index in `selected`) of each package not walked yet.
    let mut todo = BinaryHeap::from([Reverse((0, 0))]);
    while let Some(Reverse((_, at))) = todo.pop() {
        let (pkg, v) = selected[at as usize];
        let WalkDeps::Listed(list) = catalog.requirements(pkg, v)? else { return Ok(None) };
        chosen.resize(catalog.len() as usize, NONE);
        for (r, &dep) in list.requirements().iter().zip(catalog.dep_pkgs(pkg, v)) {
            // (Two requirements of one list on one package, which PubGrub intersects, are two of the
            // requirements the module comment speaks of.)
            let slot = &mut chosen[dep.0 as usize];
            if *slot == NONE {
                let (Some(c), count) = catalog.pick(dep, &r.req, true) else { return Ok(None) };
                *slot = c;
                todo.push(Reverse((count, selected.len() as u32)));
                selected.push((dep, c));
            } else if catalog.pick(dep, &r.req, false).0 != Some(*slot) {
                return Ok(None);
            }
        }
    }
    Ok(Some(selected))
}

/// A source that answers first with what an abandoned walk already read: the
/// versions it loaded, and the error of the package it failed to read (given once:
/// PubGrub alone would have asked for it once).
pub(crate) struct Memo<'a> {
    loaded: HashMap<QualifiedName, Versions>,
    failed: Mutex<Option<Failure>>,
    source: &'a dyn VersionSource,
}

impl<'a> Memo<'a> {
    pub(crate) fn new(
        loaded: impl IntoIterator<Item = (QualifiedName, Versions)>,
        failed: Option<Failure>,
        source: &'a dyn VersionSource,
    ) -> Self {
        Memo { loaded: loaded.into_iter().collect(), failed: Mutex::new(failed), source }
    }
}

impl VersionSource for Memo<'_> {
    fn versions(&self, pkg: &QualifiedName) -> Result<Versions, SourceError> {
        if let Some(versions) = self.loaded.get(pkg) {
            return Ok(versions.clone());
        }
        let mut failed = self.failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match failed.take_if(|(id, _)| id == pkg) {
            Some((_, error)) => Err(error),
            None => self.source.versions(pkg),
        }
    }

    fn known_names(&self, registry: Option<&ebpkg_spec::RegistryId>) -> Vec<ebpkg_spec::PackageName> {
        self.source.known_names(registry)
    }
}
