//! Reading packages (search, metadata, downloads) and yanking versions.

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use ebpkg_spec::registry_api::{OkResponse, PackageInfo, Scope, SearchMeta, SearchResponse, VersionInfo, limits};
use ebpkg_spec::types::Sha256Digest;

use super::{path_name, path_version};
use crate::auth::Caller;
use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::search::SearchParams;
use crate::state::AppState;

/// Searches packages, ranked: exact name, name prefix, name substring, keyword,
/// program name, description (full text), then by relevance and name.
#[utoipa::path(get, path = "/api/v1/packages", operation_id = "search_packages", tag = "packages", params(SearchParams),
    responses(
        (status = 200, description = "One page of matches", content_type = "application/json"),
        (status = 400, description = "A query longer than 256 characters or with a control character, or `page` \
            or `per_page` beyond their limits", content_type = "application/json")))]
pub async fn search(
    State(state): State<AppState>,
    Query(params): Query<SearchParams>,
) -> ApiResult<axum::Json<SearchResponse>> {
    // PostgreSQL's text holds no NUL, and no name or word has a control character.
    if !limits::valid_search_query(&params.q) {
        return Err(ApiError::bad_request(format!(
            "the search query is longer than {} characters or holds a control character; search for words",
            limits::SEARCH_QUERY_MAX
        )));
    }
    if params.per_page.is_some_and(|n| n == 0 || n > limits::MAX_PER_PAGE) {
        return Err(ApiError::bad_request(format!("per_page is from 1 to {}", limits::MAX_PER_PAGE)));
    }
    if params.page.is_some_and(|n| n == 0 || n > limits::MAX_PAGE) {
        return Err(ApiError::bad_request(format!("page is from 1 to {}", limits::MAX_PAGE)));
    }
    let page = params.page.unwrap_or(1);
    let per_page = params.per_page.unwrap_or(20);
    let (packages, total) = db::packages::search(&state.db, &params.q, page, per_page).await?;
    Ok(axum::Json(SearchResponse { packages, meta: SearchMeta { total, page, per_page } }))
}

async fn package_row(state: &AppState, name: &str) -> ApiResult<db::packages::PackageDates> {
    let name = path_name(name)?;
    db::packages::package(&state.db, &name.normalized())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no package `{name}` in this registry")))
}

/// A package: owners and every version.
#[utoipa::path(get, path = "/api/v1/packages/{name}", operation_id = "get_package", tag = "packages",
    params(("name" = String, Path)),
    responses((status = 200, description = "The package", content_type = "application/json"), (status = 404)))]
pub async fn info(State(state): State<AppState>, Path(name): Path<String>) -> ApiResult<axum::Json<PackageInfo>> {
    let pkg = package_row(&state, &name).await?;
    let owners = db::packages::owners(&state.db, pkg.id).await?;
    let versions = db::packages::versions(&state.db, pkg.id).await?;
    Ok(axum::Json(PackageInfo {
        name: path_name(&pkg.name)?,
        created_at: pkg.created_at.to_rfc3339(),
        updated_at: pkg.updated_at.to_rfc3339(),
        owners,
        versions,
    }))
}

/// One version: its index entry (programs' signatures, loaders' maps), licence and README.
#[utoipa::path(get, path = "/api/v1/packages/{name}/{version}", operation_id = "get_version", tag = "packages",
    params(("name" = String, Path), ("version" = String, Path)),
    responses((status = 200, description = "The version", content_type = "application/json"), (status = 404)))]
pub async fn version(
    State(state): State<AppState>,
    Path((name, version)): Path<(String, String)>,
) -> ApiResult<axum::Json<VersionInfo>> {
    let pkg = package_row(&state, &name).await?;
    let v = path_version(&version)?;
    db::packages::version(&state.db, pkg.id, &v)
        .await?
        .map(axum::Json)
        .ok_or_else(|| ApiError::not_found(format!("no version {v} of `{}`", pkg.name)))
}

/// The archive of a version.
#[utoipa::path(get, path = "/api/v1/packages/{name}/{version}/download", operation_id = "download_version", tag = "packages",
    params(("name" = String, Path), ("version" = String, Path)),
    responses((status = 200, description = "The archive", content_type = "application/gzip"), (status = 404)))]
pub async fn download(
    State(state): State<AppState>,
    Path((name, version)): Path<(String, String)>,
) -> ApiResult<Response> {
    let name = path_name(&name)?;
    let v = path_version(&version)?;
    let (normalized, plain) = (name.normalized(), db::packages::without_build(&v));
    let (version_id, cksum) = match state.archives.target(&normalized, &plain) {
        Some(target) => target,
        None => {
            let Some((id, cksum)) = db::packages::download_target(&state.db, &normalized, &v).await? else {
                return Err(ApiError::not_found(format!("no {name}@{v} in this registry")));
            };
            let cksum = Sha256Digest::from_canonical_hex(&cksum)
                .ok_or_else(|| ApiError::internal(format!("{name}@{v}: the stored checksum is damaged")))?;
            state.archives.remember_target(&normalized, &plain, (id, cksum));
            (id, cksum)
        }
    };
    let (body, size) = match state.archives.archive(&cksum) {
        Some(bytes) => {
            let size = bytes.len() as u64;
            (Body::from(bytes), size)
        }
        None => {
            let Some(archive) = state.blobs.archive(&cksum).await? else {
                tracing::error!(package = %name, version = %v, %cksum, "a listed version's archive is missing from the blob store");
                return Err(ApiError::internal(format!(
                    "{name}@{v}: the archive is missing from the registry's blob store; tell the registry's operator"
                )));
            };
            if archive.size <= crate::archive_cache::MAX_CACHED_ARCHIVE as u64 {
                let bytes = collect(archive.stream, archive.size).await?;
                state.archives.remember_archive(cksum, bytes.clone());
                (Body::from(bytes), archive.size)
            } else {
                (Body::from_stream(archive.stream), archive.size)
            }
        }
    };
    state.downloads.count(version_id);
    metrics::counter!("ebpkg_registry_downloads_total").increment(1);
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/gzip"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    headers.insert(header::CACHE_CONTROL, state.config.immutable_cache_control());
    if let Ok(etag) = HeaderValue::from_str(&format!("\"{cksum}\"")) {
        headers.insert(header::ETAG, etag);
    }
    Ok(response)
}

