//! Packages, versions and owners, and the two things derived from them in the
//! same transaction as every change: the sparse index file and the search fields.

use chrono::{DateTime, Utc};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::registry_api::{MatchedOn, Owner, SearchHit, VersionSummary};
use ebpkg_spec::types::Sha256Digest;
use ebpkg_spec::{ItemName, PackageName};
use semver::Version;
use sqlx::{PgConnection, PgExecutor};

#[derive(Debug, Clone)]
pub struct PackageRow {
    pub id: i64,
    pub name: String,
}

/// A version without its build metadata: `1.0.0+a` and `1.0.0+b` are one version.
pub fn without_build(v: &Version) -> String {
    let mut v = v.clone();
    v.build = semver::BuildMetadata::EMPTY;
    v.to_string()
}

pub async fn find(db: impl PgExecutor<'_>, normalized: &str) -> Result<Option<PackageRow>, sqlx::Error> {
    sqlx::query_as!(PackageRow, "SELECT id, name FROM packages WHERE normalized_name = $1", normalized)
        .fetch_optional(db)
        .await
}

/// The package row, locked until the transaction ends: publishes, yanks and
/// owner changes of one package are serialized here.
pub async fn lock(tx: &mut PgConnection, normalized: &str) -> Result<Option<PackageRow>, sqlx::Error> {
    sqlx::query_as!(PackageRow, "SELECT id, name FROM packages WHERE normalized_name = $1 FOR UPDATE", normalized)
        .fetch_optional(tx)
        .await
}

/// An existing package of someone else whose name looks like `name` (see
/// `ebpkg_spec::names::skeleton`), under a lock on that look held until the
/// transaction ends: two new names that look alike, published at once, cannot
/// both pass. Packages `user_id` owns do not count: an owner may publish a
/// look-alike of their own package.
pub async fn too_close(tx: &mut PgConnection, name: &PackageName, user_id: i64) -> Result<Option<String>, sqlx::Error> {
    sqlx::query!("SELECT pg_advisory_xact_lock(hashtextextended(ebpkg_name_skeleton($1), 0))", name.as_str())
        .execute(&mut *tx)
        .await?;
    sqlx::query_scalar!(
        "SELECT name FROM packages p WHERE name_skeleton = ebpkg_name_skeleton($1) AND normalized_name <> $2 \
         AND NOT EXISTS (SELECT 1 FROM package_owners o WHERE o.package_id = p.id AND o.user_id = $3) \
         ORDER BY name LIMIT 1",
        name.as_str(),
        name.normalized(),
        user_id,
    )
    .fetch_optional(tx)
    .await
}

/// Creates the package row (its index is filled by [`refresh`] in the same
/// transaction); `None` when a concurrent publish created it first.
pub async fn create(tx: &mut PgConnection, name: &PackageName) -> Result<Option<i64>, sqlx::Error> {
    sqlx::query_scalar!(
        "INSERT INTO packages (name, normalized_name, index_file, index_sha256, index_modified_at, \
                               described_version, all_yanked, search) \
         VALUES ($1, $2, '', $3, now(), '', false, ''::tsvector) \
         ON CONFLICT (normalized_name) DO NOTHING RETURNING id",
        name.as_str(),
        name.normalized(),
        &Sha256Digest::of(b"").0[..],
    )
    .fetch_optional(tx)
    .await
}

pub async fn version_exists(db: impl PgExecutor<'_>, package_id: i64, version: &Version) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM versions WHERE package_id = $1 AND num_no_build = $2) AS "exists!""#,
        package_id,
        without_build(version),
    )
    .fetch_one(db)
    .await
}

pub async fn is_owner(db: impl PgExecutor<'_>, package_id: i64, user_id: i64) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM package_owners WHERE package_id = $1 AND user_id = $2) AS "exists!""#,
        package_id,
        user_id,
    )
    .fetch_one(db)
    .await
}

