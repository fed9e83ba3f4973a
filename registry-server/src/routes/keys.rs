//! Publisher keys: `me/keys` for the caller's own, `keys/{id}` for anyone's.
//! Registering or revoking a key needs an unrestricted token, like managing
//! tokens: a leaked publish-only CI token must not be able to add a key of its
//! own and so publish versions that pass a trust policy pinned to a real key.

use axum::extract::{Path, State};
use ebpkg_signing::{PublicKey, SignedBundle};
use ebpkg_spec::registry_api::limits::MAX_PEM_BYTES;
use ebpkg_spec::registry_api::{self, NewPublisherKey, PublisherKey, PublisherKeyList};
use ebpkg_spec::types::KeyId;

use crate::auth::Caller;
use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

fn path_key(hex: &str) -> ApiResult<KeyId> {
    KeyId::from_hex(hex)
        .ok_or_else(|| ApiError::not_found(format!("`{hex}` is not a key id (64 hex digits: the SHA-256 of the key)")))
}

/// The caller's publisher keys, revoked ones included.
#[utoipa::path(get, path = "/api/v1/me/keys", operation_id = "list_my_keys", tag = "keys",
    responses((status = 200, description = "The keys", content_type = "application/json"), (status = 401)),
    security(("token" = [])))]
pub async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<axum::Json<PublisherKeyList>> {
    let rows = db::keys::of_user(&state.db, caller.user_id).await?;
    let keys = rows.iter().map(db::keys::KeyRow::api).collect::<Result<_, _>>()?;
    Ok(axum::Json(PublisherKeyList { keys }))
}

/// Registers a public key for the caller, who proves holding its private half
/// by signing `key_proof_message` with it.
#[utoipa::path(post, path = "/api/v1/me/keys", operation_id = "add_my_key", tag = "keys",
    request_body(content_type = "application/json", description = "{\"pem\", \"proof\"}: the public key and a Sigstore bundle signing the proof message"),
    responses((status = 200, description = "Registered (or already the caller's)", content_type = "application/json"),
        (status = 400, description = "Not a P-256 public key, or the proof does not verify"), (status = 401), (status = 403),
        (status = 409, description = "Another user's key, or a revoked one")),
    security(("token" = [])))]
pub async fn add(
    State(state): State<AppState>,
    caller: Caller,
    axum::Json(request): axum::Json<NewPublisherKey>,
) -> ApiResult<axum::Json<PublisherKey>> {
    caller.require_unrestricted("registering a publisher key")?;
    if request.pem.len() > MAX_PEM_BYTES {
        return Err(ApiError::bad_request(format!("the key is more than {MAX_PEM_BYTES} bytes of PEM")));
    }
    let key = PublicKey::from_pem(&request.pem).map_err(|e| ApiError::bad_request(format!("{e}")))?;
    let id = *key.id();
    let proof = serde_json::to_vec(&request.proof).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let message = registry_api::key_proof_message(&caller.login, &id);
    SignedBundle::parse(&proof).and_then(|b| b.verify(&key, message.as_bytes())).map_err(|e| {
        ApiError::bad_request(format!(
            "the proof does not show that you hold key {id}: {e}. It must be a Sigstore bundle signing the text \
             {message:?} with the key's private half (`ebpkg owner key add` makes it)"
        ))
    })?;
    if !db::keys::insert(&state.db, caller.user_id, &key).await? {
        let existing = db::keys::by_id(&state.db, &id)
            .await?
            .ok_or_else(|| ApiError::unavailable(format!("key {id} changed while it was being registered; retry")))?;
        if existing.user_id != caller.user_id {
            return Err(ApiError::conflict(format!(
                "key {id} is registered by another user; a key belongs to one account (generate your own with \
                 `ebpkg key generate`)"
            )));
        }
        if existing.revoked_at.is_some() {
            return Err(ApiError::conflict(format!(
                "key {id} was revoked and cannot be registered again; generate a new key with `ebpkg key generate`"
            )));
        }
        return Ok(axum::Json(existing.api()?));
    }
    tracing::info!(user = %caller.login, key = %id, "publisher key registered");
    let row = db::keys::by_id(&state.db, &id).await?.ok_or_else(|| ApiError::internal("the new key vanished"))?;
    Ok(axum::Json(row.api()?))
}

