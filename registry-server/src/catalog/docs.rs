//! `/packages/{name}[/{version}]/docs`: the reference of every item, the
//! docs.rs of eBPF: for a program, its call signature, each argument's type and
//! meaning, what it returns, whether it can end the packet, its hook and the
//! maps it documents field by field; for a loader, its configuration maps; for
//! a chain, its source. Written from the manifest as published; for versions
//! published before the registry kept manifests, from the index line (types
//! only).

use axum::extract::{Path, State};
use ebpkg_spec::Manifest;
use ebpkg_spec::index::{ArgSignature, IndexEntry};
use ebpkg_spec::manifest::{ConfigMap, Field, Loader, MapDoc, Program};
use maud::{Markup, html};

use super::layout::{self, Frame};
use super::package::{Loaded, PackagePath, load};
use super::{PageResult, html_page};
use crate::state::AppState;

pub fn url(name: &str, version: &semver::Version) -> String {
    format!("{}/{version}/docs", layout::package_url(name))
}

/// The fragment an item's section has: `program.ip6_dst_meter`.
pub fn item_anchor(kind: &str, name: &str) -> String {
    format!("{kind}.{name}")
}

/// An item's one-line description from the manifest, if it has one.
pub fn item_description(manifest: Option<&Manifest>, kind: &str, name: &str) -> String {
    let Some(m) = manifest else { return String::new() };
    let found = match kind {
        "program" => m.programs.iter().find(|p| p.name.as_str() == name).and_then(|p| p.description.clone()),
        "loader" => m.loaders.iter().find(|l| l.name.as_str() == name).and_then(|l| l.description.clone()),
        _ => m.chains.iter().find(|c| c.name.as_str() == name).and_then(|c| c.description.clone()),
    };
    found.unwrap_or_default()
}

pub async fn page(State(state): State<AppState>, Path(path): Path<PackagePath>) -> PageResult {
    let state = &state;
    let loaded = load(state, &path, "/docs").await?;
    let entry = &loaded.info.entry;
    let title = format!("{} {} documentation", loaded.name, entry.vers);
    let content = html! {
        h1 { a href=(format!("{}/{}", layout::package_url(&loaded.name), entry.vers)) { (loaded.name) }
             " " span.version { (entry.vers) } " documentation" }
        @if let Some(d) = &entry.description { p.lead { (layout::prose(d)) } }
        div.docs-layout {
            (toc(entry))
            div {
                @if loaded.manifest.is_none() {
                    p.notice role="note" { "This version was published before the registry kept manifests: \
                        types are shown, descriptions are not." }
                }
                (programs(&loaded))
                (loaders(&loaded))
                (chains(&loaded))
                (reexports(entry))
            }
        }
    };
    let frame = Frame { title: &title, description: entry.description.as_deref(), query: "", own_search: false };
    Ok(html_page(state, layout::page(&frame, content)))
}

fn toc(entry: &IndexEntry) -> Markup {
    html! {
        nav.toc aria-label="Items" {
            @if !entry.programs.is_empty() {
                a href="#programs" { "Programs" }
                ul { @for p in &entry.programs { li { a href=(format!("#{}", item_anchor("program", p.name.as_str()))) {
                    code { (p.name) } } } } }
            }
            @if !entry.loaders.is_empty() {
                a href="#loaders" { "Loaders" }
                ul { @for l in &entry.loaders { li { a href=(format!("#{}", item_anchor("loader", l.name.as_str()))) {
                    code { (l.name) } } } } }
            }
            @if !entry.reexports.is_empty() {
                a href="#reexports" { "Re-exports" }
                br;
            }
            @if !entry.chains.is_empty() {
                a href="#chains" { "Chains" }
                ul { @for c in &entry.chains { li { a href=(format!("#{}", item_anchor("chain", c.name.as_str()))) {
                    code { (c.name) } } } } }
            }
        }
    }
}

/// `name(a: u32, b: u64) -> u64`, as a chain calls it.
fn call_signature(name: &str, args: &[ArgSignature], returns: Option<&str>) -> String {
    let args: Vec<String> = args.iter().map(|a| format!("{}: {}", a.name, a.ty)).collect();
    let mut sig = format!("{name}({})", args.join(", "));
    if let Some(r) = returns {
        sig.push_str(" -> ");
        sig.push_str(r);
    }
    sig
}

fn ends_packet(e: ebpkg_spec::types::EndsPacket) -> String {
    format!("{e}: {}", e.meaning())
}

fn programs(loaded: &Loaded) -> Markup {
    let entry = &loaded.info.entry;
    if entry.programs.is_empty() {
        return html! {};
    }
    html! {
        section aria-labelledby="programs" {
            h2 #programs { "Programs" }
            @for p in &entry.programs {
                @let doc = loaded.manifest.as_ref().and_then(|m| m.programs.iter().find(|d| d.name == p.name));
                @let returns = p.returns.map(|t| t.to_string());
                section.item id=(item_anchor("program", p.name.as_str())) aria-labelledby=(format!("h-program.{}", p.name)) {
                    h3 id=(format!("h-program.{}", p.name)) { code { (p.name) } }
                    p.sig { code { (call_signature(p.name.as_str(), &p.args, returns.as_deref())) } }
                    (import_line("prog", &loaded.name, p.name.as_str()))
                    @if let Some(d) = doc.and_then(|d| d.description.as_deref()) { p { (layout::prose(d)) } }
                    dl {
                        dt { "Hook" } dd { (p.hook) }
                        dt { "Ends the packet" } dd { (ends_packet(p.ends_packet)) }
                    }
                    h4 { "Arguments" }
                    @if p.args.is_empty() { p.muted { "Takes no arguments." } } @else {
                        div.table-wrap tabindex="0" { table {
                            thead { tr { th scope="col" { "Argument" } th scope="col" { "Type" } th scope="col" { "Meaning" } } }
                            tbody { @for (i, a) in p.args.iter().enumerate() {
                                tr { td { code { (a.name) } } td { code { (a.ty) } }
                                     td { (doc.and_then(|d| d.args.get(i)).map(|a| a.doc.as_str()).unwrap_or("")) } }
                            } }
                        } }
                    }
                    h4 { "Returns" }
                    (program_returns(p.returns.map(|t| t.to_string()), doc))
                    (program_maps(doc))
                }
            }
        }
    }
}

