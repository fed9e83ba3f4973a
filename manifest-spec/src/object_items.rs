//! What a BPF object defines — its entry points (the HIKe programs and loaders)
//! and its maps — and whether that is what its manifest declares: the one
//! check that publishing (client and server) and installing make of every
//! object, so that an object cannot carry a program or a map nobody declared,
//! nor lack one the manifest promises.
//!
//! Read from the ELF symbol table (with the `object` crate's bounds-checked
//! parser, so hostile bytes give an error, never a panic) and the object's BTF
//! (`btf.rs`): an entry point is a function in a program section (anything but
//! `.text`, where subprograms live); a map is a variable of the BTF section
//! `.maps`, which is what libbpf makes and names the maps from, and which must
//! be the very names of the symbols in the ELF section `.maps` (an object
//! naming its maps one way to this check and another to libbpf is refused).
//! Global data (`.data`, `.bss`, `.rodata`) belongs to the object and is not a
//! map of the manifest.

use std::collections::BTreeSet;
use std::path::Path;

use hike_bytecode::vm_maps;
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind, SymbolSection};

use crate::manifest::Manifest;

/// What an object defines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectItems {
    /// Functions in program sections: the HIKe programs and loaders.
    pub entry_points: BTreeSet<String>,
    /// Maps, the VM's among them.
    pub maps: BTreeSet<String>,
}

/// Why an object's items cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectUnreadable {
    #[error("cannot be read as a BPF object: {0}")]
    Malformed(String),
    #[error(
        "has maps (the ELF section `.maps`) but no BTF (`.BTF`), without which libbpf cannot make them; compile it \
         with `-g`"
    )]
    MapsWithoutBtf,
    #[error(
        "names its maps {btf} in its BTF but {symbols} in its symbol table; libbpf makes and pins the maps its BTF \
         names, so the two must be the same: rebuild the object from its source"
    )]
    MapNamesDisagree { btf: String, symbols: String },
}

/// `names` as the error of [`ObjectUnreadable::MapNamesDisagree`] lists them.
fn listed(names: &BTreeSet<String>) -> String {
    if names.is_empty() {
        return "none".into();
    }
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// Where an object and its manifest disagree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemMismatch {
    #[error(
        "defines the program `{0}`, which ebpkg.toml declares neither as a program nor as a loader; declare it, or \
         remove it from the object"
    )]
    UndeclaredEntryPoint(String),
    #[error(
        "defines the map `{0}`, which no program or loader of ebpkg.toml declares (`[[program.map]]` or \
         `[[loader.map]]`); declare it, or remove it from the object"
    )]
    UndeclaredMap(String),
    #[error("lacks the {kind} `{name}`, which ebpkg.toml builds from it")]
    Missing { kind: &'static str, name: String },
}

impl ObjectItems {
    /// The entry points and maps `elf` defines.
    pub fn read(elf: &[u8]) -> Result<ObjectItems, ObjectUnreadable> {
        let malformed = |e: object::Error| ObjectUnreadable::Malformed(e.to_string());
        let file = object::File::parse(elf).map_err(malformed)?;
        if file.architecture() != object::Architecture::Bpf {
            return Err(ObjectUnreadable::Malformed(format!(
                "it is an object for {:?}, not for BPF",
                file.architecture()
            )));
        }
        let mut items = ObjectItems::default();
        let mut symbol_maps = BTreeSet::new();
        for symbol in file.symbols() {
            let SymbolSection::Section(index) = symbol.section() else { continue };
            let section = file.section_by_index(index).map_err(malformed)?;
            let section = section.name().map_err(malformed)?;
            let name = symbol.name().map_err(malformed)?;
            match symbol.kind() {
                SymbolKind::Text if section != ".text" && !section.starts_with(".text.") => {
                    items.entry_points.insert(name.to_owned());
                }
                SymbolKind::Data if section == ".maps" => {
                    symbol_maps.insert(name.to_owned());
                }
                _ => {}
            }
        }
        let has_maps_section = file.section_by_name(".maps").is_some();
        items.maps = match file.section_by_name(".BTF") {
            Some(btf) => {
                let btf = btf.data().map_err(malformed)?;
                crate::btf::datasec_var_names(btf, ".maps").map_err(ObjectUnreadable::Malformed)?.unwrap_or_default()
            }
            None if has_maps_section || !symbol_maps.is_empty() => return Err(ObjectUnreadable::MapsWithoutBtf),
            None => BTreeSet::new(),
        };
        if items.maps != symbol_maps {
            return Err(ObjectUnreadable::MapNamesDisagree { btf: listed(&items.maps), symbols: listed(&symbol_maps) });
        }
        Ok(items)
    }

