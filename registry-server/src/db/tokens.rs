//! API tokens, stored only as the SHA-256 of their secret.

use chrono::{DateTime, Utc};
use ebpkg_spec::registry_api::{Scope, TokenInfo};
use sqlx::PgExecutor;

#[derive(Debug, Clone)]
pub struct TokenRow {
    pub id: i64,
    pub user_id: i64,
    pub login: String,
    pub name: String,
    pub scopes: Vec<String>,
    pub package_globs: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
}

impl TokenRow {
    /// Scopes this server knows (an unknown one, from a newer server sharing the
    /// database, grants nothing here).
    pub fn scopes(&self) -> Vec<Scope> {
        self.scopes.iter().filter_map(|s| Scope::parse(s)).collect()
    }

    pub fn info(&self) -> TokenInfo {
        TokenInfo {
            id: self.id,
            name: self.name.clone(),
            scopes: self.scopes(),
            packages: self.package_globs.clone(),
            created_at: self.created_at.to_rfc3339(),
            expires_at: self.expires_at.map(|t| t.to_rfc3339()),
            last_used_at: self.last_used_at.map(|t| t.to_rfc3339()),
        }
    }
}

pub struct NewTokenRow<'a> {
    pub user_id: i64,
    pub name: &'a str,
    pub sha256: [u8; 32],
    pub scopes: &'a [Scope],
    pub globs: &'a [String],
    pub expires_at: Option<DateTime<Utc>>,
}

pub async fn create(db: impl PgExecutor<'_>, t: &NewTokenRow<'_>) -> Result<i64, sqlx::Error> {
    let scopes: Vec<String> = t.scopes.iter().map(|s| s.as_str().to_owned()).collect();
    sqlx::query_scalar!(
        "INSERT INTO api_tokens (user_id, name, token_sha256, scopes, package_globs, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
        t.user_id,
        t.name,
        &t.sha256[..],
        &scopes,
        t.globs,
        t.expires_at,
    )
    .fetch_one(db)
    .await
}

/// The token with this secret's digest, whatever its state (the caller decides
/// what expired and revoked mean), and marks it used.
pub async fn by_digest(db: impl PgExecutor<'_>, sha256: &[u8; 32]) -> Result<Option<TokenRow>, sqlx::Error> {
    sqlx::query_as!(
        TokenRow,
        "WITH used AS (UPDATE api_tokens SET last_used_at = now() WHERE token_sha256 = $1 \
                       AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()) RETURNING id) \
         SELECT t.id, t.user_id, u.login, t.name, t.scopes, t.package_globs, t.created_at, t.expires_at, t.revoked_at, \
                t.last_used_at \
         FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_sha256 = $1",
        &sha256[..],
    )
    .fetch_optional(db)
    .await
}

pub async fn by_id(db: impl PgExecutor<'_>, id: i64) -> Result<Option<TokenRow>, sqlx::Error> {
    sqlx::query_as!(
        TokenRow,
        "SELECT t.id, t.user_id, u.login, t.name, t.scopes, t.package_globs, t.created_at, t.expires_at, t.revoked_at, \
                t.last_used_at \
         FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.id = $1",
        id,
    )
    .fetch_optional(db)
    .await
}

/// A user's tokens that are neither revoked nor expired.
pub async fn live_of_user(db: impl PgExecutor<'_>, user_id: i64) -> Result<Vec<TokenRow>, sqlx::Error> {
    sqlx::query_as!(
        TokenRow,
        "SELECT t.id, t.user_id, u.login, t.name, t.scopes, t.package_globs, t.created_at, t.expires_at, t.revoked_at, \
                t.last_used_at \
         FROM api_tokens t JOIN users u ON u.id = t.user_id \
         WHERE t.user_id = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()) \
         ORDER BY t.id",
        user_id,
    )
    .fetch_all(db)
    .await
}

/// Revokes a token of `user_id`; false when there is no such live token.
pub async fn revoke(db: impl PgExecutor<'_>, user_id: i64, id: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "UPDATE api_tokens SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL",
        id,
        user_id,
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}