pub struct NewVersion<'a> {
    pub package_id: i64,
    /// Its `signed_by` names the key `bundle` was verified with.
    pub entry: &'a IndexEntry,
    pub size: u64,
    pub license: Option<&'a str>,
    pub readme: Option<&'a str>,
    pub published_by: i64,
    /// The Sigstore bundle's JSON, as published; `None` for an unsigned version.
    pub bundle: Option<&'a str>,
    /// `ebpkg.toml` as published, for the catalog's documentation pages.
    pub manifest: &'a str,
    /// Each chain's source, by chain name.
    pub chain_sources: &'a std::collections::BTreeMap<String, String>,
}

pub async fn insert_version(tx: &mut PgConnection, v: &NewVersion<'_>) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO versions (package_id, num, num_no_build, cksum, size, index_line, license, readme, published_by, \
                               signed_by, bundle, manifest, chain_sources) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        v.package_id,
        v.entry.vers.to_string(),
        without_build(&v.entry.vers),
        v.entry.cksum.to_hex(),
        i64::try_from(v.size).unwrap_or(i64::MAX),
        v.entry.to_line(),
        v.license,
        v.readme,
        v.published_by,
        v.entry.signed_by.as_ref().map(|k| &k.0[..]),
        v.bundle,
        v.manifest,
        // Unchecked (`as _`): the macros know JSONB only as serde_json::Value; `Json` encodes the map as JSONB.
        sqlx::types::Json(v.chain_sources) as _,
    )
    .execute(tx)
    .await?;
    Ok(())
}

/// The users who own the package.
pub async fn owner_ids(db: impl PgExecutor<'_>, package_id: i64) -> Result<Vec<i64>, sqlx::Error> {
    sqlx::query_scalar!("SELECT user_id FROM package_owners WHERE package_id = $1 ORDER BY user_id", package_id)
        .fetch_all(db)
        .await
}

/// A version's Sigstore bundle: `None` when there is no such version,
/// `Some(None)` when it was published unsigned.
pub async fn bundle(
    db: impl PgExecutor<'_>,
    normalized: &str,
    version: &Version,
) -> Result<Option<Option<String>>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT v.bundle FROM versions v JOIN packages p ON p.id = v.package_id \
         WHERE p.normalized_name = $1 AND v.num_no_build = $2",
        normalized,
        without_build(version),
    )
    .fetch_optional(db)
    .await
}