/// The Sigstore bundle a version was published with, as published. Immutable,
/// like the archive it signs; clients verify it against the key the index line
/// names, so serving it needs no trust in this server.
#[utoipa::path(get, path = "/api/v1/packages/{name}/{version}/bundle", operation_id = "get_bundle", tag = "packages",
    params(("name" = String, Path), ("version" = String, Path)),
    responses((status = 200, description = "The bundle (Sigstore v0.3 JSON)", content_type = "application/json"),
        (status = 404, description = "No such version, or it was published unsigned")))]
pub async fn bundle(
    State(state): State<AppState>,
    Path((name, version)): Path<(String, String)>,
) -> ApiResult<Response> {
    let name = path_name(&name)?;
    let v = path_version(&version)?;
    let bundle = match db::packages::bundle(&state.db, &name.normalized(), &v).await? {
        None => return Err(ApiError::not_found(format!("no {name}@{v} in this registry"))),
        Some(None) => return Err(ApiError::not_found(format!("{name}@{v} was published unsigned: it has no bundle"))),
        Some(Some(bundle)) => bundle,
    };
    let mut response = bundle.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CACHE_CONTROL, state.config.immutable_cache_control());
    Ok(response)
}

/// Reads a small archive whole, never more than the store said it holds.
async fn collect(
    mut stream: futures_util::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>,
    size: u64,
) -> ApiResult<bytes::Bytes> {
    use futures_util::StreamExt;
    let mut out = bytes::BytesMut::with_capacity(usize::try_from(size).unwrap_or(0));
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk?);
        if out.len() as u64 > size {
            return Err(ApiError::internal("an archive in the blob store grew while it was read"));
        }
    }
    Ok(out.freeze())
}

/// Yanks a version: new resolutions avoid it, lockfiles naming it keep working.
#[utoipa::path(delete, path = "/api/v1/packages/{name}/{version}/yank", operation_id = "yank_version", tag = "packages",
    params(("name" = String, Path), ("version" = String, Path)),
    responses((status = 200, description = "Yanked", content_type = "application/json"), (status = 401), (status = 403), (status = 404)),
    security(("token" = [])))]
pub async fn yank(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, version)): Path<(String, String)>,
) -> ApiResult<axum::Json<OkResponse>> {
    set_yanked(&state, &caller, &name, &version, true).await
}

/// Un-yanks a version.
#[utoipa::path(put, path = "/api/v1/packages/{name}/{version}/unyank", operation_id = "unyank_version", tag = "packages",
    params(("name" = String, Path), ("version" = String, Path)),
    responses((status = 200, description = "Un-yanked", content_type = "application/json"), (status = 401), (status = 403), (status = 404)),
    security(("token" = [])))]
pub async fn unyank(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, version)): Path<(String, String)>,
) -> ApiResult<axum::Json<OkResponse>> {
    set_yanked(&state, &caller, &name, &version, false).await
}

async fn set_yanked(
    state: &AppState,
    caller: &Caller,
    name: &str,
    version: &str,
    yanked: bool,
) -> ApiResult<axum::Json<OkResponse>> {
    let name = path_name(name)?;
    let v = path_version(version)?;
    caller.require(Scope::Yank, name.as_str())?;
    let mut tx = state.db.begin().await?;
    let Some(pkg) = db::packages::lock(&mut tx, &name.normalized()).await? else {
        return Err(ApiError::not_found(format!("no package `{name}` in this registry")));
    };
    if !db::packages::is_owner(&mut *tx, pkg.id, caller.user_id).await? {
        return Err(ApiError::forbidden(format!("`{}` is not an owner of `{}`", caller.login, pkg.name)));
    }
    let changed = match db::packages::set_yanked(&mut tx, pkg.id, &v, yanked).await? {
        None => return Err(ApiError::not_found(format!("no version {v} of `{}`", pkg.name))),
        Some(changed) => changed,
    };
    if changed && let Some(file) = db::packages::refresh(&mut tx, pkg.id).await? {
        crate::tuf::follow(&mut tx, &state.config, vec![file]).await?;
    }
    tx.commit().await?;
    state.index_cache.forget(&name.normalized());
    let verb = if yanked { "yanked" } else { "un-yanked" };
    tracing::info!(package = %pkg.name, version = %v, user = %caller.login, "{verb}");
    let msg = if changed { format!("{}@{v} {verb}", pkg.name) } else { format!("{}@{v} was already {verb}", pkg.name) };
    Ok(axum::Json(OkResponse { ok: true, msg: Some(msg) }))
}
