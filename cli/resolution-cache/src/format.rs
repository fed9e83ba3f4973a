//! The cache file's layout (see the crate documentation): reading it as untrusted
//! bytes, and writing it.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use ebpkg_resolver::{Candidate, CandidateList, DepLists, QualifiedName, Req, Requirement};
use ebpkg_sources::{IndexFingerprint, RegistryId};
use ebpkg_spec::PackageName;
use ebpkg_spec::index::EntryPin;
use ebpkg_spec::types::{KeyId, Sha256Digest};
use semver::{BuildMetadata, Prerelease, Version};

use crate::loaded::{Body, Line, LoadedIndex, StoredList, StoredRecord};

pub(crate) const MAGIC: &[u8; 8] = b"EBPKGRES";

/// Changes whenever the layout or what the loader makes of an index file does:
/// a file written by another ebpkg is ignored, never misread.
pub(crate) const STAMP: &str = concat!("resolution cache 8, ebpkg ", env!("CARGO_PKG_VERSION"));

/// A cache file's bytes, mapped (or, for tests and fuzzing, in memory).
pub(crate) enum Stored {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Stored {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Stored::Mapped(map) => map,
            Stored::Owned(bytes) => bytes,
        }
    }
}

/// Where one package's record is, and the fingerprint of the file it was parsed from.
///
/// A record is in two parts. What every resolution reads (dependency lists, versions, pins)
/// is apart from what it reads only for errors and for lines not pinned yet (the index file's
/// text, its line table, where it came from): the first parts of all records lie together,
/// a few to a page, rather than each in a page of its own between texts of several KiB.
#[derive(Clone)]
pub(crate) struct Record {
    pub(crate) fingerprint: IndexFingerprint,
    pub(crate) hot: Range<usize>,
    pub(crate) cold: Range<usize>,
}

/// Bounds-checked reads from a byte slice; `None` once anything does not fit.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn usize(&mut self) -> Option<usize> {
        usize::try_from(self.u32()?).ok()
    }

    fn skip_str(&mut self) -> Option<()> {
        let n = self.usize()?;
        self.take(n).map(drop)
    }

    fn str(&mut self) -> Option<&'a str> {
        let n = self.usize()?;
        std::str::from_utf8(self.take(n)?).ok()
    }

    /// A count of items each at least `min_bytes` long: never more than could fit,
    /// so that a damaged count cannot make a reader reserve memory for nothing
    /// (see also [`reserve`]).
    fn count(&mut self, min_bytes: usize) -> Option<usize> {
        let n = self.usize()?;
        (n.checked_mul(min_bytes)? <= self.bytes.len() - self.pos).then_some(n)
    }
}

/// Room reserved up front for `n` decoded items: decoded items are larger than
/// their bytes, so a count that fits the file could still ask for several times
/// its size; beyond this, vectors grow as items actually decode.
fn reserve<T>(n: usize) -> Vec<T> {
    Vec::with_capacity(n.min(1024))
}

/// A line's place in a record's line table: start, end, line number (u32 each).
pub(crate) const LINE_BYTES: usize = 12;

/// The line at the start of `bytes`, a line table entry, if it lies within a
/// text of `text_len` bytes.
pub(crate) fn read_line(bytes: &[u8], text_len: usize) -> Option<Line> {
    let mut r = Reader { bytes, pos: 0 };
    let (start, end, line_no) = (r.usize()?, r.usize()?, r.usize()?);
    (start <= end && end <= text_len).then_some(Line { bytes: start..end, line_no })
}

/// A version's flags byte: yanked, then whether it has a pre-release and build metadata
/// (stored after the version table, in the versions' order).
const YANKED: u8 = 1;
const HAS_PRE: u8 = 2;
const HAS_BUILD: u8 = 4;
pub(crate) const EXTRAS: u8 = HAS_PRE | HAS_BUILD;

/// How wide a record's numbers are stored in its version table: major, minor, patch and the
/// dependency list, each in the narrowest of 2, 4 or 8 bytes that holds all of the record's.
/// A version is then `4 * width + 1` bytes (the flags last): fixed within a record, so that
/// the resolver reads any one where it is (see [`crate::loaded::StoredRecord`]). Most
/// versions' numbers are small, and the table is most of what a warm resolution reads of the
/// file: with 8 bytes each, it read twice as much, nearly all of it zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VersionWidth(u8);

impl VersionWidth {
    /// A width as stored; `None` if it is not one.
    pub(crate) fn new(width: u8) -> Option<VersionWidth> {
        matches!(width, 2 | 4 | 8).then_some(VersionWidth(width))
    }

    /// The narrowest that holds `max`.
    fn holding(max: u64) -> VersionWidth {
        match max {
            0..=0xFFFF => VersionWidth(2),
            0x1_0000..=0xFFFF_FFFF => VersionWidth(4),
            _ => VersionWidth(8),
        }
    }

