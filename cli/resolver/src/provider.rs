//! The PubGrub [`DependencyProvider`] over a [`Catalog`].

use std::cell::RefCell;
use std::cmp::Reverse;

use pubgrub::{Dependencies, DependencyProvider, PackageResolutionStatistics};

use crate::catalog::{CandidateDeps, Catalog, Pkg, ROOT, Unavailable};
use crate::model::{QualifiedName, SourceError};
use crate::version_set::IndexSet;

/// A source failure, carried through PubGrub.
#[derive(Debug, thiserror::Error)]
#[error("could not read the versions of {pkg}")]
pub(crate) struct SourceFailure {
    pub(crate) pkg: QualifiedName,
    pub(crate) cause: SourceError,
}

pub(crate) struct Provider<'a> {
    pub(crate) catalog: RefCell<Catalog<'a>>,
}

impl DependencyProvider for Provider<'_> {
    type P = Pkg;
    type V = u32;
    type VS = IndexSet;
    type M = Unavailable;
    /// Packages that caused conflicts first, then those with the fewest choosable versions left
    /// (a package with a single candidate is decided at once; one with none fails at once).
    type Priority = (u32, Reverse<u32>);
    type Err = SourceFailure;

    fn prioritize(&self, package: &Pkg, range: &IndexSet, stats: &PackageResolutionStatistics) -> Self::Priority {
        if *package == ROOT {
            return (u32::MAX, Reverse(0));
        }
        match self.catalog.borrow().count_choosable(*package, range) {
            0 => (u32::MAX, Reverse(0)),
            n => (stats.conflict_count(), Reverse(n)),
        }
    }

    fn choose_version(&self, package: &Pkg, range: &IndexSet) -> Result<Option<u32>, SourceFailure> {
        if *package == ROOT {
            return Ok(Some(0));
        }
        Ok(self.catalog.borrow().choose(*package, range))
    }

    fn get_dependencies(
        &self,
        package: &Pkg,
        version: &u32,
    ) -> Result<Dependencies<Pkg, IndexSet, Unavailable>, SourceFailure> {
        let deps = self
            .catalog
            .borrow_mut()
            .dependencies(*package, *version)
            .map_err(|(pkg, cause)| SourceFailure { pkg, cause })?;
        Ok(match deps {
            CandidateDeps::Available(list) => Dependencies::Available(list.into_iter().collect()),
            CandidateDeps::Unavailable(why) => Dependencies::Unavailable(why),
        })
    }
}
