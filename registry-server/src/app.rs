//! The router with its layers, and a running server.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tower_http::LatencyUnit;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::predicate::{NotForContentType, Predicate};
use tower_http::compression::{CompressionLayer, DefaultPredicate};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::archive_cache::ArchiveCache;
use crate::config::Config;
use crate::downloads::DownloadCounter;
use crate::error::ApiError;
use crate::index_cache::IndexCache;
use crate::ratelimit::IpLimiter;
use crate::routes::{attestations, index, keys, ops, owners, packages, publish, tokens, trusted_publishing};
use crate::state::AppState;
use crate::storage::Blobs;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// `index::file` routes a catch-all path, which utoipa-axum cannot register; its
/// description joins the document this way.
#[derive(utoipa::OpenApi)]
#[openapi(paths(index::file))]
struct CatchAllDoc;

/// The whole HTTP surface for `state`.
pub fn router(state: AppState) -> Router {
    let config = state.config.clone();
    // Rate-limited per client IP: the API, except downloads (served like the index:
    // cacheable, and a CDN's job to absorb).
    let (limited, mut api) = OpenApiRouter::new()
        .routes(routes!(publish::publish))
        .routes(routes!(publish::check))
        .routes(routes!(packages::search))
        .routes(routes!(packages::info))
        .routes(routes!(packages::version))
        .routes(routes!(packages::yank))
        .routes(routes!(packages::unyank))
        // Adding is limited per IP like every write; reading (below) is not,
        // like the index and the bundles: each install reads it.
        .routes(routes!(attestations::add))
        .routes(routes!(owners::list, owners::add, owners::remove))
        .routes(routes!(tokens::me))
        .routes(routes!(tokens::create, tokens::list))
        .routes(routes!(tokens::revoke))
        .routes(routes!(keys::list, keys::add))
        .routes(routes!(keys::revoke))
        .routes(routes!(keys::show))
        .routes(routes!(trusted_publishing::list, trusted_publishing::add))
        .routes(routes!(trusted_publishing::remove))
        .routes(routes!(trusted_publishing::exchange))
        .split_for_parts();
    let (unlimited, rest) = OpenApiRouter::new()
        .routes(routes!(packages::download))
        .routes(routes!(packages::bundle))
        .routes(routes!(attestations::get))
        .routes(routes!(index::config))
        .routes(routes!(index::tuf_file))
        .routes(routes!(ops::healthz))
        .routes(routes!(ops::readyz))
        .routes(routes!(ops::metrics))
        .split_for_parts();
    api.merge(rest);
    api.merge(<CatchAllDoc as utoipa::OpenApi>::openapi());
    let document = Arc::new(crate::openapi::document(api, &config, &OPEN).to_string());
    let unlimited = unlimited.route("/index/{*path}", axum::routing::get(index::file)).route(
        "/api/openapi.json",
        axum::routing::get(move || {
            let document = document.clone();
            async move { ([(axum::http::header::CONTENT_TYPE, "application/json")], (*document).clone()) }
        }),
    );
    let limited = limited.route_layer(middleware::from_fn_with_state(state.clone(), limit_by_ip));
    let catalog = crate::catalog::router(&state, |pages| {
        pages.route_layer(middleware::from_fn_with_state(state.clone(), limit_by_ip))
    });
    let compress = DefaultPredicate::new().and(NotForContentType::const_new("application/gzip"));
    let body_limit =
        usize::try_from(config.max_archive_bytes + u64::from(ebpkg_spec::registry_api::MAX_PUBLISH_METADATA) + 8)
            .unwrap_or(usize::MAX);
    limited
        .merge(unlimited)
        .merge(catalog)
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token_for_reads))
        .route_layer(middleware::from_fn_with_state(state.clone(), crate::metrics::track))
        .fallback(|headers: axum::http::HeaderMap| async move { crate::catalog::fallback(&headers) })
        .layer(RequestBodyLimitLayer::new(body_limit))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, config.request_timeout))
        // Outside the layers and extractors that answer on their own (a body too
        // large, a timeout, a rejected path or JSON body), so their answers take
        // the API's error shape too.
        .layer(middleware::from_fn(crate::error::json_errors))
        .layer(CompressionLayer::new().compress_when(compress))
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::internal("the registry hit a bug; the operator's logs have details").into_response()
        }))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request| {
                    let id = request.headers().get(REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("-");
                    tracing::info_span!("request", method = %request.method(), uri = %request.uri(), request_id = %id)
                })
                // One line per request at INFO: status and latency, in the request's span.
                .on_response(DefaultOnResponse::new().level(tracing::Level::INFO).latency_unit(LatencyUnit::Micros)),
        )
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .with_state(state)
}