    /// Checks these items, of the object that `built` (the names of the programs
    /// and loaders the manifest builds into it), against `manifest`: each of them
    /// is in the object, and the object defines no entry point the package does
    /// not declare, nor a map that none of its programs and loaders declares
    /// (the VM's maps that the SDK's headers define aside, [`vm_maps::in_headers`]).
    pub fn check(&self, manifest: &Manifest, built: &[&str]) -> Result<(), ItemMismatch> {
        for name in built {
            if !self.entry_points.contains(*name) {
                let kind = if manifest.loader(name).is_some() { "loader" } else { "program" };
                return Err(ItemMismatch::Missing { kind, name: (*name).to_owned() });
            }
        }
        let declared = |name: &str| manifest.program(name).is_some() || manifest.loader(name).is_some();
        if let Some(extra) = self.entry_points.iter().find(|e| !declared(e)) {
            return Err(ItemMismatch::UndeclaredEntryPoint(extra.clone()));
        }
        let declared_maps: BTreeSet<&str> = manifest
            .programs
            .iter()
            .flat_map(|p| p.maps.iter().map(|m| m.name.as_str()))
            .chain(manifest.loaders.iter().flat_map(|l| l.maps.iter().map(|m| m.name.as_str())))
            .collect();
        if let Some(extra) =
            self.maps.iter().find(|m| !declared_maps.contains(m.as_str()) && !vm_maps::in_headers().any(|v| v == *m))
        {
            return Err(ItemMismatch::UndeclaredMap(extra.clone()));
        }
        Ok(())
    }
}

/// The programs and loaders of `manifest` whose prebuilt object is `object` (a
/// package path, as `prebuilt.object` names it).
fn prebuilt_in<'m>(manifest: &'m Manifest, object: &str) -> Vec<&'m str> {
    let programs = manifest.programs.iter().map(|p| (p.name.as_str(), p.prebuilt.as_ref()));
    let loaders = manifest.loaders.iter().map(|l| (l.name.as_str(), l.prebuilt.as_ref()));
    programs.chain(loaders).filter(|(_, p)| p.is_some_and(|p| p.object.as_str() == object)).map(|(n, _)| n).collect()
}

/// Each prebuilt object `manifest` names, once, in the order first named.
pub fn prebuilt_objects(manifest: &Manifest) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let named = manifest
        .programs
        .iter()
        .filter_map(|p| p.prebuilt.as_ref())
        .chain(manifest.loaders.iter().filter_map(|l| l.prebuilt.as_ref()));
    for p in named {
        if !out.contains(&p.object.as_str()) {
            out.push(p.object.as_str());
        }
    }
    out
}

/// A prebuilt object of a package that is not what its manifest says.
#[derive(Debug, thiserror::Error)]
#[error("the prebuilt object {object} {why}")]
pub struct PrebuiltRefused {
    /// The object, as `prebuilt.object` names it.
    pub object: String,
    pub why: String,
}

/// Checks each prebuilt object of the package unpacked (or staged) at `root`
/// against its manifest ([`ObjectItems::check`]), reading each at most
/// [`crate::MAX_OBJECT_BYTES`].
pub fn check_prebuilt(manifest: &Manifest, root: &Path) -> Result<(), PrebuiltRefused> {
    check_prebuilt_with(manifest, |object| {
        ebpkg_fs::read(&root.join(object), crate::MAX_OBJECT_BYTES).map_err(|e| format!("cannot be read: {e}"))
    })
}

