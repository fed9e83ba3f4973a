//! What the resolver is given and what it returns, independent of where versions come from.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use ebpkg_spec::index::EntryPin;
use ebpkg_spec::{PackageName, RegistryId};
use semver::{Version, VersionReq};

/// A package in one registry. The same name in two registries is two different packages.
///
/// Names compare in their normalized form (SPEC §2.1: `my-pkg` and `My_Pkg` are the same package), so
/// `Eq`, `Ord` and `Hash` ignore case and `-`/`_`; the spelling is kept for display. Registries
/// compare as [`RegistryId`]s: by identity, whatever the spelling they were read from.
#[derive(Debug, Clone)]
pub struct QualifiedName {
    /// The package name, as first spelled.
    pub name: PackageName,
    /// The registry; `None` is the default registry.
    pub registry: Option<RegistryId>,
}

impl QualifiedName {
    /// `name` in the default registry.
    pub fn new(name: PackageName) -> Self {
        QualifiedName { name, registry: None }
    }

    /// `name` in the registry at `registry` (`None`: the default registry).
    pub fn in_registry(name: PackageName, registry: Option<RegistryId>) -> Self {
        QualifiedName { name, registry }
    }

    /// The first 8 bytes of the normalized name as a big-endian number: ordering by it agrees with
    /// [`Ord`] whenever the prefixes differ.
    pub(crate) fn sort_prefix(&self) -> u64 {
        let mut prefix = 0u64;
        for (k, b) in self.key().take(8).enumerate() {
            prefix |= u64::from(b) << (56 - 8 * k);
        }
        prefix
    }

    fn key(&self) -> impl Iterator<Item = u8> + '_ {
        self.name.as_str().bytes().map(normalize_byte)
    }
}

/// The normalized form of one name byte: lowercase, `-` as `_` (SPEC §2.1).
#[inline]
pub(crate) fn normalize_byte(b: u8) -> u8 {
    if b == b'-' { b'_' } else { b.to_ascii_lowercase() }
}

impl PartialEq for QualifiedName {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.name.as_str().as_bytes(), other.name.as_str().as_bytes());
        // One pass over both names, no call: these comparisons are the resolver's hottest path.
        a.len() == b.len()
            && a.iter().zip(b).all(|(&x, &y)| x == y || normalize_byte(x) == normalize_byte(y))
            && self.registry == other.registry
    }
}

impl Eq for QualifiedName {}

impl Hash for QualifiedName {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Names are at most 64 ASCII characters: normalize on the stack and hash in one write.
        let name = self.name.as_str().as_bytes();
        let mut buf = [0u8; 64];
        for chunk in name.chunks(64) {
            for (d, &s) in buf.iter_mut().zip(chunk) {
                *d = normalize_byte(s);
            }
            state.write(&buf[..chunk.len()]);
        }
        state.write_u8(0xff);
        self.registry.hash(state);
    }
}

impl Ord for QualifiedName {
    /// By normalized name, then registry (the default registry first).
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(other.key()).then_with(|| self.registry.cmp(&other.registry))
    }
}

impl PartialOrd for QualifiedName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for QualifiedName {
    /// `name`, or `name (registry URL)` outside the default registry.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.registry {
            None => write!(f, "{}", self.name),
            Some(url) => write!(f, "{} ({url})", self.name),
        }
    }
}

/// A requirement on another package, as a manifest or an index line states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The package required.
    pub pkg: QualifiedName,
    /// The versions accepted.
    pub req: Req,
}

impl Requirement {
    /// A requirement whose text is `req`'s canonical display form.
    pub fn new(pkg: QualifiedName, req: VersionReq) -> Self {
        Requirement { pkg, req: Req::from(req) }
    }

    /// Parses `text` with cargo's requirement syntax and keeps it as written.
    pub fn parse(pkg: QualifiedName, text: &str) -> Result<Self, semver::Error> {
        Ok(Requirement { pkg, req: Req::parse(text)? })
    }
}

/// The versions a requirement accepts: as parsed (cargo semantics, see
/// [`VersionReq::matches`], through `Deref`), and as written (`"^1.2"`, `"1.2"`),
/// quoted back in explanations.
///
/// Shared, not copied, when cloned: the index files of a registry repeat the same few
/// requirements tens of thousands of times, and a source that reads them can keep
/// each one once.
#[derive(Clone)]
pub struct Req(Arc<ReqParts>);

