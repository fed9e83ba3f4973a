//! The cache file's layout (see the crate documentation): reading it as untrusted
//! bytes, and writing it.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use ebpkg_resolver::{Candidate, DepLists, QualifiedName, Requirement};
use ebpkg_sources::{IndexFingerprint, RegistryUrl};
use ebpkg_spec::PackageName;
use ebpkg_spec::index::EntryPin;
use ebpkg_spec::types::{KeyId, Sha256Digest};
use semver::{BuildMetadata, Prerelease, Version, VersionReq};

use crate::loaded::{IndexBytes, Line, Lines, Lists, LoadedIndex, StoredList};

pub(crate) const MAGIC: &[u8; 8] = b"EBPKGRES";

/// Changes whenever the layout or what the loader makes of an index file does:
/// a file written by another ebpkg is ignored, never misread.
pub(crate) const STAMP: &str = concat!("resolution cache 4, ebpkg ", env!("CARGO_PKG_VERSION"));

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
#[derive(Clone)]
pub(crate) struct Record {
    pub(crate) fingerprint: IndexFingerprint,
    pub(crate) body: Range<usize>,
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

    /// An unsigned LEB128 number of at most 64 bits, in its shortest form.
    fn varint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            let bits = u64::from(b & 0x7f);
            // Past bit 63, or a last byte of zeros (another spelling of a shorter number).
            if (shift == 63 && bits > 1) || (shift > 0 && b == 0) {
                return None;
            }
            n |= bits << shift;
            if b & 0x80 == 0 {
                return Some(n);
            }
        }
        None
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

/// A version's flags byte: yanked, then whether a pre-release and build metadata follow.
const YANKED: u8 = 1;
const HAS_PRE: u8 = 2;
const HAS_BUILD: u8 = 4;

/// The fewest bytes a version takes: flags, three numbers and a list, one byte each.
const VERSION_MIN: usize = 5;

pub(crate) const DIRECTORY_ENTRY_MIN: usize = 4 + IndexFingerprint::BYTES + 16;

/// A cache file's directory: its records by package name, the names left in the
/// file. Read on every command before the first package, so nothing is copied
/// or allocated per record (10,000 names, each its own allocation in a map of
/// strings, were milliseconds before the resolution could start).
pub(crate) struct Directory {
    /// Where the first entry is, and how many there are.
    first: usize,
    len: usize,
    /// The FxHash of each name → where its entry is (the first, if names collide or
    /// repeat: another record is then never found, only read from its index file).
    by_hash: HashMap<u64, usize, rustc_hash::FxBuildHasher>,
}

fn name_hash(name: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(name)
}

/// The directory entry at the start of `r`: its name and record; `None` if it does
/// not fit `map_len` bytes.
fn read_entry<'a>(r: &mut Reader<'a>, map_len: usize) -> Option<(&'a [u8], Record)> {
    let n = r.usize()?;
    let name = r.take(n)?;
    let fingerprint = IndexFingerprint::from_bytes(r.take(IndexFingerprint::BYTES)?.try_into().ok()?);
    let start = usize::try_from(r.u64()?).ok()?;
    let len = usize::try_from(r.u64()?).ok()?;
    let body = start..start.checked_add(len)?;
    (body.end <= map_len).then_some((name, Record { fingerprint, body }))
}

