//! Trusted publishing: owners name the CI identities that may publish their
//! package; a pipeline exchanges its OIDC token for a publish token
//! (`crate::trusted_publishing` checks the token).

use axum::extract::{Path, State};
use ebpkg_spec::PackageName;
use ebpkg_spec::registry_api::limits;
use ebpkg_spec::registry_api::{
    NewTrustedPublisher, OkResponse, Scope, TrustedPublisherList, TrustedPublishingExchange, TrustedPublishingToken,
};

use super::path_name;
use crate::auth::Caller;
use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::trusted_publishing::{Refusal, verify};

/// How long a minted publish token lives: a pipeline's publish step, with room.
const TOKEN_MINUTES: i64 = 30;

async fn owned_package(state: &AppState, caller: &Caller, name: &str) -> ApiResult<(PackageName, i64)> {
    let name = path_name(name)?;
    let pkg = db::packages::find(&state.db, &name.normalized())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no package `{name}` in this registry")))?;
    if !db::packages::is_owner(&state.db, pkg.id, caller.user_id).await? {
        return Err(ApiError::forbidden(format!("`{}` is not an owner of `{}`", caller.login, pkg.name)));
    }
    Ok((name, pkg.id))
}

/// The CI identities that may publish a package.
#[utoipa::path(get, path = "/api/v1/packages/{name}/trusted_publishers", operation_id = "list_trusted_publishers", tag = "trusted publishing",
    params(("name" = String, Path)),
    responses((status = 200, description = "The trusted publishers", content_type = "application/json"),
        (status = 401), (status = 403), (status = 404)),
    security(("token" = [])))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<axum::Json<TrustedPublisherList>> {
    let (_, package_id) = owned_package(&state, &caller, &name).await?;
    let rows = db::trusted_publishers::of_package(&state.db, package_id).await?;
    Ok(axum::Json(TrustedPublisherList { publishers: rows.iter().map(|r| r.api()).collect() }))
}

/// Lets a CI identity publish a package (owners, with an unrestricted token).
#[utoipa::path(post, path = "/api/v1/packages/{name}/trusted_publishers", operation_id = "add_trusted_publisher", tag = "trusted publishing",
    params(("name" = String, Path)),
    request_body(content_type = "application/json",
        description = "{\"issuer\", \"repository\": \"owner/repo\", \"workflow\": \"publish.yml\", \"environment\"?}"),
    responses((status = 200, description = "Added (or there already)", content_type = "application/json"),
        (status = 400, description = "An issuer the registry does not trust, or a repository, workflow or \
            environment not of the documented form"),
        (status = 401), (status = 403),
        (status = 404, description = "No such package, or the registry trusts no OIDC issuer")),
    security(("token" = [])))]
pub async fn add(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    axum::Json(new): axum::Json<NewTrustedPublisher>,
) -> ApiResult<axum::Json<TrustedPublisherList>> {
    caller.require_unrestricted("configuring trusted publishing")?;
    let (name, package_id) = owned_package(&state, &caller, &name).await?;
    // Like the exchange: a registry that trusts no issuer has no trusted
    // publishing to configure (its document lists no issuer to name).
    if state.config.trusted_issuers.is_empty() {
        return Err(ApiError::not_found(
            "this registry does not do trusted publishing: the operator has not enabled it (--trusted-issuer)",
        ));
    }
    if !state.config.trusted_issuers.contains(&new.issuer) {
        return Err(ApiError::bad_request(format!(
            "`{}` is not an issuer this registry trusts (it trusts: {})",
            new.issuer,
            state.config.trusted_issuers.join(", ")
        )));
    }
    let environment_ok = new.environment.as_deref().is_none_or(limits::valid_environment);
    if !limits::valid_repository(&new.repository) || !limits::valid_workflow(&new.workflow) || !environment_ok {
        return Err(ApiError::bad_request(
            "a trusted publisher is a repository `owner/repo`, a workflow file name `publish.yml` (in \
             .github/workflows/) and optionally an environment",
        ));
    }
    db::trusted_publishers::insert(&state.db, package_id, &new, caller.user_id).await?;
    tracing::info!(package = %name, user = %caller.login, repository = %new.repository, workflow = %new.workflow,
        "trusted publisher added");
    let rows = db::trusted_publishers::of_package(&state.db, package_id).await?;
    Ok(axum::Json(TrustedPublisherList { publishers: rows.iter().map(|r| r.api()).collect() }))
}

/// Stops a CI identity from publishing a package.
#[utoipa::path(delete, path = "/api/v1/packages/{name}/trusted_publishers/{id}", operation_id = "remove_trusted_publisher", tag = "trusted publishing",
    params(("name" = String, Path), ("id" = i64, Path)),
    responses((status = 200, description = "Removed", content_type = "application/json"),
        (status = 401), (status = 403), (status = 404)),
    security(("token" = [])))]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, id)): Path<(String, i64)>,
) -> ApiResult<axum::Json<OkResponse>> {
    caller.require_unrestricted("configuring trusted publishing")?;
    let (name, package_id) = owned_package(&state, &caller, &name).await?;
    if !db::trusted_publishers::delete(&state.db, package_id, id).await? {
        return Err(ApiError::not_found(format!("`{name}` has no trusted publisher {id}")));
    }
    Ok(axum::Json(OkResponse { ok: true, msg: Some(format!("trusted publisher {id} of `{name}` removed")) }))
}

