//! Reading a registry's index for a resolution, ahead of the resolver.
//!
//! The resolver asks for one package at a time and cannot go on until it has its
//! versions; reading and parsing thousands of index files one after another is most
//! of a large resolution. So each package read is followed by its likely
//! dependencies — those of its newest usable version, which a fresh resolution
//! picks first — read by worker threads while the resolver works: by the time it
//! asks, the index is usually there. A guess that turns out wrong only costs a
//! read. What the resolver asks for that is not loaded yet is read on its own
//! thread at once (never queued behind guesses), and a read that failed in a
//! worker is done again there, so the error it reports is its own.
//!
//! Only the lines' versions, yanked flags and dependencies are parsed here
//! ([`ebpkg_spec::index::parse_versions`]); the rest of a line is read when its
//! version is chosen ([`LoadedIndex::entry`]). What was parsed is kept for the
//! next command ([`ebpkg_resolution_cache`]) under the index file's fingerprint
//! (a directory's file as the file system tells it, or the hash a registry's
//! signed TUF metadata lists), which reads an index file again only if it changed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use anyhow::Result;
use ebpkg_resolution_cache::{Line, LoadedIndex, ResolutionCaches};
use ebpkg_resolver::{Candidate, DepLists, QualifiedName, Requirement};
use ebpkg_sources::{IndexFingerprint, Registry, RegistryId};
use ebpkg_spec::PackageName;
use ebpkg_spec::index::{IndexError, parse_versions};
use rustc_hash::FxBuildHasher;

/// `name`'s index in `registry` (at `url`): from the resolution cache when its
/// file is unchanged, else read and parsed (and kept in the cache when it can
/// be). `default` is the command's default registry, which requirements name as
/// `None`.
pub fn load(
    registry: &dyn Registry,
    url: &RegistryId,
    default: &RegistryId,
    caches: &ResolutionCaches,
    name: &PackageName,
    skip_cache: bool,
) -> Result<Option<Arc<LoadedIndex>>> {
    let cache = match registry.index_fingerprint(name)? {
        Some(fingerprint) => {
            let cache = caches.registry(url);
            if !skip_cache && let Some(index) = cache.get(name, &fingerprint) {
                return Ok(Some(index));
            }
            Some((cache, fingerprint))
        }
        None => None,
    };
    let Some((index, read)) = parse(registry, url, default, name)? else { return Ok(None) };
    let index = Arc::new(index);
    if let Some((cache, fingerprint)) = cache
        && index.problems().is_empty()
        // The file read is the one fingerprinted, and did not change while it was read.
        && read == Some(fingerprint)
    {
        cache.remember(name, fingerprint, Arc::clone(&index));
    }
    Ok(Some(index))
}

/// Reads `name`'s index file from `registry` (at `url`) and parses what resolution
/// needs; with the fingerprint of the file read, when the registry tells one.
fn parse(
    registry: &dyn Registry,
    url: &RegistryId,
    default: &RegistryId,
    name: &PackageName,
) -> Result<Option<(LoadedIndex, Option<IndexFingerprint>)>> {
    let Some(text) = registry.index_text(name)? else { return Ok(None) };
    let mut problems = Vec::new();
    let parsed = parse_versions(name.as_str(), &text.bytes, &mut problems);
    let base = text.bytes.as_ptr() as usize;
    let mut lines = Vec::with_capacity(parsed.len());
    let mut candidates = Vec::with_capacity(parsed.len());
    let mut lists = Vec::new();
    // Versions of a package mostly depend on the same things: one list per text.
    let mut shared: HashMap<&str, u32> = HashMap::new();
    for line in parsed {
        let deps = match shared.get(line.deps_text) {
            Some(&deps) => deps,
            None => match requirements(&line, url, default) {
                Ok(deps) => {
                    let k = u32::try_from(lists.len()).unwrap_or(u32::MAX);
                    lists.push(deps);
                    shared.insert(line.deps_text, k);
                    k
                }
                Err(problem) => {
                    problems.push(problem);
                    continue;
                }
            },
        };
        let start = line.line.as_ptr() as usize - base;
        lines.push(Line { bytes: start..start + line.line.len(), line_no: line.line_no });
        candidates.push(Candidate { version: line.vers, yanked: line.yanked, deps });
    }
    drop(shared);
    let index = LoadedIndex::parsed(text.origin, text.bytes, lines, candidates, lists, problems);
    Ok(Some((index, text.fingerprint)))
}