impl Directory {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The record of `name` in `map` (the file the directory was read from).
    pub(crate) fn get(&self, map: &[u8], name: &str) -> Option<Record> {
        let &at = self.by_hash.get(&name_hash(name.as_bytes()))?;
        let (stored, record) = read_entry(&mut Reader { bytes: map, pos: at }, map.len())?;
        (stored == name.as_bytes()).then_some(record)
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

/// The directory of a cache file, every entry checked (names UTF-8, bodies within the
/// file) but only their places kept: it is read before the first package of every
/// command, and a command looks up only the packages it resolves.
pub(crate) fn read_directory(map: &[u8]) -> Option<Directory> {
    let mut r = Reader { bytes: map, pos: 0 };
    if r.take(MAGIC.len())? != MAGIC || r.str()? != STAMP {
        return None;
    }
    let len = r.count(DIRECTORY_ENTRY_MIN)?;
    let first = r.pos;
    let mut by_hash = HashMap::with_capacity_and_hasher(len, rustc_hash::FxBuildHasher);
    for _ in 0..len {
        let at = r.pos;
        let (name, _) = read_entry(&mut r, map.len())?;
        std::str::from_utf8(name).ok()?;
        by_hash.entry(name_hash(name)).or_insert(at);
    }
    Some(Directory { first, len, by_hash })
}

/// What decoding a record's requirements needs to know of the command: the
/// registry the record is of, as requirements name it (`None`: the command's
/// default registry), and the default registry.
/// Also where records whose lists turn out damaged are noted, to be read from
/// their index files again and dropped from the cache file.
pub(crate) struct ListContext {
    own: Option<String>,
    default: String,
    pub(crate) damaged: std::sync::Mutex<Vec<Arc<str>>>,
}

impl ListContext {
    /// For records of registry `url` read by a command whose default registry is `default`.
    pub(crate) fn new(url: &RegistryUrl, default: &RegistryUrl) -> ListContext {
        let own = (url != default).then(|| url.to_string());
        ListContext { own, default: default.to_string(), damaged: Default::default() }
    }
}

/// The loader's view of one record (`body`, a range of `file`) of `package`
/// (normalized), its dependency lists left to be decoded when asked for
/// ([`decode_list`]), though checked to lie within the record.
pub(crate) fn decode(
    file: &Arc<Stored>,
    package: &Arc<str>,
    body: Range<usize>,
    context: &Arc<ListContext>,
) -> Option<LoadedIndex> {
    let mut r = Reader { bytes: file.bytes().get(body.clone())?, pos: 0 };
    let origin_start = body.start + r.pos + 4;
    let origin = origin_start..origin_start + r.str()?.len();
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
        lists.push(StoredList { bytes: body.start + start..body.start + r.pos, decoded: Default::default() });
    }
    let n_versions = r.count(VERSION_MIN + LINE_BYTES)?;
    let mut candidates = reserve(n_versions);
    for _ in 0..n_versions {
        let flags = r.u8()?;
        if flags & !(YANKED | HAS_PRE | HAS_BUILD) != 0 {
            return None;
        }
        let (major, minor, patch) = (r.varint()?, r.varint()?, r.varint()?);
        let pre = match flags & HAS_PRE {
            0 => Prerelease::EMPTY,
            _ => Prerelease::new(r.str()?).ok().filter(|p| !p.is_empty())?,
        };
        let build = match flags & HAS_BUILD {
            0 => BuildMetadata::EMPTY,
            _ => BuildMetadata::new(r.str()?).ok().filter(|b| !b.is_empty())?,
        };
        let deps = u32::try_from(r.varint()?).ok()?;
        if deps as usize >= n_lists {
            return None;
        }
        let version = Version { major, minor, patch, pre, build };
        candidates.push(Candidate { version, yanked: flags & YANKED != 0, deps });
    }
    // The line table is read only for the lines locked, each checked then.
    let line_table = body.start + r.pos;
    r.take(n_versions.checked_mul(LINE_BYTES)?)?;
    let n_pins = r.count(4 + 4 + 4 + 32 + 1)?;
    let mut pins: Vec<(u32, EntryPin)> = reserve(n_pins);
    for _ in 0..n_pins {
        // A pin names its line, and says again which version and package it is of:
        // a damaged position or name is a miss, never another version's checksum.
        let k = r.u32()?;
        let candidate = candidates.get(usize::try_from(k).ok()?)?;
        if pins.last().is_some_and(|(last, _)| *last >= k) || Version::parse(r.str()?).ok()? != candidate.version {
            return None;
        }
        let name = PackageName::new(r.str()?).ok()?;
        // (As `PackageName::normalized`, without making the string: a warm resolution decodes a pin per package.)
        let normalized = name.as_str().bytes().map(|b| if b == b'-' { b'_' } else { b.to_ascii_lowercase() });
        if !normalized.eq(package.bytes()) {
            return None;
        }
        let cksum = Sha256Digest(r.take(32)?.try_into().ok()?);
        let signed_by = match r.u8()? {
            0 => None,
            1 => Some(KeyId(r.take(32)?.try_into().ok()?)),
            _ => return None,
        };
        pins.push((k, EntryPin { name, cksum, signed_by }));
    }
    let text_len = r.usize()?;
    let text_start = body.start + r.pos;
    r.take(text_len)?;
    if r.pos != r.bytes.len() {
        return None;
    }
    let text = IndexBytes::Stored(Arc::clone(file), text_start..text_start + text_len);
    Some(LoadedIndex {
        origin: IndexBytes::Stored(Arc::clone(file), origin),
        text,
        lines: Lines::Stored { file: Arc::clone(file), start: line_table, len: n_versions, text_len },
        ascending: ebpkg_resolver::Versions::is_ascending(&candidates),
        candidates: candidates.into(),
        lists: Lists::Stored {
            file: Arc::clone(file),
            lists: lists.into(),
            context: Arc::clone(context),
            package: Arc::clone(package),
        },
        problems: Vec::new(),
        pins,
        learned: Default::default(),
    })
}

/// A stored dependency list (`bytes`, as [`decode`] found it); `None` if it does
/// not decode.
pub(crate) fn decode_list(bytes: &[u8], context: &ListContext) -> Option<Box<[Requirement]>> {
    let mut r = Reader { bytes, pos: 0 };
    let n = r.count(9)?;
    let mut deps = reserve(n);
    for _ in 0..n {
        let name = PackageName::new(r.str()?).ok()?;
        let registry = match r.u8()? {
            0 => context.own.clone(),
            1 => Some(r.str()?).filter(|u| *u != context.default).map(str::to_owned),
            _ => return None,
        };
        let req_text = r.str()?;
        let req = VersionReq::parse(req_text).ok()?;
        deps.push(Requirement { pkg: QualifiedName::in_registry(name, registry), req, req_text: req_text.to_owned() });
    }
    (r.pos == bytes.len()).then(|| deps.into())
}

/// Appends `s` with its length; `None` if it is too long for the layout.
fn put_str(out: &mut Vec<u8>, s: &[u8]) -> Option<()> {
    out.extend_from_slice(&u32::try_from(s.len()).ok()?.to_le_bytes());
    out.extend_from_slice(s);
    Some(())
}

/// Appends `n` as unsigned LEB128: versions' numbers are nearly all below 128.
fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_u32(out: &mut Vec<u8>, n: usize) -> Option<()> {
    out.extend_from_slice(&u32::try_from(n).ok()?.to_le_bytes());
    Some(())
}

/// The record body of `index`, read from registry `url` by a command whose
/// default registry is `default`; `None` if it cannot be stored faithfully.
pub(crate) fn encode(index: &LoadedIndex, url: &RegistryUrl, default: &RegistryUrl) -> Option<Vec<u8>> {
    let text = index.text.as_slice();
    let mut out = Vec::with_capacity(text.len() + 64 * index.candidates.len());
    put_str(&mut out, index.origin().as_bytes())?;
    put_u32(&mut out, index.lists.len())?;
    for k in 0..index.lists.len() {
        let deps = index.list(u32::try_from(k).ok()?).ok()?;
        put_u32(&mut out, deps.len())?;
        for d in deps {
            put_str(&mut out, d.pkg.name.as_str().as_bytes())?;
            let abs = d.pkg.registry.as_deref().unwrap_or(default.as_str());
            if abs == url.as_str() {
                out.push(0);
            } else {
                out.push(1);
                put_str(&mut out, abs.as_bytes())?;
            }
            // Stored as text and parsed back: only if that gives the same requirement.
            if VersionReq::parse(&d.req_text).ok()? != d.req {
                return None;
            }
            put_str(&mut out, d.req_text.as_bytes())?;
        }
    }
    if index.lines.len() != index.candidates.len() {
        return None;
    }
    put_u32(&mut out, index.candidates.len())?;
    for c in index.candidates.iter() {
        let v = &c.version;
        let flags = [(c.yanked, YANKED), (!v.pre.is_empty(), HAS_PRE), (!v.build.is_empty(), HAS_BUILD)];
        out.push(flags.iter().filter(|(set, _)| *set).fold(0, |f, (_, bit)| f | bit));
        for n in [v.major, v.minor, v.patch] {
            put_varint(&mut out, n);
        }
        if !v.pre.is_empty() {
            put_str(&mut out, v.pre.as_str().as_bytes())?;
        }
        if !v.build.is_empty() {
            put_str(&mut out, v.build.as_str().as_bytes())?;
        }
        put_varint(&mut out, u64::from(c.deps));
    }
    for k in 0..index.candidates.len() {
        let line = index.lines.get(k)?;
        put_u32(&mut out, line.bytes.start)?;
        put_u32(&mut out, line.bytes.end)?;
        put_u32(&mut out, line.line_no)?;
    }
    let pins = index.all_pins();
    put_u32(&mut out, pins.len())?;
    for (k, pin) in &pins {
        out.extend_from_slice(&k.to_le_bytes());
        let version = index.candidates.get(usize::try_from(*k).ok()?)?.version.to_string();
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
    put_str(&mut out, text)?;
    Some(out)
}

/// A whole cache file: header, directory, then the bodies in the same order.
pub(crate) fn write_file(records: &[(&str, IndexFingerprint, &[u8])]) -> Vec<u8> {
    let bodies: usize = records.iter().map(|r| r.2.len()).sum();
    let mut bytes = Vec::with_capacity(bodies + records.len() * (DIRECTORY_ENTRY_MIN + 16) + 64);
    let out = &mut bytes;
    out.extend_from_slice(MAGIC);
    let directory_len: usize =
        records.iter().map(|(name, _, _)| name.len()).sum::<usize>() + records.len() * DIRECTORY_ENTRY_MIN;
    let header = MAGIC.len() + 4 + STAMP.len() + 4;
    let mut offset = (header + directory_len) as u64;
    // Names are normalized package names and the stamp is short: these always fit.
    let _ = put_str(out, STAMP.as_bytes());
    let _ = put_u32(out, records.len());
    for (name, fingerprint, body) in records {
        let _ = put_str(out, name.as_bytes());
        out.extend_from_slice(&fingerprint.to_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        offset += body.len() as u64;
    }
    for (_, _, body) in records {
        out.extend_from_slice(body);
    }
    bytes
}

/// Every record of `bytes` that decodes (see [`crate::read_records`]).
pub(crate) fn read_records(bytes: Vec<u8>) -> Vec<LoadedIndex> {
    let Some(directory) = read_directory(&bytes) else { return Vec::new() };
    let Ok(url) = RegistryUrl::parse("file:///registry/") else { return Vec::new() };
    let context = Arc::new(ListContext::new(&url, &url));
    let records: Vec<(Arc<str>, Range<usize>)> =
        directory.iter(&bytes).map(|(name, r)| (Arc::from(name), r.body)).collect();
    let file = Arc::new(Stored::Owned(bytes));
    let indexes = records.into_iter().filter_map(|(name, body)| decode(&file, &name, body, &context));
    indexes
        .inspect(|index| {
            let text = index.text.as_slice();
            assert_eq!(index.lines.len(), index.candidates.len());
            assert!(index.candidates.iter().all(|c| (c.deps as usize) < index.lists.len()), "a list of no version");
            // Every list, decoded or found damaged.
            for k in 0..index.lists.len() {
                let _ = index.list(k as u32);
            }
            // A line is read only when used: one that does not lie within its text is none.
            for k in 0..index.lines.len() {
                if let Some(l) = index.lines.get(k) {
                    assert!(l.bytes.start <= l.bytes.end && l.bytes.end <= text.len(), "a line outside its text");
                }
            }
            assert!(index.pins.iter().all(|(k, _)| (*k as usize) < index.candidates.len()), "a pin of no version");
            // Pins, stored or parsed from whatever text the record holds.
            for c in index.candidates.iter() {
                let _ = index.pin(&c.version);
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_back_as_written_and_only_their_shortest_form_is_read() {
        for n in [0, 1, 127, 128, 300, 16_383, 16_384, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, n);
            let mut r = Reader { bytes: &out, pos: 0 };
            assert_eq!(r.varint(), Some(n), "{n}");
            assert_eq!(r.pos, out.len());
        }
        let read = |bytes: &[u8]| Reader { bytes, pos: 0 }.varint();
        // 0 and 1 spelled with a needless zero byte.
        assert_eq!(read(&[0x80, 0x00]), None);
        assert_eq!(read(&[0x81, 0x00]), None);
        // Past 64 bits, by a bit or by a byte; and cut short.
        assert_eq!(read(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]), None);
        assert_eq!(read(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00]), None);
        assert_eq!(read(&[0x80]), None);
    }

    #[test]
    fn a_line_is_read_only_if_it_lies_within_its_text() {
        let entry = |start: u32, end: u32| [start.to_le_bytes(), end.to_le_bytes(), 7u32.to_le_bytes()].concat();
        assert_eq!(read_line(&entry(2, 10), 10), Some(Line { bytes: 2..10, line_no: 7 }));
        assert_eq!(read_line(&entry(2, 11), 10), None);
        assert_eq!(read_line(&entry(5, 4), 10), None);
        assert_eq!(read_line(&entry(0, 0)[..11], 10), None);
    }
}