    /// The bytes of one version.
    pub(crate) fn entry_bytes(self) -> usize {
        4 * usize::from(self.0) + 1
    }

    fn put(self, out: &mut Vec<u8>, n: u64) {
        out.extend_from_slice(&n.to_le_bytes()[..usize::from(self.0)]);
    }
}

/// The version at `at` in `bytes`, a version table of `width` checked when its record was
/// decoded; `extras` gives its pre-release and build metadata, for a version whose flags say
/// it has them.
pub(crate) fn read_version(
    bytes: &[u8],
    at: usize,
    width: VersionWidth,
    extras: impl FnOnce() -> Option<(Prerelease, BuildMetadata)>,
) -> Candidate {
    let e = VersionEntry::of(&bytes[at..at + width.entry_bytes()], width);
    let (pre, build) = match e.flags & EXTRAS {
        0 => (Prerelease::EMPTY, BuildMetadata::EMPTY),
        // (Always found: the record was decoded with them.)
        _ => extras().unwrap_or((Prerelease::EMPTY, BuildMetadata::EMPTY)),
    };
    let (major, minor, patch) = e.numbers;
    // (The list was checked to be one of the record's, which are counted in a u32.)
    let deps = u32::try_from(e.list).unwrap_or(u32::MAX);
    Candidate { version: Version { major, minor, patch, pre, build }, yanked: e.flags & YANKED != 0, deps }
}

/// Whether the version at `at` in `bytes` (as [`read_version`]) is yanked.
pub(crate) fn read_yanked(bytes: &[u8], at: usize, width: VersionWidth) -> bool {
    bytes[at + width.entry_bytes() - 1] & YANKED != 0
}

/// The fields of one version table entry, as laid out in the crate documentation.
pub(crate) struct VersionEntry {
    /// Major, minor, patch.
    pub(crate) numbers: (u64, u64, u64),
    pub(crate) list: u64,
    pub(crate) flags: u8,
}

impl VersionEntry {
    /// The entry `e`, of `width` (a shorter one is a bug and panics, as a slice index past
    /// its end).
    #[inline]
    pub(crate) fn of(e: &[u8], width: VersionWidth) -> VersionEntry {
        // One read per width: a warm resolution checks every version of thousands of records.
        fn at<const W: usize>(e: &[u8]) -> VersionEntry {
            let number = |k: usize| {
                let mut n = [0; 8];
                n[..W].copy_from_slice(&e[k * W..(k + 1) * W]);
                u64::from_le_bytes(n)
            };
            VersionEntry { numbers: (number(0), number(1), number(2)), list: number(3), flags: e[4 * W] }
        }
        match width.0 {
            2 => at::<2>(e),
            4 => at::<4>(e),
            _ => at::<8>(e),
        }
    }
}

pub(crate) const DIRECTORY_ENTRY_MIN: usize = 4 + IndexFingerprint::BYTES + 16;

/// How far a lookup probes the directory's table before it gives up (a miss): the writer
/// makes the table large enough that no name is further from its slot, so a damaged table
/// costs a lookup this many reads at most.
const MAX_PROBES: usize = 32;

/// A cache file's directory: its records by package name, the names left in the file.
/// Opened by every command before its first package, so opening it reads nothing per
/// record: the file holds a hash table of its entries, which a lookup probes where it
/// lies (building a map of 10,000 entries was milliseconds, and 300 KB of fresh memory,
/// on the resolver's thread before any index could be read ahead).
pub(crate) struct Directory {
    /// Where the first entry is, and how many there are.
    first: usize,
    len: usize,
    /// Where the table is, and its slots (a power of two): each the offset of an entry
    /// (the first with its name's hash there, or further on), or 0 for none.
    table: usize,
    slots: usize,
    /// The file's own hash seed (see [`name_hash`]).
    seed: u64,
}

/// A name's hash in a file written with `seed`, chosen at random by each writer: package names
/// are chosen by whoever publishes them, and names made to share a hash would each be a miss
/// (past a slot's reach) and read from their index files, by every command.
fn name_hash(seed: u64, name: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one((seed, name))
}

/// The directory entry at the start of `r`: its name and record; `None` if it does not
/// fit `map_len` bytes.
fn read_entry<'a>(r: &mut Reader<'a>, map_len: usize) -> Option<(&'a [u8], Record)> {
    let n = r.usize()?;
    let name = r.take(n)?;
    let fingerprint = IndexFingerprint::from_bytes(r.take(IndexFingerprint::BYTES)?.try_into().ok()?)?;
    let mut part = || {
        let start = r.usize()?;
        let range = start..start.checked_add(r.usize()?)?;
        (range.end <= map_len).then_some(range)
    };
    let (hot, cold) = (part()?, part()?);
    Some((name, Record { fingerprint, hot, cold }))
}

