//! Everything the server keeps in PostgreSQL, one module per table family. Every
//! query is a `sqlx::query!` macro (or `query_as!`, `query_scalar!`), checked at
//! compile time against the schema the migrations make; builds read that schema
//! from `registry-server/.sqlx` (`ci/sqlx-prepare` writes it), never from a database.

pub mod attestations;
pub mod catalog;
pub mod keys;
pub mod limits;
pub mod packages;
pub mod tokens;
pub mod trusted_publishers;
pub mod tuf;
pub mod users;

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

/// The channel every transaction that changes a package's index file notifies
/// (`NOTIFY ebpkg_index, '<normalized name>'`, delivered at commit): the index
/// cache listens on it.
pub const INDEX_CHANNEL: &str = "ebpkg_index";

/// The migrations, embedded in the binary.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Opens a pool. Connections are made lazily, so a server starts (and answers
/// `/healthz`, and `503` elsewhere) while the database is still down.
pub fn pool(url: &str, size: u32) -> Result<PgPool, sqlx::Error> {
    PgPoolOptions::new()
        .max_connections(size)
        .min_connections(0)
        .acquire_timeout(Duration::from_secs(5))
        // A connection broken by a database restart is found and replaced.
        .test_before_acquire(true)
        .connect_lazy(url)
}

/// Applies the migrations not yet applied; returns how many were.
pub async fn migrate(pool: &PgPool) -> Result<usize, sqlx::migrate::MigrateError> {
    let before = applied(pool).await;
    MIGRATOR.run(pool).await?;
    Ok(applied(pool).await.saturating_sub(before))
}

async fn applied(pool: &PgPool) -> usize {
    sqlx::query_scalar!(r#"SELECT count(*) AS "count!" FROM _sqlx_migrations WHERE success"#)
        .fetch_one(pool)
        .await
        .map_or(0, |n| usize::try_from(n).unwrap_or(0))
}

/// Whether the schema is the one this binary expects (for `/readyz` and `serve`).
pub async fn schema_is_current(pool: &PgPool) -> Result<bool, sqlx::Error> {
    let newest = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    let applied: Option<i64> =
        sqlx::query_scalar!("SELECT max(version) FROM _sqlx_migrations WHERE success").fetch_one(pool).await?;
    Ok(applied == Some(newest))
}

/// True for a unique-constraint violation (a concurrent insert won).
pub fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.code().as_deref() == Some("23505"))
}
