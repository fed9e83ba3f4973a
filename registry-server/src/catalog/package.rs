//! `/packages/{name}[/{version}]`: what a person needs to choose a package and
//! add it: description, install line, items, trust (signature, licence,
//! kernel), versions, dependencies and dependents, and the README.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use ebpkg_spec::Manifest;
use ebpkg_spec::attestation::KernelVerification;
use ebpkg_spec::attestation::rebuild::{REBUILD_PREDICATE_TYPE, Rebuild, RebuildResult};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::registry_api::{Owner, VersionInfo, VersionSummary};
use maud::{Markup, PreEscaped, html};

use super::docs::{self, item_anchor};
use super::layout::{self, Frame};
use super::markdown::ReadmeCache;
use super::search::url_escape;
use super::{PageError, PageResult, html_page};
use crate::db;
use crate::state::AppState;

/// A version of a package, with everything its pages show.
pub struct Loaded {
    pub package_id: i64,
    pub name: String,
    pub info: VersionInfo,
    /// This is the version the package is described by (its newest).
    pub described: bool,
    /// The manifest as published, when the registry kept it.
    pub manifest: Option<Manifest>,
    pub chain_sources: BTreeMap<String, String>,
}

/// A package page's path: `/packages/{name}[/{version}]`.
#[derive(serde::Deserialize)]
pub struct PackagePath {
    name: String,
    #[serde(default)]
    version: Option<String>,
}

/// The package at the path's version (default: its described version); a name
/// spelled differently from the package's (case, `-`/`_`) is a redirect to
/// the same page (`suffix`) under the package's own.
pub async fn load(state: &AppState, path: &PackagePath, suffix: &str) -> Result<Box<Loaded>, PageError> {
    let (name, version) = (path.name.as_str(), path.version.as_deref());
    let normalized = ebpkg_spec::names::normalize(name);
    // Not only valid names: `Meter` or `hike-net` for `hike_net` find the
    // package and redirect to its spelling.
    let plausible = name.len() <= ebpkg_spec::names::MAX_NAME_LEN
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let pkg = if plausible { db::packages::package(&state.db, &normalized).await? } else { None };
    let Some(pkg) = pkg else {
        let close = db::catalog::close_names(&state.db, &normalized, 5).await?;
        return Err(not_found(name, &close));
    };
    let described = db::catalog::described_version(&state.db, pkg.id).await?;
    let wanted = version.unwrap_or(&described);
    if pkg.name != name {
        let at = version.map(|v| format!("/{v}")).unwrap_or_default();
        return Err(PageError::Moved(format!("{}{at}{suffix}", layout::package_url(&pkg.name))));
    }
    let parsed = semver::Version::parse(wanted).map_err(|_| {
        PageError::not_found(format!("No version `{wanted}` of {name}"), html! {
            p { "`" (wanted) "` is not a version. " a href=(layout::package_url(name)) { "See " (name) "'s versions." } }
        })
    })?;
    let Some(info) = db::packages::version(&state.db, pkg.id, &parsed).await? else {
        return Err(PageError::not_found(
            format!("No version {parsed} of {name}"),
            html! {
                p { (name) " has no version " (parsed) ". " a href=(layout::package_url(name)) { "See its versions." } }
            },
        ));
    };
    let sources = db::catalog::doc_sources(&state.db, pkg.id, &db::packages::without_build(&parsed)).await?;
    // Stored at publish after the same parse; a failure here means a newer
    // server's manifest, and the pages fall back to the index line.
    let manifest = sources.manifest.as_deref().and_then(|text| Manifest::parse(text, "ebpkg.toml").ok());
    Ok(Box::new(Loaded {
        package_id: pkg.id,
        name: pkg.name,
        described: info.entry.vers.to_string() == described,
        info,
        manifest,
        chain_sources: sources.chain_sources,
    }))
}

fn not_found(name: &str, close: &[String]) -> PageError {
    PageError::not_found(
        format!("No package {name}"),
        html! {
            p { "This registry has no package named " code { (name) } "." }
            @if !close.is_empty() {
                p { "Did you mean:" }
                ul.packages { @for c in close { li { a.name href=(layout::package_url(c)) { (c) } } } }
            }
            p { a href=(format!("/search?q={}", url_escape(name))) { "Search for “" (name) "”" } }
        },
    )
}