/// The requirements of a line from registry `from`, as the resolver takes them.
fn requirements(
    line: &ebpkg_spec::index::VersionLine<'_>,
    from: &RegistryId,
    default: &RegistryId,
) -> Result<Box<[Requirement]>, IndexError> {
    let deps = line.deps()?.into_iter().map(|d| {
        // A dependency without a registry is in the same registry as its dependent.
        let url = d.registry.unwrap_or_else(|| from.clone());
        let registry = (url != *default).then_some(url);
        Requirement::new(QualifiedName::in_registry(d.name, registry), d.req)
    });
    Ok(deps.collect())
}

/// Where one package's index stands.
enum State {
    /// Waiting for a worker.
    Queued,
    /// Being read (by a worker or by the resolver's thread).
    Loading,
    Loaded(Option<Arc<LoadedIndex>>),
    /// A worker's read failed: read again by whoever needs it.
    Failed,
}

struct Slot {
    state: Mutex<SlotState>,
    /// Signalled when the state leaves `Loading` and someone waits for it.
    done: Condvar,
    /// Read from the index file whatever the resolution cache holds: its cached
    /// record turned out damaged ([`Loader::reread_damaged`]).
    skip_cache: bool,
}

struct SlotState {
    state: State,
    /// Whether a thread waits on [`Slot::done`]: signalling a condition variable
    /// is a system call even when nobody waits, and a resolution finishes
    /// thousands of reads that nobody waited for.
    waited_for: bool,
}

impl SlotState {
    fn new() -> Mutex<SlotState> {
        Mutex::new(SlotState { state: State::Queued, waited_for: false })
    }
}

/// Each registry's slots (by URL: a command reads a few registries at most), by
/// normalized package name. Looked up for every package a resolution touches,
/// from several threads: the names are hashed with FxHash and looked up without
/// building a key.
type Slots = Vec<(RegistryId, RegistrySlots)>;
/// Keyed by the normalized name, shared with the package's name when it is its own.
type RegistrySlots = HashMap<Arc<str>, Arc<Slot>, FxBuildHasher>;

/// The slots of registry `url` in one shard, made on first use with room for a shard's
/// part of `expected` packages (a large resolution's tables, grown by doubling, were
/// rehashed and asked for fresh memory a dozen times over), and the registry.
fn slots_of<'s>(
    slots: &'s mut Slots,
    url: &RegistryId,
    expected: impl FnOnce() -> usize,
) -> (&'s RegistryId, &'s mut RegistrySlots) {
    let at = match slots.iter().position(|(u, _)| u == url) {
        Some(at) => at,
        None => {
            let of_registry = RegistrySlots::with_capacity_and_hasher(expected() / SHARDS, FxBuildHasher);
            slots.push((url.clone(), of_registry));
            slots.len() - 1
        }
    };
    let (url, of_registry) = &mut slots[at];
    (url, of_registry)
}

impl Shared {
    /// The slot of `name` in `url`, if any.
    fn slot(&self, url: &RegistryId, name: &PackageName) -> Option<Arc<Slot>> {
        let key = name.normalized_key();
        let slots = lock(self.shard(&key));
        let (_, of_registry) = slots.iter().find(|(u, _)| u == url)?;
        of_registry.get(&*key).cloned()
    }

    /// The shard of the slots that holds `key`'s (see [`Shared::slots`]).
    fn shard(&self, key: &str) -> &Mutex<Slots> {
        use std::hash::BuildHasher;
        &self.slots[FxBuildHasher.hash_one(key) as usize % SHARDS].0
    }

    /// The slots of `url` in a shard made on first use hold room for about as many
    /// packages as the resolution cache has records of the registry (the packages earlier
    /// resolutions read from it), up to 65,536.
    fn expected(&self, url: &RegistryId) -> usize {
        self.caches.registry(url).records().min(MOST_EXPECTED)
    }

    /// The next read waiting for a worker, if any.
    fn next_job(&self) -> Option<Job> {
        self.jobs.pop()
    }
}