/// Revokes one of the caller's keys: publishes signed with it are refused from
/// then on, and clients that read the key see when it was revoked.
#[utoipa::path(delete, path = "/api/v1/me/keys/{id}", operation_id = "revoke_my_key", tag = "keys", params(("id" = String, Path, description = "the key id in hex")),
    responses((status = 200, description = "Revoked (or already revoked)", content_type = "application/json"),
        (status = 401), (status = 403), (status = 404)),
    security(("token" = [])))]
pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(hex): Path<String>,
) -> ApiResult<axum::Json<PublisherKey>> {
    caller.require_unrestricted("revoking a publisher key")?;
    let id = path_key(&hex)?;
    let mut tx = state.db.begin().await?;
    let Some(changed) = db::keys::revoke(&mut tx, caller.user_id, &id).await? else {
        return Err(ApiError::not_found(format!("you have no publisher key {id}; `ebpkg owner key list` shows yours")));
    };
    tx.commit().await?;
    if changed {
        tracing::info!(user = %caller.login, key = %id, "publisher key revoked");
    }
    let row = db::keys::by_id(&state.db, &id).await?.ok_or_else(|| ApiError::internal("the revoked key vanished"))?;
    Ok(axum::Json(row.api()?))
}

/// A publisher key: its PEM, its owner and whether it was revoked.
#[utoipa::path(get, path = "/api/v1/keys/{id}", operation_id = "get_key", tag = "keys", params(("id" = String, Path, description = "the key id in hex")),
    responses((status = 200, description = "The key", content_type = "application/json"), (status = 404)))]
pub async fn show(State(state): State<AppState>, Path(hex): Path<String>) -> ApiResult<axum::Json<PublisherKey>> {
    let id = path_key(&hex)?;
    let row = db::keys::by_id(&state.db, &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("this registry has no publisher key {id}")))?;
    Ok(axum::Json(row.api()?))
}

/// The keys a signature by `subject` (what is signed, as people read it:
/// `meter@1.0.0`, `the attestation of meter@1.0.0`) may be checked with: the
/// live key of one of `signers` (a package's owners; for a new package, its
/// publisher) that `hint` names, or, without a hint, every live key of theirs.
/// Refused (403) with what to do when the hint names a key that is not
/// registered, revoked, or not a signer's.
pub(crate) async fn signer_keys(
    conn: &mut sqlx::PgConnection,
    hint: Option<&KeyId>,
    signers: &[i64],
    subject: &str,
) -> ApiResult<Vec<PublicKey>> {
    let Some(hint) = hint else {
        let rows = db::keys::live_of_users(&mut *conn, signers).await?;
        if rows.is_empty() {
            return Err(ApiError::forbidden(format!(
                "{subject} is signed, but no owner of the package has a registered publisher key to check the \
                 signature with; register yours with `ebpkg owner key add`"
            )));
        }
        return Ok(rows.iter().map(db::keys::KeyRow::public_key).collect::<Result<_, _>>()?);
    };
    let Some(row) = db::keys::by_id(&mut *conn, hint).await? else {
        return Err(ApiError::forbidden(format!(
            "{subject} is signed with key {hint}, which is not registered with this registry; its holder registers \
             it with `ebpkg owner key add`"
        )));
    };
    if let Some(at) = row.revoked_at {
        return Err(ApiError::forbidden(format!(
            "{subject} is signed with key {hint}, which `{}` revoked at {}; sign with a live key (`ebpkg owner key \
             list`)",
            row.login,
            at.to_rfc3339()
        )));
    }
    if !signers.contains(&row.user_id) {
        return Err(ApiError::forbidden(format!(
            "{subject} is signed with key {hint}, which belongs to `{}`, who is not an owner of the package; sign \
             with an owner's key, or have an owner run `ebpkg owner add`",
            row.login
        )));
    }
    Ok(vec![row.public_key()?])
}