pub async fn page(
    State(state): State<AppState>,
    State(readmes): State<Arc<ReadmeCache>>,
    Path(path): Path<PackagePath>,
) -> PageResult {
    let state = &state;
    let loaded = load(state, &path, "").await?;
    let owners = db::packages::owners(&state.db, loaded.package_id).await?;
    let versions = db::packages::versions(&state.db, loaded.package_id).await?;
    let dependents = db::catalog::dependents(&state.db, &ebpkg_spec::names::normalize(&loaded.name), 50).await?;
    let attestations = db::attestations::shown(&state.db, loaded.package_id, &loaded.info.entry.vers).await?;
    // A registry with TUF metadata is read only by clients that trust its root.
    let tuf = db::tuf::file(&state.db, "root.json").await?.is_some();
    let signer = match &loaded.info.entry.signed_by {
        Some(key) => db::keys::by_id(&state.db, key).await?,
        None => None,
    };
    let readme = loaded
        .info
        .readme
        .as_deref()
        .map(|md| readmes.get_or_render(loaded.package_id, &loaded.info.entry.vers.to_string(), md));
    let entry = &loaded.info.entry;
    let title = format!("{} {}", loaded.name, entry.vers);
    let content = html! {
        article {
            header {
                h1 { (loaded.name) " " span.version { (entry.vers) } }
                @if let Some(d) = &entry.description { p.lead { (layout::prose(d)) } }
                @if entry.yanked {
                    p.notice role="note" { "This version is yanked: existing lockfiles still install it, new \
                        resolutions skip it." }
                }
                @if !loaded.described {
                    p.notice role="note" { "This is not the newest version. "
                        a href=(layout::package_url(&loaded.name)) { "See the newest." } }
                }
            }
            div.pkg-layout {
                div {
                    section aria-labelledby="install" {
                        h2 #install { "Install" }
                        (install_line(&loaded, &state.config.public_url, tuf))
                        p.muted { "Then " code { "ebpkg install" } " builds it against your kernel and loads it." }
                        p.muted {
                            "Upgrading later (" code { "ebpkg update" } ", then " code { "ebpkg install" } ") keeps \
                             what its maps hold when their layout is unchanged; " code { "ebpkg rollback" } " goes \
                             back to an earlier install."
                        }
                    }
                    (items_summary(&loaded))
                    (kernels(&loaded, &attestations, &owners))
                    (rebuilds(&attestations, &owners))
                    section aria-labelledby="readme" {
                        // A README that starts with its own title needs no heading of ours above it.
                        @if readme_has_title(loaded.info.readme.as_deref()) {
                            h2 #readme .visually-hidden { "README" }
                        } @else {
                            h2 #readme { "README" }
                        }
                        @match &readme {
                            Some(html) => div.readme { (PreEscaped(&**html)) },
                            None => p.muted { "This version has no README." },
                        }
                    }
                }
                aside aria-label="Package details" {
                    (details(&loaded, &owners, signer.as_ref()))
                    (dependencies(entry))
                    section aria-labelledby="dependents" {
                        h2 #dependents { "Dependents" }
                        @if dependents.is_empty() { p.muted { "No package here depends on it yet." } }
                        ul { @for d in &dependents { li { a href=(layout::package_url(&d.name)) { (d.name) } } } }
                    }
                    (versions_table(&loaded.name, &versions, &entry.vers))
                }
            }
        }
    };
    let frame = Frame { title: &title, description: entry.description.as_deref(), query: "", own_search: false };
    Ok(html_page(state, layout::page(&frame, content)))
}

