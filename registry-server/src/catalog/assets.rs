//! The catalog's static files, embedded in the binary and served under names
//! that carry their content's hash, so they are cached forever and a new
//! release's files are fetched at once.

use std::sync::LazyLock;

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::state::AppState;

pub struct Asset {
    /// `/static/catalog.<hash>.css`.
    pub path: String,
    body: &'static [u8],
    content_type: &'static str,
}

fn asset(stem: &str, ext: &str, body: &'static [u8], content_type: &'static str) -> Asset {
    let hash = hex::encode(&Sha256::digest(body)[..6]);
    Asset { path: format!("/static/{stem}.{hash}.{ext}"), body, content_type }
}

pub static CSS: LazyLock<Asset> =
    LazyLock::new(|| asset("catalog", "css", include_bytes!("assets/catalog.css"), "text/css; charset=utf-8"));
pub static JS: LazyLock<Asset> =
    LazyLock::new(|| asset("catalog", "js", include_bytes!("assets/catalog.js"), "text/javascript; charset=utf-8"));
pub static ICON: LazyLock<Asset> =
    LazyLock::new(|| asset("favicon", "svg", include_bytes!("assets/favicon.svg"), "image/svg+xml"));

/// `GET /static/{file}`.
pub async fn serve(State(state): State<AppState>, Path(file): Path<String>) -> Response {
    let wanted = format!("/static/{file}");
    let Some(asset) = [&*CSS, &*JS, &*ICON].into_iter().find(|a| a.path == wanted) else {
        return super::respond::not_found_text(&format!("no static file `{file}` (names change with each release)"));
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type)),
            (header::CACHE_CONTROL, state.config.immutable_cache_control()),
            (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        ],
        asset.body,
    )
        .into_response()
}

/// `GET /favicon.ico`: browsers ask for it whatever the page says.
pub async fn favicon() -> Response {
    axum::response::Redirect::permanent(&ICON.path).into_response()
}
