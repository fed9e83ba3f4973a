//! Kernel verification attestations: each version's accepted bundles, as
//! uploaded, and the attestation file served for it (rebuilt from them, oldest
//! first, in the transaction that adds one).

use chrono::{DateTime, Utc};
use ebpkg_spec::attestation::AttestationFile;
use semver::Version;
use sqlx::{PgConnection, PgExecutor};

use super::packages::without_build;

/// A version attestations are about: its row, its package's, and the archive.
#[derive(Debug, Clone)]
pub struct VersionRef {
    pub id: i64,
    pub package_id: i64,
    /// The package's name as published.
    pub package: String,
    /// The version as published (with its build metadata, if any).
    pub num: String,
    /// The archive's SHA-256, hex.
    pub cksum: String,
}

pub async fn version(
    db: impl PgExecutor<'_>,
    normalized: &str,
    version: &Version,
) -> Result<Option<VersionRef>, sqlx::Error> {
    sqlx::query_as!(
        VersionRef,
        "SELECT v.id, v.package_id, p.name AS package, v.num, v.cksum \
         FROM versions v JOIN packages p ON p.id = v.package_id \
         WHERE p.normalized_name = $1 AND v.num_no_build = $2",
        normalized,
        without_build(version),
    )
    .fetch_optional(db)
    .await
}

/// A version's attestation file as served.
#[derive(Debug, Clone)]
pub struct StoredFile {
    pub bytes: Vec<u8>,
    pub sha256: Vec<u8>,
}

/// `None`: no such version; `Some(None)`: the version has no attestation.
pub async fn file(
    db: impl PgExecutor<'_>,
    normalized: &str,
    version: &Version,
) -> Result<Option<Option<StoredFile>>, sqlx::Error> {
    let row = sqlx::query!(
        r#"SELECT f.bytes AS "bytes?", f.sha256 AS "sha256?"
           FROM versions v JOIN packages p ON p.id = v.package_id
           LEFT JOIN attestation_files f ON f.version_id = v.id
           WHERE p.normalized_name = $1 AND v.num_no_build = $2"#,
        normalized,
        without_build(version),
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| match (r.bytes, r.sha256) {
        (Some(bytes), Some(sha256)) => Some(StoredFile { bytes, sha256 }),
        _ => None,
    }))
}

/// Whether the version has this very upload already.
pub async fn exists(tx: &mut PgConnection, version_id: i64, sha256: &[u8]) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM attestations WHERE version_id = $1 AND sha256 = $2) AS "exists!""#,
        version_id,
        sha256,
    )
    .fetch_one(tx)
    .await
}

pub async fn count(db: impl PgExecutor<'_>, version_id: i64) -> Result<usize, sqlx::Error> {
    let n = sqlx::query_scalar!(r#"SELECT count(*) AS "count!" FROM attestations WHERE version_id = $1"#, version_id)
        .fetch_one(db)
        .await?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

pub struct NewAttestation<'a> {
    pub version_id: i64,
    /// The bundle's JSON, as uploaded.
    pub bundle: &'a str,
    pub sha256: &'a [u8],
    pub key_id: &'a [u8],
    pub uploaded_by: i64,
}

pub async fn insert(tx: &mut PgConnection, a: &NewAttestation<'_>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO attestations (version_id, bundle, sha256, key_id, uploaded_by) VALUES ($1, $2, $3, $4, $5)",
        a.version_id,
        a.bundle,
        a.sha256,
        a.key_id,
        a.uploaded_by,
    )
    .execute(tx)
    .await?;
    Ok(())
}

/// The version's attestation file, made from its rows, oldest first (not
/// stored: see [`store_file`]).
pub async fn build_file(tx: &mut PgConnection, version_id: i64) -> Result<Vec<u8>, sqlx::Error> {
    let bundles: Vec<String> =
        sqlx::query_scalar!("SELECT bundle FROM attestations WHERE version_id = $1 ORDER BY id", version_id)
            .fetch_all(tx)
            .await?;
    let attestations = bundles
        .iter()
        .map(|b| serde_json::from_str(b))
        .collect::<Result<Vec<serde_json::Value>, _>>()
        .map_err(|e| sqlx::Error::Protocol(format!("a stored attestation is not JSON: {e}")))?;
    Ok(AttestationFile { attestations }.to_bytes())
}

pub async fn store_file(tx: &mut PgConnection, version_id: i64, bytes: &[u8]) -> Result<(), sqlx::Error> {
    let sha256 = ebpkg_spec::types::Sha256Digest::of(bytes);
    sqlx::query!(
        "INSERT INTO attestation_files (version_id, bytes, sha256) VALUES ($1, $2, $3) \
         ON CONFLICT (version_id) DO UPDATE SET bytes = EXCLUDED.bytes, sha256 = EXCLUDED.sha256, updated_at = now()",
        version_id,
        bytes,
        &sha256.0[..],
    )
    .execute(tx)
    .await?;
    Ok(())
}

/// Announces a change to the package at commit (`NOTIFY ebpkg_index`): every
/// replica drops what it derived from it (its index file, its catalog pages).
pub async fn notify(tx: &mut PgConnection, package_id: i64) -> Result<(), sqlx::Error> {
    sqlx::query!("SELECT pg_notify($1, normalized_name) FROM packages WHERE id = $2", super::INDEX_CHANNEL, package_id)
        .execute(tx)
        .await?;
    Ok(())
}

/// One attestation as the catalog shows it: the bundle, when it came, and
/// the key it verified with (whose, and whether it was revoked since).
#[derive(Debug, Clone)]
pub struct Shown {
    pub bundle: String,
    pub created_at: DateTime<Utc>,
    pub key_id: Vec<u8>,
    pub login: String,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// The version's attestations, oldest first.
pub async fn shown(db: impl PgExecutor<'_>, package_id: i64, version: &Version) -> Result<Vec<Shown>, sqlx::Error> {
    sqlx::query_as!(
        Shown,
        "SELECT a.bundle, a.created_at, a.key_id, u.login, k.revoked_at \
         FROM attestations a JOIN versions v ON v.id = a.version_id \
         JOIN publisher_keys k ON k.key_id = a.key_id JOIN users u ON u.id = k.user_id \
         WHERE v.package_id = $1 AND v.num_no_build = $2 ORDER BY a.id",
        package_id,
        without_build(version),
    )
    .fetch_all(db)
    .await
}

/// Every attestation file as a TUF target (`attestations/…`, bytes): what
/// `tuf init` signs beside the index files.
pub async fn targets(db: impl PgExecutor<'_>) -> Result<Vec<(String, Vec<u8>)>, sqlx::Error> {
    let rows = sqlx::query!(
        "SELECT p.name, v.num, f.bytes FROM attestation_files f JOIN versions v ON v.id = f.version_id \
         JOIN packages p ON p.id = v.package_id ORDER BY p.name, v.id",
    )
    .fetch_all(db)
    .await?;
    rows.into_iter()
        .map(|r| {
            let name = ebpkg_spec::PackageName::new(&r.name)
                .map_err(|e| sqlx::Error::Protocol(format!("a stored package name does not parse: {e}")))?;
            let version = Version::parse(&r.num)
                .map_err(|e| sqlx::Error::Protocol(format!("a stored version does not parse: {e}")))?;
            Ok((ebpkg_spec::attestation::attestation_target(&name, &version), r.bytes))
        })
        .collect()
}