fn new_slot() -> Arc<Slot> {
    Arc::new(Slot { state: SlotState::new(), done: Condvar::new(), skip_cache: false })
}

/// The reads one index queued (its newest version's dependencies), taken one at a time (see
/// [`run`]), the rest queued again each time.
struct Job {
    registry: Arc<dyn Registry>,
    url: RegistryId,
    reads: Vec<(PackageName, Arc<Slot>)>,
}

/// See [`Shared::slots`].
const SHARDS: usize = 16;

/// One shard's slots, alone in its cache line: two threads locking neighbouring
/// shards in one line each took the line from the other's CPU.
#[derive(Default)]
#[repr(align(64))]
struct Shard(Mutex<Slots>);

/// The most packages the slots of a registry are made with room for (see [`Shared::expected`]):
/// the count comes from a file, and past it, tables grow as they fill.
const MOST_EXPECTED: usize = 1 << 16;

struct Shared {
    default: RegistryId,
    caches: ResolutionCaches,
    /// In shards by name, each locked on its own: every thread looks slots up for every
    /// package, and with more threads than CPUs, one preempted while holding a single lock
    /// stalled the others for a scheduler tick, the resolver's thread most of all.
    slots: [Shard; SHARDS],
    /// Reads waiting for a worker, queued and taken without a lock, for the same reason.
    jobs: crossbeam_queue::SegQueue<Job>,
    /// How many workers wait for reads (whom a new read must wake: waking nobody would
    /// still cost a system call per read), and the lock under which they wait.
    idle: AtomicUsize,
    sleep: Mutex<()>,
    work: Condvar,
    stop: AtomicBool,
}

/// Index reads for one command, shared with the worker threads reading ahead.
pub struct Loader {
    shared: Arc<Shared>,
    workers: Mutex<usize>,
}

/// Reads kept in flight when they wait on a server.
const NETWORK_READS_IN_FLIGHT: usize = 16;

