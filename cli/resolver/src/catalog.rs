//! Everything known about packages during one resolution: the interned package table, each package's
//! sorted candidates, which of them may be chosen, lock preferences, and the cache of requirement sets.
//!
//! Laid out for resolutions over ten thousand packages: candidates stay in the `Arc` the source handed
//! out (never copied), per-candidate facts and cached requirement sets live in a few shared arenas
//! rather than in small per-package vectors, and requirements are referred to where they are stored
//! rather than cloned.

use std::borrow::Cow;
use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;

use pubgrub::{Map, VersionSet};
use semver::{Version, VersionReq};

use crate::model::{
    Candidate, CandidateList, DepLists, QualifiedName, Requirement, ResolveRequest, SourceError, UpdatePolicy,
    VersionSource, Versions,
};
use crate::version_set::IndexSet;

/// An interned package: an index into the catalog's table. `Pkg(0)` is the root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Pkg(pub(crate) u32);

pub(crate) const ROOT: Pkg = Pkg(0);

const NONE: u32 = u32::MAX;

/// Requirement sets are cached for packages with more candidates than this (see
/// [`Catalog::req_set_at`]).
const CACHE_ABOVE: u32 = 16;

/// Shown only in PubGrub's own logs; explanations use [`Catalog::name`].
impl fmt::Display for Pkg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What is known about one package.
struct Entry {
    /// `None` for the root.
    id: Option<QualifiedName>,
    /// The next package whose id has the same hash (a chain through the table), or `NONE`.
    next_same_hash: u32,
    /// Where its normalized name is in [`Catalog::names`].
    name_at: u32,
    name_len: u32,
    /// Whether [`VersionSource::versions`] has been asked (always true for the root).
    loaded: bool,
    /// The candidates, as the source returned them (shared, never copied).
    candidates: Arc<dyn CandidateList>,
    /// Their dependency lists, read as the resolution asks for them.
    lists: Arc<dyn DepLists>,
    /// This package's slots in [`Catalog::slots`]: one per candidate, in ascending semver order; none
    /// when the candidates are in that order already and none is locked (`in_place`).
    slots_start: u32,
    slots_len: u32,
    in_place: bool,
    /// What the source said of the candidates' order ([`Versions::ascending`]).
    ascending: bool,
    /// The locked candidate to prefer, when the package is not being updated.
    preferred: Option<u32>,
    /// First and last of this package's cached requirement sets in [`Catalog::known`], or `NONE`.
    known_head: u32,
    known_tail: u32,
    /// Where the interned dependencies of the first candidate the resolution asked about are in
    /// [`Catalog::dep_arena`]: `(candidate, start, len)`; further candidates go to [`Catalog::dep_pkgs`].
    first_deps: (u32, u32, u32),
}

/// The packages' entries, in chunks that never move: a vector of ten thousand entries
/// grown by doubling copied them, and asked for fresh memory, a dozen times over.
#[derive(Default)]
struct Entries {
    chunks: Vec<Vec<Entry>>,
}

const CHUNK: usize = 1024;

impl Entries {
    fn len(&self) -> usize {
        self.chunks.last().map_or(0, |last| (self.chunks.len() - 1) * CHUNK + last.len())
    }

    fn push(&mut self, entry: Entry) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(entry),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(entry);
                self.chunks.push(chunk);
            }
        }
    }

    fn into_iter(self) -> impl Iterator<Item = Entry> {
        self.chunks.into_iter().flatten()
    }
}

impl std::ops::Index<usize> for Entries {
    type Output = Entry;
    fn index(&self, at: usize) -> &Entry {
        &self.chunks[at / CHUNK][at % CHUNK]
    }
}

impl std::ops::IndexMut<usize> for Entries {
    fn index_mut(&mut self, at: usize) -> &mut Entry {
        &mut self.chunks[at / CHUNK][at % CHUNK]
    }
}