/// The line that adds this package, naming this registry (no client has it as its
/// default: the built-in one is a local directory), and what else its users need: its
/// TUF root when it has one, and the project setting that makes it the default.
fn install_line(loaded: &Loaded, registry: &ebpkg_spec::RegistryId, tuf: bool) -> Markup {
    let package =
        if loaded.described { loaded.name.clone() } else { format!("{}@={}", loaded.name, loaded.info.entry.vers) };
    let line = format!("ebpkg add {package} --from {registry}");
    let root = format!("{registry}tuf/root.json");
    html! {
        div.copy-line {
            code #add-line { (line) }
            button type="button" data-copy=(line) aria-controls="add-line" hidden { "Copy" }
        }
        @if tuf {
            p.muted {
                "This registry signs its index (TUF): trust its root once, with the " code { "root.json" } " its \
                 operator hands you (the one served at " a href=(root) { (root) } " when they confirm it is theirs): "
                code { "ebpkg registry add " (registry_name(registry.url())) " " (registry) " --root root.json" }
            }
        }
        p.muted {
            "A project that takes its packages from here names this registry once, in its " code { ".ebpkg/config.toml" }
            " (" code { "[registry] default = \"" (registry) "\"" } "); then " code { "ebpkg add " (package) } " is enough."
        }
    }
}