impl Directory {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The record of `name` in `map` (the file the directory was read from).
    pub(crate) fn get(&self, map: &[u8], name: &str) -> Option<Record> {
        self.find(map, name).0
    }

    /// [`Directory::get`], and how many slots it read (at most [`MAX_PROBES`], whatever the table holds).
    fn find(&self, map: &[u8], name: &str) -> (Option<Record>, usize) {
        let mask = self.slots - 1;
        let mut slot = name_hash(self.seed, name.as_bytes()) as usize & mask;
        for probes in 1..=MAX_PROBES.min(self.slots) {
            let Some(at) = (Reader { bytes: map, pos: self.table + 4 * slot }).usize() else { return (None, probes) };
            if at == 0 {
                return (None, probes);
            }
            if let Some((stored, record)) = read_entry(&mut Reader { bytes: map, pos: at }, map.len())
                && stored == name.as_bytes()
            {
                return (Some(record), probes);
            }
            slot = (slot + 1) & mask;
        }
        (None, MAX_PROBES.min(self.slots))
    }

    /// Every record with its name, in file order.
    pub(crate) fn iter<'m>(&self, map: &'m [u8]) -> impl Iterator<Item = (&'m str, Record)> + 'm {
        let mut r = Reader { bytes: map, pos: self.first };
        (0..self.len).map_while(move |_| {
            let (name, record) = read_entry(&mut r, map.len())?;
            Some((std::str::from_utf8(name).ok()?, record))
        })
    }
}

/// The directory of a cache file: its header checked, nothing read per record (see
/// [`Directory`]; each entry is checked when it is looked up or listed).
pub(crate) fn read_directory(map: &[u8]) -> Option<Directory> {
    let mut r = Reader { bytes: map, pos: 0 };
    if r.take(MAGIC.len())? != MAGIC || r.str()? != STAMP {
        return None;
    }
    let len = r.count(DIRECTORY_ENTRY_MIN)?;
    // (At least twice the entries, as written: the count sizes what a command reserves.)
    let slots = r.count(4).filter(|s| s.is_power_of_two() && *s >= 2 * len)?;
    let seed = r.u64()?;
    let table = r.pos;
    r.take(4 * slots)?;
    Some(Directory { first: r.pos, len, table, slots, seed })
}

/// Where the entries whose names have `hashes` go in a [`Directory`]'s table: how many slots
/// it has (twice the entries or more, as few as keep every name within [`MAX_PROBES`] of its
/// own), and each entry's slot. Package names are chosen by whoever publishes them, and many
/// with the same hash cannot all be near it whatever the size: past 16 times the entries, an
/// entry that does not fit has no slot (its record is a miss, read from its index file).
fn directory_slots(hashes: &[u64]) -> (usize, Vec<Option<usize>>) {
    let least = (2 * hashes.len()).next_power_of_two().max(2);
    let mut slots = least;
    loop {
        let mask = slots - 1;
        let mut taken = vec![false; slots];
        let places: Vec<Option<usize>> = hashes
            .iter()
            .map(|&hash| {
                let start = hash as usize & mask;
                let slot = (0..MAX_PROBES).map(|k| (start + k) & mask).find(|&slot| !taken[slot])?;
                taken[slot] = true;
                Some(slot)
            })
            .collect();
        if places.iter().all(Option::is_some) || slots >= 16 * least {
            return (slots, places);
        }
        slots *= 2;
    }
}

/// What decoding a record's requirements needs to know of the command: the
/// registry the record is of, as requirements name it (`None`: the command's
/// default registry), and the default registry.
/// Also where records whose lists turn out damaged are noted, to be read from
/// their index files again and dropped from the cache file.
pub(crate) struct ListContext {
    own: Option<RegistryId>,
    default: RegistryId,
    pub(crate) damaged: std::sync::Mutex<Vec<Arc<str>>>,
    /// What was decoded so far, kept once.
    known: std::sync::Mutex<Known>,
}

#[derive(Default)]
struct Known {
    /// Each requirement, by its text: a registry's records repeat the same few
    /// requirements, and a warm resolution of ten thousand packages decodes some forty
    /// thousand of them (parsed and allocated one by one, a tenth of its fresh memory, and
    /// their parsing a tenth of a reading thread's work).
    reqs: HashMap<Box<str>, Req, rustc_hash::FxBuildHasher>,
    /// Each other registry a requirement names, by its URL: the cache's reader parses
    /// each once.
    registries: HashMap<Box<str>, RegistryId, rustc_hash::FxBuildHasher>,
}