/// One candidate, by index (its PubGrub version).
#[derive(Clone, Copy)]
struct Slot {
    /// Its position in the source's list.
    pos: u32,
    /// Not yanked, or yanked but locked and not being updated.
    choosable: bool,
}

/// Where a requirement is stored: requirement `k` of the candidate at position `pos` of `pkg` (or of the
/// root).
#[derive(Clone, Copy)]
struct ReqLoc {
    pkg: Pkg,
    pos: u32,
    k: u32,
}

/// A requirement seen on a package with many versions, with the candidates it matches.
struct KnownReq {
    next: u32,
    /// Hash of the `VersionReq`, compared before the requirement itself.
    hash: u64,
    loc: ReqLoc,
    set: IndexSet,
}

/// Why a candidate cannot be used although it exists (PubGrub's custom incompatibilities).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unavailable {
    /// The version lists its own package as a dependency.
    DependsOnItself,
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::DependsOnItself => f.write_str("depends on itself"),
        }
    }
}

/// The dependencies of one candidate, in PubGrub's terms.
pub(crate) enum CandidateDeps {
    Available(Vec<(Pkg, IndexSet)>),
    Unavailable(Unavailable),
}

/// What [`Catalog::intern_deps`] found.
enum Interned {
    /// List `list` of `lists` (the candidate at position `pos` of its package's source list).
    Listed {
        lists: Arc<dyn DepLists>,
        list: u32,
        pos: u32,
        arena_start: u32,
    },
    Unavailable(Unavailable),
    /// No such candidate: nothing is required.
    OutOfRange,
}

/// A candidate's requirements as the settled walk reads them.
pub(crate) enum WalkDeps {
    Listed(ListHandle),
    /// The candidate cannot be used (see [`Unavailable`]).
    Unavailable,
}

/// A requirement list, read through a handle that does not borrow the catalog.
pub(crate) struct ListHandle {
    lists: Arc<dyn DepLists>,
    list: u32,
}

impl ListHandle {
    /// The requirements (none for a list that cannot be read: [`Catalog::requirements`] has
    /// reported that already).
    pub(crate) fn requirements(&self) -> &[Requirement] {
        self.lists.list(self.list).unwrap_or_default()
    }
}

pub(crate) struct Catalog<'a> {
    source: &'a dyn VersionSource,
    pub(crate) request: &'a ResolveRequest,
    /// Hash of a package id → the first package with that hash (see [`Entry::next_same_hash`]).
    ids: Map<u64, u32>,
    /// Every interned name, normalized, end to end: an id is compared with these bytes, which stay
    /// in the processor's cache, rather than with its entry's name wherever that was allocated (tens
    /// of thousands of requirements are interned in a large resolution).
    names: Vec<u8>,
    entries: Entries,
    slots: Vec<Slot>,
    known: Vec<KnownReq>,
    /// Shared by every package not loaded yet.
    none: Versions,
    /// For each further candidate whose dependencies the resolution asked for (the first one of each package is
    /// in [`Entry::first_deps`]): where the interned package of each of its requirements is in
    /// `dep_arena`.
    dep_pkgs: Map<(Pkg, u32), (u32, u32)>,
    dep_arena: Vec<Pkg>,
    /// The lock: one version per package, plus any further ones (a lockfile may name a package twice).
    locked: Map<&'a QualifiedName, &'a Version>,
    /// (by package: a lock may list thousands, each candidate of the package looks its own up).
    locked_extra: Map<&'a QualifiedName, std::collections::HashSet<&'a Version>>,
    /// Normalized names being updated (for [`UpdatePolicy::Only`]).
    unlocked: Vec<String>,
}

/// A read-only view of one package.
#[derive(Clone, Copy)]
pub(crate) struct View<'c> {
    entry: &'c Entry,
    /// Empty when the candidates are used in place.
    slots: &'c [Slot],
}

impl<'c> View<'c> {
    /// The number of candidates.
    pub(crate) fn len(&self) -> u32 {
        self.entry.slots_len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entry.slots_len == 0
    }