/// A name for this registry in its users' configuration: the first label of its host
/// that says more than "registry" (`corp` for `registry.corp.example`), else `private`.
fn registry_name(registry: &url::Url) -> String {
    let generic = ["registry", "registries", "ebpkg", "www", "packages", "pkg"];
    let label = match registry.host() {
        Some(url::Host::Domain(host)) => host.split('.').find(|l| !generic.contains(l) && !l.is_empty()),
        _ => None,
    };
    label
        .filter(|l| l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or("private")
        .to_owned()
}

fn items_summary(loaded: &Loaded) -> Markup {
    let entry = &loaded.info.entry;
    let docs_url = docs::url(&loaded.name, &entry.vers);
    let describe =
        |kind: &str, name: &str| layout::prose(&docs::item_description(loaded.manifest.as_ref(), kind, name));
    html! {
        section aria-labelledby="items" {
            h2 #items { "Programs, loaders and chains" }
            @if entry.programs.is_empty() && entry.loaders.is_empty() && entry.chains.is_empty()
                && entry.reexports.is_empty() {
                p.muted { "This package re-exports or depends on others; it defines no items itself." }
            } @else {
                div.table-wrap tabindex="0" { table.stacked {
                    thead { tr { th scope="col" { "Item" } th scope="col" { "Kind" } th scope="col" { "Hook" }
                                 th scope="col" { "What it does" } } }
                    tbody {
                        @for p in &entry.programs {
                            tr { td { a href=(format!("{docs_url}#{}", item_anchor("program", p.name.as_str()))) {
                                    code { (p.name) } } }
                                 td data-label="Kind" { "program" } td data-label="Hook" { (p.hook) }
                                 td { (describe("program", p.name.as_str())) } }
                        }
                        @for l in &entry.loaders {
                            tr { td { a href=(format!("{docs_url}#{}", item_anchor("loader", l.name.as_str()))) {
                                    code { (l.name) } } }
                                 td data-label="Kind" { "loader" } td data-label="Hook" { (l.hook) }
                                 td { (describe("loader", l.name.as_str())) } }
                        }
                        @for c in &entry.chains {
                            tr { td { a href=(format!("{docs_url}#{}", item_anchor("chain", c.name.as_str()))) {
                                    code { (c.name) } } }
                                 td data-label="Kind" { "chain" } td data-label="Hook" { "—" }
                                 td { (describe("chain", c.name.as_str())) } }
                        }
                        @for (from, items) in &entry.reexports {
                            @for item in items {
                                tr { td { code { (item) } } td data-label="Kind" { "re-export" }
                                     td data-label="Hook" { "—" }
                                     td { "from " a href=(layout::package_url(from.as_str())) { (from) } } }
                            }
                        }
                    }
                } }
                p { a href=(docs_url) { "Full documentation: arguments, return values, maps and chain sources" } }
            }
        }
    }
}

/// The kernels this version was verified on, as its owners attested: one row
/// per kernel of each attestation, oldest attestation first.
fn kernels(loaded: &Loaded, attestations: &[db::attestations::Shown], owners: &[Owner]) -> Markup {
    let id = loaded.info.entry.id();
    // Rebuild attestations have a section of their own.
    let read: Vec<(&db::attestations::Shown, Option<KernelVerification>)> = attestations
        .iter()
        .filter(|a| rebuild_predicate(&a.bundle).is_none())
        .map(|a| (a, predicate(&a.bundle)))
        .collect();
    html! {
        section aria-labelledby="kernels" {
            h2 #kernels { "Kernels" }
            @if read.is_empty() {
                p.muted {
                    "No kernel verification has been published for this version. An owner publishes one with "
                    code { "ebpkg attest" } ": it has the version's programs verified by a kernel and signs what \
                    the verifier said, for everyone to see here and for " code { "ebpkg install" } " to read."
                }
            } @else {
                p.muted {
                    "What the kernels' verifiers said when owners loaded " (id) ", signed with their publisher keys. \
                     Another kernel, or another build of one, may say otherwise."
                }
                div.table-wrap tabindex="0" { table.stacked {
                    thead { tr { th scope="col" { "Kernel" } th scope="col" { "Architecture" }
                                 th scope="col" { "Outcome" } th scope="col" { "Observed" }
                                 th scope="col" { "Attested by" } } }
                    tbody {
                        @for (a, predicate) in &read {
                            @match predicate {
                                Some(p) => {
                                    @for k in &p.kernels {
                                        tr {
                                            td { code { (k.kernel.release) } }
                                            td data-label="Architecture" { (k.kernel.architecture) }
                                            td data-label="Outcome" { (outcome(k)) }
                                            td data-label="Observed" { (observed(&k.observed_at)) }
                                            td data-label="Attested by" { (attester(a, owners)) }
                                        }
                                    }
                                },
                                None => {
                                    tr {
                                        td { "—" } td data-label="Architecture" { "—" }
                                        td data-label="Outcome" { "an attestation this page cannot read" }
                                        td data-label="Observed" { (layout::date(&a.created_at)) }
                                        td data-label="Attested by" { (attester(a, owners)) }
                                    }
                                },
                            }
                        }
                    }
                } }
            }
        }
    }
}

/// Who rebuilt this version's shipped objects from its sources, and what they
/// found, as rebuild attestations say: one row per object of each, oldest
/// attestation first. Nothing when none was published.
fn rebuilds(attestations: &[db::attestations::Shown], owners: &[Owner]) -> Markup {
    let read: Vec<(&db::attestations::Shown, Rebuild)> =
        attestations.iter().filter_map(|a| Some((a, rebuild_predicate(&a.bundle)?))).collect();
    html! {
        @if !read.is_empty() {
            section aria-labelledby="rebuilt" {
                h2 #rebuilt { "Rebuilt by" }
                p.muted {
                    "Shipped objects rebuilt from this version's sources with the compiler each names, and compared \
                     byte for byte (" code { "ebpkg verify --rebuild" } "), each signed by the account that rebuilt \
                     them. An owner's own rebuild is informational; installs that load shipped objects only once \
                     rebuilt count the rebuilders their trust policy lists ("
                    code { "ebpkg trust rebuilder add" } ")."
                }
                div.table-wrap tabindex="0" { table.stacked {
                    thead { tr { th scope="col" { "Object" } th scope="col" { "Result" } th scope="col" { "Compiler" }
                                 th scope="col" { "Rebuilt" } th scope="col" { "Rebuilt by" } } }
                    tbody {
                        @for (a, p) in &read {
                            @for o in &p.objects {
                                tr {
                                    td { code { (o.object) } }
                                    td data-label="Result" {
                                        span.verdict.(if o.result == RebuildResult::Match { "verified" } else { "refused" }) {
                                            (o.result.name())
                                        }
                                    }
                                    td data-label="Compiler" { (o.compiler.as_deref().unwrap_or("—")) }
                                    td data-label="Rebuilt" { (observed(&p.rebuilt_at)) }
                                    td data-label="Rebuilt by" { (rebuilder(a, owners)) }
                                }
                            }
                        }
                    }
                } }
            }
        }
    }
}

/// The rebuild predicate of a stored attestation, when it is one.
fn rebuild_predicate(bundle: &str) -> Option<Rebuild> {
    let attestation = ebpkg_signing::SignedAttestation::parse(bundle.as_bytes()).ok()?;
    if attestation.statement().predicate_type != REBUILD_PREDICATE_TYPE {
        return None;
    }
    serde::Deserialize::deserialize(&attestation.statement().predicate).ok()
}

/// The predicate of a stored attestation (verified when it was accepted).
fn predicate(bundle: &str) -> Option<KernelVerification> {
    let attestation = ebpkg_signing::SignedAttestation::parse(bundle.as_bytes()).ok()?;
    serde::Deserialize::deserialize(&attestation.statement().predicate).ok()
}

fn outcome(k: &ebpkg_spec::attestation::KernelObservation) -> Markup {
    use ebpkg_spec::attestation::Outcome;
    let outcome = k.outcome();
    let text = outcome.to_string();
    html! {
        @match outcome {
            Outcome::Verified { .. } => span.verdict.verified { (layout::prose(&text)) },
            Outcome::Refused { .. } => span.verdict.refused { (layout::prose(&text)) },
        }
    }
}

/// An RFC 3339 time as a date; anything else as written.
fn observed(at: &str) -> Markup {
    match chrono::DateTime::parse_from_rfc3339(at) {
        Ok(t) => layout::date(&t.with_timezone(&chrono::Utc)),
        Err(_) => html! { (at) },
    }
}

fn attester(a: &db::attestations::Shown, owners: &[Owner]) -> Markup {
    html! {
        (attesting_key(a))
        @if !owners.iter().any(|o| o.login == a.login) { " (no longer an owner)" }
        @if let Some(at) = a.revoked_at { " — " strong { "key revoked" } " " (layout::date(&at)) }
    }
}

/// The account that signed a rebuild attestation: anyone may rebuild, so it is
/// named as itself, and an owner's own rebuild is marked as such.
fn rebuilder(a: &db::attestations::Shown, owners: &[Owner]) -> Markup {
    html! {
        (attesting_key(a))
        @if owners.iter().any(|o| o.login == a.login) { " (an owner)" }
        @if let Some(at) = a.revoked_at { " — " strong { "key revoked" } " " (layout::date(&at)) }
    }
}

/// "key <id>… of <account>".
fn attesting_key(a: &db::attestations::Shown) -> Markup {
    let key = <[u8; 32]>::try_from(a.key_id.as_slice()).map(|k| ebpkg_spec::types::KeyId(k).to_string());
    let key = key.unwrap_or_else(|_| hex::encode(&a.key_id));
    let short = key.get(..16).unwrap_or(&key);
    html! {
        "key " code title=(key) { (short) "…" } " of " a href=(format!("/users/{}", a.login)) { (a.login) }
    }
}

fn details(loaded: &Loaded, owners: &[Owner], signer: Option<&db::keys::KeyRow>) -> Markup {
    let entry = &loaded.info.entry;
    let package = loaded.manifest.as_ref().map(|m| &m.package);
    let summary = &loaded.info.summary;
    html! {
        h2.visually-hidden { "Details" }
        dl {
            dt { "Licence" } dd { (loaded.info.license.as_deref().unwrap_or("not stated")) }
            dt { "Kernel" } dd { (kernel(entry)) }
            dt { "Signature" } dd { (signature(entry, owners, signer)) }
            dt { "Owners" } dd {
                @for (i, o) in owners.iter().enumerate() {
                    @if i > 0 { ", " } a href=(format!("/users/{}", o.login)) { (o.login) }
                }
            }
            dt { "Published" } dd { (summary.published_at.get(..10).unwrap_or(&summary.published_at))
                                     " by " a href=(format!("/users/{}", summary.published_by)) { (summary.published_by) } }
            dt { "Downloads" } dd { (summary.downloads) }
            dt { "Size" } dd { (kib(summary.size)) }
            @if let Some(url) = package.and_then(|p| p.repository.as_deref()).filter(|u| is_web_url(u)) {
                dt { "Repository" } dd { a href=(url) rel="nofollow noopener" { (url) } }
            }
            @if let Some(url) = package.and_then(|p| p.homepage.as_deref()).filter(|u| is_web_url(u)) {
                dt { "Homepage" } dd { a href=(url) rel="nofollow noopener" { (url) } }
            }
            @if !entry.keywords.is_empty() {
                dt { "Keywords" } dd { @for k in &entry.keywords {
                    a.tag href=(format!("/search?q={}", url_escape(k))) { (k) } } }
            }
            dt { "SHA-256" } dd { code { (entry.cksum) } }
        }
    }
}

fn kernel(entry: &IndexEntry) -> Markup {
    let k = &entry.kernel;
    html! {
        @match &k.min { Some(min) => { "Linux ≥ " (min) }, None => { "any with BTF (CO-RE)" } }
        @if !k.program_types.is_empty() { br; "program types: " (k.program_types.join(", ")) }
        @if !k.helpers.is_empty() { br; "helpers: " (k.helpers.join(", ")) }
    }
}

fn signature(entry: &IndexEntry, owners: &[Owner], signer: Option<&db::keys::KeyRow>) -> Markup {
    let Some(key) = &entry.signed_by else {
        return html! { "unsigned" };
    };
    let short = key.to_string();
    let short = short.get(..16).unwrap_or(&short);
    html! {
        "signed with key " code title=(key) { (short) "…" }
        @if let Some(row) = signer {
            " of " a href=(format!("/users/{}", row.login)) { (row.login) }
            @if !owners.iter().any(|o| o.login == row.login) { " (no longer an owner)" }
            @if let Some(at) = row.revoked_at { " — key revoked " (layout::date(&at)) }
        }
    }
}

fn dependencies(entry: &IndexEntry) -> Markup {
    html! {
        section aria-labelledby="deps" {
            h2 #deps { "Dependencies" }
            @if entry.deps.is_empty() { p.muted { "None." } }
            ul {
                @for d in &entry.deps {
                    li {
                        @match &d.registry {
                            None => a href=(layout::package_url(d.name.as_str())) { (d.name) },
                            Some(registry) => span title=(registry) { (d.name) " (from " (registry) ")" },
                        }
                        " " code { (d.req) }
                    }
                }
            }
        }
    }
}

fn versions_table(name: &str, versions: &[VersionSummary], shown: &semver::Version) -> Markup {
    html! {
        section aria-labelledby="versions" {
            h2 #versions { "Versions" }
            div.table-wrap tabindex="0" { table {
                thead { tr { th scope="col" { "Version" } th scope="col" { "Published" } th scope="col" { "Downloads" } } }
                tbody {
                    @for v in versions.iter().rev() {
                        tr {
                            td {
                                @if &v.vers == shown { strong aria-current="page" { (v.vers) } }
                                @else { a href=(format!("{}/{}", layout::package_url(name), v.vers)) { (v.vers) } }
                                @if v.yanked { " " span.tag.yanked { "yanked" } }
                            }
                            td { (v.published_at.get(..10).unwrap_or(&v.published_at)) }
                            td { (v.downloads) }
                        }
                    }
                }
            } }
        }
    }
}

fn kib(bytes: u64) -> String {
    if bytes < 1024 { format!("{bytes} B") } else { format!("{:.1} KiB", bytes as f64 / 1024.0) }
}

/// Only http(s) URLs become links (a manifest could say `javascript:`).
fn is_web_url(url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// Whether a README's first block is a heading (`# Title` or a setext title).
fn readme_has_title(markdown: Option<&str>) -> bool {
    let Some(markdown) = markdown else { return false };
    let mut lines = markdown.lines().skip_while(|l| l.trim().is_empty());
    let first = lines.next().unwrap_or_default();
    let second = lines.next().unwrap_or_default().trim();
    first.starts_with('#') || (!first.trim().is_empty() && !second.is_empty() && second.chars().all(|c| c == '='))
}

#[cfg(test)]
mod tests {
    use super::registry_name;

    #[test]
    fn a_registry_is_named_for_its_host() {
        let name = |u: &str| registry_name(&url::Url::parse(u).unwrap());
        assert_eq!(name("https://registry.corp.example/"), "corp");
        assert_eq!(name("https://ebpkg.example.org/"), "example");
        assert_eq!(name("http://127.0.0.1:8080/"), "private");
        assert_eq!(name("http://[::1]:8080/"), "private");
    }
}