impl ListContext {
    /// For records of registry `url` read by a command whose default registry is `default`.
    pub(crate) fn new(url: &RegistryId, default: &RegistryId) -> ListContext {
        let own = (url != default).then(|| url.clone());
        ListContext { own, default: default.clone(), damaged: Default::default(), known: Default::default() }
    }
}

/// The registry the URL `text` names, parsed the first time only (`known`: a [`ListContext`]'s);
/// `None` if it is not a registry URL.
fn interned_registry(
    known: &mut HashMap<Box<str>, RegistryId, rustc_hash::FxBuildHasher>,
    text: &str,
) -> Option<RegistryId> {
    if let Some(id) = known.get(text) {
        return Some(id.clone());
    }
    let id = RegistryId::parse_url(text).ok()?;
    known.insert(text.into(), id.clone());
    Some(id)
}

/// The requirement `text` states, parsed the first time only (`known`: a [`ListContext`]'s);
/// `None` if it does not parse.
fn interned_req(known: &mut HashMap<Box<str>, Req, rustc_hash::FxBuildHasher>, text: &str) -> Option<Req> {
    if let Some(req) = known.get(text) {
        return Some(req.clone());
    }
    let req = Req::parse(text).ok()?;
    known.insert(text.into(), req.clone());
    Some(req)
}

/// The loader's view of one record (`record`'s parts in `file`) of `package`
/// (normalized), its dependency lists left to be decoded when asked for
/// ([`decode_list`]), though checked to lie within the record.
pub(crate) fn decode(
    file: &Arc<Stored>,
    package: &Arc<str>,
    record: &Record,
    context: &Arc<ListContext>,
) -> Option<LoadedIndex> {
    let body = record.hot.clone();
    // A checksum ends the first part: a damaged byte in a version, a requirement or a pin
    // could otherwise read as another valid one.
    let (hot, crc) = file.bytes().get(body.clone())?.split_last_chunk::<4>()?;
    if crc32fast::hash(hot) != u32::from_le_bytes(*crc) {
        return None;
    }
    let mut r = Reader { bytes: hot, pos: 0 };
    let n_lists = r.count(4)?;
    let mut lists = reserve(n_lists);
    for _ in 0..n_lists {
        let start = r.pos;
        let n = r.count(9)?;
        for _ in 0..n {
            r.skip_str()?;
            if r.u8()? == 1 {
                r.skip_str()?;
            }
            r.skip_str()?;
        }
        let (at, len) = (u32::try_from(body.start + start).ok()?, u32::try_from(r.pos - start).ok()?);
        lists.push(StoredList { at, len, decoded: Default::default() });
    }
    let n_versions = r.count(VersionWidth(2).entry_bytes())?;
    let width = VersionWidth::new(r.u8()?)?;
    let table_start = r.pos;
    let table = r.take(n_versions.checked_mul(width.entry_bytes())?)?;
    let entries = || table.chunks_exact(width.entry_bytes());
    // (Counted first: most records have one or none, and a vector grown for one holds four.)
    let with_extras = entries().filter(|e| e[e.len() - 1] & EXTRAS != 0).count();
    let mut extras: Vec<(u32, Prerelease, BuildMetadata)> = Vec::with_capacity(with_extras);
    // Whether the versions strictly ascend, found in the same pass as the checks (the
    // order semver's own: numbers, then pre-release, then build metadata).
    let (mut ascending, mut last) = (true, None);
    let none = (0, Prerelease::EMPTY, BuildMetadata::EMPTY);
    for (k, e) in entries().enumerate() {
        let VersionEntry { numbers, flags, list } = VersionEntry::of(e, width);
        if flags & !(YANKED | EXTRAS) != 0 || list >= n_lists as u64 {
            return None;
        }
        let has_extras = flags & EXTRAS != 0;
        if has_extras {
            let pre = match flags & HAS_PRE {
                0 => Prerelease::EMPTY,
                _ => Prerelease::new(r.str()?).ok().filter(|p| !p.is_empty())?,
            };
            let build = match flags & HAS_BUILD {
                0 => BuildMetadata::EMPTY,
                _ => BuildMetadata::new(r.str()?).ok().filter(|b| !b.is_empty())?,
            };
            extras.push((u32::try_from(k).ok()?, pre, build));
        }
        if let Some((last_numbers, last_extras)) = last.filter(|_| ascending) {
            ascending = match (last_extras, has_extras) {
                (false, false) => last_numbers < numbers,
                _ => {
                    // This entry's extras are the last pushed; the one before's precede them.
                    let of = |back: usize| extras.len().checked_sub(back).and_then(|at| extras.get(at));
                    let this = has_extras.then(|| of(1)).flatten().unwrap_or(&none);
                    let before = last_extras.then(|| of(1 + usize::from(has_extras))).flatten().unwrap_or(&none);
                    (last_numbers, &before.1, &before.2) < (numbers, &this.1, &this.2)
                }
            };
        }
        last = Some((numbers, has_extras));
    }
    let mut stored = StoredRecord {
        file: Arc::clone(file),
        context: Arc::clone(context),
        package: Arc::clone(package),
        versions_at: u32::try_from(body.start + table_start).ok()?,
        n_versions: u32::try_from(n_versions).ok()?,
        width,
        ascending,
        extras: extras.into(),
        lists: lists.into(),
        pins_at: 0,
        n_pins: 0,
        cold_at: 0,
        origin_len: 0,
        text_len: 0,
        cold_crc: 0,
        intact: OnceLock::new(),
    };
    let n_pins = u32::try_from(r.count(4 + 4 + 4 + 32 + 1)?).ok()?;
    let pins_at = u32::try_from(body.start + r.pos).ok()?;
    let mut last_line = None;
    for _ in 0..n_pins {
        // A pin names its line, and says again which version and package it is of:
        // a damaged position or name is a miss, never another version's checksum.
        let pin = read_pin(&mut r)?;
        let k = pin.line;
        if k as usize >= n_versions || last_line.is_some_and(|last| last >= k) {
            return None;
        }
        if Version::parse(pin.version).ok()? != stored.version(k as usize).version {
            return None;
        }
        // (Its name checked, and the pin dropped: it is made again for the version locked.)
        pin.pin(package)?;
        // (As `PackageName::normalized`, without making the string: a warm resolution decodes a pin per package.)
        let normalized = pin.name.bytes().map(|b| if b == b'-' { b'_' } else { b.to_ascii_lowercase() });
        if !normalized.eq(package.bytes()) {
            return None;
        }
        last_line = Some(k);
    }
    // The second part is laid out from lengths kept in the first, and not read here: it
    // is read for the lines not pinned yet (each checked then) and for messages.
    let (origin_len, text_len, cold_crc) = (r.usize()?, r.usize()?, r.u32()?);
    if r.pos != r.bytes.len() {
        return None;
    }
    let cold = record.cold.clone();
    let text_start = cold.start.checked_add(origin_len)?.checked_add(n_versions.checked_mul(LINE_BYTES)?)?;
    if text_start.checked_add(text_len)? != cold.end {
        return None;
    }
    stored.pins_at = pins_at;
    stored.n_pins = n_pins;
    // (Where the record's places end fits in u32 too: each sum of them does.)
    u32::try_from(cold.end).ok()?;
    stored.cold_at = u32::try_from(cold.start).ok()?;
    stored.origin_len = u32::try_from(origin_len).ok()?;
    stored.text_len = u32::try_from(text_len).ok()?;
    stored.cold_crc = cold_crc;
    Some(LoadedIndex { learned: Default::default(), body: Body::Stored(stored) })
}

