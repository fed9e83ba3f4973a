//! `/search?q=&page=`: the API's search (same query, same ranking), as a page.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use ebpkg_spec::registry_api::{MatchedOn, limits};
use maud::html;

use super::layout::{self, Frame};
use super::{PageError, PageResult, html_page};
use crate::db;
use crate::search::SearchParams;
use crate::state::AppState;

const PER_PAGE: u32 = 20;

pub async fn search(State(state): State<AppState>, Query(params): Query<SearchParams>) -> PageResult {
    // The API's rule: the page searches what the API searches.
    if !limits::valid_search_query(&params.q) {
        return Err(PageError::new(
            StatusCode::BAD_REQUEST,
            &format!(
                "The search is longer than {} characters or holds a control character; search for words.",
                limits::SEARCH_QUERY_MAX
            ),
        ));
    }
    let page = params.page.unwrap_or(1).clamp(1, limits::MAX_PAGE);
    let (hits, total) = db::packages::search(&state.db, &params.q, page, PER_PAGE).await?;
    let pages = total.div_ceil(u64::from(PER_PAGE)).max(1);
    let query = params.q.trim();
    let title = if query.is_empty() { "All packages".to_owned() } else { format!("Search: {query}") };
    let link = |page: u32| format!("/search?q={}&page={page}", url_escape(query));
    let content = html! {
        h1 { (title) }
        p.muted role="status" {
            (total) " package" @if total != 1 { "s" }
            @if !query.is_empty() { " match " q { (query) } }
            @if pages > 1 { ", page " (page) " of " (pages) }
            "."
        }
        ul.packages {
            @for hit in &hits {
                li {
                    a.name href=(layout::package_url(hit.name.as_str())) { (hit.name) }
                    " " span.version { (hit.version) }
                    @if hit.yanked { " " span.tag.yanked { "yanked" } }
                    @if let Some(d) = &hit.description { div { (layout::prose(d)) } }
                    div.meta {
                        (matched(hit.matched_on))
                        @for k in &hit.keywords { " " a.tag href=(format!("/search?q={}", url_escape(k))) { (k) } }
                    }
                    @if !hit.programs.is_empty() {
                        div.meta { "Programs: "
                            @for (i, p) in hit.programs.iter().enumerate() {
                                @if i > 0 { ", " } code { (p) }
                            }
                        }
                    }
                }
            }
        }
        @if hits.is_empty() && !query.is_empty() {
            p { "Nothing matched. Try a program's name, a keyword such as " a href="/search?q=ddos" { "ddos" }
                ", or " a href="/search" { "browse every package" } "." }
        }
        @if pages > 1 {
            nav.pages aria-label="Result pages" {
                @if page > 1 { a href=(link(page - 1)) rel="prev" { "← Previous" } }
                @if u64::from(page) < pages { a href=(link(page + 1)) rel="next" { "Next →" } }
            }
        }
    };
    let frame = Frame { title: &title, description: None, query, own_search: false };
    Ok(html_page(&state, layout::page(&frame, content)))
}

fn matched(on: MatchedOn) -> &'static str {
    match on {
        MatchedOn::Name => "Exact name",
        MatchedOn::NamePrefix => "Name starts with the search",
        MatchedOn::NameSubstring => "Name contains the search",
        MatchedOn::Keyword => "Keyword",
        MatchedOn::Program => "Program name",
        MatchedOn::Description => "Description",
        MatchedOn::Everything => "",
    }
}

/// A query string value: everything but unreserved characters percent-encoded.
pub fn url_escape(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