/// Worker threads: local reads (a directory, or a server's cached index files
/// known current) go as fast as the CPUs parse, the resolver's own thread being
/// one of them (it reads whatever is queued while it waits: one worker per CPU
/// left a third thread preempting the resolver's on two CPUs, and each thread's
/// heap took fresh pages of its own); reads from a server are waited on, so more
/// are kept in flight.
fn workers_for(networked: bool) -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cpus = *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if networked { NETWORK_READS_IN_FLIGHT } else { cpus.saturating_sub(1).max(1) }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A worker that panicked left nothing half-written that matters here.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Loader {
    /// A loader for a command whose default registry is `default`, with its
    /// resolution caches in `cache_dir`.
    pub fn new(default: RegistryId, cache_dir: &std::path::Path) -> Loader {
        let shared = Shared {
            caches: ResolutionCaches::new(cache_dir, default.clone()),
            default,
            slots: Default::default(),
            jobs: crossbeam_queue::SegQueue::new(),
            idle: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            work: Condvar::new(),
            stop: AtomicBool::new(false),
        };
        Loader { shared: Arc::new(shared), workers: Mutex::new(0) }
    }

    /// `name`'s index in `registry` (at `url`), read now unless a worker has read it
    /// or is reading it; then its likely dependencies are read ahead.
    pub fn get(
        &self,
        registry: &Arc<dyn Registry>,
        url: &RegistryId,
        name: &PackageName,
    ) -> Result<Option<Arc<LoadedIndex>>> {
        let slot = {
            let key = name.normalized_key();
            let mut slots = lock(self.shared.shard(&key));
            let (_, of_registry) = slots_of(&mut slots, url, || self.shared.expected(url));
            match of_registry.get(&*key) {
                Some(slot) => Arc::clone(slot),
                None => Arc::clone(of_registry.entry(name.normalized_shared()).or_insert_with(new_slot)),
            }
        };
        loop {
            let mut state = lock(&slot.state);
            match &state.state {
                State::Loaded(index) => return Ok(index.clone()),
                State::Queued | State::Failed => {
                    state.state = State::Loading;
                    break;
                }
                State::Loading => {}
            }
            drop(state);
            // A worker is reading it. Rather than sleep, do a read waiting for a worker: with
            // more threads than CPUs, that worker may not even be running.
            if let Some(job) = self.shared.next_job() {
                run(&self.shared, job);
                continue;
            }
            let mut state = lock(&slot.state);
            if matches!(state.state, State::Loading) {
                state.waited_for = true;
                drop(slot.done.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner));
            }
        }
        let index = match load(registry.as_ref(), url, &self.shared.default, &self.shared.caches, name, slot.skip_cache)
        {
            Ok(index) => index,
            Err(e) => {
                finish(&slot, State::Failed);
                return Err(e);
            }
        };
        finish(&slot, State::Loaded(index.clone()));
        if let Some(index) = &index {
            self.read_ahead(registry, url, index);
        }
        Ok(index)
    }

    /// Makes the packages whose cached records turned out damaged (a dependency
    /// list that does not decode) be read from their index files from now on;
    /// whether there were any not yet handled, so that a resolution that saw one
    /// is done again.
    pub fn reread_damaged(&self) -> bool {
        let mut again = false;
        for (url, name) in self.shared.caches.damaged() {
            let mut slots = lock(self.shared.shard(&name));
            let (_, of_registry) = slots_of(&mut slots, &url, || self.shared.expected(&url));
            if of_registry.get(&*name).is_some_and(|slot| slot.skip_cache) {
                continue;
            }
            tracing::warn!("the resolution cache's record of `{name}` in {url} is damaged: reading its index file");
            let slot = Slot { state: SlotState::new(), done: Condvar::new(), skip_cache: true };
            of_registry.insert(name, Arc::new(slot));
            again = true;
        }
        again
    }

    /// `name`'s index in `url` if it has been read and exists.
    pub fn loaded(&self, url: &RegistryId, name: &PackageName) -> Option<Arc<LoadedIndex>> {
        let slot = self.shared.slot(url, name)?;
        match &lock(&slot.state).state {
            State::Loaded(Some(index)) => Some(Arc::clone(index)),
            _ => None,
        }
    }

    /// Queues the dependencies of `index`'s newest usable version that live in the
    /// same registry, and starts the workers on first use.
    fn read_ahead(&self, registry: &Arc<dyn Registry>, url: &RegistryId, index: &LoadedIndex) {
        let jobs = next_jobs(&self.shared, registry, url, index);
        if jobs == 0 {
            return;
        }
        let mut workers = lock(&self.workers);
        // Sized for a network once this registry's reads have gone to one (they
        // may start to later: a resolution that finds a changed package).
        let wanted = workers_for(registry.index_requests() > 0);
        while *workers < wanted {
            let shared = Arc::clone(&self.shared);
            let spawned = std::thread::Builder::new().name("ebpkg-index".into()).spawn(move || work(&shared));
            if let Err(e) = spawned {
                // Reading ahead is an optimization: without workers, the resolver reads.
                tracing::debug!("no index reader thread: {e}");
                break;
            }
            *workers += 1;
        }
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        while self.shared.jobs.pop().is_some() {}
        // (Under the lock workers wait under: one about to wait sees `stop` first.)
        drop(lock(&self.shared.sleep));
        self.shared.work.notify_all();
        self.shared.caches.save();
        // A loader lives as long as its command, which ends here. What it read (a
        // large resolution: hundreds of thousands of small values) is left to the
        // process's exit: freeing it one value at a time, in whichever thread
        // held the last reference, only competed with the command's last writes.
        for shard in &self.shared.slots {
            std::mem::forget(std::mem::take(&mut *lock(&shard.0)));
        }
    }
}

fn finish(slot: &Slot, state: State) {
    let mut slot_state = lock(&slot.state);
    slot_state.state = state;
    let waited_for = std::mem::take(&mut slot_state.waited_for);
    drop(slot_state);
    if waited_for {
        slot.done.notify_all();
    }
}