/// Exchanges a CI pipeline's OIDC token for a publish token (30 minutes, the
/// `publish-update` scope, only the packages that trust that pipeline).
#[utoipa::path(post, path = "/api/v1/trusted_publishing/tokens", operation_id = "exchange_oidc_token", tag = "trusted publishing",
    request_body(content_type = "application/json", description = "{\"jwt\": \"<the OIDC token>\"}"),
    responses((status = 200, description = "The publish token", content_type = "application/json"),
        (status = 400), (status = 401, description = "The OIDC token was refused"),
        (status = 403, description = "No package trusts this pipeline"),
        (status = 404, description = "This registry trusts no OIDC issuer"), (status = 413), (status = 503)))]
pub async fn exchange(
    State(state): State<AppState>,
    body: axum::body::Bytes,
) -> ApiResult<axum::Json<TrustedPublishingToken>> {
    // Parsed here rather than by axum's extractor: a bad body gets this API's
    // error shape, whatever its content type.
    if body.len() > 2 * crate::trusted_publishing::verify::MAX_TOKEN_BYTES {
        return Err(ApiError::too_large("the body is larger than an OIDC token exchange can be"));
    }
    let request: TrustedPublishingExchange = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("the body must be {{\"jwt\": \"<the OIDC token>\"}}: {e}")))?;
    let result = exchange_inner(&state, &request.jwt).await;
    let outcome = match &result {
        Ok(_) => "minted",
        Err(e) if e.status.is_client_error() => "refused",
        Err(_) => "failed",
    };
    metrics::counter!("ebpkg_registry_trusted_publishing_total", "outcome" => outcome).increment(1);
    if let Err(e) = &result {
        tracing::info!(status = %e.status, why = %e.detail, "trusted publishing: token refused");
    }
    result.map(axum::Json)
}

async fn exchange_inner(state: &AppState, jwt: &str) -> ApiResult<TrustedPublishingToken> {
    let config = &state.config;
    if config.trusted_issuers.is_empty() {
        return Err(ApiError::not_found("this registry does not do trusted publishing (no --trusted-issuer)"));
    }
    let identity = verify(jwt.trim(), &config.trusted_issuers, &config.trusted_audience, &state.jwks).await.map_err(
        |e| match e {
            Refusal::Keys(crate::trusted_publishing::jwks::JwksError::Fetch { .. }) => {
                ApiError::unavailable(format!("the OIDC token could not be checked: {e}"))
            }
            e => ApiError::unauthorized(format!("the OIDC token was refused: {e}")),
        },
    )?;
    let rows = db::trusted_publishers::for_identity(&state.db, &identity.issuer, &identity.repository).await?;
    let matched: Vec<_> = rows
        .iter()
        .filter(|r| identity.is_workflow(&r.repository, &r.workflow))
        .filter(|r| r.environment.is_none() || r.environment == identity.environment)
        .collect();
    // The token acts as one owner: the one whose configurations cover the most
    // packages (ties: the first package's). Packages trusted by other owners'
    // configurations need their own exchange... by one of theirs.
    let Some(acting) = matched
        .iter()
        .map(|r| r.created_by)
        .max_by_key(|u| (matched.iter().filter(|r| r.created_by == *u).count(), std::cmp::Reverse(*u)))
    else {
        return Err(ApiError::forbidden(format!(
            "no package trusts {} (workflow {}{}) from {}: an owner adds it with `ebpkg owner trusted-publisher add`",
            identity.repository,
            identity.workflow_ref,
            identity.environment.as_deref().map(|e| format!(", environment {e}")).unwrap_or_default(),
            identity.issuer
        )));
    };
    let mut packages: Vec<&str> =
        matched.iter().filter(|r| r.created_by == acting).map(|r| r.package.as_str()).collect();
    packages.sort_unstable();
    packages.dedup();
    let login = matched.iter().find(|r| r.created_by == acting).map(|r| r.login.clone()).unwrap_or_default();

    let expires_at = chrono::Utc::now() + chrono::Duration::minutes(TOKEN_MINUTES);
    let token_expiry = chrono::DateTime::from_timestamp(identity.expires, 0).unwrap_or(expires_at);
    let mut tx = state.db.begin().await?;
    if !db::trusted_publishers::use_token_once(&mut tx, &identity.issuer, &identity.jti, token_expiry).await? {
        return Err(ApiError::unauthorized(
            "the OIDC token was refused: it was already exchanged once (each token is good for one exchange; \
             request a new one)",
        ));
    }
    let secret = crate::auth::new_secret();
    let name: String =
        format!("trusted publishing: {} {}", identity.repository, identity.workflow_ref).chars().take(64).collect();
    let globs: Vec<String> = packages.iter().map(|p| (*p).to_owned()).collect();
    let row = db::tokens::NewTokenRow {
        user_id: acting,
        name: &name,
        sha256: crate::auth::digest(&secret),
        scopes: &[Scope::PublishUpdate],
        globs: &globs,
        expires_at: Some(expires_at),
    };
    db::tokens::create(&mut *tx, &row).await?;
    tx.commit().await?;
    tracing::info!(repository = %identity.repository, workflow = %identity.workflow_ref, acting_as = %login,
        packages = %globs.join(","), "trusted publishing: publish token minted");
    Ok(TrustedPublishingToken {
        token: secret,
        expires_at: expires_at.to_rfc3339(),
        packages: packages.iter().filter_map(|p| PackageName::new(p).ok()).collect(),
        acting_as: login,
    })
}