/// A stored pin, as laid out (see the crate documentation).
pub(crate) struct RawPin<'a> {
    pub(crate) line: u32,
    version: &'a str,
    name: &'a str,
    cksum: Sha256Digest,
    signed_by: Option<KeyId>,
}

impl RawPin<'_> {
    /// The pin; `None` if its name is not a package name. `package` is the record's (normalized)
    /// name, shared with the pin when it is spelled the same: a large resolution locks thousands.
    pub(crate) fn pin(&self, package: &Arc<str>) -> Option<EntryPin> {
        let name = match self.name == &**package {
            true => PackageName::from_shared(Arc::clone(package)),
            false => PackageName::new(self.name),
        };
        let name = name.ok()?;
        Some(EntryPin { name, cksum: self.cksum, signed_by: self.signed_by })
    }
}

fn read_pin<'a>(r: &mut Reader<'a>) -> Option<RawPin<'a>> {
    let (line, version, name) = (r.u32()?, r.str()?, r.str()?);
    let cksum = Sha256Digest(r.take(32)?.try_into().ok()?);
    let signed_by = match r.u8()? {
        0 => None,
        1 => Some(KeyId(r.take(32)?.try_into().ok()?)),
        _ => return None,
    };
    Some(RawPin { line, version, name, cksum, signed_by })
}

/// The `n` pins from `at` in `bytes` (a stored record's, each checked when it was decoded).
pub(crate) fn pins_at(bytes: &[u8], at: usize, n: u32) -> impl Iterator<Item = RawPin<'_>> {
    let mut r = Reader { bytes, pos: at };
    (0..n).map_while(move |_| read_pin(&mut r))
}

