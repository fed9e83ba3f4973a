//! The server's errors: configuration problems at start, and API errors, which
//! become `{"errors":[{"detail":…}]}` responses with the right status.

use std::path::PathBuf;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ebpkg_spec::registry_api::ApiErrors;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no {setting} is set; give it with {how}")]
    Missing { setting: &'static str, how: &'static str },
    #[error("{setting} `{value}`: {why}")]
    Invalid { setting: &'static str, value: String, why: String },
    #[error("{}: {why}", path.display())]
    File { path: PathBuf, why: String },
}

/// An error an API request ends with.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub detail: String,
    /// Seconds, for `429`.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> ApiError {
        ApiError { status, detail: detail.into(), retry_after: None }
    }
    pub fn bad_request(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, detail)
    }
    pub fn unauthorized(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, detail)
    }
    pub fn forbidden(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, detail)
    }
    pub fn not_found(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, detail)
    }
    pub fn conflict(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, detail)
    }
    pub fn too_large(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, detail)
    }
    pub fn rate_limited(detail: impl Into<String>, retry_after: u64) -> ApiError {
        ApiError { status: StatusCode::TOO_MANY_REQUESTS, detail: detail.into(), retry_after: Some(retry_after.max(1)) }
    }
    pub fn unavailable(detail: impl Into<String>) -> ApiError {
        ApiError { status: StatusCode::SERVICE_UNAVAILABLE, detail: detail.into(), retry_after: Some(5) }
    }
    pub fn internal(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, detail)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(status = %self.status, detail = %self.detail, "request failed");
        }
        let mut response = (self.status, axum::Json(ApiErrors::one(self.detail))).into_response();
        if let Some(secs) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> ApiError {
        match &e {
            // The database is down or overloaded: the client may retry later.
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) | sqlx::Error::Tls(_) => {
                ApiError::unavailable(format!("the registry's database is unavailable ({e}); retry later"))
            }
            sqlx::Error::Database(db) if db.code().is_some_and(|c| c.starts_with("57P") || c.starts_with("08")) => {
                ApiError::unavailable(format!("the registry's database is unavailable ({e}); retry later"))
            }
            // A value from the request PostgreSQL cannot hold — a NUL or bad byte in
            // text, a string too long, a number out of range — that no handler's check
            // caught: the request's fault. (Other data exceptions are the server's.)
            sqlx::Error::Database(db)
                if db.code().is_some_and(|c| matches!(c.as_ref(), "22021" | "22P05" | "22001" | "22003")) =>
            {
                tracing::warn!(error = %e, "a request held a value the database refused");
                ApiError::bad_request(
                    "the request holds a value the registry cannot store (a NUL character, text too long, or a \
                     number out of range)",
                )
            }
            _ => {
                tracing::error!(error = %e, "database error");
                ApiError::internal("internal error in the registry's database layer; the operator's logs have details")
            }
        }
    }
}

impl From<object_store::Error> for ApiError {
    fn from(e: object_store::Error) -> ApiError {
        tracing::error!(error = %e, "blob store error");
        ApiError::unavailable(format!("the registry's blob store is unavailable ({e}); retry later"))
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// Gives the API's error shape (`{"errors": [{"detail": …}]}`) to the errors
/// answered by axum's extractors and tower's layers (plain text or empty), on the
/// API, index and TUF paths; the catalog's pages keep their HTML.
pub async fn json_errors(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let path = request.uri().path();
    let api = ["/api/", "/index/", "/tuf/"].iter().any(|p| path.starts_with(p));
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !api || is_json || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    // What axum said (`Failed to deserialize the JSON body…: missing field`), bounded.
    let said = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let said = String::from_utf8_lossy(&said).trim().to_owned();
    let detail = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "the request body is larger than this registry accepts".to_owned(),
        StatusCode::REQUEST_TIMEOUT => "the request took too long; retry, or send it faster".to_owned(),
        StatusCode::METHOD_NOT_ALLOWED => "this path does not answer that method".to_owned(),
        _ if !said.is_empty() => said,
        _ => status.canonical_reason().unwrap_or("the request was refused").to_owned(),
    };
    let mut out = ApiError::new(status, detail).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH && name != header::CONTENT_ENCODING {
            out.headers_mut().append(name.clone(), value.clone());
        }
    }
    out
}