struct ReqParts {
    parsed: VersionReq,
    text: Box<str>,
}

impl Req {
    /// Parses `text` (cargo's requirement syntax) and keeps it as written, trimmed.
    pub fn parse(text: &str) -> Result<Req, semver::Error> {
        Ok(Req(Arc::new(ReqParts { parsed: VersionReq::parse(text)?, text: text.trim().into() })))
    }

    /// The requirement as written.
    pub fn text(&self) -> &str {
        &self.0.text
    }
}

/// A requirement whose text is its canonical display form.
impl From<VersionReq> for Req {
    fn from(parsed: VersionReq) -> Req {
        let text = parsed.to_string().into_boxed_str();
        Req(Arc::new(ReqParts { parsed, text }))
    }
}

impl std::ops::Deref for Req {
    type Target = VersionReq;

    fn deref(&self) -> &VersionReq {
        &self.0.parsed
    }
}

/// Equal when both the versions accepted and the text are.
impl PartialEq for Req {
    fn eq(&self, other: &Req) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || (self.0.parsed == other.0.parsed && self.0.text == other.0.text)
    }
}

impl Eq for Req {}

impl fmt::Debug for Req {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.text())
    }
}

/// One published version of a package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The version.
    pub version: Version,
    /// Yanked versions are never chosen by a new resolution, only kept when locked.
    pub yanked: bool,
    /// Which of its package's dependency lists ([`Versions::deps`]) this version
    /// has: versions of a package often depend on exactly the same.
    pub deps: u32,
}

/// A package's candidates, in whatever form its source keeps them: decoded
/// ([`Vec<Candidate>`]), or read one at a time from the source's own storage (the
/// CLI's resolution cache: a warm resolution of ten thousand packages would
/// otherwise decode and allocate every version of every package, and read one or
/// two of each).
pub trait CandidateList: Send + Sync {
    /// The number of candidates.
    fn len(&self) -> usize;

    /// Whether there is none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Candidate `i`, which is below [`CandidateList::len`] (as with a slice, a
    /// position past the end is a bug and panics): borrowed where the source keeps
    /// it decoded, made where it does not.
    fn get(&self, i: usize) -> Cow<'_, Candidate>;

    /// Whether candidate `i` is yanked: [`CandidateList::get`]'s, which a source that
    /// makes candidates can answer without making one (the resolver asks it of every
    /// candidate it looks at before it compares versions).
    fn yanked(&self, i: usize) -> bool {
        self.get(i).yanked
    }
}

impl CandidateList for Vec<Candidate> {
    fn len(&self) -> usize {
        self.as_slice().len()
    }

    fn get(&self, i: usize) -> Cow<'_, Candidate> {
        Cow::Borrowed(&self[i])
    }
}

/// The error a [`VersionSource`] reports; the resolver passes it on in [`crate::ResolveError::Source`].
pub type SourceError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A package's dependency lists, numbered as [`Candidate::deps`] names them. A
/// source may read a list only when the resolver first asks for it: a resolution
/// asks for the lists of the few versions it tries, out of every version of
/// thousands of packages.
pub trait DepLists: Send + Sync {
    /// List `k`; the same list every time it is asked for.
    fn list(&self, k: u32) -> Result<&[Requirement], SourceError>;

    /// What a lockfile pins of the version at `position` (`version`), for a source
    /// that keeps its versions' index lines: its checksum and signer, or why its
    /// line cannot give them. `None`: this source keeps no lines (ask the registry).
    fn pin_of(&self, position: u32, version: &Version) -> Option<Result<EntryPin, DamagedPin>> {
        let _ = (position, version);
        None
    }
}

/// Why a kept index line cannot give its version's pin, and where the line is.
#[derive(Debug, Clone)]
pub struct DamagedPin {
    pub problem: ebpkg_spec::index::IndexError,
    /// The file (or answer) the line was read from, for the message.
    pub origin: String,
}

