//! Prometheus metrics: requests by route and status, latency histograms,
//! publishes, downloads, the database pool.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::state::AppState;

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The process's recorder, installed on first use. (One per process: servers
/// started in one test process share it.)
pub fn handle() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];
            let builder =
                PrometheusBuilder::new().set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &buckets).ok()?;
            match builder.install_recorder() {
                Ok(handle) => Some(handle),
                Err(e) => {
                    tracing::warn!(error = %e, "metrics disabled: no recorder could be installed");
                    None
                }
            }
        })
        .as_ref()
}

/// Records every request: by matched route (never the raw path, so labels stay
/// few), method and status.
pub async fn track(State(_): State<AppState>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_owned();
    let method = request.method().as_str().to_owned();
    let start = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("ebpkg_registry_requests_total", "route" => route.clone(), "method" => method.clone(), "status" => status)
        .increment(1);
    metrics::histogram!("ebpkg_registry_request_duration_seconds", "route" => route, "method" => method)
        .record(start.elapsed().as_secs_f64());
    response
}

/// The text exposition, with the pool's gauges as of now.
pub fn render(state: &AppState) -> String {
    metrics::gauge!("ebpkg_registry_db_pool_connections").set(f64::from(state.db.size()));
    metrics::gauge!("ebpkg_registry_db_pool_idle").set(state.db.num_idle() as f64);
    handle().map(PrometheusHandle::render).unwrap_or_default()
}
