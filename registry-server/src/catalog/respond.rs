//! Turning a rendered page into a response: its validator (a weak ETag over
//! the body; `page_cache` answers `If-None-Match`), caching and the security
//! headers every page carries.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::config::Config;

/// Pages change when something is published; a minute of staleness is the
/// price of letting browsers and caches skip most requests.
fn page_cache_control(config: &Config) -> HeaderValue {
    HeaderValue::from_static(if config.auth_required { "private, max-age=60" } else { "public, max-age=60" })
}

/// Scripts and styles only from this origin; images from anywhere over https
/// (READMEs show badges); nothing may frame the catalog.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; \
                   form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// A `200` page with its ETag.
pub fn page(config: &Config, content_type: &'static str, body: String) -> Response {
    // Weak: the compression layer may change the bytes, not the meaning.
    let etag = format!("W/\"{}\"", hex::encode(&Sha256::digest(body.as_bytes())[..16]));
    let mut headers = HeaderMap::new();
    headers.insert(header::CACHE_CONTROL, page_cache_control(config));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    // Pages differ by token for a private registry; compression by encoding.
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding, Authorization"));
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    security_headers(&mut headers);
    (StatusCode::OK, headers, body).into_response()
}

/// An error page: never cached as if it were the answer for good.
pub fn error_page(status: StatusCode, body: String) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    security_headers(&mut headers);
    (status, headers, body).into_response()
}

pub fn not_found_text(detail: &str) -> Response {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8"), (header::CACHE_CONTROL, "no-cache")],
        format!("{detail}\n"),
    )
        .into_response()
}

fn security_headers(headers: &mut HeaderMap) {
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
}

/// Whether an `If-None-Match` value names `etag` (weak comparison, as RFC 9110
/// wants for GET): any listed tag, with or without `W/`, or `*`.
pub fn matches_etag(if_none_match: &HeaderValue, etag: &str) -> bool {
    let ours = etag.trim_start_matches("W/");
    if_none_match.to_str().ok().into_iter().flat_map(|v| v.split(',')).any(|tag| {
        let tag = tag.trim();
        tag == "*" || tag.trim_start_matches("W/") == ours
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(inm: &'static str) -> HeaderValue {
        HeaderValue::from_static(inm)
    }

    #[test]
    fn if_none_match_compares_weakly_and_accepts_lists() {
        assert!(matches_etag(&value("W/\"abc\""), "W/\"abc\""));
        assert!(matches_etag(&value("\"abc\""), "W/\"abc\""));
        assert!(matches_etag(&value("\"x\", W/\"abc\""), "W/\"abc\""));
        assert!(matches_etag(&value("*"), "W/\"abc\""));
        assert!(!matches_etag(&value("W/\"abd\""), "W/\"abc\""));
        assert!(!matches_etag(&value(""), "W/\"abc\""));
    }
}