/// Queues reads of the packages `index`'s newest usable version depends on (in
/// its own registry) that nobody asked for yet; returns how many.
fn next_jobs(shared: &Shared, registry: &Arc<dyn Registry>, url: &RegistryId, index: &LoadedIndex) -> usize {
    let Some(newest) = index.newest() else { return 0 };
    // Decoded here, off the resolver's thread: the list it will most likely ask for.
    let Ok(deps) = index.list(newest.deps) else { return 0 };
    let own = (*url != shared.default).then(|| url.clone());
    let mut reads = Vec::with_capacity(deps.len());
    let mut url_of_reads = None;
    for dep in deps.iter().filter(|d| d.pkg.registry == own) {
        let key = dep.pkg.name.normalized_key();
        let mut slots = lock(shared.shard(&key));
        let (shared_url, of_registry) = slots_of(&mut slots, url, || shared.expected(url));
        if of_registry.contains_key(&*key) {
            continue;
        }
        let slot = new_slot();
        of_registry.insert(dep.pkg.name.normalized_shared(), Arc::clone(&slot));
        url_of_reads.get_or_insert_with(|| shared_url.clone());
        reads.push((dep.pkg.name.clone(), slot));
    }
    let n = reads.len();
    // (Taken from the end, in the order the dependencies are listed.)
    reads.reverse();
    if let Some(url) = url_of_reads {
        shared.jobs.push(Job { registry: Arc::clone(registry), url, reads });
    }
    // A worker going idle sees these reads, or is seen idle here (see `work`), and woken
    // under the lock it waits under, so never between its look at the queue and its wait.
    std::sync::atomic::fence(Ordering::SeqCst);
    let idle = if n > 0 { shared.idle.load(Ordering::SeqCst) } else { 0 };
    if idle > 0 {
        let _sleeping = lock(&shared.sleep);
        match idle {
            1 => shared.work.notify_one(),
            _ => shared.work.notify_all(),
        }
    }
    n
}