/// Lists given whole.
impl DepLists for Vec<Arc<[Requirement]>> {
    fn list(&self, k: u32) -> Result<&[Requirement], SourceError> {
        match self.get(k as usize) {
            Some(list) => Ok(list),
            None => Err(format!("no dependency list {k}").into()),
        }
    }
}

/// Every published version of a package, and what each depends on.
#[derive(Clone)]
pub struct Versions {
    /// In any order (a version listed twice counts once); none: the package does not exist.
    pub candidates: Arc<dyn CandidateList>,
    pub deps: Arc<dyn DepLists>,
    /// Whether `candidates` are in strictly ascending version order (see [`Versions::is_ascending`]):
    /// the resolver then uses them in place rather than sorting its own list of them, and need not
    /// read them all. A source sets it only when it holds.
    pub ascending: bool,
}

impl Versions {
    /// No version at all.
    pub fn none() -> Versions {
        Versions {
            candidates: Arc::new(Vec::<Candidate>::new()),
            deps: Arc::new(Vec::<Arc<[Requirement]>>::new()),
            ascending: true,
        }
    }

    /// Versions each given with its yanked flag and requirements; lists shared
    /// (the same `Arc`) are numbered once.
    pub fn of(each: impl IntoIterator<Item = (Version, bool, Arc<[Requirement]>)>) -> Versions {
        let mut lists: Vec<Arc<[Requirement]>> = Vec::new();
        let candidates: Vec<Candidate> = each
            .into_iter()
            .map(|(version, yanked, reqs)| {
                let at = match lists.iter().position(|l| Arc::ptr_eq(l, &reqs)) {
                    Some(at) => at,
                    None => {
                        lists.push(reqs);
                        lists.len() - 1
                    }
                };
                Candidate { version, yanked, deps: u32::try_from(at).unwrap_or(u32::MAX) }
            })
            .collect();
        let ascending = Versions::is_ascending(&candidates);
        Versions { candidates: Arc::new(candidates), deps: Arc::new(lists), ascending }
    }

    /// Whether `candidates` are in strictly ascending version order (no version twice).
    pub fn is_ascending(candidates: &dyn CandidateList) -> bool {
        (1..candidates.len()).all(|i| candidates.get(i - 1).version < candidates.get(i).version)
    }
}

impl fmt::Debug for Versions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let candidates: Vec<_> = (0..self.candidates.len()).map(|i| self.candidates.get(i)).collect();
        f.debug_struct("Versions").field("candidates", &candidates).finish_non_exhaustive()
    }
}

/// Where candidates come from (in the CLI: registry index files; in tests: a map).
///
/// The resolver asks for each package at most once per resolution.
pub trait VersionSource {
    /// Every published version of `pkg`, yanked ones included, with what each
    /// depends on. No version means the package does not exist in that registry.
    ///
    /// Shared, not copied: a source that keeps parsed versions in memory hands out
    /// its `Arc`s.
    fn versions(&self, pkg: &QualifiedName) -> Result<Versions, SourceError>;

    /// The package names `registry` (`None`: the default one) is known to hold, used only to suggest
    /// a name when a required package does not exist. Sources that cannot list names keep the default.
    fn known_names(&self, registry: Option<&RegistryId>) -> Vec<PackageName> {
        let _ = registry;
        Vec::new()
    }
}

/// Which locked versions a resolution may move away from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum UpdatePolicy {
    /// Keep every locked version that still satisfies the requirements.
    #[default]
    Nothing,
    /// Ignore the lock: choose the newest versions allowed.
    All,
    /// Unlock these packages (by name, in any registry); keep every other locked version unless the new
    /// choices leave no other way, like `cargo update -p`.
    Only(BTreeSet<PackageName>),
}

/// One resolution to perform.
#[derive(Debug, Clone)]
pub struct ResolveRequest {
    /// The project being resolved (not looked up in any registry).
    pub root: PackageName,
    /// Its version, as in its manifest.
    pub root_version: Version,
    /// Its dependencies.
    pub deps: Vec<Requirement>,
    /// The previous lockfile's choices: preferred, and kept usable even when yanked.
    pub locked: Vec<(QualifiedName, Version)>,
    /// Which locked choices may change.
    pub update: UpdatePolicy,
}