fn program_returns(ty: Option<String>, doc: Option<&Program>) -> Markup {
    match ty {
        None => html! { p.muted { "Nothing a chain can use." } },
        Some(ty) => html! {
            p { code { (ty) } @if let Some(r) = doc.and_then(|d| d.returns.as_ref()) { " — " (r.doc) } }
        },
    }
}

fn program_maps(doc: Option<&Program>) -> Markup {
    let maps: &[MapDoc] = doc.map_or(&[], |d| &d.maps);
    if maps.is_empty() {
        return html! {};
    }
    html! {
        h4 { "Maps" }
        @for m in maps {
            h5 { code { (m.name) } }
            p { (m.doc) }
            @if let Some(key) = &m.key { (fields("Key", key)) }
            @if let Some(value) = &m.value { (fields("Value", value)) }
        }
    }
}

fn fields(caption: &str, fields: &[Field]) -> Markup {
    // A column no field fills says nothing: left out.
    let meanings = fields.iter().any(|f| f.doc.is_some());
    html! {
        div.table-wrap tabindex="0" { table {
            caption.visually-hidden { (caption) }
            thead { tr { th scope="col" { (caption) " field" } th scope="col" { "Type" }
                         @if meanings { th scope="col" { "Meaning" } } } }
            tbody { @for f in fields {
                tr { td { code { (f.name) } } td { code { (f.ty) } }
                     @if meanings { td { (f.doc.as_deref().unwrap_or("")) } } }
            } }
        } }
    }
}

/// The line a chain script imports an item with (`from prog.my_pkg import x`).
fn import_line(module: &str, package: &str, item: &str) -> Markup {
    html! { p.import { "Import: " code { "from " (module) "." (ebpkg_spec::names::normalize(package)) " import " (item) } } }
}

fn loaders(loaded: &Loaded) -> Markup {
    let entry = &loaded.info.entry;
    if entry.loaders.is_empty() {
        return html! {};
    }
    html! {
        section aria-labelledby="loaders" {
            h2 #loaders { "Loaders" }
            @for l in &entry.loaders {
                @let doc: Option<&Loader> = loaded.manifest.as_ref().and_then(|m| m.loaders.iter().find(|d| d.name == l.name));
                section.item id=(item_anchor("loader", l.name.as_str())) {
                    h3 { code { (l.name) } }
                    (import_line("loaders", &loaded.name, l.name.as_str()))
                    @if let Some(d) = doc.and_then(|d| d.description.as_deref()) { p { (layout::prose(d)) } }
                    dl { dt { "Hook" } dd { (l.hook) } }
                    h4 { "Configuration maps" }
                    @if l.maps.is_empty() { p.muted { "None: it needs no configuration." } }
                    @for m in &l.maps {
                        @let map_doc: Option<&ConfigMap> = doc.and_then(|d| d.maps.iter().find(|c| c.name == m.name));
                        h5 { code { (m.name) } }
                        @if let Some(c) = map_doc { p { (c.doc) } }
                        (fields("Key", map_doc.map_or(&m.key[..], |c| &c.key[..])))
                        (fields("Value", map_doc.map_or(&m.value[..], |c| &c.value[..])))
                    }
                }
            }
        }
    }
}

fn chains(loaded: &Loaded) -> Markup {
    let entry = &loaded.info.entry;
    if entry.chains.is_empty() {
        return html! {};
    }
    html! {
        section aria-labelledby="chains" {
            h2 #chains { "Chains" }
            @for c in &entry.chains {
                section.item id=(item_anchor("chain", c.name.as_str())) {
                    h3 { code { (c.name) } }
                    @let d = item_description(loaded.manifest.as_ref(), "chain", c.name.as_str());
                    @if !d.is_empty() { p { (layout::prose(&d)) } }
                    @match loaded.chain_sources.get(c.name.as_str()) {
                        Some(source) => pre tabindex="0" aria-label=(format!("Source of chain {}", c.name)) { code { (source) } },
                        None => p.muted { "The source was not kept for this version." },
                    }
                }
            }
        }
    }
}

/// Items of other packages this one lets its users import as its own.
fn reexports(entry: &IndexEntry) -> Markup {
    if entry.reexports.is_empty() {
        return html! {};
    }
    html! {
        section aria-labelledby="reexports" {
            h2 #reexports { "Re-exports" }
            p { "Chains importing from " code { "prog." (entry.name) } " also get these, documented where they live:" }
            ul {
                @for (from, items) in &entry.reexports {
                    @for item in items {
                        li { a href=(format!("{}/docs#{}", layout::package_url(from.as_str()), item_anchor("program", item.as_str()))) {
                            code { (item) } } " from " (from) }
                    }
                }
            }
        }
    }
}
