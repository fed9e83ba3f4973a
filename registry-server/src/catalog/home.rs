//! `/`: search first, then what is new.

use axum::extract::State;
use maud::html;

use super::layout::{self, Frame};
use super::{PageResult, html_page};
use crate::db::catalog::{self, Recent};
use crate::state::AppState;

const LISTED: i64 = 10;

pub async fn home(State(state): State<AppState>) -> PageResult {
    let total = catalog::count(&state.db).await?;
    let created = catalog::recent(&state.db, Recent::Created, LISTED).await?;
    let updated = catalog::recent(&state.db, Recent::Updated, LISTED).await?;
    let content = html! {
        section.hero aria-labelledby="hero-title" {
            h1 #hero-title { "Reusable eBPF programs, chains and loaders" }
            p.lead {
                "Find a HIKe program for your packet processing, read what it takes and returns, and add it to \
                 your project with one command. "
                (total) " package" @if total != 1 { "s" } " in this registry."
            }
            (layout::search_form("q-home", ""))
        }
        div.columns {
            section aria-labelledby="new" {
                h2 #new { "New packages" }
                @if created.is_empty() { p.muted { "Nothing published yet: " code { "ebpkg publish" } " is the way." } }
                (layout::package_list(&created, "first published"))
            }
            section aria-labelledby="updated" {
                h2 #updated { "Recently updated" }
                @if updated.is_empty() && !created.is_empty() {
                    p.muted { "No package has a new version since it was first published." }
                }
                (layout::package_list(&updated, "updated"))
            }
        }
    };
    let frame = Frame {
        title: "ebpkg: the eBPF package registry",
        description: Some("Search and browse HIKe eBPF programs, chain loaders and chains."),
        query: "",
        own_search: true,
    };
    Ok(html_page(&state, layout::page(&frame, content)))
}
