//! The names of the variables of one data section as an object's `.BTF`
//! describes it: what libbpf makes the maps of `.maps` from
//! (`bpf_object__init_user_btf_map` names each map after its BTF variable, not
//! after its ELF symbol).
//!
//! A minimal reader of the BTF format (the kernel's
//! `Documentation/bpf/btf.rst`): the header, the type section (walked only to
//! know where each type starts, its kind and its name) and the string section.
//! It reads untrusted bytes: every offset and length is checked against the
//! section it points into, sizes are computed with checked arithmetic, and
//! anything malformed or of an unknown kind is an error, never a panic.

use std::collections::BTreeSet;

const MAGIC: u16 = 0xeb9f;
/// `struct btf_header` up to `str_len`: the least `hdr_len` can be.
const HEADER_LEN: usize = 24;
/// `struct btf_type`: name offset, info, size or type.
const TYPE_LEN: usize = 12;
/// `struct btf_var_secinfo`: type, offset, size.
const SECINFO_LEN: usize = 12;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;

/// The byte order the magic number says the section is in.
#[derive(Clone, Copy)]
enum Order {
    Little,
    Big,
}

impl Order {
    fn u32_at(self, bytes: &[u8], at: usize) -> Result<u32, String> {
        let end = at.checked_add(4).ok_or("an offset overflows")?;
        let b: [u8; 4] = bytes
            .get(at..end)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| format!("ends at byte {} inside a field at {at}", bytes.len()))?;
        Ok(match self {
            Order::Little => u32::from_le_bytes(b),
            Order::Big => u32::from_be_bytes(b),
        })
    }
}

/// One type of the type section: what this reader needs of it.
struct Type {
    kind: u32,
    name_off: u32,
    /// Where its kind-specific data (after `struct btf_type`) starts, in the
    /// type section.
    extra: usize,
    vlen: usize,
}

/// The names of the variables of the `DATASEC` named `section` in the `.BTF`
/// section `btf`, or `None` when it has no such `DATASEC`. An error says what is
/// malformed.
pub(crate) fn datasec_var_names(btf: &[u8], section: &str) -> Result<Option<BTreeSet<String>>, String> {
    let order = match btf.get(..2) {
        Some(m) if u16::from_le_bytes([m[0], m[1]]) == MAGIC => Order::Little,
        Some(m) if u16::from_be_bytes([m[0], m[1]]) == MAGIC => Order::Big,
        _ => return Err("its BTF does not start with the BTF magic number".into()),
    };
    let hdr_len = order.u32_at(btf, 4)? as usize;
    if hdr_len < HEADER_LEN || hdr_len > btf.len() {
        return Err(format!("its BTF header claims {hdr_len} bytes"));
    }
    let part = |off_at: usize, what: &str| -> Result<&[u8], String> {
        let off = order.u32_at(btf, off_at)? as usize;
        let len = order.u32_at(btf, off_at + 4)? as usize;
        let start = hdr_len.checked_add(off);
        let end = start.and_then(|s| s.checked_add(len));
        match (start, end) {
            (Some(start), Some(end)) if end <= btf.len() => Ok(&btf[start..end]),
            _ => {
                Err(format!("its BTF {what} section ({len} bytes at {off}) is outside the {} bytes of BTF", btf.len()))
            }
        }
    };
    let types = part(8, "type")?;
    let strings = part(16, "string")?;
    let name = |off: u32| -> Result<&str, String> {
        let rest = strings.get(off as usize..).ok_or_else(|| format!("a BTF name offset ({off}) is out of bounds"))?;
        let len = rest.iter().position(|&b| b == 0).ok_or("a BTF name is not terminated")?;
        std::str::from_utf8(&rest[..len]).map_err(|_| format!("the BTF name at {off} is not UTF-8"))
    };
    let all = read_types(order, types)?;
    let by_id = |id: u32| -> Option<&Type> { (id as usize).checked_sub(1).and_then(|i| all.get(i)) };
    let mut found = None;
    for t in all.iter().filter(|t| t.kind == KIND_DATASEC) {
        if name(t.name_off)? != section {
            continue;
        }
        if found.is_some() {
            return Err(format!("its BTF describes the section {section} twice"));
        }
        let mut names = BTreeSet::new();
        for i in 0..t.vlen {
            let id = order.u32_at(types, t.extra + i * SECINFO_LEN)?;
            let var = by_id(id)
                .filter(|v| v.kind == KIND_VAR)
                .ok_or_else(|| format!("its BTF section {section} holds the type {id}, which is not a variable"))?;
            if !names.insert(name(var.name_off)?.to_owned()) {
                return Err(format!("its BTF section {section} holds `{}` twice", name(var.name_off)?));
            }
        }
        found = Some(names);
    }
    Ok(found)
}