/// [`check_prebuilt`] with each object's bytes from `read` (given the package
/// path `prebuilt.object` names; its error says why it cannot be read): for a
/// package held in memory, as a registry checks a publish.
pub fn check_prebuilt_with<B: AsRef<[u8]>>(
    manifest: &Manifest,
    mut read: impl FnMut(&str) -> Result<B, String>,
) -> Result<(), PrebuiltRefused> {
    for object in prebuilt_objects(manifest) {
        let refused = |why: String| PrebuiltRefused { object: object.to_owned(), why };
        let elf = read(object).map_err(refused)?;
        let items = ObjectItems::read(elf.as_ref()).map_err(|e| refused(e.to_string()))?;
        items.check(manifest, &prebuilt_in(manifest, object)).map_err(|e| refused(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Manifest {
        let text = "[package]\nname = \"p\"\nversion = \"1.0.0\"\n\n\
                    [[program]]\nname = \"count\"\nsource = \"src/a.bpf.c\"\nhook = \"xdp\"\n\
                    [[program.map]]\nname = \"counters\"\ndoc = \"counts\"\n\n\
                    [[loader]]\nname = \"pick\"\nsource = \"src/a.bpf.c\"\nhook = \"xdp\"\n";
        Manifest::parse(text, "ebpkg.toml").unwrap()
    }

    fn items(entry_points: &[&str], maps: &[&str]) -> ObjectItems {
        ObjectItems {
            entry_points: entry_points.iter().map(|s| s.to_string()).collect(),
            maps: maps.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn an_object_holds_what_its_manifest_declares_and_nothing_more() {
        let m = manifest();
        let built = ["count", "pick"];
        // The VM's maps are used, not declared.
        assert_eq!(items(&["count", "pick"], &["counters", "hike_chains", "hike_progs_xdp"]).check(&m, &built), Ok(()));
        assert_eq!(
            items(&["count", "pick", "sneaky"], &[]).check(&m, &built),
            Err(ItemMismatch::UndeclaredEntryPoint("sneaky".into()))
        );
        assert_eq!(
            items(&["count", "pick"], &["counters", "stash"]).check(&m, &built),
            Err(ItemMismatch::UndeclaredMap("stash".into()))
        );
        assert_eq!(
            items(&["count"], &[]).check(&m, &built),
            Err(ItemMismatch::Missing { kind: "loader", name: "pick".into() })
        );
        // Another object may hold a declared program that this one is not built for.
        assert_eq!(items(&["count"], &[]).check(&m, &["count"]), Ok(()));
    }

    /// The object clang makes of `c`, with BTF (`-g`) if `btf`, as the SDK
    /// builds them.
    fn compiled(c: &str, btf: bool) -> Vec<u8> {
        use std::io::Write;
        let mut clang = std::process::Command::new("clang")
            .args(if btf { &["-g"][..] } else { &[] })
            .args(["-O2", "-target", "bpf", "-c", "-x", "c", "-", "-o", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        clang.stdin.take().unwrap().write_all(c.as_bytes()).unwrap();
        let out = clang.wait_with_output().unwrap();
        assert!(out.status.success());
        out.stdout
    }

    /// `elf` with the name `from` in its section `section` renamed `to` (of the
    /// same length), as a hand-edited object would have it.
    fn renamed_in(elf: &[u8], section: &str, from: &str, to: &str) -> Vec<u8> {
        let file = object::File::parse(elf).unwrap();
        let (start, len) = file.section_by_name(section).unwrap().file_range().unwrap();
        let range = start as usize..(start + len) as usize;
        let needle = format!("\0{from}\0");
        let at = elf[range.clone()].windows(needle.len()).position(|w| w == needle.as_bytes()).unwrap();
        let mut out = elf.to_vec();
        out[range.start + at + 1..range.start + at + 1 + from.len()].copy_from_slice(to.as_bytes());
        out
    }

    const WITH_A_MAP: &str = "#define SEC(n) __attribute__((section(n), used))\n\
        struct { int (*type)[2]; int (*max_entries)[1]; unsigned *key; unsigned long long *value; } counters \
        SEC(\".maps\");\n\
        SEC(\"xdp\") int count(void *ctx) { return 2; }\n\
        char LICENSE[] SEC(\"license\") = \"GPL\";\n";

    #[test]
    fn the_maps_of_an_object_are_those_its_btf_names_and_its_symbols_must_agree() {
        let genuine = compiled(WITH_A_MAP, true);
        let items = ObjectItems::read(&genuine).unwrap();
        assert_eq!(items, self::items(&["count"], &["counters"]));
        assert_eq!(items.check(&manifest(), &["count"]), Ok(()));
        // libbpf would make and pin `stashing`, which the manifest never declared,
        // while the symbol still says `counters`: either way round, refused.
        for section in [".strtab", ".BTF"] {
            let crafted = renamed_in(&genuine, section, "counters", "stashing");
            let err = ObjectItems::read(&crafted).unwrap_err();
            assert!(matches!(err, ObjectUnreadable::MapNamesDisagree { .. }), "{section}: {err}");
            let (btf, symbols) = if section == ".BTF" { ("stashing", "counters") } else { ("counters", "stashing") };
            assert!(
                err.to_string().contains(&format!("names its maps `{btf}` in its BTF but `{symbols}` in its symbol")),
                "{err}"
            );
        }
        // Both renamed, the object is read as libbpf reads it: the map is undeclared.
        let both = renamed_in(&renamed_in(&genuine, ".strtab", "counters", "stashing"), ".BTF", "counters", "stashing");
        let items = ObjectItems::read(&both).unwrap();
        assert_eq!(items.check(&manifest(), &["count"]), Err(ItemMismatch::UndeclaredMap("stashing".into())));
    }

    #[test]
    fn an_object_with_maps_but_no_btf_is_refused() {
        assert_eq!(ObjectItems::read(&compiled(WITH_A_MAP, false)), Err(ObjectUnreadable::MapsWithoutBtf));
        let no_map = "__attribute__((section(\"xdp\"), used)) int count(void *ctx) { return 2; }\n";
        assert_eq!(ObjectItems::read(&compiled(no_map, false)), Ok(items(&["count"], &[])));
    }

    #[test]
    fn bytes_that_are_no_bpf_object_are_refused_not_read() {
        for bytes in [&b""[..], b"\x7fELF", b"not an object at all", &[0x7f, b'E', b'L', b'F', 2, 1, 1, 0][..]] {
            assert!(ObjectItems::read(bytes).is_err(), "{bytes:?}");
        }
    }
}
