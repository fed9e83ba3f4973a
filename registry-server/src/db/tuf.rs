//! TUF metadata files, as rows.

use std::collections::BTreeMap;

use sqlx::{PgConnection, PgExecutor};

/// Every file, locked until the transaction ends (TUF changes are serialized:
/// each new snapshot and timestamp follows the previous one); `None` when the
/// registry has no TUF metadata.
pub async fn lock_all(tx: &mut PgConnection) -> Result<Option<BTreeMap<String, Vec<u8>>>, sqlx::Error> {
    let rows = sqlx::query!("SELECT name, bytes FROM tuf_files ORDER BY name FOR UPDATE").fetch_all(tx).await?;
    if !rows.iter().any(|r| r.name == "root.json") {
        return Ok(None);
    }
    Ok(Some(rows.into_iter().map(|r| (r.name, r.bytes)).collect()))
}

pub async fn write(tx: &mut PgConnection, name: &str, bytes: &[u8]) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO tuf_files (name, bytes) VALUES ($1, $2) \
         ON CONFLICT (name) DO UPDATE SET bytes = EXCLUDED.bytes, updated_at = now()",
        name,
        bytes,
    )
    .execute(tx)
    .await?;
    Ok(())
}

pub async fn file(db: impl PgExecutor<'_>, name: &str) -> Result<Option<Vec<u8>>, sqlx::Error> {
    sqlx::query_scalar!("SELECT bytes FROM tuf_files WHERE name = $1", name).fetch_optional(db).await
}

/// Every package's index file as a TUF target (`index/…`, bytes).
pub async fn index_targets(db: impl PgExecutor<'_>) -> Result<Vec<(String, Vec<u8>)>, sqlx::Error> {
    let rows = sqlx::query!("SELECT name, index_file FROM packages WHERE index_file <> '' ORDER BY name")
        .fetch_all(db)
        .await?;
    Ok(rows.into_iter().map(|r| (ebpkg_spec::index_target(&r.name), r.index_file.into_bytes())).collect())
}

/// Every file (for backups, and tests that replay old metadata).
pub async fn all(db: impl PgExecutor<'_>) -> Result<Vec<(String, Vec<u8>)>, sqlx::Error> {
    let rows = sqlx::query!("SELECT name, bytes FROM tuf_files ORDER BY name").fetch_all(db).await?;
    Ok(rows.into_iter().map(|r| (r.name, r.bytes)).collect())
}
