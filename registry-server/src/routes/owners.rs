//! Package owners: only owners publish new versions, yank, and change owners.

use axum::extract::{Path, State};
use ebpkg_spec::registry_api::limits::{LOGIN_MAX, MAX_OWNERS_PER_REQUEST};
use ebpkg_spec::registry_api::{OkResponse, OwnersRequest, OwnersResponse, Scope};

use super::path_name;
use crate::auth::Caller;
use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Lists a package's owners.
#[utoipa::path(get, path = "/api/v1/packages/{name}/owners", operation_id = "list_owners", tag = "owners",
    params(("name" = String, Path)),
    responses((status = 200, description = "The owners", content_type = "application/json"), (status = 404)))]
pub async fn list(State(state): State<AppState>, Path(name): Path<String>) -> ApiResult<axum::Json<OwnersResponse>> {
    let name = path_name(&name)?;
    let pkg = db::packages::find(&state.db, &name.normalized())
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no package `{name}` in this registry")))?;
    Ok(axum::Json(OwnersResponse { users: db::packages::owners(&state.db, pkg.id).await? }))
}

/// Adds owners.
#[utoipa::path(put, path = "/api/v1/packages/{name}/owners", operation_id = "add_owners", tag = "owners",
    params(("name" = String, Path)), request_body(content_type = "application/json", description = "{\"users\": [login, …]}"),
    responses((status = 200, description = "Added", content_type = "application/json"), (status = 401), (status = 403), (status = 404)),
    security(("token" = [])))]
pub async fn add(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    axum::Json(request): axum::Json<OwnersRequest>,
) -> ApiResult<axum::Json<OkResponse>> {
    change(&state, &caller, &name, &request, true).await
}

/// Removes owners (never the last one).
#[utoipa::path(delete, path = "/api/v1/packages/{name}/owners", operation_id = "remove_owners", tag = "owners",
    params(("name" = String, Path)), request_body(content_type = "application/json", description = "{\"users\": [login, …]}"),
    responses((status = 200, description = "Removed", content_type = "application/json"), (status = 400), (status = 401), (status = 403), (status = 404)),
    security(("token" = [])))]
pub async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    axum::Json(request): axum::Json<OwnersRequest>,
) -> ApiResult<axum::Json<OkResponse>> {
    change(&state, &caller, &name, &request, false).await
}

async fn change(
    state: &AppState,
    caller: &Caller,
    name: &str,
    request: &OwnersRequest,
    add: bool,
) -> ApiResult<axum::Json<OkResponse>> {
    let name = path_name(name)?;
    caller.require(Scope::ChangeOwners, name.as_str())?;
    if request.users.is_empty() || request.users.len() > MAX_OWNERS_PER_REQUEST {
        return Err(ApiError::bad_request(format!("name between 1 and {MAX_OWNERS_PER_REQUEST} users")));
    }
    // Checked before the database sees them (it holds no NUL, for one).
    if let Some(bad) = request.users.iter().find(|login| !db::users::valid_login(login)) {
        return Err(ApiError::bad_request(format!(
            "`{}` is not a user name: letters, digits, `-` and `_`, at most {LOGIN_MAX}",
            bad.escape_debug()
        )));
    }
    let mut tx = state.db.begin().await?;
    let Some(pkg) = db::packages::lock(&mut tx, &name.normalized()).await? else {
        return Err(ApiError::not_found(format!("no package `{name}` in this registry")));
    };
    if !db::packages::is_owner(&mut *tx, pkg.id, caller.user_id).await? {
        return Err(ApiError::forbidden(format!("`{}` is not an owner of `{}`", caller.login, pkg.name)));
    }
    let mut changed = Vec::new();
    for login in &request.users {
        let user = db::users::by_login(&mut *tx, login)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("no user `{login}` in this registry")))?;
        let did = if add {
            db::packages::add_owner(&mut tx, pkg.id, user.id, caller.user_id).await?
        } else {
            db::packages::remove_owner(&mut tx, pkg.id, user.id).await?
        };
        if did {
            changed.push(user.login);
        }
    }
    if db::packages::owners(&mut *tx, pkg.id).await?.is_empty() {
        return Err(ApiError::bad_request(format!("`{}` would have no owner left; add another owner first", pkg.name)));
    }
    tx.commit().await?;
    let verb = if add { "added to" } else { "removed from" };
    tracing::info!(package = %pkg.name, user = %caller.login, ?changed, "owners {verb}");
    let msg = if changed.is_empty() {
        "nothing to change".to_owned()
    } else {
        format!("{} {verb} the owners of `{}`", changed.join(", "), pkg.name)
    };
    Ok(axum::Json(OkResponse { ok: true, msg: Some(msg) }))
}