pub async fn add_owner(tx: &mut PgConnection, package_id: i64, user_id: i64, by: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!(
        "INSERT INTO package_owners (package_id, user_id, added_by) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        package_id,
        user_id,
        by,
    )
    .execute(tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn remove_owner(tx: &mut PgConnection, package_id: i64, user_id: i64) -> Result<bool, sqlx::Error> {
    let done = sqlx::query!("DELETE FROM package_owners WHERE package_id = $1 AND user_id = $2", package_id, user_id)
        .execute(tx)
        .await?;
    Ok(done.rows_affected() == 1)
}

pub async fn owners(db: impl PgExecutor<'_>, package_id: i64) -> Result<Vec<Owner>, sqlx::Error> {
    let logins: Vec<String> = sqlx::query_scalar!(
        "SELECT u.login FROM package_owners o JOIN users u ON u.id = o.user_id WHERE o.package_id = $1 ORDER BY u.login",
        package_id,
    )
    .fetch_all(db)
    .await?;
    Ok(logins.into_iter().map(|login| Owner { login }).collect())
}

/// Sets a version's `yanked` flag, rewriting only that field of its line.
/// `None`: no such version; `Some(false)`: it already had that flag.
pub async fn set_yanked(
    tx: &mut PgConnection,
    package_id: i64,
    version: &Version,
    yanked: bool,
) -> Result<Option<bool>, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT id, index_line, yanked FROM versions WHERE package_id = $1 AND num_no_build = $2 FOR UPDATE",
        package_id,
        without_build(version),
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else { return Ok(None) };
    if row.yanked == yanked {
        return Ok(Some(false));
    }
    let mut entry = parse_stored_line(&row.index_line)?;
    entry.yanked = yanked;
    sqlx::query!(
        "UPDATE versions SET yanked = $2, index_line = $3, yanked_at = CASE WHEN $2 THEN now() END WHERE id = $1",
        row.id,
        yanked,
        entry.to_line(),
    )
    .execute(tx)
    .await?;
    Ok(Some(true))
}

/// A line this server stored; one that no longer parses is a corrupt database.
fn parse_stored_line(line: &str) -> Result<IndexEntry, sqlx::Error> {
    match IndexEntry::parse_line(line) {
        Ok(Some(entry)) => Ok(entry),
        Ok(None) => Err(sqlx::Error::Protocol("a stored index line has a newer schema than this server".into())),
        Err(why) => Err(sqlx::Error::Protocol(format!("a stored index line does not parse: {why}"))),
    }
}

/// Rebuilds the package's index file and search fields from its versions. Called
/// in every transaction that changes a version, so the served index is always
/// exactly the versions table. Returns the index file as a TUF target (its path
/// under the registry, `index/…`, and its bytes), for the metadata to follow.
pub async fn refresh(tx: &mut PgConnection, package_id: i64) -> Result<Option<(String, Vec<u8>)>, sqlx::Error> {
    let lines: Vec<String> =
        sqlx::query_scalar!("SELECT index_line FROM versions WHERE package_id = $1 ORDER BY id", package_id)
            .fetch_all(&mut *tx)
            .await?;
    let mut file = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    let mut entries = Vec::with_capacity(lines.len());
    for line in &lines {
        file.push_str(line);
        file.push('\n');
        entries.push(parse_stored_line(line)?);
    }
    let Some(described) = described(&entries) else { return Ok(None) };
    // Delivered at commit: every replica's index cache drops this package.
    sqlx::query!("SELECT pg_notify($1, normalized_name) FROM packages WHERE id = $2", super::INDEX_CHANNEL, package_id)
        .execute(&mut *tx)
        .await?;
    let all_yanked = entries.iter().all(|e| e.yanked);
    let programs: Vec<String> = described.programs.iter().map(|p| p.name.as_str().to_owned()).collect();
    let depends_on: Vec<String> =
        described.deps.iter().filter(|d| d.registry.is_none()).map(|d| d.name.normalized()).collect();
    // The name's words (`ddos-guard` → `ddos guard`) are searchable as words too.
    let name_words = described.name.as_str().replace(['-', '_'], " ");
    sqlx::query!(
        "UPDATE packages SET index_file = $2, index_sha256 = $3, index_modified_at = now(), updated_at = now(), \
             described_version = $4, all_yanked = $5, description = $6, keywords = $7, programs = $8, \
             search = setweight(to_tsvector('simple', $9), 'A') \
                   || setweight(to_tsvector('simple', array_to_string($7::text[], ' ')), 'B') \
                   || setweight(to_tsvector('simple', array_to_string($8::text[], ' ')), 'B') \
                   || setweight(to_tsvector('english', coalesce($6, '')), 'C'), \
             depends_on = $10 \
         WHERE id = $1",
        package_id,
        &file,
        &Sha256Digest::of(file.as_bytes()).0[..],
        described.vers.to_string(),
        all_yanked,
        described.description.as_deref(),
        &described.keywords,
        &programs,
        format!("{} {name_words}", described.name),
        &depends_on,
    )
    .execute(&mut *tx)
    .await?;
    // The file is served at the published name's path (names are one per package).
    let published: String =
        sqlx::query_scalar!("SELECT name FROM packages WHERE id = $1", package_id).fetch_one(&mut *tx).await?;
    Ok(Some((ebpkg_spec::index_target(&published), file.into_bytes())))
}

/// The version a package is described by: the newest non-yanked stable one, else
/// the newest non-yanked one, else the newest (as the file registry does).
fn described(entries: &[IndexEntry]) -> Option<&IndexEntry> {
    let newest =
        |keep: &dyn Fn(&IndexEntry) -> bool| entries.iter().filter(|e| keep(e)).max_by(|a, b| a.vers.cmp(&b.vers));
    newest(&|e| !e.yanked && e.vers.pre.is_empty()).or_else(|| newest(&|e| !e.yanked)).or_else(|| newest(&|_| true))
}

/// A package's index file as served.
#[derive(Debug, Clone)]
pub struct IndexFile {
    pub index_file: String,
    pub index_sha256: Vec<u8>,
    pub index_modified_at: DateTime<Utc>,
}

pub async fn index_file(db: impl PgExecutor<'_>, normalized: &str) -> Result<Option<IndexFile>, sqlx::Error> {
    sqlx::query_as!(
        IndexFile,
        "SELECT index_file, index_sha256, index_modified_at FROM packages WHERE normalized_name = $1 \
         AND index_file <> ''",
        normalized,
    )
    .fetch_optional(db)
    .await
}

/// What a download needs: the version's id (for counting) and archive digest.
pub async fn download_target(
    db: impl PgExecutor<'_>,
    normalized: &str,
    version: &Version,
) -> Result<Option<(i64, String)>, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT v.id, v.cksum FROM versions v JOIN packages p ON p.id = v.package_id \
         WHERE p.normalized_name = $1 AND v.num_no_build = $2",
        normalized,
        without_build(version),
    )
    .fetch_optional(db)
    .await?;
    Ok(row.map(|r| (r.id, r.cksum)))
}

