//! `/sitemap.xml` and `/robots.txt`, so search engines find every package page.

use std::fmt::Write as _;

use axum::extract::State;

use super::PageResult;
use crate::db;
use crate::state::AppState;

/// The sitemap protocol's limit for one file.
const MAX_URLS: i64 = 50_000;

pub async fn sitemap(State(state): State<AppState>) -> PageResult {
    let base = base_url(&state);
    let packages = db::catalog::sitemap(&state.db, MAX_URLS - 1).await?;
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    let _ = writeln!(xml, "<url><loc>{base}/</loc></url>");
    for (name, at) in &packages {
        // Package names are [A-Za-z0-9_-]: nothing to escape.
        let _ =
            writeln!(xml, "<url><loc>{base}/packages/{name}</loc><lastmod>{}</lastmod></url>", at.format("%Y-%m-%d"));
    }
    xml.push_str("</urlset>\n");
    Ok(super::respond::page(&state.config, "application/xml; charset=utf-8", xml))
}

pub async fn robots(State(state): State<AppState>) -> PageResult {
    let text =
        format!("User-agent: *\nDisallow: /api/\nDisallow: /index/\nSitemap: {}/sitemap.xml\n", base_url(&state));
    Ok(super::respond::page(&state.config, "text/plain; charset=utf-8", text))
}

fn base_url(state: &AppState) -> String {
    state.config.public_url.as_str().trim_end_matches('/').to_owned()
}
