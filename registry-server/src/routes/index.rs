//! The sparse index: `index/config.json` and one file per package, with cargo's
//! caching semantics (strong ETag, Last-Modified, 304s, `max-age=600`).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The sparse index configuration.
#[utoipa::path(get, path = "/index/config.json", operation_id = "get_index_config", tag = "index",
    responses((status = 200, description = "Where archives and the API are", content_type = "application/json")))]
pub async fn config(State(state): State<AppState>) -> Response {
    let mut response =
        ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], state.config.index_config_bytes())
            .into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, state.config.index_cache_control());
    response
}

/// One package's index file: a JSON line per version (SPEC §6).
#[utoipa::path(get, path = "/index/{path}", operation_id = "get_index_file", tag = "index",
    params(("path" = String, Path, description = "The package's index path: `1/a`, `3/n/net`, `me/te/meter`")),
    responses(
        (status = 200, description = "The index file", content_type = "text/plain"),
        (status = 304, description = "Not modified since the ETag or date given"),
        (status = 404, description = "No such package")))]
pub async fn file(State(state): State<AppState>, Path(path): Path<String>, headers: HeaderMap) -> ApiResult<Response> {
    let name = path.rsplit('/').next().unwrap_or_default();
    // The name is checked first: only a package name has an index path.
    let wanted = if ebpkg_spec::PackageName::new(name).is_ok() { ebpkg_spec::index_path(name) } else { String::new() };
    if wanted.is_empty() || !path.eq_ignore_ascii_case(&wanted) {
        return Err(ApiError::not_found(format!("`index/{path}` is not the index path of a package")));
    }
    let normalized = ebpkg_spec::names::normalize(name);
    let file = match state.index_cache.get(&normalized) {
        Some(file) => {
            metrics::counter!("ebpkg_registry_index_cache_total", "result" => "hit").increment(1);
            file
        }
        None => {
            metrics::counter!("ebpkg_registry_index_cache_total", "result" => "miss").increment(1);
            let epoch = state.index_cache.epoch();
            let Some(file) = db::packages::index_file(&state.db, &normalized).await? else {
                return Err(ApiError::not_found(format!("no package `{name}` in this registry")));
            };
            let file = std::sync::Arc::new(file);
            state.index_cache.fill(&normalized, file.clone(), epoch);
            file
        }
    };
    let etag = format!("\"{}\"", hex::encode(&file.index_sha256));
    let modified = file.index_modified_at.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let mut out = HeaderMap::new();
    out.insert(header::CACHE_CONTROL, state.config.index_cache_control());
    if let Ok(v) = HeaderValue::from_str(&etag) {
        out.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&modified) {
        out.insert(header::LAST_MODIFIED, v);
    }
    if not_modified(&headers, &etag, file.index_modified_at) {
        return Ok((StatusCode::NOT_MODIFIED, out).into_response());
    }
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    Ok((out, file.index_file.clone()).into_response())
}

/// RFC 9110 §13.2.2: If-None-Match decides when present; otherwise
/// If-Modified-Since (to the second).
fn not_modified(headers: &HeaderMap, etag: &str, modified: chrono::DateTime<chrono::Utc>) -> bool {
    if let Some(matches) = etag_matches(headers, etag) {
        return matches;
    }
    headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| chrono::DateTime::parse_from_rfc2822(v).ok())
        .is_some_and(|since| modified.timestamp() <= since.timestamp())
}

/// Whether If-None-Match names `etag` (weakly compared, as for GET); `None`
/// without one.
pub(crate) fn etag_matches(headers: &HeaderMap, etag: &str) -> Option<bool> {
    let inm = headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok())?;
    Some(inm.split(',').map(str::trim).any(|t| t == "*" || t == etag || t.strip_prefix("W/") == Some(etag)))
}

/// A TUF metadata file (`timestamp.json`, `snapshot.json`, `root.json`,
/// `N.root.json`, `targets.json`, `bins-X.json`). Never cached without
/// revalidation: the timestamp is what tells clients that nothing is withheld.
/// A strong ETag (the file's SHA-256) lets a client ask whether the timestamp
/// changed for a 304 — all a warm resolution asks when nothing was published.
#[utoipa::path(get, path = "/tuf/{file}", operation_id = "get_tuf_metadata", tag = "index", params(("file" = String, Path)),
    responses((status = 200, description = "The metadata file", content_type = "application/json"),
        (status = 304, description = "Not modified since the ETag given"),
        (status = 404, description = "No such file, or no TUF metadata")))]
pub async fn tuf_file(
    State(state): State<AppState>,
    Path(file): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let plausible = file.len() <= 64
        && file.ends_with(".json")
        && file.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-');
    if plausible {
        crate::tuf::sign_config(&state).await?;
    }
    let bytes = if plausible { db::tuf::file(&state.db, &file).await? } else { None };
    let Some(bytes) = bytes else {
        return Err(ApiError::not_found(format!("this registry has no TUF metadata file `{file}`")));
    };
    use sha2::Digest;
    let etag = format!("\"{}\"", hex::encode(sha2::Sha256::digest(&bytes)));
    let mut out = HeaderMap::new();
    let cache = if state.config.auth_required { "private, no-cache" } else { "no-cache" };
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        out.insert(header::ETAG, v);
    }
    if etag_matches(&headers, &etag) == Some(true) {
        return Ok((StatusCode::NOT_MODIFIED, out).into_response());
    }
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok((out, bytes).into_response())
}
