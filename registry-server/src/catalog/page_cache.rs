//! Rendered pages in memory for a few seconds. A package page costs several
//! queries to render (0.04× nginx serving the same HTML in `registry-bench`);
//! a browsing crowd asks for the same few pages. An entry is dropped at any
//! change to any package (the index cache's epoch, bumped by every NOTIFY and by
//! this replica's own publishes), so a publish shows at once; what no
//! notification announces (owners, download counts) is at most [`TTL`] old —
//! and pages tell browsers `max-age=60` anyway. When an entry expires, one
//! request renders it again while the others are still served the old one
//! (without this, 64 clients re-rendered at once every [`TTL`]: a p99 of 25 ms).
//! Nothing is kept while the listener is down. Revalidation (`If-None-Match` →
//! 304) is answered here, hit or miss.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::CatalogState;

const TTL: Duration = Duration::from_secs(10);
/// Distinct URLs kept (a search per query string): emptied when full.
const MAX_ENTRIES: usize = 4096;
/// Larger pages are served but not kept.
const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;

struct Page {
    headers: HeaderMap,
    body: Bytes,
    epoch: u64,
    at: Instant,
    /// A request is rendering this page's successor.
    refreshing: AtomicBool,
}

enum Lookup {
    Hit(Arc<Page>),
    /// Expired, and this request renders the successor; the old page is served
    /// if that fails (the database is down).
    Refresh(Arc<Page>),
    Miss,
}

#[derive(Default)]
pub struct PageCache {
    pages: RwLock<HashMap<String, Arc<Page>>>,
}

impl PageCache {
    fn get(&self, key: &str, epoch: Option<u64>) -> Lookup {
        let Some(epoch) = epoch else { return Lookup::Miss };
        let pages = self.pages.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(page) = pages.get(key).filter(|p| p.epoch == epoch) else { return Lookup::Miss };
        // Expired: the first to notice renders; the rest get the old page meanwhile.
        if page.at.elapsed() >= TTL && !page.refreshing.swap(true, Ordering::AcqRel) {
            return Lookup::Refresh(page.clone());
        }
        Lookup::Hit(page.clone())
    }

    fn put(&self, key: String, page: Arc<Page>) {
        let mut pages = self.pages.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if pages.len() >= MAX_ENTRIES {
            pages.clear();
        }
        pages.insert(key, page);
    }
}

/// The middleware in front of every page.
pub(super) async fn cached(State(state): State<CatalogState>, mut request: Request, next: Next) -> Response {
    let key = request.uri().path_and_query().map_or_else(|| request.uri().path().to_owned(), |p| p.to_string());
    // Taken off the request: the page below always renders in full, and the
    // comparison is made here, against the cached page or the fresh one.
    let conditional: Vec<_> = request.headers_mut().remove(header::IF_NONE_MATCH).into_iter().collect();
    let (page, old) = match state.pages.get(&key, state.app.index_cache.trusted_epoch()) {
        Lookup::Hit(page) => (Some(page), None),
        Lookup::Refresh(old) => (None, Some(old)),
        Lookup::Miss => (None, None),
    };
    let page = match page {
        Some(page) => page,
        None => {
            // Read before rendering: a change during the render makes the entry stale at once.
            let epoch = state.app.index_cache.trusted_epoch();
            let response = next.run(request).await;
            if response.status() != StatusCode::OK {
                return match old {
                    Some(old) if response.status().is_server_error() => {
                        old.refreshing.store(false, Ordering::Release);
                        serve(&old, &conditional)
                    }
                    _ => response,
                };
            }
            let (parts, body) = response.into_parts();
            let Ok(body) = axum::body::to_bytes(body, MAX_PAGE_BYTES).await else {
                return super::PageError::new(StatusCode::INTERNAL_SERVER_ERROR, "The page is too large to send.")
                    .into_response();
            };
            let page = Arc::new(Page {
                headers: parts.headers,
                body,
                epoch: epoch.unwrap_or(0),
                at: Instant::now(),
                refreshing: AtomicBool::new(false),
            });
            if epoch.is_some() {
                state.pages.put(key, page.clone());
            }
            page
        }
    };
    serve(&page, &conditional)
}

/// `304` when a validator names the page, else the page.
fn serve(page: &Page, conditional: &[axum::http::HeaderValue]) -> Response {
    let etag = page.headers.get(header::ETAG).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if !etag.is_empty() && conditional.iter().any(|v| super::respond::matches_etag(v, etag)) {
        let mut headers = HeaderMap::new();
        for name in [header::ETAG, header::CACHE_CONTROL, header::VARY] {
            if let Some(v) = page.headers.get(&name) {
                headers.insert(name, v.clone());
            }
        }
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    let mut response = Response::new(Body::from(page.body.clone()));
    *response.headers_mut() = page.headers.clone();
    response
}
