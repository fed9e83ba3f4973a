//! What the web catalog's pages read beyond the API's queries: recent packages,
//! dependents, owners' packages, close names, the sitemap and a version's
//! documentation sources.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::PgExecutor;

/// A package as lists show it: described by its newest version.
#[derive(Debug, Clone)]
pub struct Listed {
    pub name: String,
    pub described_version: String,
    pub description: Option<String>,
    pub all_yanked: bool,
    pub at: DateTime<Utc>,
}

/// Which date a list of packages is ordered by.
#[derive(Debug, Clone, Copy)]
pub enum Recent {
    /// First published.
    Created,
    /// Last changed (a publish or a yank) after its first publish: a package
    /// published once is new, not updated.
    Updated,
}

pub async fn recent(db: impl PgExecutor<'_>, order: Recent, limit: i64) -> Result<Vec<Listed>, sqlx::Error> {
    match order {
        Recent::Created => {
            sqlx::query_as!(
                Listed,
                "SELECT name, described_version, description, all_yanked, created_at AS at FROM packages \
                 WHERE index_file <> '' ORDER BY created_at DESC, id DESC LIMIT $1",
                limit,
            )
            .fetch_all(db)
            .await
        }
        Recent::Updated => {
            sqlx::query_as!(
                Listed,
                "SELECT name, described_version, description, all_yanked, updated_at AS at FROM packages \
                 WHERE index_file <> '' AND updated_at > created_at ORDER BY updated_at DESC, id DESC LIMIT $1",
                limit,
            )
            .fetch_all(db)
            .await
        }
    }
}

pub async fn count(db: impl PgExecutor<'_>) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar!(r#"SELECT count(*) AS "count!" FROM packages WHERE index_file <> ''"#).fetch_one(db).await
}

/// Packages whose described version depends on `normalized` (from this registry).
pub async fn dependents(db: impl PgExecutor<'_>, normalized: &str, limit: i64) -> Result<Vec<Listed>, sqlx::Error> {
    sqlx::query_as!(
        Listed,
        "SELECT name, described_version, description, all_yanked, updated_at AS at FROM packages \
         WHERE depends_on @> ARRAY[$1] AND index_file <> '' ORDER BY downloads DESC, name LIMIT $2",
        normalized,
        limit,
    )
    .fetch_all(db)
    .await
}

/// Names close to `normalized` (trigram similarity, or a name it starts or is
/// started by), best first.
pub async fn close_names(db: &sqlx::PgPool, normalized: &str, limit: i64) -> Result<Vec<String>, sqlx::Error> {
    let mut tx = db.begin().await?;
    // pg_trgm's default (0.3) misses one-letter typos in short names (`dd0s`
    // shares 2 of 8 trigrams with `ddos`); the index still serves `%`.
    sqlx::query!("SET LOCAL pg_trgm.similarity_threshold = 0.2").execute(&mut *tx).await?;
    let names = sqlx::query_scalar!(
        "SELECT name FROM packages \
         WHERE index_file <> '' AND (normalized_name % $1 OR starts_with(normalized_name, $1) \
                                     OR starts_with($1, normalized_name)) \
         ORDER BY similarity(normalized_name, $1) DESC, name LIMIT $2",
        normalized,
        limit,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(names)
}

/// A user and the packages they own.
pub struct OwnerPage {
    pub login: String,
    pub joined: DateTime<Utc>,
    pub packages: Vec<Listed>,
}

pub async fn owner(db: &sqlx::PgPool, login: &str) -> Result<Option<OwnerPage>, sqlx::Error> {
    let user = sqlx::query!("SELECT id, login, created_at FROM users WHERE lower(login) = lower($1)", login)
        .fetch_optional(db)
        .await?;
    let Some(user) = user else { return Ok(None) };
    let packages = sqlx::query_as!(
        Listed,
        "SELECT p.name, p.described_version, p.description, p.all_yanked, p.updated_at AS at \
         FROM packages p JOIN package_owners o ON o.package_id = p.id \
         WHERE o.user_id = $1 AND p.index_file <> '' ORDER BY p.name",
        user.id,
    )
    .fetch_all(db)
    .await?;
    Ok(Some(OwnerPage { login: user.login, joined: user.created_at, packages }))
}

/// Every package and when it last changed, for the sitemap (at most `limit`,
/// the sitemap protocol's 50,000).
pub async fn sitemap(db: impl PgExecutor<'_>, limit: i64) -> Result<Vec<(String, DateTime<Utc>)>, sqlx::Error> {
    let rows =
        sqlx::query!("SELECT name, updated_at FROM packages WHERE index_file <> '' ORDER BY name LIMIT $1", limit)
            .fetch_all(db)
            .await?;
    Ok(rows.into_iter().map(|r| (r.name, r.updated_at)).collect())
}

/// What a version's documentation page is written from: the manifest and chain
/// sources as published (absent for versions published before the catalog
/// kept them).
pub struct DocSources {
    pub manifest: Option<String>,
    pub chain_sources: BTreeMap<String, String>,
}

/// Chain name → source, as stored.
type ChainSources = sqlx::types::Json<BTreeMap<String, String>>;

pub async fn doc_sources(
    db: impl PgExecutor<'_>,
    package_id: i64,
    num_no_build: &str,
) -> Result<DocSources, sqlx::Error> {
    let row = sqlx::query!(
        r#"SELECT manifest, chain_sources AS "chain_sources: ChainSources" FROM versions
           WHERE package_id = $1 AND num_no_build = $2"#,
        package_id,
        num_no_build,
    )
    .fetch_optional(db)
    .await?;
    let (manifest, chains) = row.map_or((None, None), |r| (r.manifest, r.chain_sources));
    Ok(DocSources { manifest, chain_sources: chains.map(|j| j.0).unwrap_or_default() })
}

/// The package's described version (the one its page shows by default).
pub async fn described_version(db: impl PgExecutor<'_>, package_id: i64) -> Result<String, sqlx::Error> {
    sqlx::query_scalar!("SELECT described_version FROM packages WHERE id = $1", package_id).fetch_one(db).await
}
