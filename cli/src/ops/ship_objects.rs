//! `ebpkg publish --with-objects`: a copy of the package that ships its portable
//! objects (SPEC.md §4.7), so that a node without clang can install it.
//!
//! The copy is made of exactly the files the package packs to (its archive,
//! unpacked in a temporary directory), so what is compiled is what is published.
//! Each program and loader built from `source` gets its object as
//! `prebuilt/<hook>/<source path>.o` and `prebuilt = { object, sha256 }` in
//! the copy's ebpkg.toml; `source` stays, so a node whose object does not match
//! compiles it. Items with a `prebuilt` of their own are left as they are. The
//! objects are built reproducibly (the SDK's cache directory named `/hike-sdk` in
//! them, not the publisher's path): the same sources and compiler give the same
//! objects on any machine, hence the same archive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ebpkg_deploy::PlannedObject;
use ebpkg_spec::Manifest;
use ebpkg_spec::manifest::{KernelBuild, MANIFEST_FILE};
use ebpkg_spec::types::{Hook, Sha256Digest};
use toml_edit::{DocumentMut, InlineTable, Item, TableLike, Value};

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::build::{BuildInput, BuildOptions, build_packages};
use crate::project::Project;

/// The directory prebuilt objects are written to, in the package.
const PREBUILT_DIR: &str = "prebuilt";

/// A staged copy of a package, with its objects; removed when dropped.
pub struct Staged {
    /// The copy, as a project: what to pack, verify and publish.
    pub project: Project,
    _dir: tempfile::TempDir,
}

/// An object to ship and the items it provides.
struct Shipped {
    /// Package path, `prebuilt/xdp/src/tb.bpf.c.o`.
    rel: String,
    sha256: Sha256Digest,
}

/// The path under `prebuilt/` a source's object at `hook` is shipped under: the
/// source's own path below the hook's directory, so no two sources share one.
pub fn object_name(source: &str, hook: Hook) -> String {
    format!("{}/{source}.o", hook.name())
}

/// Refuses a package whose objects are built for one kernel.
pub fn check_portable(project: &Project) -> Result<()> {
    let m = &project.manifest;
    if m.package.kernel.build == KernelBuild::Local {
        return Err(fail(
            Failure::Usage,
            format!(
                "{}@{} cannot be published --with-objects: {} says `build = \"local\"` in [package.kernel], so its \
                 objects are compiled against one kernel's types and would not load on other kernels. Publish it \
                 without --with-objects (each node compiles it), or remove `build = \"local\"` to make it portable",
                m.package.name,
                m.package.version,
                project.manifest_path().display()
            ),
        ));
    }
    Ok(())
}

