//! Reading HIKe program signatures from an object's BTF, without loading anything.
//!
//! `HIKE_PROGRAM` puts decl tags on the program's function: `hike.nargs=N`,
//! `hike.ret=<type>` and one `hike.argI=<type> <name>` per argument.

use std::collections::BTreeMap;

use libbpf_rs::btf::types::DeclTag;
use libbpf_rs::btf::{Btf, BtfType, ReferencesType};

use crate::error::{Result, RuntimeError};

/// A program's calling signature as its object declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// `(type, name)` of each argument, in order.
    pub args: Vec<(String, String)>,
    /// The result type (`u64` unless declared otherwise).
    pub ret: String,
}

impl Signature {
    /// The number of arguments.
    pub fn nargs(&self) -> u8 {
        self.args.len() as u8
    }
}

/// The HIKe programs of an ELF object and their signatures, by function name.
/// Programs without the tags (loaders, plain eBPF) are not listed.
pub fn read(object_name: &str, elf: &[u8]) -> Result<BTreeMap<String, Signature>> {
    // (A test counts these: an install parses each object's programs once.)
    tracing::trace!(object = object_name, "reading the HIKe programs of an object");
    let bad = |reason: String| RuntimeError::BadObject { name: object_name.to_owned(), reason };
    let btf = Btf::from_raw(object_name, elf)
        .map_err(|e| bad(format!("cannot read its BTF: {e}")))?
        .ok_or_else(|| bad("it has no BTF; compile with -g".into()))?;

    let mut nargs: BTreeMap<String, usize> = BTreeMap::new();
    let mut rets: BTreeMap<String, String> = BTreeMap::new();
    let mut args: BTreeMap<String, BTreeMap<usize, (String, String)>> = BTreeMap::new();
    for tag in btf.type_by_kind::<DeclTag<'_>>() {
        let Some(text) = tag.name().and_then(|n| n.to_str()) else { continue };
        let Some(rest) = text.strip_prefix("hike.") else { continue };
        let Some(func) = btf.type_by_id::<BtfType<'_>>(tag.referenced_type_id()) else { continue };
        let Some(func) = func.name().and_then(|n| n.to_str()).map(str::to_owned) else { continue };
        let (key, value) = rest.split_once('=').ok_or_else(|| bad(format!("malformed tag `{text}` on {func}")))?;
        match key {
            "nargs" => {
                let n = value.parse().map_err(|_| bad(format!("malformed tag `{text}` on {func}")))?;
                nargs.insert(func, n);
            }
            "ret" => {
                rets.insert(func, normalize_type(value));
            }
            k if k.starts_with("arg") => {
                let i: usize = k[3..].parse().map_err(|_| bad(format!("malformed tag `{text}` on {func}")))?;
                let (ty, name) =
                    value.rsplit_once(' ').ok_or_else(|| bad(format!("malformed tag `{text}` on {func}")))?;
                args.entry(func).or_default().insert(i, (normalize_type(ty), name.to_owned()));
            }
            _ => {}
        }
    }

    let mut out = BTreeMap::new();
    for (func, n) in nargs {
        let list = args.remove(&func).unwrap_or_default();
        if list.len() != n || list.keys().copied().ne(1..=n) {
            return Err(bad(format!("program {func} declares {n} arguments but tags {} of them", list.len())));
        }
        let ret = rets.remove(&func).unwrap_or_else(|| "u64".to_owned());
        out.insert(func, Signature { args: list.into_values().collect(), ret });
    }
    Ok(out)
}

/// `__u32` and `u32` are the same type to a chain.
fn normalize_type(t: &str) -> String {
    let t = t.trim();
    t.strip_prefix("__").unwrap_or(t).to_owned()
}
