//! From a manifest to build units: one per distinct (source file or prebuilt
//! object, hook). Several programs in one C file share one object, so they are
//! one unit; the same file built for xdp and for tc is two.
//!
//! Planning reads no files: whether sources exist and prebuilt digests match is
//! found out by the builder, which reports every problem at once.

use std::fmt;
use std::path::{Path, PathBuf};

use ebpkg_spec::manifest::KernelBuild;
use ebpkg_spec::names::ItemName;
use ebpkg_spec::types::{Hook, RelPath, Sha256Digest};
use ebpkg_spec::{Manifest, PackageId};

/// A package to build: its files and what its manifest says.
#[derive(Debug, Clone, Copy)]
pub struct PackageToBuild<'a> {
    /// The unpacked package directory (the one holding `ebpkg.toml`).
    pub root: &'a Path,
    /// The package archive's SHA-256 or, for a local directory, the digest of its
    /// deterministic archive: it stands for the content of every file, so the
    /// builder does not hash sources itself.
    pub digest: Sha256Digest,
    pub manifest: &'a Manifest,
}

impl<'a> PackageToBuild<'a> {
    pub fn new(root: &'a Path, digest: Sha256Digest, manifest: &'a Manifest) -> Self {
        PackageToBuild { root, digest, manifest }
    }

    /// Its name and version, from the manifest.
    pub fn id(&self) -> PackageId {
        self.manifest.id()
    }
}

/// What a unit is built from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum UnitInput {
    /// C source compiled by clang.
    Source(RelPath),
    /// A shipped object, used when its SHA-256 matches; otherwise `source`, when
    /// given, is compiled instead (SPEC.md §4.7).
    Prebuilt { object: RelPath, sha256: Sha256Digest, source: Option<RelPath> },
}

/// One object to produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildUnit {
    pub package: PackageId,
    pub package_digest: Sha256Digest,
    pub root: PathBuf,
    pub hook: Hook,
    pub input: UnitInput,
    /// Compiled against the SDK's reference kernel types (one object for every
    /// kernel) or the building kernel's own (`[package.kernel] build`).
    pub kernel: KernelBuild,
    /// The programs whose code is in this object, in manifest order.
    pub programs: Vec<ItemName>,
    /// The loaders whose code is in this object, in manifest order.
    pub loaders: Vec<ItemName>,
}

impl BuildUnit {
    /// The file the unit is named by: the source, or the prebuilt object.
    pub fn file(&self) -> &RelPath {
        match &self.input {
            UnitInput::Source(path) | UnitInput::Prebuilt { object: path, .. } => path,
        }
    }
}

impl fmt::Display for BuildUnit {
    /// `src/tb.bpf.c (xdp) of meter@1.0.0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}) of {}", self.file(), self.hook, self.package)
    }
}

/// The units of a package, in the order their first program or loader appears
/// (programs before loaders). Chains are not built here: they are compiled to VM
/// bytecode by hike-chainc.
pub fn plan(package: &PackageToBuild<'_>) -> Vec<BuildUnit> {
    let m = package.manifest;
    let programs = m.programs.iter().map(|p| (&p.name, &p.source, &p.prebuilt, p.hook, true));
    let loaders = m.loaders.iter().map(|l| (&l.name, &l.source, &l.prebuilt, l.hook, false));
    let mut units: Vec<BuildUnit> = Vec::new();
    for (name, source, prebuilt, hook, is_program) in programs.chain(loaders) {
        let input = match (source, prebuilt) {
            (_, Some(pb)) => {
                UnitInput::Prebuilt { object: pb.object.clone(), sha256: pb.sha256, source: source.clone() }
            }
            (Some(src), None) => UnitInput::Source(src.clone()),
            // The manifest's validation requires one of them; nothing to build.
            (None, None) => continue,
        };
        let unit = match units.iter_mut().find(|u| u.hook == hook && u.input == input) {
            Some(u) => u,
            None => {
                units.push(BuildUnit {
                    package: package.id(),
                    package_digest: package.digest,
                    root: package.root.to_owned(),
                    hook,
                    input,
                    kernel: m.package.kernel.build,
                    programs: Vec::new(),
                    loaders: Vec::new(),
                });
                let last = units.len() - 1;
                &mut units[last]
            }
        };
        if is_program {
            unit.programs.push(name.clone());
        } else {
            unit.loaders.push(name.clone());
        }
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
[package]
name = "meter"
version = "1.0.0"

[[program]]
name = "tb_a"
source = "src/tb.bpf.c"
hook = "xdp"

[[program]]
name = "tb_b"
source = "./src/tb.bpf.c"
hook = "xdp"

[[program]]
name = "tb_tc"
source = "src/tb.bpf.c"
hook = "tc"

[[program]]
name = "p4"
hook = "xdp"
prebuilt = { object = "prebuilt/p4.o", sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }

[[program]]
name = "p4b"
source = "src/p4.bpf.c"
hook = "xdp"
prebuilt = { object = "prebuilt/p4.o", sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" }

[[loader]]
name = "classify"
source = "src/tb.bpf.c"
hook = "xdp"
"#;

    #[test]
    fn groups_by_file_and_hook() {
        let m = Manifest::parse(MANIFEST, "ebpkg.toml").unwrap();
        let pkg = PackageToBuild::new(Path::new("/pkgs/meter"), Sha256Digest([7; 32]), &m);
        let units = plan(&pkg);
        let summary: Vec<String> = units
            .iter()
            .map(|u| {
                let names: Vec<&str> = u.programs.iter().chain(&u.loaders).map(ItemName::as_str).collect();
                format!("{u}: {}", names.join(","))
            })
            .collect();
        assert_eq!(
            summary,
            [
                "src/tb.bpf.c (xdp) of meter@1.0.0: tb_a,tb_b,classify",
                "src/tb.bpf.c (tc) of meter@1.0.0: tb_tc",
                "prebuilt/p4.o (xdp) of meter@1.0.0: p4",
                "prebuilt/p4.o (xdp) of meter@1.0.0: p4b",
            ]
        );
        assert_eq!(units[0].loaders.len(), 1);
        assert_eq!(units[0].package_digest, Sha256Digest([7; 32]));
        assert!(units.iter().all(|u| u.kernel == KernelBuild::Portable), "portable unless the manifest says");
        let local = MANIFEST.replace("version = \"1.0.0\"", "version = \"1.0.0\"\nkernel = { build = \"local\" }");
        let m = Manifest::parse(&local, "ebpkg.toml").unwrap();
        assert!(
            plan(&PackageToBuild::new(Path::new("/p"), Sha256Digest([7; 32]), &m))
                .iter()
                .all(|u| u.kernel == KernelBuild::Local)
        );
        assert!(matches!(&units[3].input, UnitInput::Prebuilt { source: Some(s), .. } if s.as_str() == "src/p4.bpf.c"));
    }
}