/// A stored dependency list (`bytes`, as [`decode`] found it); `None` if it does
/// not decode.
pub(crate) fn decode_list(bytes: &[u8], context: &ListContext) -> Option<Box<[Requirement]>> {
    let mut r = Reader { bytes, pos: 0 };
    let n = r.count(9)?;
    let mut deps = reserve(n);
    let mut known = crate::lock(&context.known);
    for _ in 0..n {
        let name = PackageName::new(r.str()?).ok()?;
        let registry = match r.u8()? {
            0 => context.own.clone(),
            1 => Some(interned_registry(&mut known.registries, r.str()?)?).filter(|u| *u != context.default),
            _ => return None,
        };
        let req = interned_req(&mut known.reqs, r.str()?)?;
        deps.push(Requirement { pkg: QualifiedName::in_registry(name, registry), req });
    }
    (r.pos == bytes.len()).then(|| deps.into())
}

/// Appends `s` with its length; `None` if it is too long for the layout.
fn put_str(out: &mut Vec<u8>, s: &[u8]) -> Option<()> {
    out.extend_from_slice(&u32::try_from(s.len()).ok()?.to_le_bytes());
    out.extend_from_slice(s);
    Some(())
}

fn put_u32(out: &mut Vec<u8>, n: usize) -> Option<()> {
    out.extend_from_slice(&u32::try_from(n).ok()?.to_le_bytes());
    Some(())
}

/// A record's two parts (see [`Record`]).
pub(crate) struct Encoded {
    pub(crate) hot: Vec<u8>,
    pub(crate) cold: Vec<u8>,
}

/// The record of `index`, read from registry `url` by a command whose default
/// registry is `default`; `None` if it cannot be stored faithfully.
pub(crate) fn encode(index: &LoadedIndex, url: &RegistryId, default: &RegistryId) -> Option<Encoded> {
    let text = index.text();
    let mut out = Vec::with_capacity(64 * index.len());
    put_u32(&mut out, index.n_lists())?;
    for k in 0..index.n_lists() {
        let deps = index.list(u32::try_from(k).ok()?).ok()?;
        put_u32(&mut out, deps.len())?;
        for d in deps {
            put_str(&mut out, d.pkg.name.as_str().as_bytes())?;
            let abs = d.pkg.registry.as_ref().unwrap_or(default);
            if abs == url {
                out.push(0);
            } else {
                out.push(1);
                put_str(&mut out, abs.as_str().as_bytes())?;
            }
            // Stored as text and parsed back: only if that gives the same requirement.
            if Req::parse(d.req.text()).ok()? != d.req {
                return None;
            }
            put_str(&mut out, d.req.text().as_bytes())?;
        }
    }
    let n_versions = index.len();
    if index.n_lines() != n_versions {
        return None;
    }
    put_u32(&mut out, n_versions)?;
    let candidates = (0..n_versions).map(|k| index.get(k));
    let numbers = |c: &Candidate| [c.version.major, c.version.minor, c.version.patch, u64::from(c.deps)];
    let width = VersionWidth::holding(candidates.clone().flat_map(|c| numbers(&c)).max().unwrap_or(0));
    out.push(width.0);
    for c in candidates.clone() {
        let v = &c.version;
        for n in numbers(&c) {
            width.put(&mut out, n);
        }
        let flags = [(c.yanked, YANKED), (!v.pre.is_empty(), HAS_PRE), (!v.build.is_empty(), HAS_BUILD)];
        out.push(flags.iter().filter(|(set, _)| *set).fold(0, |f, (_, bit)| f | bit));
    }
    for c in candidates {
        if !c.version.pre.is_empty() {
            put_str(&mut out, c.version.pre.as_str().as_bytes())?;
        }
        if !c.version.build.is_empty() {
            put_str(&mut out, c.version.build.as_str().as_bytes())?;
        }
    }
    let pins = index.all_pins();
    put_u32(&mut out, pins.len())?;
    for (k, pin) in &pins {
        out.extend_from_slice(&k.to_le_bytes());
        let k = usize::try_from(*k).ok().filter(|&k| k < n_versions)?;
        let version = index.get(k).version.to_string();
        put_str(&mut out, version.as_bytes())?;
        put_str(&mut out, pin.name.as_str().as_bytes())?;
        out.extend_from_slice(&pin.cksum.0);
        match &pin.signed_by {
            None => out.push(0),
            Some(key) => {
                out.push(1);
                out.extend_from_slice(&key.0);
            }
        }
    }
    // A stored record whose second part is damaged is not written back as if it were whole.
    if !index.second_part_intact() {
        return None;
    }
    let origin = index.origin_bytes();
    put_u32(&mut out, origin.len())?;
    put_u32(&mut out, text.len())?;
    let mut cold = Vec::with_capacity(origin.len() + LINE_BYTES * n_versions + text.len());
    cold.extend_from_slice(origin);
    for k in 0..n_versions {
        let line = index.line(k)?;
        put_u32(&mut cold, line.bytes.start)?;
        put_u32(&mut cold, line.bytes.end)?;
        put_u32(&mut cold, line.line_no)?;
    }
    cold.extend_from_slice(text);
    out.extend_from_slice(&crc32fast::hash(&cold).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_le_bytes());
    Some(Encoded { hot: out, cold })
}