impl ResolveRequest {
    /// A request with no lock.
    pub fn new(root: PackageName, root_version: Version, deps: Vec<Requirement>) -> Self {
        ResolveRequest { root, root_version, deps, locked: Vec::new(), update: UpdatePolicy::Nothing }
    }
}

/// The version chosen for one package. Two are equal when they choose the same (where
/// the source kept it is not compared: sources may list versions in any order).
#[derive(Debug, Clone)]
pub struct ResolvedPackage {
    /// The chosen version.
    pub version: Version,
    /// Its dependencies, as their positions in [`Resolution::packages`] (so sorted by
    /// package): a resolution of thousands of packages names each one from tens of
    /// thousands of edges, and [`Resolution::dependencies`] gives them with their names.
    pub deps: Vec<u32>,
    /// Where the source gave it.
    pub origin: Origin,
}

impl PartialEq for ResolvedPackage {
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version && self.deps == other.deps
    }
}

impl Eq for ResolvedPackage {}

/// Where a chosen version came from: the lists of the [`Versions`] its source gave
/// ([`Versions::deps`]) and its position in their candidates. A source that keeps more of
/// each version than the resolver reads (the CLI: its index line, for the lock's checksum)
/// finds it there without looking the package up again ([`DepLists::pin_of`]).
#[derive(Clone)]
pub struct Origin {
    pub lists: Arc<dyn DepLists>,
    pub position: u32,
}

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Origin").field("position", &self.position).finish_non_exhaustive()
    }
}

/// A successful resolution: exactly one version per package, every requirement satisfied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Every package needed, transitively, except the root; sorted by package, each once.
    pub packages: Vec<(QualifiedName, ResolvedPackage)>,
    /// The root's own dependencies, as positions in `packages`.
    pub root_deps: Vec<u32>,
}

impl Resolution {
    /// What was chosen for `pkg`, if it is part of the resolution.
    pub fn get(&self, pkg: &QualifiedName) -> Option<&ResolvedPackage> {
        let at = self.packages.binary_search_by(|(id, _)| id.cmp(pkg)).ok()?;
        self.packages.get(at).map(|(_, p)| p)
    }

    /// The version chosen for `pkg`, if it is part of the resolution.
    pub fn version(&self, pkg: &QualifiedName) -> Option<&Version> {
        self.get(pkg).map(|p| &p.version)
    }

    /// The packages at `positions` (a [`ResolvedPackage::deps`] or [`Resolution::root_deps`])
    /// with the versions chosen for them.
    pub fn named<'r>(&'r self, positions: &'r [u32]) -> impl Iterator<Item = (&'r QualifiedName, &'r Version)> {
        positions.iter().filter_map(|&k| self.packages.get(k as usize)).map(|(id, p)| (id, &p.version))
    }

    /// `pkg`'s dependencies with the versions chosen for them, sorted by package (none
    /// when `pkg` is not part of the resolution).
    pub fn dependencies(&self, pkg: &QualifiedName) -> Vec<(&QualifiedName, &Version)> {
        self.get(pkg).map(|p| self.named(&p.deps).collect()).unwrap_or_default()
    }

    /// The root's own dependencies with the versions chosen for them, sorted by package.
    pub fn root_dependencies(&self) -> Vec<(&QualifiedName, &Version)> {
        self.named(&self.root_deps).collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Two spellings of one registry name one package; the same name in another
    /// registry, or in the default one, is another package.
    #[test]
    fn a_registry_is_the_same_whatever_its_spelling() {
        let meter = PackageName::new("meter").unwrap();
        let in_reg = |url: &str| QualifiedName::in_registry(meter.clone(), Some(RegistryId::parse_url(url).unwrap()));
        let (a, b) = (in_reg("https://r.example"), in_reg("HTTPS://R.example:443/"));
        let hash = |q: &QualifiedName| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            q.hash(&mut h);
            h.finish()
        };
        assert_eq!(a, b);
        assert_eq!(hash(&a), hash(&b));
        assert_eq!(a.cmp(&b), Ordering::Equal);
        assert_ne!(a, in_reg("https://other.example"));
        assert_ne!(a, QualifiedName::new(meter.clone()));
        assert_eq!(a.to_string(), "meter (https://r.example/)");
    }
}
