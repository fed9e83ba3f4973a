//! Who is calling: API tokens (`Authorization: <token>`, or `Bearer <token>`),
//! their scopes and package globs.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use ebpkg_spec::names::PackageGlob;
use ebpkg_spec::registry_api::{NewToken, Scope, TokenCreated, limits};
use sha2::{Digest, Sha256};

use crate::db;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Every secret starts with this, so leaked tokens are easy to find (and scan for).
pub const TOKEN_PREFIX: &str = "ebpkg_";

/// A new random secret: the prefix and 32 random bytes in hex.
pub fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{TOKEN_PREFIX}{}", hex::encode(bytes))
}

/// What the database stores of a secret.
pub fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Makes a token for `user_id`: checks the request, stores the secret's digest,
/// and returns the secret (shown this once). Used by the API and the admin command.
pub async fn issue_token(db: &sqlx::PgPool, user_id: i64, request: &NewToken) -> Result<TokenCreated, ApiError> {
    if !limits::valid_token_name(&request.name) {
        return Err(ApiError::bad_request(format!(
            "a token needs a name of 1 to {} printable characters, not only white space",
            limits::TOKEN_NAME_MAX
        )));
    }
    let name = request.name.trim();
    if request.packages.len() > limits::TOKEN_MAX_GLOBS {
        return Err(ApiError::bad_request(format!("at most {} package globs per token", limits::TOKEN_MAX_GLOBS)));
    }
    for glob in &request.packages {
        if PackageGlob::new(glob).is_err() {
            return Err(ApiError::bad_request(format!(
                "`{glob}` is not a package glob: a package name where `*` matches any run of characters"
            )));
        }
    }
    let expires_at = match request.expires_in_days {
        None => None,
        // 0 meant "never" by accident: a token that never expires is asked for by
        // leaving the expiry out, never by a number.
        Some(0) => {
            return Err(ApiError::bad_request(format!(
                "expires_in_days is from 1 to {}; leave it out for a token that does not expire",
                limits::TOKEN_MAX_EXPIRY_DAYS
            )));
        }
        Some(days) if days > limits::TOKEN_MAX_EXPIRY_DAYS => {
            return Err(ApiError::bad_request(format!(
                "a token expires within {} days at most",
                limits::TOKEN_MAX_EXPIRY_DAYS
            )));
        }
        Some(days) => Some(chrono::Utc::now() + chrono::Duration::days(i64::from(days))),
    };
    let mut scopes = request.scopes.clone();
    scopes.sort();
    scopes.dedup();
    let secret = new_secret();
    let row = db::tokens::NewTokenRow {
        user_id,
        name,
        sha256: digest(&secret),
        scopes: &scopes,
        globs: &request.packages,
        expires_at,
    };
    let id = db::tokens::create(db, &row).await?;
    let token = db::tokens::by_id(db, id).await?.ok_or_else(|| ApiError::internal("the new token vanished"))?;
    Ok(TokenCreated { token: token.info(), secret })
}

/// An authenticated request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user_id: i64,
    pub login: String,
    pub token_id: i64,
    pub token_name: String,
    pub scopes: Vec<Scope>,
    pub globs: Vec<String>,
}

impl Caller {
    /// A token without scopes may do everything, including managing tokens.
    pub fn is_unscoped(&self) -> bool {
        self.scopes.is_empty()
    }

    /// Refuses (403) unless the token is limited by neither scopes nor packages:
    /// what only such a token may do (manage tokens and publisher keys) would
    /// otherwise let a leaked narrow token widen itself.
    pub fn require_unrestricted(&self, what: &str) -> ApiResult<()> {
        if self.is_unscoped() && self.globs.is_empty() {
            return Ok(());
        }
        Err(ApiError::forbidden(format!(
            "the token `{}` is limited by scopes or packages; {what} needs an unrestricted token",
            self.token_name
        )))
    }

    /// Refuses (403) unless the token has `scope` and covers `package`.
    pub fn require(&self, scope: Scope, package: &str) -> ApiResult<()> {
        if !self.is_unscoped() && !self.scopes.contains(&scope) {
            let has: Vec<&str> = self.scopes.iter().map(|s| s.as_str()).collect();
            return Err(ApiError::forbidden(format!(
                "the token `{}` does not have the `{scope}` scope needed here (it has: {}); create one that does",
                self.token_name,
                has.join(", ")
            )));
        }
        if !self.globs.is_empty() && !self.globs.iter().any(|g| PackageGlob::new(g).is_ok_and(|g| g.matches(package))) {
            return Err(ApiError::forbidden(format!(
                "the token `{}` is limited to packages matching {} and `{package}` is not one of them",
                self.token_name,
                self.globs.iter().map(|g| format!("`{g}`")).collect::<Vec<_>>().join(", ")
            )));
        }
        Ok(())
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Caller> {
        let Some(value) = parts.headers.get(AUTHORIZATION) else {
            return Err(ApiError::unauthorized(
                "this request needs an API token in the Authorization header; log in with `ebpkg login`",
            ));
        };
        let value = value.to_str().unwrap_or("").trim();
        let secret = value.strip_prefix("Bearer ").unwrap_or(value).trim();
        let row = if secret.is_empty() { None } else { db::tokens::by_digest(&state.db, &digest(secret)).await? };
        let Some(row) = row else {
            return Err(ApiError::unauthorized(
                "the API token is not valid for this registry; log in again with `ebpkg login`",
            ));
        };
        if row.revoked_at.is_some() {
            return Err(ApiError::unauthorized(format!(
                "the API token `{}` was revoked; create a new one and log in with it",
                row.name
            )));
        }
        if let Some(at) = row.expires_at.filter(|at| *at <= chrono::Utc::now()) {
            return Err(ApiError::unauthorized(format!(
                "the API token `{}` expired on {}; create a new one and log in with it",
                row.name,
                at.to_rfc3339()
            )));
        }
        Ok(Caller {
            user_id: row.user_id,
            login: row.login.clone(),
            token_id: row.id,
            token_name: row.name.clone(),
            scopes: row.scopes(),
            globs: row.package_globs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_and_prefixed() {
        let (a, b) = (new_secret(), new_secret());
        assert_ne!(a, b);
        assert!(a.starts_with(TOKEN_PREFIX) && a.len() == TOKEN_PREFIX.len() + 64);
        assert_ne!(digest(&a), digest(&b));
    }
}