/// Adds counted downloads: `(version id, count)`.
pub async fn add_downloads(tx: &mut PgConnection, counts: &[(i64, i64)]) -> Result<(), sqlx::Error> {
    let (ids, n): (Vec<i64>, Vec<i64>) = counts.iter().copied().unzip();
    sqlx::query!(
        "WITH c AS (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS c(id, n)), \
              v AS (UPDATE versions SET downloads = downloads + c.n FROM c WHERE versions.id = c.id \
                    RETURNING versions.package_id, c.n) \
         UPDATE packages SET downloads = packages.downloads + s.n \
         FROM (SELECT package_id, sum(n)::bigint AS n FROM v GROUP BY package_id) s WHERE packages.id = s.package_id",
        &ids,
        &n,
    )
    .execute(tx)
    .await?;
    Ok(())
}

struct SearchRow {
    name: String,
    described_version: String,
    all_yanked: bool,
    description: Option<String>,
    keywords: Vec<String>,
    programs: Vec<String>,
    rank: i32,
    total: i64,
}

/// Packages matching `query`, ranked as the file registry ranks them (exact name,
/// prefix, substring, keyword, program, description), then by full-text rank, then
/// by name. Returns the page and the total number of matches.
pub async fn search(
    db: impl PgExecutor<'_>,
    query: &str,
    page: u32,
    per_page: u32,
) -> Result<(Vec<SearchHit>, u64), sqlx::Error> {
    let query = query.trim();
    let normalized = ebpkg_spec::names::normalize(query);
    let rows: Vec<SearchRow> = sqlx::query_as!(
        SearchRow,
        r#"WITH q AS (SELECT $1::text AS raw, lower($1) AS lq, $2::text AS nq,
                           plainto_tsquery('simple', $1) || plainto_tsquery('english', $1) AS ts)
         SELECT p.name, p.described_version, p.all_yanked, p.description, p.keywords, p.programs, m.rank AS "rank!",
                count(*) OVER () AS "total!"
         FROM packages p CROSS JOIN q, LATERAL (SELECT CASE
                WHEN q.raw = '' THEN 6
                WHEN p.normalized_name = q.nq THEN 0
                WHEN starts_with(p.normalized_name, q.nq) THEN 1
                WHEN strpos(p.normalized_name, q.nq) > 0 THEN 2
                WHEN EXISTS (SELECT 1 FROM unnest(p.keywords) k WHERE strpos(lower(k), q.lq) > 0) THEN 3
                WHEN EXISTS (SELECT 1 FROM unnest(p.programs) g WHERE strpos(lower(g), q.lq) > 0) THEN 4
                WHEN strpos(lower(coalesce(p.description, '')), q.lq) > 0 OR p.search @@ q.ts THEN 5
                ELSE NULL END AS rank) m
         WHERE p.index_file <> '' AND m.rank IS NOT NULL
         ORDER BY m.rank, ts_rank(p.search, q.ts) DESC, p.name
         LIMIT $3 OFFSET $4"#,
        query,
        &normalized,
        i64::from(per_page),
        i64::from(page.saturating_sub(1)) * i64::from(per_page),
    )
    .fetch_all(db)
    .await?;
    let total = rows.first().map_or(0, |r| u64::try_from(r.total).unwrap_or(0));
    let hits = rows.into_iter().filter_map(search_hit).collect();
    Ok((hits, total))
}