/// Copies the package into a temporary directory, builds its portable objects
/// and adds them to the copy, named by its ebpkg.toml.
pub fn stage(ctx: &Ctx, project: &Project) -> Result<Staged> {
    check_portable(project)?;
    let m = &project.manifest;
    let id = m.package.id();
    let packed = ebpkg_archive::pack(&project.dir).map_err(|e| fail(Failure::Input, e.render().trim_end()))?;
    let dir = tempfile::Builder::new()
        .prefix("ebpkg-publish-")
        .tempdir()
        .context("cannot create a temporary directory to stage the package in")?;
    let root = dir.path().join(ebpkg_archive::archive_prefix(&m.package.name, &m.package.version));
    ebpkg_archive::unpack(
        &packed.bytes,
        &packed.sha256,
        &m.package.name,
        &m.package.version,
        &root,
        &ebpkg_archive::Limits::default(),
    )
    .with_context(|| format!("cannot stage a copy of {id} in {}", dir.path().display()))?;

    // The copy packs to the same archive, so this is the digest the cache knows.
    let input = BuildInput { root: &root, digest: packed.sha256, manifest: m };
    let opts = BuildOptions { reproducible: true, ..BuildOptions::default() };
    let objects = build_packages(ctx, &[input], &opts)?.pop().unwrap_or_default();

    // Which object each item built from source alone is in.
    let mut by_item: BTreeMap<(&'static str, String), Shipped> = BTreeMap::new();
    let mut written: BTreeMap<PathBuf, Sha256Digest> = BTreeMap::new();
    let from_source = m
        .programs
        .iter()
        .map(|p| ("program", p.name.as_str(), &p.source, &p.prebuilt, p.hook))
        .chain(m.loaders.iter().map(|l| ("loader", l.name.as_str(), &l.source, &l.prebuilt, l.hook)));
    for (kind, name, source, prebuilt, hook) in from_source {
        let (Some(source), None) = (source, prebuilt) else { continue };
        let object = objects
            .iter()
            .find(|o| {
                o.hook == hook
                    && o.object_name == source.as_str()
                    && if kind == "program" { &o.programs } else { &o.loaders }.iter().any(|n| n == name)
            })
            .ok_or_else(|| anyhow::anyhow!("the build of {id} gave no object for {kind} `{name}` ({source})"))?;
        let rel = format!("{PREBUILT_DIR}/{}", object_name(source.as_str(), hook));
        let dest = root.join(&rel);
        let sha256 = match written.get(&dest) {
            Some(sha256) => *sha256,
            None => {
                let sha256 = copy_object(object, &root, &dest, &rel)?;
                written.insert(dest, sha256);
                sha256
            }
        };
        by_item.insert((kind, name.to_owned()), Shipped { rel, sha256 });
    }

    let manifest_path = root.join(MANIFEST_FILE);
    let (manifest, manifest_text) = if by_item.is_empty() {
        ctx.ui.status("Shipping", format!("no objects: {id} builds no program or loader from source"));
        // The copy's ebpkg.toml is the project's, byte for byte.
        (m.clone(), project.manifest_text.clone())
    } else {
        let text = &project.manifest_text;
        let edited = add_prebuilt_entries(text, &by_item)
            .map_err(|e| fail(Failure::Input, format!("{}: {e}", project.manifest_path().display())))?;
        let manifest = Manifest::parse(&edited, &manifest_path.display().to_string())
            .map_err(|d| fail(Failure::Input, d.render(&edited)))?;
        ebpkg_fs::write_atomic(&manifest_path, edited.as_bytes(), 0o644)
            .with_context(|| format!("cannot write {}", manifest_path.display()))?;
        let names: Vec<String> =
            written.keys().map(|p| p.strip_prefix(&root).unwrap_or(p).display().to_string()).collect();
        ctx.ui.status("Shipping", format!("{} portable object(s) with {id}: {}", written.len(), names.join(", ")));
        (manifest, edited)
    };
    Ok(Staged { project: Project { dir: root, manifest, manifest_text }, _dir: dir })
}

/// Copies a built object to `dest` (package path `rel`) in the staged copy;
/// returns its SHA-256. Refuses to replace a file the package ships itself.
fn copy_object(object: &PlannedObject, root: &Path, dest: &Path, rel: &str) -> Result<Sha256Digest> {
    if std::fs::symlink_metadata(dest).is_ok() {
        return Err(fail(
            Failure::Input,
            format!(
                "cannot ship an object as {rel}: the package has a file there already. Rename or remove it, or \
                 publish without --with-objects"
            ),
        ));
    }
    // The bytes the build checked, or a refusal: what ships is what was verified.
    let bytes = object.read().with_context(|| format!("cannot read the built object {}", object.path.display()))?;
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    ebpkg_fs::write_atomic(dest, &bytes, 0o644)
        .with_context(|| format!("cannot write {} in {}", rel, root.display()))?;
    Ok(Sha256Digest::of(&bytes))
}

/// `text` (an ebpkg.toml) with `prebuilt = { object, sha256 }` added to each
/// [[program]] and [[loader]] named in `items`, its formatting and comments kept.
fn add_prebuilt_entries(
    text: &str,
    items: &BTreeMap<(&'static str, String), Shipped>,
) -> std::result::Result<String, String> {
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    let mut done = 0;
    for kind in ["program", "loader"] {
        let mut tables: Vec<&mut dyn TableLike> = match doc.get_mut(kind) {
            None => Vec::new(),
            Some(Item::ArrayOfTables(array)) => array.iter_mut().map(|t| t as &mut dyn TableLike).collect(),
            Some(Item::Value(Value::Array(array))) => {
                array.iter_mut().filter_map(Value::as_inline_table_mut).map(|t| t as &mut dyn TableLike).collect()
            }
            Some(_) => return Err(format!("`{kind}` is not an array of tables")),
        };
        for table in tables.iter_mut() {
            let Some(name) = table.get("name").and_then(Item::as_str) else { continue };
            let Some(shipped) = items.get(&(kind, name.to_owned())) else { continue };
            if table.contains_key("prebuilt") {
                continue;
            }
            let mut entry = InlineTable::new();
            entry.insert("object", shipped.rel.as_str().into());
            entry.insert("sha256", shipped.sha256.to_string().into());
            table.insert("prebuilt", Item::Value(Value::InlineTable(entry)));
            done += 1;
        }
    }
    if done != items.len() {
        return Err(format!(
            "found {done} of the {} [[program]] and [[loader]] entries to add objects to",
            items.len()
        ));
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn names_and_entries() {
        assert_eq!(object_name("src/tb.bpf.c", Hook::Xdp), "xdp/src/tb.bpf.c.o");
        assert_eq!(object_name("l3.bpf.c", Hook::Tc), "tc/l3.bpf.c.o");
        // Names that a `/` → `_` spelling would have made one.
        assert_ne!(object_name("src/a_b.bpf.c", Hook::Xdp), object_name("src_a/b.bpf.c", Hook::Xdp));
        let text = "[package]\nname = \"p\"\nversion = \"1.0.0\"\n\n# the meter\n[[program]]\nname = \"a\"\n\
                    source = \"src/a.bpf.c\"\nhook = \"xdp\"\n\n[[program.arg]]\nname = \"x\"\ntype = \"u8\"\n\
                    doc = \"x\"\n\n[[program]]\nname = \"own\"\nsource = \"src/b.bpf.c\"\nhook = \"xdp\"\n\
                    prebuilt = { object = \"b.o\", sha256 = \"00\" }\n\n[[loader]]\nname = \"l\"\n\
                    source = \"src/a.bpf.c\"\nhook = \"tc\"\n";
        let sha = Sha256Digest([0xab; 32]);
        let items: BTreeMap<_, _> = [
            (("program", "a".to_owned()), Shipped { rel: "prebuilt/xdp/src/a.bpf.c.o".into(), sha256: sha }),
            (("loader", "l".to_owned()), Shipped { rel: "prebuilt/tc/src/a.bpf.c.o".into(), sha256: sha }),
        ]
        .into();
        let out = add_prebuilt_entries(text, &items).unwrap();
        let hex = "ab".repeat(32);
        assert!(out.contains("# the meter\n[[program]]"), "{out}");
        assert!(
            out.contains(&format!(
                "hook = \"xdp\"\nprebuilt = {{ object = \"prebuilt/xdp/src/a.bpf.c.o\", sha256 = \"{hex}\" }}\n\n[[program.arg]]"
            )),
            "{out}"
        );
        assert!(out.contains("prebuilt = { object = \"b.o\", sha256 = \"00\" }"), "{out}");
        assert!(out.contains(&format!("object = \"prebuilt/tc/src/a.bpf.c.o\", sha256 = \"{hex}\"")), "{out}");
        let missing: BTreeMap<_, _> =
            [(("program", "zz".to_owned()), Shipped { rel: "prebuilt/x.o".into(), sha256: sha })].into();
        assert!(add_prebuilt_entries(text, &missing).is_err());
    }
}
