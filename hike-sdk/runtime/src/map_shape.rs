//! What a package's map is, as far as keeping its contents across versions goes:
//! its kind, sizes and flags, and the layout of its key and value types read
//! from BTF. The same description is made of a map a new object declares (read
//! from the ELF file, nothing loaded) and of a map a registered version has
//! pinned (read from the kernel, with the BTF the kernel keeps for it), so an
//! upgrade can tell whether the new programs may use the running map as it is.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::Path;

use libbpf_rs::btf::types::{Array, Composite, Enum, Enum64, Float, Int, IntEncoding, MemberAttr};
use libbpf_rs::btf::{Btf, BtfKind, BtfType, HasSize, TypeId};
use libbpf_rs::{AsRawLibbpf, MapHandle, MapInfo, ObjectBuilder};
use serde::Serialize;

use crate::error::{KernelContext, Result, RuntimeError};
use crate::load::is_package_map;

/// How deep a type description goes (structs in arrays in structs...): far more
/// than any map's key or value, and a bound on hostile BTF.
const MAX_DEPTH: usize = 16;

/// A map's kind, sizes, flags and key/value layouts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MapShape {
    /// The kernel's map type (`BPF_MAP_TYPE_*`).
    pub map_type: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub flags: u32,
    /// From BTF; `None` when the map declares sizes only (`__uint(key_size, 4)`).
    pub key: Option<TypeLayout>,
    pub value: Option<TypeLayout>,
}

/// A type as memory sees it: names of typedefs and of the types themselves left
/// out (renaming a struct changes nothing stored), field names and offsets kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TypeLayout {
    Int {
        bytes: u32,
        signed: bool,
    },
    Float {
        bytes: u32,
    },
    Enum {
        bytes: u32,
    },
    Pointer,
    Array {
        of: Box<TypeLayout>,
        len: u32,
    },
    Struct {
        bytes: u32,
        fields: Vec<FieldLayout>,
    },
    Union {
        bytes: u32,
        fields: Vec<FieldLayout>,
    },
    /// Anything else, by its BTF kind (or a description cut at `MAX_DEPTH`).
    Other {
        what: String,
    },
}

/// A field of a struct or union.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldLayout {
    pub name: String,
    pub offset_bits: u32,
    /// Set for bitfields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bits: Option<u8>,
    pub ty: TypeLayout,
}

impl fmt::Display for TypeLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeLayout::Int { bytes, signed } => write!(f, "{}{}", if *signed { "s" } else { "u" }, bytes * 8),
            TypeLayout::Float { bytes } => write!(f, "f{}", bytes * 8),
            TypeLayout::Enum { bytes } => write!(f, "enum{}", bytes * 8),
            TypeLayout::Pointer => f.write_str("pointer"),
            TypeLayout::Array { of, len } => write!(f, "{of}[{len}]"),
            TypeLayout::Struct { fields, .. } | TypeLayout::Union { fields, .. } => {
                f.write_str(if matches!(self, TypeLayout::Struct { .. }) { "{ " } else { "union { " })?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {} @{}", field.name, field.ty, field.offset_bits / 8)?;
                    if let Some(bits) = field.bits {
                        write!(f, ":{bits}")?;
                    }
                }
                f.write_str(" }")
            }
            TypeLayout::Other { what } => f.write_str(what),
        }
    }
}

impl TypeLayout {
    /// `new` is this struct with fields added after its last one (what zero-filling
    /// the added bytes migrates).
    pub fn is_extended_by(&self, new: &TypeLayout) -> bool {
        match (self, new) {
            (TypeLayout::Struct { bytes: old_bytes, fields: old }, TypeLayout::Struct { bytes, fields }) => {
                bytes > old_bytes && fields.len() > old.len() && fields[..old.len()] == old[..]
            }
            _ => false,
        }
    }
}

/// The shapes of the package maps an object declares (the VM's `hike_*` maps and
/// the object's own `.data`/`.bss`/`.rodata` left out), by name. Reads the ELF
/// file only.
pub fn object_map_shapes(object_name: &str, elf: &[u8]) -> Result<BTreeMap<String, MapShape>> {
    let bad = |reason: String| RuntimeError::BadObject { name: object_name.to_owned(), reason };
    let mut builder = ObjectBuilder::default();
    builder.name(object_name).kernel(|| format!("open {object_name}"))?;
    let open = builder.open_memory(elf).map_err(|e| bad(format!("libbpf cannot read it: {e}")))?;
    // SAFETY: the pointer is valid while `open` lives, which outlives `btf`.
    let btf = Btf::from_bpf_object(unsafe { open.as_libbpf_object().as_ref() })
        .map_err(|e| bad(format!("its BTF cannot be read: {e}")))?;
    let mut out = BTreeMap::new();
    for map in open.maps() {
        let name = map.name().to_string_lossy().into_owned();
        if !is_package_map(&name) {
            continue;
        }
        let raw = map.as_libbpf_object().as_ptr();
        // SAFETY: `raw` is a map of `open`, alive here.
        let (key_id, value_id) = unsafe {
            (
                libbpf_rs::libbpf_sys::bpf_map__btf_key_type_id(raw),
                libbpf_rs::libbpf_sys::bpf_map__btf_value_type_id(raw),
            )
        };
        out.insert(
            name,
            MapShape {
                map_type: map.map_type() as u32,
                key_size: map.key_size(),
                value_size: map.value_size(),
                max_entries: map.max_entries(),
                flags: map.map_flags(),
                key: btf.as_ref().and_then(|b| layout_of(b, key_id)),
                value: btf.as_ref().and_then(|b| layout_of(b, value_id)),
            },
        );
    }
    Ok(out)
}

