//! The web catalog: server-rendered pages for people choosing packages (home,
//! search, package, per-item documentation, owners), a sitemap, and 404 pages
//! that suggest close names. Templates are compiled (maud: escaping by
//! default); the only script is a progressive "Copy" button.

mod assets;
mod docs;
mod home;
mod layout;
pub mod markdown;
mod owner;
mod package;
mod page_cache;
mod respond;
mod search;
mod sitemap;

use std::sync::Arc;

use axum::Router;
use axum::extract::FromRef;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use maud::{Markup, html};

use crate::error::ApiError;
use crate::state::AppState;

/// What the catalog's handlers are given: the application's state, and the
/// catalog's own caches, which nothing else reads (so `AppState` knows nothing of
/// the catalog). A handler takes `State<AppState>` or a cache, by [`FromRef`].
#[derive(Clone)]
struct CatalogState {
    app: AppState,
    /// The rendered pages, for seconds.
    pages: Arc<page_cache::PageCache>,
    /// READMEs rendered for the package pages.
    readmes: Arc<markdown::ReadmeCache>,
}

impl FromRef<CatalogState> for AppState {
    fn from_ref(state: &CatalogState) -> AppState {
        state.app.clone()
    }
}

impl FromRef<CatalogState> for Arc<markdown::ReadmeCache> {
    fn from_ref(state: &CatalogState) -> Arc<markdown::ReadmeCache> {
        state.readmes.clone()
    }
}

/// The pages (cached briefly, rate-limited by `limit` like the API) and their
/// static files. The caches live as long as the router.
pub fn router(state: &AppState, limit: impl Fn(Router<AppState>) -> Router<AppState>) -> Router<AppState> {
    let state = CatalogState { app: state.clone(), pages: Arc::default(), readmes: Arc::default() };
    let pages = Router::new()
        .route("/", get(home::home))
        .route("/search", get(search::search))
        .route("/packages/{name}", get(package::page))
        .route("/packages/{name}/docs", get(docs::page))
        .route("/packages/{name}/{version}", get(package::page))
        .route("/packages/{name}/{version}/docs", get(docs::page))
        .route("/users/{login}", get(owner::owner))
        .route("/sitemap.xml", get(sitemap::sitemap))
        .route("/robots.txt", get(sitemap::robots));
    let pages = pages.route_layer(axum::middleware::from_fn_with_state(state.clone(), page_cache::cached));
    let files = Router::new().route("/static/{file}", get(assets::serve)).route("/favicon.ico", get(assets::favicon));
    limit(pages.with_state(state.clone())).merge(files.with_state(state))
}

type PageResult = Result<Response, PageError>;

/// A page that is not shown: one saying why (a person reads it), or a
/// permanent redirect to where the page is.
pub enum PageError {
    Page { status: StatusCode, title: String, content: Markup },
    Moved(String),
}

impl PageError {
    pub fn new(status: StatusCode, message: &str) -> PageError {
        PageError::Page {
            status,
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            content: html! { p { (message) } },
        }
    }

    pub fn not_found(title: String, content: Markup) -> PageError {
        PageError::Page { status: StatusCode::NOT_FOUND, title, content }
    }
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> PageError {
        PageError::new(e.status, &e.detail)
    }
}

impl From<sqlx::Error> for PageError {
    fn from(e: sqlx::Error) -> PageError {
        ApiError::from(e).into()
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, title, content) = match self {
            PageError::Page { status, title, content } => (status, title, content),
            PageError::Moved(url) => return axum::response::Redirect::permanent(&url).into_response(),
        };
        let content = html! {
            h1 { (title) }
            (content)
            (layout::search_form("q-error", ""))
            p { a href="/" { "Home" } }
        };
        let frame = layout::Frame { title: &title, description: None, query: "", own_search: false };
        respond::error_page(status, layout::page(&frame, content).into_string())
    }
}

fn html_page(state: &AppState, markup: Markup) -> Response {
    respond::page(&state.config, "text/html; charset=utf-8", markup.into_string())
}

/// What an unknown path answers: a page for a browser, the API's JSON error
/// for everything else.
pub fn fallback(headers: &HeaderMap) -> Response {
    let wants_html =
        headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|accept| accept.contains("text/html"));
    if wants_html {
        PageError::not_found(
            "Page not found".to_owned(),
            html! {
                p { "Nothing is here. Search for a package instead:" }
            },
        )
        .into_response()
    } else {
        ApiError::not_found("no such route in this registry's API").into_response()
    }
}
