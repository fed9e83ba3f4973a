//! Real package archives for the tests: small package directories packed with
//! `ebpkg_archive::pack`, exactly as `ebpkg publish` packs them.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;

use ebpkg_archive::Packed;
use ebpkg_spec::PackageName;
use semver::Version;

/// Packs a package with `[package]` `name`/`version`, then `extra` TOML (more keys of
/// `[package]` first, then any tables), and the given files.
pub fn pack_with(scratch: &Path, name: &str, version: &str, extra: &str, files: &[(&str, &str)]) -> Packed {
    let dir = scratch.join(format!("{name}-{version}-src-{}", unique()));
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("ebpkg.toml"), format!("[package]\nname = \"{name}\"\nversion = \"{version}\"\n{extra}"))
        .unwrap();
    for (path, text) in files {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    ebpkg_archive::pack(&dir).unwrap()
}

/// A minimal package.
pub fn pack(scratch: &Path, name: &str, version: &str) -> Packed {
    pack_with(scratch, name, version, "", &[])
}

/// A package with a description, keywords and one program (whose source exists).
pub fn pack_described(
    scratch: &Path,
    name: &str,
    version: &str,
    description: &str,
    keywords: &[&str],
    program: &str,
) -> Packed {
    let keywords: Vec<String> = keywords.iter().map(|k| format!("\"{k}\"")).collect();
    let extra = format!(
        "description = \"{description}\"\nkeywords = [{}]\n\n[[program]]\nname = \"{program}\"\nsource = \"src/{program}.bpf.c\"\nhook = \"xdp\"\n",
        keywords.join(", ")
    );
    let source = format!("src/{program}.bpf.c");
    pack_with(scratch, name, version, &extra, &[(&source, "// a HIKe program\n")])
}

pub fn name(s: &str) -> PackageName {
    PackageName::new(s).unwrap()
}

pub fn version(s: &str) -> Version {
    Version::parse(s).unwrap()
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
