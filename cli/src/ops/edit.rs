//! `ebpkg add` and `ebpkg remove`: edit `[dependencies]` keeping the file's
//! formatting and comments, check the result resolves, then write ebpkg.toml and
//! ebpkg.lock together. Each edit is reported as it is made (`Adding`, `Removing`).

use anyhow::Result;
use ebpkg_resolver::UpdatePolicy;
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::{Manifest, PackageId, PackageName, RegistryId};
use semver::VersionReq;
use toml_edit::{DocumentMut, InlineTable, Item, Table, value};

use crate::Ctx;
use crate::exit::{Failure, fail};
use crate::ops::resolve::{resolve_project, say_skipped};
use crate::ops::trust::{Trust, Verdict};
use crate::project::{Project, write_atomic};

/// A dependency to add.
pub struct Requested {
    pub name: PackageName,
    pub req: VersionReq,
    /// The requirement was written (`name@req`): it is kept as given, and may
    /// match pre-releases.
    pub explicit: bool,
}

/// The project's ebpkg.toml as a document to edit: the text the project was
/// loaded from, not read again.
fn load_doc(project: &Project) -> Result<DocumentMut> {
    let path = project.manifest_path();
    project.manifest_text.parse().map_err(|e| fail(Failure::Input, format!("{}: {e}", path.display())))
}

fn deps_table(doc: &mut DocumentMut) -> Result<&mut Table> {
    let item = doc.entry("dependencies").or_insert_with(|| Item::Table(Table::new()));
    item.as_table_mut().ok_or_else(|| fail(Failure::Input, "[dependencies] in ebpkg.toml is not a table"))
}

/// Checks the edited manifest, resolves it, then writes manifest and lock.
fn commit(ctx: &Ctx, project: &Project, doc: &DocumentMut) -> Result<()> {
    let text = doc.to_string();
    let path = project.manifest_path();
    let manifest =
        Manifest::parse(&text, &path.display().to_string()).map_err(|d| fail(Failure::Input, d.render(&text)))?;
    let regs = ctx.registries()?;
    let updated = Project { dir: project.dir.clone(), manifest, manifest_text: text.clone() };
    // Resolved before anything is written: a change that cannot resolve (or that
    // --locked forbids) leaves both files as they were.
    let resolved = resolve_project(ctx, &updated, &regs, UpdatePolicy::Nothing)?;
    write_atomic(&path, text.as_bytes())?;
    resolved.save(ctx, &updated)?;
    Ok(())
}

/// Adds (or replaces) dependencies, each at its newest matching version unless a
/// requirement is given, from `from` instead of the default registry when given.
pub fn add(ctx: &Ctx, packages: &[Requested], from: Option<&RegistryId>) -> Result<()> {
    let project = ctx.project()?;
    let mut doc = load_doc(project)?;
    let regs = ctx.registries()?;
    let url = regs.url(from);
    let trust = Trust::load(ctx)?;
    for Requested { name, req, explicit } in packages {
        let explicit = *explicit;
        if name.normalized() == project.manifest.package.name.normalized() {
            return Err(fail(Failure::Usage, format!("a package cannot depend on itself (`{name}`)")));
        }
        let entries = regs.index(&url, name)?.ok_or_else(|| regs.not_found(&url, name))?;
        let mut matching: Vec<&IndexEntry> = entries
            .iter()
            .filter(|e| !e.yanked && req.matches(&e.vers) && (explicit || e.vers.pre.is_empty()))
            .collect();
        matching.sort_by(|a, b| b.vers.cmp(&a.vers));
        let newest = matching.first().copied().ok_or_else(|| {
            let all: Vec<String> =
                entries.iter().map(|e| format!("{}{}", e.vers, if e.yanked { " (yanked)" } else { "" })).collect();
            let yanked: Vec<String> =
                entries.iter().filter(|e| e.yanked && req.matches(&e.vers)).map(|e| e.vers.to_string()).collect();
            let why = match yanked.len() {
                0 => String::new(),
                1 => format!("; {} matches but is yanked: its publisher asks not to use it", yanked[0]),
                _ => format!("; {} match but are yanked: their publisher asks not to use them", yanked.join(", ")),
            };
            fail(
                Failure::Resolution,
                format!("no version of {name} matches `{req}` in {url} (published: {}){why}", all.join(", ")),
            )
        })?;
        // Without a requirement given, the newest version the trust policy accepts: a
        // newer one it refuses, written as the requirement, would fail every resolution.
        let newest = if explicit { newest } else { newest_trusted(ctx, &trust, &url, &matching).unwrap_or(newest) };
        let req_text = if explicit { req.to_string() } else { format!("^{}", newest.vers) };
        // The package's own spelling, as published.
        let key = newest.name.to_string();
        let deps = deps_table(&mut doc)?;
        let existing: Vec<String> = deps
            .iter()
            .map(|(k, _)| k.to_owned())
            .filter(|k| PackageName::new(k).is_ok_and(|n| n.normalized() == name.normalized()))
            .collect();
        for k in existing {
            deps.remove(&k);
        }
        match &from {
            None => {
                deps.insert(&key, value(req_text.clone()));
            }
            Some(u) => {
                let mut t = InlineTable::new();
                t.insert("version", req_text.clone().into());
                t.insert("registry", u.to_string().into());
                deps.insert(&key, value(t));
            }
        }
        ctx.ui.status(
            "Adding",
            format!("{key} {req_text}{}", from.as_ref().map(|u| format!(" from {u}")).unwrap_or_default()),
        );
    }
    commit(ctx, project, &doc)
}

/// The newest of `matching` (newest first) that the trust policy does not refuse,
/// each newer one skipped as a resolution skips it, with what would make it
/// acceptable. `None` when it refuses them all: the resolution then says why.
fn newest_trusted<'e>(
    ctx: &Ctx,
    trust: &Trust,
    url: &RegistryId,
    matching: &[&'e IndexEntry],
) -> Option<&'e IndexEntry> {
    let mut refused = Vec::new();
    for &e in matching {
        match trust.judge(&e.name, e.signed_by.as_ref()) {
            Verdict::Refused { why, fix } => refused.push((e, why, fix)),
            _ => {
                let mut fixes: Vec<String> = Vec::new();
                for (skipped, why, fix) in refused {
                    say_skipped(ctx, &PackageId::new(skipped.name.clone(), skipped.vers.clone()), url, &why);
                    if !fixes.contains(&fix) {
                        fixes.push(fix);
                    }
                }
                for fix in fixes {
                    ctx.ui.note(format!(
                        "{}@{} is the newest version the trust policy accepts. To move to a newer one: {fix}",
                        e.name, e.vers
                    ));
                }
                return Some(e);
            }
        }
    }
    None
}

/// Removes dependencies (each named as spelled in ebpkg.toml or not).
pub fn remove(ctx: &Ctx, packages: &[PackageName]) -> Result<()> {
    let project = ctx.project()?;
    let mut doc = load_doc(project)?;
    let deps = deps_table(&mut doc)?;
    for name in packages {
        let keys: Vec<String> = deps
            .iter()
            .map(|(k, _)| k.to_owned())
            .filter(|k| PackageName::new(k).is_ok_and(|n| n.normalized() == name.normalized()))
            .collect();
        if keys.is_empty() {
            return Err(fail(
                Failure::Usage,
                format!("`{name}` is not a dependency of {}", project.manifest.package.name),
            ));
        }
        for k in keys {
            deps.remove(&k);
            ctx.ui.status("Removing", &k);
        }
    }
    commit(ctx, project, &doc)
}