/// What a private registry serves without a token: what operators and clients
/// need before they can have one.
const OPEN: [&str; 5] = ["/index/config.json", "/healthz", "/readyz", "/metrics", "/api/openapi.json"];

/// For a private registry (`--auth-required`): reads need a valid token too.
/// Writes authenticate in their handlers; what operators and clients need before
/// they can have a token (config.json, health, metrics, the API description) stays open.
async fn require_token_for_reads(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let is_read = matches!(*request.method(), axum::http::Method::GET | axum::http::Method::HEAD);
    if !state.config.auth_required || !is_read || OPEN.contains(&request.uri().path()) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    match <crate::auth::Caller as axum::extract::FromRequestParts<AppState>>::from_request_parts(&mut parts, &state)
        .await
    {
        Ok(_) => next.run(Request::from_parts(parts, body)).await,
        Err(refused) => refused.into_response(),
    }
}

/// The client's address: the peer's, or, when the peer is a trusted proxy, the
/// last address in X-Forwarded-For that is not one (the ones before it are the
/// client's to forge).
pub fn client_ip(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[IpAddr]) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    forwarded_for
        .into_iter()
        .flat_map(|h| h.rsplit(','))
        .filter_map(|a| a.trim().parse::<IpAddr>().ok())
        .find(|a| !trusted.contains(a))
        .unwrap_or(peer)
}

async fn limit_by_ip(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map_or(IpAddr::from([0, 0, 0, 0]), |c| c.0.ip());
    let forwarded = request.headers().get("x-forwarded-for").and_then(|v| v.to_str().ok());
    let ip = client_ip(peer, forwarded, &state.config.trusted_proxies);
    match state.ip_limiter.check(ip) {
        Ok(()) => next.run(request).await,
        Err(wait) => {
            // Rounded up: a client that waits what it is told is not refused again.
            let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
            ApiError::rate_limited(format!("too many requests from {ip}; slow down and retry in {secs} s"), secs)
                .into_response()
        }
    }
}

/// A server, ready to run.
pub struct Server {
    state: AppState,
}

impl Server {
    /// Opens the database pool (lazily: the server starts while the database is
    /// down) and the blob store.
    pub fn new(config: Config) -> anyhow::Result<Server> {
        let db = crate::db::pool(&config.database_url, config.db_pool)?;
        let blobs = Blobs::open(&config.storage)?;
        crate::metrics::handle();
        let ip_limiter = Arc::new(IpLimiter::new(config.ip_rate_per_minute));
        let archive_cache = config.archive_cache_mib.saturating_mul(1024 * 1024);
        Ok(Server {
            state: AppState {
                db,
                blobs,
                config: Arc::new(config),
                ip_limiter,
                downloads: Arc::new(DownloadCounter::default()),
                index_cache: Arc::new(IndexCache::default()),
                archives: Arc::new(ArchiveCache::new(usize::try_from(archive_cache).unwrap_or(usize::MAX))),
                jwks: Arc::default(),
                config_signed: Arc::default(),
            },
        })
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves on `listener` until `shutdown` completes, then lets in-flight
    /// requests finish and writes the last download counts.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let state = self.state.clone();
        let flusher = tokio::spawn({
            let state = state.clone();
            async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                loop {
                    tick.tick().await;
                    state.downloads.flush(&state.db).await;
                }
            }
        });
        let listening = tokio::spawn(state.index_cache.clone().listen(state.db.clone()));
        let app = router(state.clone()).into_make_service_with_connect_info::<SocketAddr>();
        // No Nagle: an archive's body would otherwise wait for the header's ACK
        // (40 ms of delayed ACK per download).
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::debug!(error = %e, "TCP_NODELAY not set");
            }
        });
        let served = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
        flusher.abort();
        listening.abort();
        state.downloads.flush(&state.db).await;
        served?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_behind_a_trusted_proxy_is_the_forwarded_one() {
        let proxy: IpAddr = [10, 0, 0, 1].into();
        let client: IpAddr = [192, 0, 2, 7].into();
        let forged: IpAddr = [198, 51, 100, 1].into();
        assert_eq!(client_ip(proxy, Some("192.0.2.7"), &[proxy]), client);
        assert_eq!(
            client_ip(proxy, Some("198.51.100.1, 192.0.2.7"), &[proxy]),
            client,
            "the client may forge the left part"
        );
        assert_eq!(client_ip(client, Some("198.51.100.1"), &[proxy]), client, "only trusted peers may forward");
        assert_eq!(client_ip(proxy, None, &[proxy]), proxy);
        assert_ne!(client_ip(proxy, Some("198.51.100.1, 192.0.2.7"), &[proxy]), forged);
    }
}
