//! Publisher keys: the public keys users proved they hold, which the versions of
//! the packages they own may be signed with.

use chrono::{DateTime, Utc};
use ebpkg_signing::PublicKey;
use ebpkg_spec::registry_api::PublisherKey;
use ebpkg_spec::types::KeyId;
use sqlx::{PgConnection, PgExecutor};

#[derive(Debug, Clone)]
pub struct KeyRow {
    pub key_id: Vec<u8>,
    pub user_id: i64,
    pub login: String,
    pub spki_der: Vec<u8>,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl KeyRow {
    /// The key, re-derived from its DER (so its id is computed, not trusted).
    pub fn public_key(&self) -> Result<PublicKey, sqlx::Error> {
        PublicKey::from_der(self.spki_der.clone())
            .map_err(|e| sqlx::Error::Protocol(format!("a stored publisher key does not parse: {e}")))
    }

    pub fn api(&self) -> Result<PublisherKey, sqlx::Error> {
        let key = self.public_key()?;
        Ok(PublisherKey {
            id: *key.id(),
            pem: key.to_pem(),
            owner: self.login.clone(),
            added_at: self.created_at.to_rfc3339(),
            revoked_at: self.revoked_at.map(|t| t.to_rfc3339()),
        })
    }
}

pub async fn by_id(db: impl PgExecutor<'_>, id: &KeyId) -> Result<Option<KeyRow>, sqlx::Error> {
    sqlx::query_as!(
        KeyRow,
        "SELECT k.key_id, k.user_id, u.login, k.spki_der, k.created_at, k.revoked_at \
         FROM publisher_keys k JOIN users u ON u.id = k.user_id WHERE k.key_id = $1",
        &id.0[..],
    )
    .fetch_optional(db)
    .await
}

/// The key, locked against revocation until the transaction ends: a publish
/// signed with it and its owner revoking it are ordered.
pub async fn by_id_for_share(tx: &mut PgConnection, id: &KeyId) -> Result<Option<KeyRow>, sqlx::Error> {
    sqlx::query_as!(
        KeyRow,
        "SELECT k.key_id, k.user_id, u.login, k.spki_der, k.created_at, k.revoked_at \
         FROM publisher_keys k JOIN users u ON u.id = k.user_id WHERE k.key_id = $1 FOR SHARE OF k",
        &id.0[..],
    )
    .fetch_optional(tx)
    .await
}

/// A user's keys, revoked ones included, oldest first.
pub async fn of_user(db: impl PgExecutor<'_>, user_id: i64) -> Result<Vec<KeyRow>, sqlx::Error> {
    sqlx::query_as!(
        KeyRow,
        "SELECT k.key_id, k.user_id, u.login, k.spki_der, k.created_at, k.revoked_at \
         FROM publisher_keys k JOIN users u ON u.id = k.user_id WHERE k.user_id = $1 \
         ORDER BY k.created_at, k.key_id",
        user_id,
    )
    .fetch_all(db)
    .await
}

/// The live keys of the users in `user_ids` (the owners a publish may be signed by).
pub async fn live_of_users(db: impl PgExecutor<'_>, user_ids: &[i64]) -> Result<Vec<KeyRow>, sqlx::Error> {
    sqlx::query_as!(
        KeyRow,
        "SELECT k.key_id, k.user_id, u.login, k.spki_der, k.created_at, k.revoked_at \
         FROM publisher_keys k JOIN users u ON u.id = k.user_id \
         WHERE k.user_id = ANY($1) AND k.revoked_at IS NULL ORDER BY k.created_at, k.key_id",
        user_ids,
    )
    .fetch_all(db)
    .await
}

/// Registers `key` for `user_id`; `false` when the key id is already registered
/// (by anyone, revoked or not).
pub async fn insert(db: impl PgExecutor<'_>, user_id: i64, key: &PublicKey) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "INSERT INTO publisher_keys (key_id, user_id, spki_der) VALUES ($1, $2, $3) ON CONFLICT (key_id) DO NOTHING",
        &key.id().0[..],
        user_id,
        key.der(),
    )
    .execute(db)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Revokes one of `user_id`'s keys; `None` when the user has no such key,
/// `Some(false)` when it was already revoked.
pub async fn revoke(tx: &mut PgConnection, user_id: i64, id: &KeyId) -> Result<Option<bool>, sqlx::Error> {
    let was: Option<Option<DateTime<Utc>>> = sqlx::query_scalar!(
        "SELECT revoked_at FROM publisher_keys WHERE key_id = $1 AND user_id = $2 FOR UPDATE",
        &id.0[..],
        user_id,
    )
    .fetch_optional(&mut *tx)
    .await?;
    match was {
        None => Ok(None),
        Some(Some(_)) => Ok(Some(false)),
        Some(None) => {
            sqlx::query!("UPDATE publisher_keys SET revoked_at = now() WHERE key_id = $1", &id.0[..])
                .execute(tx)
                .await?;
            Ok(Some(true))
        }
    }
}