fn work(shared: &Shared) {
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        if let Some(job) = shared.jobs.pop() {
            run(shared, job);
            continue;
        }
        let sleeping = lock(&shared.sleep);
        shared.idle.fetch_add(1, Ordering::SeqCst);
        std::sync::atomic::fence(Ordering::SeqCst);
        // (See `next_jobs`: a read queued from now on finds this worker counted.)
        if shared.jobs.is_empty() && !shared.stop.load(Ordering::SeqCst) {
            drop(shared.work.wait(sleeping).unwrap_or_else(std::sync::PoisonError::into_inner));
        } else {
            drop(sleeping);
        }
        shared.idle.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Does the next read of a job (on a worker, or on the resolver's thread while it waits
/// for another read), unless someone got to it first; the job's other reads are queued
/// again first, for any thread to take: behind a slow read, they would wait.
fn run(shared: &Shared, job: Job) {
    let Job { registry, url, mut reads } = job;
    let Some((name, slot)) = reads.pop() else { return };
    if !reads.is_empty() {
        shared.jobs.push(Job { registry: Arc::clone(&registry), url: url.clone(), reads });
    }
    read_queued(shared, &registry, &url, &name, &slot);
}

/// One read of a job (see [`run`]).
fn read_queued(shared: &Shared, registry: &Arc<dyn Registry>, url: &RegistryId, name: &PackageName, slot: &Slot) {
    {
        let mut state = lock(&slot.state);
        if !matches!(state.state, State::Queued) {
            return;
        }
        state.state = State::Loading;
    }
    match load(registry.as_ref(), url, &shared.default, &shared.caches, name, slot.skip_cache) {
        Ok(index) => {
            finish(slot, State::Loaded(index.clone()));
            if let Some(index) = index {
                next_jobs(shared, registry, url, &index);
            }
        }
        Err(e) => {
            tracing::debug!("reading ahead the index of `{name}`: {e:#}");
            finish(slot, State::Failed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebpkg_sources::FileRegistry;
    use ebpkg_sources::Result as SourceResult;
    use ebpkg_spec::Manifest;
    use ebpkg_spec::index::IndexEntry;
    use semver::Version;

    /// A directory registry with hooks: reads that say they came from another file than
    /// the one fingerprinted (`swapped`: as when the path is swapped between the two), and
    /// fingerprints taken only past a `gate`.
    struct Tapped {
        inner: FileRegistry,
        swapped: bool,
        gate: Option<Arc<Gate>>,
        /// What it says of index files asked of a server.
        requests: u64,
    }

    /// Holds the read of `held` until the thread `main` has read another package; every
    /// other thread's read of another package takes 20 ms.
    struct Gate {
        held: PackageName,
        main: std::thread::ThreadId,
        /// (the held read has started, `main` has read another package)
        seen: Mutex<(bool, bool)>,
        changed: Condvar,
    }

    impl Gate {
        fn pass(&self, name: &PackageName) {
            let mut seen = self.seen.lock().unwrap();
            if *name == self.held {
                seen.0 = true;
                self.changed.notify_all();
                let wait = std::time::Duration::from_secs(20);
                drop(self.changed.wait_timeout_while(seen, wait, |seen| !seen.1).unwrap());
            } else if std::thread::current().id() == self.main {
                // (Counted from the held read on: the resolver's thread read the first package itself.)
                seen.1 |= seen.0;
                self.changed.notify_all();
            } else {
                drop(seen);
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }

        fn wait_for_held_read(&self) {
            let seen = self.seen.lock().unwrap();
            drop(self.changed.wait_timeout_while(seen, std::time::Duration::from_secs(20), |seen| !seen.0).unwrap());
        }
    }

    impl Registry for Tapped {
        fn url(&self) -> &RegistryId {
            self.inner.url()
        }
        fn index_text(&self, name: &PackageName) -> SourceResult<Option<ebpkg_sources::IndexText>> {
            let mut text = self.inner.index_text(name)?;
            if let Some(IndexFingerprint::File { ino, .. }) =
                text.as_mut().and_then(|t| t.fingerprint.as_mut()).filter(|_| self.swapped)
            {
                *ino += 1;
            }
            Ok(text)
        }
        fn index_fingerprint(&self, name: &PackageName) -> SourceResult<Option<IndexFingerprint>> {
            if let Some(gate) = &self.gate {
                gate.pass(name);
            }
            self.inner.index_fingerprint(name)
        }
        fn index_requests(&self) -> u64 {
            self.requests
        }
        fn names(&self) -> SourceResult<Vec<PackageName>> {
            self.inner.names()
        }
        fn download(&self, entry: &IndexEntry) -> SourceResult<Vec<u8>> {
            self.inner.download(entry)
        }
        fn publish(
            &self,
            archive: &ebpkg_archive::VerifiedArchive,
            manifest: &Manifest,
            signature: Option<&ebpkg_sources::PublishSignature>,
        ) -> SourceResult<IndexEntry> {
            self.inner.publish(archive, manifest, signature)
        }
        fn bundle(&self, version: &ebpkg_sources::SignedVersion) -> SourceResult<Vec<u8>> {
            self.inner.bundle(version)
        }
        fn publisher_key(&self, id: &ebpkg_spec::types::KeyId) -> SourceResult<ebpkg_sources::KeyRecord> {
            self.inner.publisher_key(id)
        }
        fn set_yanked(&self, name: &PackageName, version: &Version, yanked: bool) -> SourceResult<IndexEntry> {
            self.inner.set_yanked(name, version, yanked)
        }
        fn search(&self, query: &str, limit: usize) -> SourceResult<Vec<ebpkg_sources::SearchHit>> {
            self.inner.search(query, limit)
        }
    }

    #[test]
    fn a_parse_is_cached_only_under_the_fingerprint_of_the_file_it_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("registry");
        let index = root.join("index").join(ebpkg_spec::index_path("net"));
        std::fs::create_dir_all(index.parent().unwrap()).unwrap();
        std::fs::write(root.join("config.json"), "{\"ebpkg-registry\":1}\n").unwrap();
        let cksum = "ab".repeat(32);
        let line = format!(
            "{{\"v\":1,\"name\":\"net\",\"vers\":\"1.0.0\",\"deps\":[],\"cksum\":\"{cksum}\",\"yanked\":false}}\n"
        );
        std::fs::write(&index, line).unwrap();
        // Fingerprints are trusted only for files settled for 2 s.
        std::thread::sleep(std::time::Duration::from_millis(2100));
        let url = RegistryId::from_path(&root).unwrap();
        let net = PackageName::new("net").unwrap();
        let cached = |registry: &dyn Registry, cache_dir: &std::path::Path| {
            let caches = ResolutionCaches::new(cache_dir, url.clone());
            let loaded = load(registry, &url, &url, &caches, &net, false).unwrap().unwrap();
            assert_eq!(ebpkg_resolver::CandidateList::len(&*loaded), 1);
            caches.save();
            let file = ebpkg_spec::cache_layout::CacheLayout::new(cache_dir).resolution_cache(&url);
            file.exists()
        };
        let swapped = tempfile::tempdir().unwrap();
        let registry = Tapped { inner: FileRegistry::at(&root).unwrap(), swapped: true, gate: None, requests: 0 };
        assert!(!cached(&registry, swapped.path()), "cached under another file");
        let honest = tempfile::tempdir().unwrap();
        assert!(cached(&FileRegistry::at(&root).unwrap(), honest.path()));
    }

    /// A directory registry (in the returned directory, at the path returned) where
    /// `app` depends on `net`, read ahead first, then on thirty more, `b00`…`b29`.
    fn app_and_thirty_one() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("registry");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("config.json"), "{\"ebpkg-registry\":1}\n").unwrap();
        let line = |name: &str, deps: &[String]| {
            let deps: Vec<String> =
                deps.iter().map(|d| format!("{{\"name\":\"{d}\",\"req\":\"^1\",\"registry\":null}}")).collect();
            let cksum = "ab".repeat(32);
            let deps = deps.join(",");
            format!(
                "{{\"v\":1,\"name\":\"{name}\",\"vers\":\"1.0.0\",\"deps\":[{deps}],\"cksum\":\"{cksum}\",\"yanked\":false}}\n"
            )
        };
        let others: Vec<String> = (0..30).map(|k| format!("b{k:02}")).collect();
        let mut app_deps = vec!["net".to_owned()];
        app_deps.extend(others.iter().cloned());
        let mut files = vec![("app".to_owned(), app_deps), ("net".to_owned(), Vec::new())];
        files.extend(others.into_iter().map(|name| (name, Vec::new())));
        for (name, deps) in &files {
            let index = root.join("index").join(ebpkg_spec::index_path(name));
            std::fs::create_dir_all(index.parent().unwrap()).unwrap();
            std::fs::write(&index, line(name, deps)).unwrap();
        }
        (dir, root)
    }

    /// Reads that go to a server are kept many in flight; reads that stay local get a
    /// thread per CPU, the resolver's included: more would only compete with it.
    #[test]
    fn readers_are_sized_for_a_network_only_once_reads_go_to_one() {
        let (_dir, root) = app_and_thirty_one();
        let url = RegistryId::from_path(&root).unwrap();
        let app = PackageName::new("app").unwrap();
        let started = |requests: u64| {
            let registry: Arc<dyn Registry> =
                Arc::new(Tapped { inner: FileRegistry::at(&root).unwrap(), swapped: false, gate: None, requests });
            let cache = tempfile::tempdir().unwrap();
            let loader = Loader::new(url.clone(), cache.path());
            loader.get(&registry, &url, &app).unwrap().unwrap();
            *lock(&loader.workers)
        };
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(started(0), cpus.saturating_sub(1).max(1));
        assert_eq!(started(1), NETWORK_READS_IN_FLIGHT);
    }

    /// Waiting for a read a worker is doing, the resolver's thread does reads that wait for
    /// a worker rather than sleep.
    #[test]
    fn the_resolver_does_queued_reads_while_a_worker_reads_what_it_waits_for() {
        let (_dir, root) = app_and_thirty_one();
        let url = RegistryId::from_path(&root).unwrap();
        let gate = Arc::new(Gate {
            held: PackageName::new("net").unwrap(),
            main: std::thread::current().id(),
            seen: Mutex::new((false, false)),
            changed: Condvar::new(),
        });
        let registry: Arc<dyn Registry> = Arc::new(Tapped {
            inner: FileRegistry::at(&root).unwrap(),
            swapped: false,
            gate: Some(Arc::clone(&gate)),
            requests: 0,
        });
        let cache = tempfile::tempdir().unwrap();
        let loader = Loader::new(url.clone(), cache.path());
        // The resolver's thread reads `app` itself, and queues what it depends on, which the
        // workers it starts read, `net` first.
        loader.get(&registry, &url, &PackageName::new("app").unwrap()).unwrap().unwrap();
        assert!(!gate.seen.lock().unwrap().1);
        gate.wait_for_held_read();
        let net = loader.get(&registry, &url, &PackageName::new("net").unwrap()).unwrap();
        assert!(net.is_some());
        assert!(gate.seen.lock().unwrap().1, "the resolver's thread slept while reads waited for a worker");
    }
}