    /// Where candidate `i` is in the source's list.
    fn pos(&self, i: u32) -> u32 {
        match self.entry.in_place {
            true => i,
            false => self.slots[i as usize].pos,
        }
    }

    fn candidate(&self, i: u32) -> Cow<'c, Candidate> {
        self.entry.candidates.get(self.pos(i) as usize)
    }

    pub(crate) fn version(&self, i: u32) -> Cow<'c, Version> {
        match self.candidate(i) {
            Cow::Borrowed(c) => Cow::Borrowed(&c.version),
            Cow::Owned(c) => Cow::Owned(c.version),
        }
    }

    pub(crate) fn is_yanked(&self, i: u32) -> bool {
        self.entry.candidates.yanked(self.pos(i) as usize)
    }

    pub(crate) fn choosable(&self, i: u32) -> bool {
        match self.entry.in_place {
            // No candidate is locked: the yanked ones are out.
            true => !self.is_yanked(i),
            false => self.slots[i as usize].choosable,
        }
    }

    /// The requirements of candidate `i`. PubGrub's own reads of them
    /// ([`Catalog::dependencies`]) report a list that cannot be read; to the
    /// explanations, which may look at versions PubGrub never tried, it is empty.
    pub(crate) fn deps(&self, i: u32) -> &'c [Requirement] {
        self.entry.lists.list(self.candidate(i).deps).unwrap_or_default()
    }

    /// The requirements of candidate `i` on `dep`.
    pub(crate) fn deps_on<'d>(&self, i: u32, dep: &'d QualifiedName) -> impl Iterator<Item = &'c Requirement> + 'd
    where
        'c: 'd,
    {
        self.deps(i).iter().filter(move |r| r.pkg == *dep)
    }
}

impl<'a> Catalog<'a> {
    pub(crate) fn new(request: &'a ResolveRequest, source: &'a dyn VersionSource) -> Self {
        let mut locked: Map<&QualifiedName, &Version> = Map::default();
        let mut locked_extra: Map<&QualifiedName, std::collections::HashSet<&Version>> = Map::default();
        for (id, v) in &request.locked {
            if let Some(first) = locked.insert(id, v) {
                locked_extra.entry(id).or_default().insert(first);
            }
        }
        let unlocked = match &request.update {
            UpdatePolicy::Only(names) => names.iter().map(|n| n.normalized()).collect(),
            _ => Vec::new(),
        };
        let mut cat = Catalog {
            source,
            request,
            ids: Map::default(),
            names: Vec::new(),
            entries: Entries::default(),
            slots: vec![Slot { pos: 0, choosable: true }],
            known: Vec::new(),
            none: Versions::none(),
            dep_pkgs: Map::default(),
            dep_arena: Vec::new(),
            locked,
            locked_extra,
            unlocked,
        };
        let root = Versions::of([(request.root_version.clone(), false, Arc::from(request.deps.as_slice()))]);
        cat.entries.push(Entry { loaded: true, slots_start: 0, slots_len: 1, ..Entry::new(None, &root) });
        cat
    }

    /// Every package loaded (the root aside), with what the source returned for it.
    pub(crate) fn into_loaded(self) -> impl Iterator<Item = (QualifiedName, Versions)> {
        self.entries.into_iter().filter(|e| e.loaded).filter_map(|e| {
            let versions = Versions { candidates: e.candidates, deps: e.lists, ascending: e.ascending };
            Some((e.id?, versions))
        })
    }

    /// The number of packages seen, the root included.
    pub(crate) fn len(&self) -> u32 {
        self.entries.len() as u32
    }