/// One record as [`write_file`] writes it.
pub(crate) struct RecordBytes<'a> {
    pub(crate) name: &'a str,
    pub(crate) fingerprint: IndexFingerprint,
    pub(crate) hot: &'a [u8],
    pub(crate) cold: &'a [u8],
}

/// A whole cache file: header, directory, then the records' first parts in the same
/// order, then their second parts (see [`Record`]).
pub(crate) fn write_file(records: &[RecordBytes<'_>]) -> Vec<u8> {
    // Offsets are u32: the file is at most `MAX_FILE_BYTES` (1 GiB), which the command checks
    // before writing it (an offset that does not fit is written as one past any file: a miss).
    let offset = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let header = MAGIC.len() + 4 + STAMP.len() + 4 + 4 + 8;
    let seed = {
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(records.len())
    };
    let hashes: Vec<u64> = records.iter().map(|r| name_hash(seed, r.name.as_bytes())).collect();
    let (slots, places) = directory_slots(&hashes);
    let first = header + 4 * slots;
    let mut table = vec![0u32; slots];
    let mut at = first;
    for (r, &slot) in records.iter().zip(&places) {
        if let Some(slot) = slot {
            table[slot] = offset(at);
        }
        at += 4 + r.name.len() + IndexFingerprint::BYTES + 16;
    }
    let directory_len = at - first;
    let bodies: usize = records.iter().map(|r| r.hot.len() + r.cold.len()).sum();
    let mut bytes = Vec::with_capacity(first + directory_len + bodies);
    let out = &mut bytes;
    out.extend_from_slice(MAGIC);
    let mut hot = first + directory_len;
    let mut cold = hot + records.iter().map(|r| r.hot.len()).sum::<usize>();
    // Names are normalized package names and the stamp is short: these always fit.
    let _ = put_str(out, STAMP.as_bytes());
    let _ = put_u32(out, records.len());
    let _ = put_u32(out, table.len());
    out.extend_from_slice(&seed.to_le_bytes());
    for slot in &table {
        out.extend_from_slice(&slot.to_le_bytes());
    }
    for r in records {
        let _ = put_str(out, r.name.as_bytes());
        out.extend_from_slice(&r.fingerprint.to_bytes());
        for (at, part) in [(&mut hot, r.hot), (&mut cold, r.cold)] {
            out.extend_from_slice(&offset(*at).to_le_bytes());
            out.extend_from_slice(&offset(part.len()).to_le_bytes());
            *at += part.len();
        }
    }
    for r in records {
        out.extend_from_slice(r.hot);
    }
    for r in records {
        out.extend_from_slice(r.cold);
    }
    bytes
}

/// Makes the checksums of every record the directory of `bytes` names hold (see
/// [`crate::reseal`]).
pub(crate) fn reseal(bytes: &mut [u8]) {
    let Some(directory) = read_directory(bytes) else { return };
    let records: Vec<Record> = directory.iter(bytes).map(|(_, record)| record).collect();
    for record in records {
        let cold = bytes.get(record.cold.clone()).map(crc32fast::hash);
        let Some(hot) = bytes.get_mut(record.hot.clone()) else { continue };
        let Some((body, crc)) = hot.split_last_chunk_mut::<4>() else { continue };
        // The second part's checksum is the last field before the first part's own.
        if let (Some(cold), Some((_, cold_crc))) = (cold, body.split_last_chunk_mut::<4>()) {
            *cold_crc = cold.to_le_bytes();
        }
        *crc = crc32fast::hash(body).to_le_bytes();
    }
}

/// Every record of `bytes` that decodes (see [`crate::read_records`]).
pub(crate) fn read_records(bytes: Vec<u8>) -> Vec<LoadedIndex> {
    let Some(directory) = read_directory(&bytes) else { return Vec::new() };
    let Ok(url) = RegistryId::parse_url("file:///registry/") else { return Vec::new() };
    let context = Arc::new(ListContext::new(&url, &url));
    let records: Vec<(Arc<str>, Record)> = directory.iter(&bytes).map(|(name, r)| (Arc::from(name), r)).collect();
    // Each listed name looked up through the table too, and names no file holds: found or a
    // miss, in at most `MAX_PROBES` slots.
    for name in records.iter().map(|(name, _)| &**name).chain(["absent", "p00000", ""]) {
        assert!(directory.find(&bytes, name).1 <= MAX_PROBES);
    }
    let file = Arc::new(Stored::Owned(bytes));
    let indexes = records.into_iter().filter_map(|(name, record)| decode(&file, &name, &record, &context));
    indexes
        .inspect(|index| {
            let text = index.text();
            let n = index.len();
            assert_eq!(index.n_lines(), n);
            assert!((0..n).all(|k| (index.get(k).deps as usize) < index.n_lists()), "a list of no version");
            // Every list, decoded or found damaged.
            for k in 0..index.n_lists() {
                let _ = index.list(k as u32);
            }
            // A line is read only when used: one that does not lie within its text is none.
            for k in 0..index.n_lines() {
                if let Some(l) = index.line(k) {
                    assert!(l.bytes.start <= l.bytes.end && l.bytes.end <= text.len(), "a line outside its text");
                }
            }
            assert!(index.stored_pins().all(|(line, _)| (line as usize) < n), "a pin of no version");
            // Pins, stored or parsed from whatever text the record holds.
            for k in 0..n {
                let _ = index.pin(&index.get(k).version);
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_read_only_if_it_lies_within_its_text() {
        let entry = |start: u32, end: u32| [start.to_le_bytes(), end.to_le_bytes(), 7u32.to_le_bytes()].concat();
        assert_eq!(read_line(&entry(2, 10), 10), Some(Line { bytes: 2..10, line_no: 7 }));
        assert_eq!(read_line(&entry(2, 11), 10), None);
        assert_eq!(read_line(&entry(5, 4), 10), None);
        assert_eq!(read_line(&entry(0, 0)[..11], 10), None);
    }

    fn fingerprint(n: u64) -> IndexFingerprint {
        IndexFingerprint::File { dev: 1, ino: n, size: n, mtime_ns: 2, ctime_ns: 3 }
    }

    #[test]
    fn each_record_is_found_through_the_directory_s_table_and_a_damaged_table_is_a_miss_never_another() {
        let names: Vec<String> = (0..500).map(|k| format!("p{k:05}")).collect();
        let bodies: Vec<Vec<u8>> = (0..500u32).map(|k| k.to_le_bytes().to_vec()).collect();
        let records: Vec<RecordBytes<'_>> = (0..500)
            .map(|k| RecordBytes { name: &names[k], fingerprint: fingerprint(k as u64), hot: &bodies[k], cold: &[] })
            .collect();
        let bytes = write_file(&records);
        let directory = read_directory(&bytes).unwrap();
        assert_eq!(directory.len(), 500);
        assert!(directory.slots >= 1000 && directory.slots.is_power_of_two());
        for (k, name) in names.iter().enumerate() {
            let record = directory.get(&bytes, name).unwrap();
            assert_eq!(record.fingerprint, fingerprint(k as u64));
            assert_eq!(bytes[record.hot], bodies[k][..], "{name}");
        }
        assert!(directory.get(&bytes, "p00500").is_none());
        assert_eq!(directory.iter(&bytes).count(), 500);
        // Every slot naming the first entry: it is still found, no other name is.
        let first = u32::try_from(directory.first).unwrap().to_le_bytes();
        let mut damaged = bytes.clone();
        for slot in 0..directory.slots {
            damaged[directory.table + 4 * slot..][..4].copy_from_slice(&first);
        }
        assert!(directory.get(&damaged, "p00000").is_some());
        for name in &names[1..] {
            // Not found, after reading as many slots as a lookup may and no more.
            let (found, probes) = directory.find(&damaged, name);
            assert!(found.is_none() && probes == MAX_PROBES, "{name}: {probes} slots");
        }
        // Every slot past the end of the file: nothing is found.
        for slot in 0..directory.slots {
            damaged[directory.table + 4 * slot..][..4].copy_from_slice(&u32::MAX.to_le_bytes());
        }
        assert!(names.iter().all(|name| directory.get(&damaged, name).is_none()));
    }

    #[test]
    fn names_of_one_hash_are_placed_within_reach_of_it_or_left_out() {
        // Distinct hashes: all placed, each within reach of its own slot.
        let hashes: Vec<u64> = (0..1000u64).map(|k| name_hash(7, &k.to_le_bytes())).collect();
        let (slots, places) = directory_slots(&hashes);
        assert_eq!(slots, 2048);
        for (hash, place) in hashes.iter().zip(&places) {
            let distance = place.unwrap().wrapping_sub(*hash as usize) & (slots - 1);
            assert!(distance < MAX_PROBES);
        }
        // A hundred names of one hash (which a publisher could choose): the table stops growing,
        // and only the names within reach have a slot.
        let (slots, places) = directory_slots(&[7; 100]);
        assert_eq!(slots, 16 * 256);
        assert_eq!(places.iter().flatten().count(), MAX_PROBES);
    }
}