/// The shape of a pinned map, read from the kernel (its BTF included, when the
/// map was created with one).
pub fn pinned_map_shape(path: &Path) -> Result<MapShape> {
    let handle = MapHandle::from_pinned_path(path).kernel(|| format!("open {}", path.display()))?;
    let info = MapInfo::new(handle.as_fd()).kernel(|| format!("read the definition of {}", path.display()))?.info;
    let btf = if info.btf_id == 0 { None } else { kernel_btf(info.btf_id) };
    Ok(MapShape {
        map_type: info.type_,
        key_size: info.key_size,
        value_size: info.value_size,
        max_entries: info.max_entries,
        flags: info.map_flags,
        key: btf.as_ref().and_then(|b| layout_of(b, info.btf_key_type_id)),
        value: btf.as_ref().and_then(|b| layout_of(b, info.btf_value_type_id)),
    })
}

/// The BTF object the kernel holds under `id`. libbpf-rs opens BTF from a file
/// or an object only: the raw bytes go through a memory file.
fn kernel_btf(id: u32) -> Option<Btf<'static>> {
    use libbpf_rs::libbpf_sys;
    // SAFETY: libbpf returns an owned BTF object or an error pointer, checked here
    // and freed below; the raw data it hands out lives as long as that object.
    let raw = unsafe {
        let btf = libbpf_sys::btf__load_from_kernel_by_id(id);
        if btf.is_null() || libbpf_sys::libbpf_get_error(btf.cast()) != 0 {
            tracing::debug!(id, "cannot read BTF object from the kernel");
            return None;
        }
        let mut size = 0u32;
        let data = libbpf_sys::btf__raw_data(btf, &mut size);
        let bytes = if data.is_null() {
            None
        } else {
            Some(std::slice::from_raw_parts(data.cast::<u8>(), size as usize).to_vec())
        };
        libbpf_sys::btf__free(btf);
        bytes?
    };
    let fd = rustix::fs::memfd_create("hike-btf", rustix::fs::MemfdFlags::CLOEXEC).ok()?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&raw).ok()?;
    Btf::from_path(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&file))).ok()
}

fn layout_of(btf: &Btf<'_>, id: u32) -> Option<TypeLayout> {
    if id == 0 {
        return None;
    }
    let ty = btf.type_by_id::<BtfType<'_>>(TypeId::from(id))?;
    Some(describe(btf, ty, 0))
}

fn bytes(size: usize) -> u32 {
    u32::try_from(size).unwrap_or(u32::MAX)
}

fn describe(btf: &Btf<'_>, ty: BtfType<'_>, depth: usize) -> TypeLayout {
    if depth > MAX_DEPTH {
        return TypeLayout::Other { what: "(nested too deep)".into() };
    }
    let ty = ty.skip_mods_and_typedefs();
    match ty.kind() {
        BtfKind::Int => match Int::try_from(ty) {
            Ok(int) => TypeLayout::Int {
                bytes: u32::from(int.bits).div_ceil(8),
                signed: matches!(int.encoding, IntEncoding::Signed),
            },
            Err(_) => TypeLayout::Other { what: "int".into() },
        },
        BtfKind::Float => Float::try_from(ty)
            .map_or(TypeLayout::Other { what: "float".into() }, |f| TypeLayout::Float { bytes: bytes(f.size()) }),
        BtfKind::Enum => Enum::try_from(ty)
            .map_or(TypeLayout::Other { what: "enum".into() }, |e| TypeLayout::Enum { bytes: bytes(e.size()) }),
        BtfKind::Enum64 => Enum64::try_from(ty)
            .map_or(TypeLayout::Other { what: "enum".into() }, |e| TypeLayout::Enum { bytes: bytes(e.size()) }),
        BtfKind::Ptr => TypeLayout::Pointer,
        BtfKind::Array => match Array::try_from(ty) {
            Ok(array) => TypeLayout::Array {
                of: Box::new(describe(btf, array.contained_type(), depth + 1)),
                len: u32::try_from(array.capacity()).unwrap_or(u32::MAX),
            },
            Err(_) => TypeLayout::Other { what: "array".into() },
        },
        BtfKind::Struct | BtfKind::Union => match Composite::try_from(ty) {
            Ok(c) => {
                let fields = c
                    .iter()
                    .map(|m| {
                        let (offset_bits, bits) = match m.attr {
                            MemberAttr::Normal { offset } => (offset, None),
                            MemberAttr::BitField { size, offset } => (offset, Some(size)),
                        };
                        FieldLayout {
                            name: m.name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                            offset_bits,
                            bits,
                            ty: btf
                                .type_by_id::<BtfType<'_>>(m.ty)
                                .map_or(TypeLayout::Other { what: "unknown".into() }, |t| describe(btf, t, depth + 1)),
                        }
                    })
                    .collect();
                let bytes = bytes(c.size());
                if c.is_struct { TypeLayout::Struct { bytes, fields } } else { TypeLayout::Union { bytes, fields } }
            }
            Err(_) => TypeLayout::Other { what: "composite".into() },
        },
        other => TypeLayout::Other { what: format!("{other:?}").to_lowercase() },
    }
}