fn search_hit(r: SearchRow) -> Option<SearchHit> {
    let matched_on = match r.rank {
        0 => MatchedOn::Name,
        1 => MatchedOn::NamePrefix,
        2 => MatchedOn::NameSubstring,
        3 => MatchedOn::Keyword,
        4 => MatchedOn::Program,
        5 => MatchedOn::Description,
        _ => MatchedOn::Everything,
    };
    Some(SearchHit {
        name: PackageName::new(&r.name).ok()?,
        version: Version::parse(&r.described_version).ok()?,
        yanked: r.all_yanked,
        description: r.description,
        keywords: r.keywords,
        programs: r.programs.iter().filter_map(|p| ItemName::new(p).ok()).collect(),
        matched_on,
    })
}

pub struct PackageDates {
    pub id: i64,
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub async fn package(db: impl PgExecutor<'_>, normalized: &str) -> Result<Option<PackageDates>, sqlx::Error> {
    sqlx::query_as!(
        PackageDates,
        "SELECT id, name, created_at, updated_at FROM packages WHERE normalized_name = $1 AND index_file <> ''",
        normalized,
    )
    .fetch_optional(db)
    .await
}

struct VersionRow {
    num: String,
    yanked: bool,
    cksum: String,
    size: i64,
    created_at: DateTime<Utc>,
    login: String,
    downloads: i64,
    index_line: String,
    license: Option<String>,
    readme: Option<String>,
}

fn summary(r: &VersionRow) -> Result<VersionSummary, sqlx::Error> {
    let corrupt = |what: &str| sqlx::Error::Protocol(format!("stored {what} does not parse"));
    Ok(VersionSummary {
        vers: Version::parse(&r.num).map_err(|_| corrupt("version"))?,
        yanked: r.yanked,
        cksum: Sha256Digest::from_canonical_hex(&r.cksum).ok_or_else(|| corrupt("checksum"))?,
        size: u64::try_from(r.size).unwrap_or(0),
        published_at: r.created_at.to_rfc3339(),
        published_by: r.login.clone(),
        downloads: u64::try_from(r.downloads).unwrap_or(0),
    })
}

pub async fn versions(db: impl PgExecutor<'_>, package_id: i64) -> Result<Vec<VersionSummary>, sqlx::Error> {
    let rows: Vec<VersionRow> = sqlx::query_as!(
        VersionRow,
        "SELECT v.num, v.yanked, v.cksum, v.size, v.created_at, u.login, v.downloads, v.index_line, v.license, \
                v.readme \
         FROM versions v JOIN users u ON u.id = v.published_by WHERE v.package_id = $1 ORDER BY v.id",
        package_id,
    )
    .fetch_all(db)
    .await?;
    rows.iter().map(summary).collect()
}

/// One version in full: its index line, summary, licence and README.
pub async fn version(
    db: impl PgExecutor<'_>,
    package_id: i64,
    version: &Version,
) -> Result<Option<ebpkg_spec::registry_api::VersionInfo>, sqlx::Error> {
    let row: Option<VersionRow> = sqlx::query_as!(
        VersionRow,
        "SELECT v.num, v.yanked, v.cksum, v.size, v.created_at, u.login, v.downloads, v.index_line, v.license, \
                v.readme \
         FROM versions v JOIN users u ON u.id = v.published_by WHERE v.package_id = $1 AND v.num_no_build = $2",
        package_id,
        without_build(version),
    )
    .fetch_optional(db)
    .await?;
    let Some(row) = row else { return Ok(None) };
    Ok(Some(ebpkg_spec::registry_api::VersionInfo {
        entry: parse_stored_line(&row.index_line)?,
        summary: summary(&row)?,
        license: row.license.clone(),
        readme: row.readme.clone(),
    }))
}
