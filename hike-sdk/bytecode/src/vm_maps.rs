//! The maps of the HIKe VM, pinned in `<root>/vm`: one table for the runtime,
//! which creates, opens and protects them, and for the package formats, which
//! let a package's objects use — never declare — the ones the SDK's headers
//! define (`ebpkg_spec::object_items`).

/// What the name of every VM map starts with, and no package's map may.
pub const PREFIX: &str = "hike_";

/// One map of the VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VmMap {
    pub name: &'static str,
    /// The SDK's headers (`hike-sdk/include/hike/*.h`) define it, so every
    /// object that includes them holds it and shares it by name with the VM;
    /// the others only the runtime creates.
    pub in_headers: bool,
    /// Created `BPF_F_RDONLY_PROG`: programs read it, only the runtime writes
    /// it (what decides behaviour: chains, configuration, clock, records).
    pub read_only_to_programs: bool,
}

const fn map(name: &'static str, in_headers: bool, read_only_to_programs: bool) -> VmMap {
    VmMap { name, in_headers, read_only_to_programs }
}

/// Program ids to the XDP programs; tail calls only.
pub const PROGS_XDP: VmMap = map("hike_progs_xdp", true, false);
/// Program ids to the TC programs; tail calls only.
pub const PROGS_TC: VmMap = map("hike_progs_tc", true, false);
/// Chain ids to the native XDP programs of chains; tail calls only.
pub const NATIVE_XDP: VmMap = map("hike_native_xdp", true, false);
/// Chain ids to the native TC programs of chains; tail calls only.
pub const NATIVE_TC: VmMap = map("hike_native_tc", true, false);
/// Chain ids to bytecode.
pub const CHAINS: VmMap = map("hike_chains", true, true);
/// The VM state of the packet each CPU runs, and the counters: writable, as the
/// programs of the packet's chain run it.
pub const STATE: VmMap = map("hike_state", true, false);
/// The instance's configuration.
pub const CONFIG: VmMap = map("hike_config", true, true);
/// The VM's clock (`hike/time.h`).
pub const CLOCK: VmMap = map("hike_clock", true, true);
/// The chain the test entry runs.
pub const ENTRY_MAP: VmMap = map("hike_entry_map", false, true);
/// The runtime's records of programs.
pub const PROG_META: VmMap = map("hike_prog_meta", false, true);
/// The runtime's records of chains.
pub const CHAIN_META: VmMap = map("hike_chain_meta", false, true);
/// Who owns the root.
pub const OWNER: VmMap = map("hike_owner", false, true);

/// Every map of the VM.
pub const ALL: &[VmMap] = &[
    PROGS_XDP, PROGS_TC, NATIVE_XDP, NATIVE_TC, CHAINS, STATE, CONFIG, CLOCK, ENTRY_MAP, PROG_META, CHAIN_META, OWNER,
];

/// The VM map named `name`, if it is one.
pub fn get(name: &str) -> Option<&'static VmMap> {
    ALL.iter().find(|m| m.name == name)
}

/// The names of the maps the SDK's headers define, which packages' objects hold.
pub fn in_headers() -> impl Iterator<Item = &'static str> {
    ALL.iter().filter(|m| m.in_headers).map(|m| m.name)
}

/// The names of the maps created `BPF_F_RDONLY_PROG`.
pub fn read_only_to_programs() -> impl Iterator<Item = &'static str> {
    ALL.iter().filter(|m| m.read_only_to_programs).map(|m| m.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The maps `hike-sdk/include/hike/*.h` define (`} name SEC(".maps")`, with
    /// the per-hook macros expanded to each of their values), each with whether
    /// its definition says `BPF_F_RDONLY_PROG`.
    fn defined_in_headers() -> BTreeMap<String, bool> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../include/hike");
        let mut headers: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        headers.sort();
        headers.retain(|p| p.extension().is_some_and(|e| e == "h"));
        let all: String = headers.iter().map(|h| std::fs::read_to_string(h).unwrap()).collect();
        let mut out = BTreeMap::new();
        for header in &headers {
            let text = std::fs::read_to_string(header).unwrap();
            let mut block = String::new();
            for line in text.lines() {
                block.push_str(line);
                block.push('\n');
                let Some(name) = line.strip_prefix("} ").and_then(|l| l.strip_suffix(" SEC(\".maps\");")) else {
                    if line.starts_with("struct {") {
                        block = line.to_owned();
                    }
                    continue;
                };
                let read_only = block.contains("BPF_F_RDONLY_PROG");
                let names: Vec<String> = if name.starts_with("HIKE_") {
                    // A per-hook macro: every `#define NAME value` of it.
                    all.lines()
                        .filter_map(|l| l.strip_prefix(&format!("#define {name} ")))
                        .map(|v| v.trim().to_owned())
                        .collect()
                } else {
                    vec![name.to_owned()]
                };
                assert!(!names.is_empty(), "{name} in {}", header.display());
                for n in names {
                    out.insert(n, read_only);
                }
            }
        }
        out
    }

    #[test]
    fn the_table_is_what_the_sdk_headers_define() {
        let table: BTreeMap<String, bool> =
            ALL.iter().filter(|m| m.in_headers).map(|m| (m.name.to_owned(), m.read_only_to_programs)).collect();
        assert_eq!(defined_in_headers(), table);
        assert!(ALL.iter().all(|m| m.name.starts_with(PREFIX)));
        assert_eq!(get("hike_chains"), Some(&CHAINS));
        assert_eq!(get("chains"), None);
    }
}
