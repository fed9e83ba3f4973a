//! The frame every page shares: head, the site bar with its search form, and
//! the footer. Semantic landmarks (header, nav, main, footer), a skip link and
//! labelled controls, so a keyboard or screen reader gets around as well as a
//! mouse does.

use maud::{DOCTYPE, Markup, html};

use super::assets::{CSS, ICON, JS};

/// What the frame needs to know about the page inside it.
pub struct Frame<'a> {
    pub title: &'a str,
    /// For `<meta name="description">` (search engines, link previews).
    pub description: Option<&'a str>,
    /// Shown in the search box (the query of a results page).
    pub query: &'a str,
    /// The page has its own search form (home): none in the site bar.
    pub own_search: bool,
}

pub fn page(frame: &Frame<'_>, content: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (frame.title) " · ebpkg" }
                @if let Some(description) = frame.description {
                    meta name="description" content=(description);
                }
                link rel="stylesheet" href=(CSS.path);
                link rel="icon" type="image/svg+xml" href=(ICON.path);
                script src=(JS.path) defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    nav aria-label="Site" {
                        a.brand href="/" { "eb" span { "pkg" } }
                        @if !frame.own_search { (search_form("q-top", frame.query)) }
                    }
                }
                main #main { (content) }
                footer {
                    div.inner {
                        "ebpkg registry · "
                        a href="/api/openapi.json" { "API" }
                        " · "
                        a href="/sitemap.xml" { "Sitemap" }
                    }
                }
            }
        }
    }
}

/// The search form; `id` keeps two forms on one page apart for their labels.
pub fn search_form(id: &str, query: &str) -> Markup {
    html! {
        form.search role="search" action="/search" method="get" {
            label.visually-hidden for=(id) { "Search packages" }
            input id=(id) type="search" name="q" value=(query) maxlength="256"
                placeholder="Search packages, programs, keywords" autocomplete="off";
            button type="submit" { "Search" }
        }
    }
}

/// A list of packages with their versions and descriptions.
pub fn package_list(packages: &[crate::db::catalog::Listed], date_label: &str) -> Markup {
    html! {
        ul.packages {
            @for p in packages {
                li {
                    a.name href=(package_url(&p.name)) { (p.name) }
                    " "
                    span.version { (p.described_version) }
                    @if p.all_yanked { " " span.tag.yanked { "yanked" } }
                    @if let Some(d) = &p.description { div { (prose(d)) } }
                    div.meta { (date_label) " " (date(&p.at)) }
                }
            }
        }
    }
}

/// Plain text in which `backticked` spans are code, as manifests' descriptions
/// are written.
pub fn prose(text: &str) -> Markup {
    html! {
        @for (i, part) in text.split('`').enumerate() {
            @if i % 2 == 1 { code { (part) } } @else { (part) }
        }
    }
}

pub fn package_url(name: &str) -> String {
    format!("/packages/{name}")
}

pub fn date(at: &chrono::DateTime<chrono::Utc>) -> Markup {
    html! { time datetime=(at.to_rfc3339()) { (at.format("%Y-%m-%d")) } }
}
