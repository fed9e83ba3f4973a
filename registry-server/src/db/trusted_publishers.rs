//! Trusted publishers (which CI identities may publish which package) and the
//! OIDC tokens already exchanged.

use chrono::{DateTime, Utc};
use ebpkg_spec::registry_api::{NewTrustedPublisher, TrustedPublisher};
use sqlx::{PgConnection, PgExecutor};

#[derive(Debug, Clone)]
pub struct PublisherRow {
    pub id: i64,
    pub package_id: i64,
    pub package: String,
    pub issuer: String,
    pub repository: String,
    pub workflow: String,
    pub environment: Option<String>,
    pub created_by: i64,
    pub login: String,
    pub created_at: DateTime<Utc>,
}

impl PublisherRow {
    pub fn api(&self) -> TrustedPublisher {
        TrustedPublisher {
            id: self.id,
            identity: NewTrustedPublisher {
                issuer: self.issuer.clone(),
                repository: self.repository.clone(),
                workflow: self.workflow.clone(),
                environment: self.environment.clone(),
            },
            added_by: self.login.clone(),
            added_at: self.created_at.to_rfc3339(),
        }
    }
}

pub async fn of_package(db: impl PgExecutor<'_>, package_id: i64) -> Result<Vec<PublisherRow>, sqlx::Error> {
    sqlx::query_as!(
        PublisherRow,
        "SELECT t.id, t.package_id, p.name AS package, t.issuer, t.repository, t.workflow, t.environment, \
                t.created_by, u.login, t.created_at \
         FROM trusted_publishers t JOIN packages p ON p.id = t.package_id JOIN users u ON u.id = t.created_by \
         WHERE t.package_id = $1 ORDER BY t.id",
        package_id,
    )
    .fetch_all(db)
    .await
}

/// The configurations for `repository` at `issuer` whose creator still owns
/// the package (one who stopped being an owner took their trust along).
pub async fn for_identity(
    db: impl PgExecutor<'_>,
    issuer: &str,
    repository: &str,
) -> Result<Vec<PublisherRow>, sqlx::Error> {
    sqlx::query_as!(
        PublisherRow,
        "SELECT t.id, t.package_id, p.name AS package, t.issuer, t.repository, t.workflow, t.environment, \
                t.created_by, u.login, t.created_at \
         FROM trusted_publishers t JOIN packages p ON p.id = t.package_id JOIN users u ON u.id = t.created_by \
         WHERE t.issuer = $1 AND t.repository = $2 AND EXISTS \
         (SELECT 1 FROM package_owners o WHERE o.package_id = t.package_id AND o.user_id = t.created_by) \
         ORDER BY p.name, t.id",
        issuer,
        repository,
    )
    .fetch_all(db)
    .await
}

/// Adds one; `None` when the same one exists.
pub async fn insert(
    db: impl PgExecutor<'_>,
    package_id: i64,
    new: &NewTrustedPublisher,
    by: i64,
) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "INSERT INTO trusted_publishers (package_id, issuer, repository, workflow, environment, created_by) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING id",
        package_id,
        &new.issuer,
        &new.repository,
        &new.workflow,
        new.environment.as_deref(),
        by,
    )
    .fetch_optional(db)
    .await
}

pub async fn delete(db: impl PgExecutor<'_>, package_id: i64, id: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!("DELETE FROM trusted_publishers WHERE package_id = $1 AND id = $2", package_id, id)
        .execute(db)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Records an OIDC token as used; false when it was already (a replay). The
/// primary key decides, so two concurrent exchanges of one token cannot both win.
pub async fn use_token_once(
    tx: &mut PgConnection,
    issuer: &str,
    jti: &str,
    expires_at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    // Expired entries can go: an expired token is refused before it gets here.
    sqlx::query!("DELETE FROM trusted_publishing_jtis WHERE expires_at < now() - interval '5 minutes'")
        .execute(&mut *tx)
        .await?;
    let inserted = sqlx::query!(
        "INSERT INTO trusted_publishing_jtis (issuer, jti, expires_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        issuer,
        jti,
        expires_at,
    )
    .execute(&mut *tx)
    .await?;
    Ok(inserted.rows_affected() == 1)
}
