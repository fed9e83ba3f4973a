//! API tokens over the API, and `me`. Only an unscoped token may manage tokens,
//! so a leaked publish-only token cannot mint itself more power.

use axum::extract::{Path, State};
use ebpkg_spec::registry_api::{Me, NewToken, OkResponse, TokenCreated, TokenList};

use crate::auth::{Caller, issue_token};
use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Who the token belongs to, and what it may do.
#[utoipa::path(get, path = "/api/v1/me", operation_id = "get_me", tag = "tokens",
    responses((status = 200, description = "The token's user", content_type = "application/json"), (status = 401)),
    security(("token" = [])))]
pub async fn me(caller: Caller) -> axum::Json<Me> {
    axum::Json(Me { login: caller.login, scopes: caller.scopes })
}

/// Creates a token for the caller; its secret is in the response, and only there.
#[utoipa::path(put, path = "/api/v1/tokens", operation_id = "create_token", tag = "tokens",
    request_body(content_type = "application/json", description = "{\"name\", \"scopes\", \"packages\", \"expires_in_days\"}"),
    responses((status = 200, description = "The token and its secret", content_type = "application/json"), (status = 400), (status = 401), (status = 403)),
    security(("token" = [])))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    axum::Json(request): axum::Json<NewToken>,
) -> ApiResult<axum::Json<TokenCreated>> {
    caller.require_unrestricted("managing tokens")?;
    let created = issue_token(&state.db, caller.user_id, &request).await?;
    tracing::info!(user = %caller.login, token = %created.token.name, "token created");
    Ok(axum::Json(created))
}

/// The caller's live tokens (never their secrets).
#[utoipa::path(get, path = "/api/v1/tokens", operation_id = "list_tokens", tag = "tokens",
    responses((status = 200, description = "The tokens", content_type = "application/json"), (status = 401), (status = 403)),
    security(("token" = [])))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<axum::Json<TokenList>> {
    caller.require_unrestricted("managing tokens")?;
    let tokens = db::tokens::live_of_user(&state.db, caller.user_id).await?;
    Ok(axum::Json(TokenList { tokens: tokens.iter().map(db::tokens::TokenRow::info).collect() }))
}

/// Revokes one of the caller's tokens.
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", operation_id = "revoke_token", tag = "tokens", params(("id" = i64, Path)),
    responses((status = 200, description = "Revoked", content_type = "application/json"), (status = 401), (status = 403), (status = 404)),
    security(("token" = [])))]
pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<i64>,
) -> ApiResult<axum::Json<OkResponse>> {
    caller.require_unrestricted("managing tokens")?;
    if !db::tokens::revoke(&state.db, caller.user_id, id).await? {
        return Err(ApiError::not_found(format!("you have no live token with id {id}")));
    }
    tracing::info!(user = %caller.login, token = id, "token revoked");
    Ok(axum::Json(OkResponse { ok: true, msg: Some(format!("token {id} revoked")) }))
}
