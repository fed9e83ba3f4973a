//! A small in-memory registry for tests.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ebpkg_resolver::{
    Candidate, CandidateList, QualifiedName, Requirement, ResolveRequest, SourceError, VersionSource, Versions,
};
use ebpkg_spec::PackageName;
use semver::Version;

pub fn name(s: &str) -> PackageName {
    PackageName::new(s).unwrap()
}

/// `"meter"` in the default registry, or `"meter@https://r.example"` in another one.
pub fn id(s: &str) -> QualifiedName {
    match s.split_once('@') {
        Some((n, reg)) => QualifiedName::in_registry(name(n), Some(ebpkg_spec::RegistryId::parse_url(reg).unwrap())),
        None => QualifiedName::new(name(s)),
    }
}

pub fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

pub fn req(pkg: &str, text: &str) -> Requirement {
    Requirement::parse(id(pkg), text).unwrap()
}

/// A request from project `app` 0.1.0.
pub fn request(deps: &[(&str, &str)]) -> ResolveRequest {
    ResolveRequest::new(name("app"), v("0.1.0"), deps.iter().map(|(p, r)| req(p, r)).collect())
}

/// A published version: version, yanked, requirements.
pub type Published = (Version, bool, Arc<[Requirement]>);

#[derive(Default)]
pub struct Registry {
    pub packages: BTreeMap<QualifiedName, Vec<Published>>,
    pub fetches: RefCell<HashMap<QualifiedName, usize>>,
    pub list_names: bool,
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// Publishes `pkg` `version` depending on `deps` (`(package, requirement)`).
    pub fn add(&mut self, pkg: &str, version: &str, deps: &[(&str, &str)]) -> &mut Self {
        self.publish(pkg, version, deps, false)
    }

    pub fn add_yanked(&mut self, pkg: &str, version: &str, deps: &[(&str, &str)]) -> &mut Self {
        self.publish(pkg, version, deps, true)
    }

    fn publish(&mut self, pkg: &str, version: &str, deps: &[(&str, &str)], yanked: bool) -> &mut Self {
        let deps = deps.iter().map(|(p, r)| req(p, r)).collect::<Vec<_>>().into();
        self.packages.entry(id(pkg)).or_default().push((v(version), yanked, deps));
        self
    }

    pub fn fetch_count(&self, pkg: &str) -> usize {
        self.fetches.borrow().get(&id(pkg)).copied().unwrap_or(0)
    }
}

impl VersionSource for Registry {
    fn versions(&self, pkg: &QualifiedName) -> Result<Versions, SourceError> {
        *self.fetches.borrow_mut().entry(pkg.clone()).or_default() += 1;
        Ok(Versions::of(self.packages.get(pkg).cloned().unwrap_or_default()))
    }

    fn known_names(&self, registry: Option<&ebpkg_spec::RegistryId>) -> Vec<PackageName> {
        if !self.list_names {
            return Vec::new();
        }
        self.packages.keys().filter(|k| k.registry.as_ref() == registry).map(|k| k.name.clone()).collect()
    }
}

/// `0`'s packages with candidates made one at a time when the resolver asks, as a
/// source reading them from its own storage makes them (the CLI's resolution cache).
pub struct OnDemand<'a>(pub &'a dyn VersionSource);

struct Made(Vec<Candidate>);

impl CandidateList for Made {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn get(&self, i: usize) -> std::borrow::Cow<'_, Candidate> {
        std::borrow::Cow::Owned(self.0[i].clone())
    }
}

impl VersionSource for OnDemand<'_> {
    fn versions(&self, pkg: &QualifiedName) -> Result<Versions, SourceError> {
        let versions = self.0.versions(pkg)?;
        let made = (0..versions.candidates.len()).map(|i| versions.candidates.get(i).into_owned()).collect();
        Ok(Versions { candidates: Arc::new(Made(made)), ..versions })
    }

    fn known_names(&self, registry: Option<&ebpkg_spec::RegistryId>) -> Vec<PackageName> {
        self.0.known_names(registry)
    }
}