    pub(crate) fn entry(&self, pkg: Pkg) -> View<'_> {
        let entry = &self.entries[pkg.0 as usize];
        let start = entry.slots_start as usize;
        let slots = match entry.in_place {
            true => &[],
            false => &self.slots[start..start + entry.slots_len as usize],
        };
        View { entry, slots }
    }

    /// The package's id, `None` for the root.
    pub(crate) fn id(&self, pkg: Pkg) -> Option<&QualifiedName> {
        self.entries[pkg.0 as usize].id.as_ref()
    }

    /// How the package is named in messages.
    pub(crate) fn name(&self, pkg: Pkg) -> String {
        match self.id(pkg) {
            Some(id) => id.to_string(),
            None => self.request.root.to_string(),
        }
    }

    /// Where the source gave candidate `v` of `pkg`.
    pub(crate) fn origin(&self, pkg: Pkg, v: u32) -> crate::model::Origin {
        let view = self.entry(pkg);
        crate::model::Origin { lists: Arc::clone(&view.entry.lists), position: view.pos(v) }
    }

    /// The version of candidate `v` of `pkg`.
    pub(crate) fn version(&self, pkg: Pkg, v: u32) -> Cow<'_, Version> {
        self.entry(pkg).version(v)
    }

    /// The requirement at `loc`, whose list [`Catalog::dependencies`] has read.
    fn requirement(&self, loc: ReqLoc) -> Option<&Requirement> {
        let entry = &self.entries[loc.pkg.0 as usize];
        // (A position in the source's list, which may be longer than the candidates counted.)
        let deps =
            ((loc.pos as usize) < entry.candidates.len()).then(|| entry.candidates.get(loc.pos as usize).deps)?;
        entry.lists.list(deps).ok()?.get(loc.k as usize)
    }

    /// The interned package for `id`, if it was seen.
    pub(crate) fn lookup(&self, id: &QualifiedName) -> Option<Pkg> {
        let mut at = *self.ids.get(&self.ids.hasher().hash_one(id))?;
        while at != NONE {
            let e = &self.entries[at as usize];
            if self.is(e, id) {
                return Some(Pkg(at));
            }
            at = e.next_same_hash;
        }
        None
    }

    /// Whether `e` is the package `id` (as [`QualifiedName`]'s `Eq`).
    fn is(&self, e: &Entry, id: &QualifiedName) -> bool {
        let name = id.name.as_str().as_bytes();
        let Some(own) = &e.id else { return false };
        let stored = &self.names[e.name_at as usize..(e.name_at + e.name_len) as usize];
        stored.len() == name.len()
            && stored.iter().zip(name).all(|(&s, &n)| s == crate::model::normalize_byte(n))
            && own.registry == id.registry
    }

    pub(crate) fn intern(&mut self, id: &QualifiedName) -> Pkg {
        let hash = self.ids.hasher().hash_one(id);
        let mut at = self.ids.get(&hash).copied().unwrap_or(NONE);
        let mut last = NONE;
        while at != NONE {
            let e = &self.entries[at as usize];
            if self.is(e, id) {
                return Pkg(at);
            }
            last = at;
            at = e.next_same_hash;
        }
        let p = self.len();
        let name_at = self.names.len() as u32;
        self.names.extend(id.name.as_str().bytes().map(crate::model::normalize_byte));
        let name_len = self.names.len() as u32 - name_at;
        self.entries.push(Entry { name_at, name_len, ..Entry::new(Some(id.clone()), &self.none) });
        match last {
            NONE => {
                self.ids.insert(hash, p);
            }
            l => self.entries[l as usize].next_same_hash = p,
        }
        Pkg(p)
    }

    fn is_unlocked(&self, id: &QualifiedName) -> bool {
        match &self.request.update {
            UpdatePolicy::Nothing => false,
            UpdatePolicy::All => true,
            UpdatePolicy::Only(_) => self.unlocked.contains(&id.name.normalized()),
        }
    }

    /// Asks the source for the package's candidates, once.
    pub(crate) fn load(&mut self, pkg: Pkg) -> Result<(), (QualifiedName, SourceError)> {
        let entry = &self.entries[pkg.0 as usize];
        if entry.loaded {
            return Ok(());
        }
        let Some(id) = &entry.id else { return Ok(()) };
        let Versions { candidates, deps: lists, ascending } = self.source.versions(id).map_err(|e| (id.clone(), e))?;
        let locked = match self.locked.is_empty() {
            true => None,
            false => self.locked.get(id).copied().filter(|_| !self.is_unlocked(id)),
        };
        if ascending && locked.is_none() {
            // Nothing to sort, drop or prefer: the source's list is the candidates' order (a
            // resolution of thousands of packages then reads only the versions it matches).
            debug_assert!(Versions::is_ascending(&*candidates), "{id}: a source said its versions ascend");
            let entry = &mut self.entries[pkg.0 as usize];
            entry.loaded = true;
            entry.slots_len = u32::try_from(candidates.len()).unwrap_or(NONE);
            entry.candidates = candidates;
            entry.lists = lists;
            entry.in_place = true;
            entry.ascending = true;
            return Ok(());
        }
        let extra = self.locked_extra.get(id);
        let is_locked = |v: &Version| locked.is_some_and(|l| l == v || extra.is_some_and(|e| e.contains(v)));
        let start = self.slots.len();
        let n = u32::try_from(candidates.len()).unwrap_or(NONE - 1);
        let at = |s: &Slot| candidates.get(s.pos as usize);
        let cmp = |a: &Slot, b: &Slot| at(a).version.cmp(&at(b).version);
        self.slots.extend((0..n).map(|pos| Slot { pos, choosable: true }));
        let slots = &mut self.slots[start..];
        if !slots.is_sorted_by(|a, b| cmp(a, b).is_lt()) {
            slots.sort_by(cmp);
        }
        let mut preferred = None;
        for (i, s) in slots.iter_mut().enumerate() {
            let c = at(s);
            let locked_here = is_locked(&c.version);
            if locked_here {
                preferred = u32::try_from(i).ok();
            }
            s.choosable = !c.yanked || locked_here;
        }
        // A version listed twice counts once.
        let mut len = slots.len();
        if slots.windows(2).any(|w| cmp(&w[0], &w[1]).is_eq()) {
            let mut kept: Vec<Slot> = slots.to_vec();
            kept.dedup_by(|a, b| cmp(a, b).is_eq());
            len = kept.len();
            slots[..len].copy_from_slice(&kept);
            preferred = kept.iter().rposition(|s| is_locked(&at(s).version)).and_then(|i| u32::try_from(i).ok());
            self.slots.truncate(start + len);
        }
        let entry = &mut self.entries[pkg.0 as usize];
        entry.loaded = true;
        entry.candidates = candidates;
        entry.lists = lists;
        entry.slots_start = u32::try_from(start).unwrap_or(NONE);
        entry.slots_len = u32::try_from(len).unwrap_or(NONE);
        entry.preferred = preferred;
        entry.ascending = ascending;
        Ok(())
    }

    /// The candidates of `pkg` that the requirement stored at `loc` matches.
    ///
    /// Matching is cached per package and requirement for packages with many versions. For the rest,
    /// matching again (a few comparisons over candidates that sit together in memory) is measurably
    /// cheaper than any lookup, so nothing is stored.
    fn req_set_at(&mut self, pkg: Pkg, loc: ReqLoc, req: &VersionReq) -> IndexSet {
        if self.entries[pkg.0 as usize].slots_len <= CACHE_ABOVE {
            return matching(self.entry(pkg), req);
        }
        let hash = self.ids.hasher().hash_one(req);
        let mut at = self.entries[pkg.0 as usize].known_head;
        while let Some(k) = self.known.get(at as usize) {
            if k.hash == hash && self.requirement(k.loc).is_some_and(|r| *r.req == *req) {
                return k.set.clone();
            }
            at = k.next;
        }
        let set = matching(self.entry(pkg), req);
        let new = self.known.len() as u32;
        self.known.push(KnownReq { next: NONE, hash, loc, set: set.clone() });
        let entry = &mut self.entries[pkg.0 as usize];
        match entry.known_tail {
            NONE => entry.known_head = new,
            t => self.known[t as usize].next = new,
        }
        self.entries[pkg.0 as usize].known_tail = new;
        set
    }

    /// Loads the packages the root depends on; returns the first one with no version at all.
    pub(crate) fn load_root_deps(&mut self) -> Result<Option<QualifiedName>, (QualifiedName, SourceError)> {
        let n = self.request.deps.len() as u32;
        for k in 0..n {
            let id = &self.request.deps[k as usize].pkg;
            let p = self.intern(id);
            self.load(p)?;
            if self.entry(p).is_empty() {
                return Ok(Some(id.clone()));
            }
            self.req_set_at(p, ReqLoc { pkg: ROOT, pos: 0, k }, &self.request.deps[k as usize].req);
        }
        Ok(None)
    }

    /// The dependencies of candidate `v` of `pkg`, loading every package they name.
    pub(crate) fn dependencies(&mut self, pkg: Pkg, v: u32) -> Result<CandidateDeps, (QualifiedName, SourceError)> {
        let (lists, list, pos, arena_start) = match self.intern_deps(pkg, v)? {
            Interned::Listed { lists, list, pos, arena_start } => (lists, list, pos, arena_start),
            Interned::Unavailable(why) => return Ok(CandidateDeps::Unavailable(why)),
            Interned::OutOfRange => return Ok(CandidateDeps::Available(Vec::new())),
        };
        let reqs = lists.list(list).map_err(|e| (self.pkg_id(pkg), e))?;
        let mut out: Vec<(Pkg, IndexSet)> = Vec::with_capacity(reqs.len());
        for (k, r) in reqs.iter().enumerate() {
            let dep = self.dep_arena[arena_start as usize + k];
            let set = self.req_set_at(dep, ReqLoc { pkg, pos, k: k as u32 }, &r.req);
            // Two requirements on one package (not allowed in manifests) both apply.
            match out.iter_mut().find(|(p, _)| *p == dep) {
                Some((_, s)) => *s = s.intersection(&set),
                None => out.push((dep, set)),
            }
        }
        Ok(CandidateDeps::Available(out))
    }

    /// The requirements of candidate `v` of `pkg`, each package they name interned (in order: see
    /// [`Catalog::dep_pkgs`]) and loaded; for the settled walk, which needs no sets.
    pub(crate) fn requirements(&mut self, pkg: Pkg, v: u32) -> Result<WalkDeps, (QualifiedName, SourceError)> {
        match self.intern_deps(pkg, v)? {
            Interned::Listed { lists, list, .. } => {
                lists.list(list).map_err(|e| (self.pkg_id(pkg), e))?;
                Ok(WalkDeps::Listed(ListHandle { lists, list }))
            }
            Interned::Unavailable(_) => Ok(WalkDeps::Unavailable),
            Interned::OutOfRange => Ok(WalkDeps::Listed(ListHandle { lists: Arc::clone(&self.none.deps), list: 0 })),
        }
    }

    /// The package's id for an error (the root's name for the root).
    fn pkg_id(&self, pkg: Pkg) -> QualifiedName {
        self.id(pkg).cloned().unwrap_or_else(|| QualifiedName::new(self.request.root.clone()))
    }

    /// Interns and loads the packages candidate `v` of `pkg` requires, and records them for
    /// [`Catalog::dep_pkgs`].
    fn intern_deps(&mut self, pkg: Pkg, v: u32) -> Result<Interned, (QualifiedName, SourceError)> {
        let view = self.entry(pkg);
        if v >= view.len() {
            return Ok(Interned::OutOfRange);
        }
        // A cheap handle on the lists frees `self` for loading the dependencies.
        let pos = view.pos(v);
        let list = view.candidate(v).deps;
        let lists = Arc::clone(&view.entry.lists);
        let reqs = lists.list(list).map_err(|e| (self.pkg_id(pkg), e))?;
        let arena_start = self.dep_arena.len() as u32;
        for r in reqs {
            let dep = self.intern(&r.pkg);
            if dep == pkg {
                self.dep_arena.truncate(arena_start as usize);
                return Ok(Interned::Unavailable(Unavailable::DependsOnItself));
            }
            self.dep_arena.push(dep);
            self.load(dep)?;
        }
        let span = (arena_start, reqs.len() as u32);
        let entry = &mut self.entries[pkg.0 as usize];
        if entry.first_deps.0 == NONE {
            entry.first_deps = (v, span.0, span.1);
        } else {
            self.dep_pkgs.insert((pkg, v), span);
        }
        Ok(Interned::Listed { lists, list, pos, arena_start })
    }

    /// The interned packages of candidate `v`'s requirements, in order, once the resolution asked for its
    /// dependencies.
    pub(crate) fn dep_pkgs(&self, pkg: Pkg, v: u32) -> &[Pkg] {
        let (first, start, len) = self.entries[pkg.0 as usize].first_deps;
        let span = if first == v { Some((start, len)) } else { self.dep_pkgs.get(&(pkg, v)).copied() };
        match span {
            Some((start, len)) => &self.dep_arena[start as usize..(start + len) as usize],
            None => &[],
        }
    }

    /// The version to try for `pkg` within `range`: the locked one when allowed, else the highest
    /// choosable one.
    pub(crate) fn choose(&self, pkg: Pkg, range: &IndexSet) -> Option<u32> {
        let view = self.entry(pkg);
        if let Some(p) = view.entry.preferred
            && range.contains(&p)
        {
            return Some(p);
        }
        range.members_below(view.len()).rev().find(|&i| view.choosable(i))
    }

    /// [`Catalog::choose`] over the candidates `req` matches, without building the set: the candidate
    /// to try, and when `count` is asked, how many choosable candidates `req` matches, counted up to 2.
    pub(crate) fn pick(&self, pkg: Pkg, req: &VersionReq, count: bool) -> (Option<u32>, u32) {
        let view = self.entry(pkg);
        let preferred = view.entry.preferred.filter(|&p| req.matches(&view.version(p)));
        if preferred.is_some() && !count {
            return (preferred, 0);
        }
        // From the highest: the first match is usually the choice, and the next one ends a count.
        let (mut top, mut n) = (None, 0);
        for i in (0..view.len()).rev() {
            if view.choosable(i) && req.matches(&view.version(i)) {
                top.get_or_insert(i);
                n += 1;
                if !count || n == 2 {
                    break;
                }
            }
        }
        (preferred.or(top), n)
    }

    /// How many choosable candidates of `pkg` lie in `range`.
    pub(crate) fn count_choosable(&self, pkg: Pkg, range: &IndexSet) -> u32 {
        let view = self.entry(pkg);
        let mut count = 0;
        for i in range.members_below(view.len()) {
            count += u32::from(view.choosable(i));
        }
        count
    }

    /// The source's known names in `registry`.
    pub(crate) fn known_names(&self, registry: Option<&ebpkg_spec::RegistryId>) -> Vec<ebpkg_spec::PackageName> {
        self.source.known_names(registry)
    }
}

impl Entry {
    fn new(id: Option<QualifiedName>, versions: &Versions) -> Self {
        Entry {
            id,
            next_same_hash: NONE,
            name_at: 0,
            name_len: 0,
            loaded: false,
            candidates: Arc::clone(&versions.candidates),
            lists: Arc::clone(&versions.deps),
            slots_start: 0,
            slots_len: 0,
            in_place: false,
            ascending: versions.ascending,
            preferred: None,
            known_head: NONE,
            known_tail: NONE,
            first_deps: (NONE, 0, 0),
        }
    }
}

/// The candidates of `view`'s package that `req` matches, without caching.
pub(crate) fn matching(view: View<'_>, req: &VersionReq) -> IndexSet {
    IndexSet::from_predicate(view.len(), |i| req.matches(&view.version(i)))
}
