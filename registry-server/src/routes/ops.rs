//! For operators and load balancers: liveness, readiness, metrics.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::state::AppState;

/// The process is up.
#[utoipa::path(get, path = "/healthz", operation_id = "healthz", tag = "operations", responses((status = 200, description = "Alive")))]
pub async fn healthz() -> &'static str {
    "ok\n"
}

/// The database (with the current schema) and the blob store answer.
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "operations",
    responses((status = 200, description = "Ready"), (status = 503, description = "What is not reachable")))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    let mut problems = Vec::new();
    match crate::db::schema_is_current(&state.db).await {
        Ok(true) => {}
        Ok(false) => problems.push("database: the schema is not current; run `ebpkg-registry migrate`".to_owned()),
        Err(e) => problems.push(format!("database: {e}")),
    }
    if let Err(e) = state.blobs.check().await {
        problems.push(format!("blob store: {e}"));
    }
    if problems.is_empty() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, format!("not ready\n{}\n", problems.join("\n"))).into_response()
    }
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", operation_id = "metrics", tag = "operations", responses((status = 200, description = "Metrics", content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> Response {
    let mut response = crate::metrics::render(&state).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    response
}
