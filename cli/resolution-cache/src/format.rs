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
pub(crate) const STAMP: &str = concat!("resolution cache 3, ebpkg ", env!("CARGO_PKG_VERSION"));

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
    /// so that a damaged count cannot make a reader reserve memory for nothing.
    fn count(&mut self, min_bytes: usize) -> Option<usize> {
        let n = self.usize()?;
        (n.checked_mul(min_bytes)? <= self.bytes.len() - self.pos).then_some(n)
    }
}

/// A line's place in a record's line table: start, end, line number (u32 each).
pub(crate) const LINE_BYTES: usize = 12;

/// The line at the start of `bytes`, a line table entry.
pub(crate) fn read_line(bytes: &[u8]) -> Option<Line> {
    let mut r = Reader { bytes, pos: 0 };
    let (start, end, line_no) = (r.usize()?, r.usize()?, r.usize()?);
    Some(Line { bytes: start..end, line_no })
}

pub(crate) const DIRECTORY_ENTRY_MIN: usize = 4 + IndexFingerprint::BYTES + 16;

pub(crate) fn read_directory(map: &[u8]) -> Option<HashMap<Arc<str>, Record>> {
    let mut r = Reader { bytes: map, pos: 0 };
    if r.take(MAGIC.len())? != MAGIC || r.str()? != STAMP {
        return None;
    }
    let n = r.count(DIRECTORY_ENTRY_MIN)?;
    let mut records = HashMap::with_capacity(n);
    for _ in 0..n {
        let name = r.str()?;
        let fingerprint = IndexFingerprint::from_bytes(r.take(IndexFingerprint::BYTES)?.try_into().ok()?);
        let start = usize::try_from(r.u64()?).ok()?;
        let len = usize::try_from(r.u64()?).ok()?;
        let body = start..start.checked_add(len)?;
        if body.end > map.len() {
            return None;
        }
        records.insert(name.into(), Record { fingerprint, body });
    }
    Some(records)
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
    let origin = r.str()?.to_owned();
    let n_lists = r.count(4)?;
    let mut lists = Vec::with_capacity(n_lists);
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
    let n_versions = r.count(3 * 8 + 4 + 4 + 1 + 4 + LINE_BYTES)?;
    let mut candidates = Vec::with_capacity(n_versions);
    for _ in 0..n_versions {
        let (major, minor, patch) = (r.u64()?, r.u64()?, r.u64()?);
        let pre = match r.str()? {
            "" => Prerelease::EMPTY,
            pre => Prerelease::new(pre).ok()?,
        };
        let build = match r.str()? {
            "" => BuildMetadata::EMPTY,
            build => BuildMetadata::new(build).ok()?,
        };
        let yanked = match r.u8()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        let deps = r.u32()?;
        if deps as usize >= n_lists {
            return None;
        }
        candidates.push(Candidate { version: Version { major, minor, patch, pre, build }, yanked, deps });
    }
    // The line table is checked whole here and read only for the lines locked.
    let line_table = body.start + r.pos;
    let mut lines_end = 0;
    for _ in 0..n_versions {
        let line = read_line(r.take(LINE_BYTES)?)?;
        if line.bytes.start > line.bytes.end {
            return None;
        }
        lines_end = lines_end.max(line.bytes.end);
    }
    let n_pins = r.count(4 + 4 + 4 + 32 + 1)?;
    let mut pins: Vec<(u32, EntryPin)> = Vec::with_capacity(n_pins);
    for _ in 0..n_pins {
        // A pin names its line, and says again which version and package it is of:
        // a damaged position or name is a miss, never another version's checksum.
        let k = r.u32()?;
        let candidate = candidates.get(usize::try_from(k).ok()?)?;
        if pins.last().is_some_and(|(last, _)| *last >= k) || Version::parse(r.str()?).ok()? != candidate.version {
            return None;
        }
        let name = PackageName::new(r.str()?).ok()?;
        if name.normalized() != **package {
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
    if r.pos != r.bytes.len() || lines_end > text_len {
        return None;
    }
    let text = IndexBytes::Stored(Arc::clone(file), text_start..text_start + text_len);
    Some(LoadedIndex {
        origin,
        text,
        lines: Lines::Stored { file: Arc::clone(file), start: line_table, len: n_versions },
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
    let mut deps = Vec::with_capacity(n);
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

fn put_u32(out: &mut Vec<u8>, n: usize) -> Option<()> {
    out.extend_from_slice(&u32::try_from(n).ok()?.to_le_bytes());
    Some(())
}

/// The record body of `index`, read from registry `url` by a command whose
/// default registry is `default`; `None` if it cannot be stored faithfully.
pub(crate) fn encode(index: &LoadedIndex, url: &RegistryUrl, default: &RegistryUrl) -> Option<Vec<u8>> {
    let text = index.text.as_slice();
    let mut out = Vec::with_capacity(text.len() + 64 * index.candidates.len());
    put_str(&mut out, index.origin.as_bytes())?;
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
        for n in [v.major, v.minor, v.patch] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        put_str(&mut out, v.pre.as_str().as_bytes())?;
        put_str(&mut out, v.build.as_str().as_bytes())?;
        out.push(u8::from(c.yanked));
        put_u32(&mut out, c.deps as usize)?;
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
    let Some(records) = read_directory(&bytes) else { return Vec::new() };
    let Ok(url) = RegistryUrl::parse("file:///registry/") else { return Vec::new() };
    let context = Arc::new(ListContext::new(&url, &url));
    let file = Arc::new(Stored::Owned(bytes));
    let indexes = records.into_iter().filter_map(|(name, r)| decode(&file, &name, r.body, &context));
    indexes
        .inspect(|index| {
            let text = index.text.as_slice();
            assert_eq!(index.lines.len(), index.candidates.len());
            assert!(index.candidates.iter().all(|c| (c.deps as usize) < index.lists.len()), "a list of no version");
            // Every list, decoded or found damaged.
            for k in 0..index.lists.len() {
                let _ = index.list(k as u32);
            }
            for k in 0..index.lines.len() {
                let within =
                    index.lines.get(k).is_some_and(|l| l.bytes.start <= l.bytes.end && l.bytes.end <= text.len());
                assert!(within, "a version without a line within its text");
            }
            assert!(index.pins.iter().all(|(k, _)| (*k as usize) < index.candidates.len()), "a pin of no version");
            // Pins, stored or parsed from whatever text the record holds.
            for c in index.candidates.iter() {
                let _ = index.pin(&c.version);
            }
        })
        .collect()
}