/// Every type of the type section `types`, in order (type id 1 first).
fn read_types(order: Order, types: &[u8]) -> Result<Vec<Type>, String> {
    let mut all = Vec::new();
    let mut at = 0;
    while at < types.len() {
        let name_off = order.u32_at(types, at)?;
        let info = order.u32_at(types, at + 4)?;
        let kind = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        let extra_len = match kind {
            // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG
            2 | 7 | 8 | 9 | 10 | 11 | 12 | 16 | 18 => 0,
            // INT, VAR, DECL_TAG
            1 | 14 | 17 => 4,
            // ARRAY
            3 => 12,
            // STRUCT, UNION, ENUM64; DATASEC
            4 | 5 | 19 => vlen * 12,
            15 => vlen * SECINFO_LEN,
            // ENUM, FUNC_PROTO
            6 | 13 => vlen * 8,
            _ => return Err(format!("its BTF has a type of unknown kind {kind}")),
        };
        let extra = at + TYPE_LEN;
        let next = extra + extra_len;
        if next > types.len() {
            return Err(format!("its BTF type {} runs past the end of the type section", all.len() + 1));
        }
        all.push(Type { kind, name_off, extra, vlen });
        at = next;
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little-endian BTF of `types` (each a `struct btf_type` and its data)
    /// and `strings`.
    fn btf(types: &[u32], strings: &[u8]) -> Vec<u8> {
        let type_len = types.len() as u32 * 4;
        let mut out = Vec::new();
        out.extend(MAGIC.to_le_bytes());
        out.extend([1, 0]);
        for word in [24, 0, type_len, type_len, strings.len() as u32] {
            out.extend(word.to_le_bytes());
        }
        types.iter().for_each(|w| out.extend(w.to_le_bytes()));
        out.extend(strings);
        out
    }

    const STRINGS: &[u8] = b"\0.maps\0stash\0counters\0";
    const INT: u32 = 1 << 24;
    const VAR: u32 = KIND_VAR << 24;
    const DATASEC: u32 = KIND_DATASEC << 24;

    #[test]
    fn the_variables_of_a_datasec_are_named_as_their_types_say() {
        // 1: int; 2: VAR stash; 3: VAR counters; 4: DATASEC .maps of 3 and 2.
        let types = [0, INT, 4, 32, 7, VAR, 1, 1, 13, VAR, 1, 1, 1, DATASEC | 2, 0, 3, 0, 0, 2, 0, 0];
        let names = datasec_var_names(&btf(&types, STRINGS), ".maps").unwrap().unwrap();
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["counters", "stash"]);
        assert_eq!(datasec_var_names(&btf(&types, STRINGS), ".data").unwrap(), None);
    }

    #[test]
    fn malformed_btf_is_an_error_not_a_panic() {
        let good = [0, INT, 4, 32, 7, VAR, 1, 1, 1, DATASEC | 1, 0, 2, 0, 0];
        assert!(datasec_var_names(&btf(&good, STRINGS), ".maps").unwrap().is_some());
        let bad: &[&[u32]] = &[
            // The DATASEC's variable is the int.
            &[0, INT, 4, 32, 1, DATASEC | 1, 0, 1, 0, 0],
            // A type id past the last.
            &[1, DATASEC | 1, 0, 9, 0, 0],
            // A DATASEC claiming more variables than there are bytes.
            &[1, DATASEC | 0xffff, 0],
            // A name offset past the strings.
            &[500, DATASEC, 0],
            // An unknown kind.
            &[0, 31 << 24, 0],
        ];
        for types in bad {
            assert!(datasec_var_names(&btf(types, STRINGS), ".maps").is_err(), "{types:?}");
        }
        let whole = btf(&good, STRINGS);
        for cut in 0..whole.len() {
            let _ = datasec_var_names(&whole[..cut], ".maps");
        }
        assert!(datasec_var_names(&whole[..whole.len() - 1], ".maps").is_err());
    }
}
