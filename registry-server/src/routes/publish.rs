//! `PUT /api/v1/packages/new`: cargo's framing, read incrementally so that the
//! token, the metadata and every check that needs no archive come before a byte of
//! the archive is read.
//!
//! Order of effects, so that a crash at any point leaves either no version or a
//! complete one: the archive is hashed once and read in memory with every check an
//! installer's unpacking makes (nothing is written to disk); it is written to the
//! blob store (content-addressed, durable); then one transaction inserts the
//! version and rebuilds the package's index file. Until that commit nothing names
//! the archive.

use axum::body::Body;
use axum::extract::State;
use axum::http::StatusCode;
use bytes::{Bytes, BytesMut};
use ebpkg_archive::{UnpackError, VerifiedArchive};
use ebpkg_crashpoint::hit as crash_point;
use ebpkg_signing::{PublicKey, SignedBundle};
use ebpkg_spec::index::IndexEntry;
use ebpkg_spec::registry_api::{self, PublishAllowed, PublishCheck, PublishMetadata, PublishResponse, Scope};
use ebpkg_spec::types::{KeyId, Sha256Digest};
use ebpkg_spec::{Manifest, PackageId, PackageName};
use futures_util::StreamExt;

use crate::auth::Caller;
use crate::db::{self, limits::Action, packages::PackageRow};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Largest README kept for the package page.
const MAX_README_BYTES: u64 = 512 * 1024;
/// Largest chain source kept for the documentation page (the compiler's own
/// limit is far below this).
const MAX_CHAIN_SOURCE_BYTES: u64 = 256 * 1024;

/// Publishes a new version.
#[utoipa::path(put, path = "/api/v1/packages/new", operation_id = "publish_version", tag = "packages",
    request_body(content_type = "application/octet-stream",
        description = "u32 LE metadata length, metadata JSON, u32 LE archive length, archive (.tar.gz)"),
    responses(
        (status = 200, description = "Published: the version's index entry", content_type = "application/json"),
        (status = 400, description = "Malformed body, invalid archive or manifest"),
        (status = 401, description = "No valid token"),
        (status = 403, description = "Not an owner, or the token's scopes do not allow it"),
        (status = 409, description = "The version exists, or the name collides with another package"),
        (status = 413, description = "Too large"),
        (status = 429, description = "Publish rate limit; see Retry-After"),
        (status = 503, description = "Database or blob store unavailable")),
    security(("token" = [])))]
pub async fn publish(
    State(state): State<AppState>,
    caller: Caller,
    body: Body,
) -> ApiResult<axum::Json<PublishResponse>> {
    let result = publish_inner(&state, &caller, body).await;
    let outcome = match &result {
        Ok(_) => "published",
        Err(e) if e.status.is_client_error() => "refused",
        Err(_) => "failed",
    };
    metrics::counter!("ebpkg_registry_publishes_total", "outcome" => outcome).increment(1);
    result.map(axum::Json)
}

async fn publish_inner(state: &AppState, caller: &Caller, body: Body) -> ApiResult<PublishResponse> {
    let mut body = BodyReader::new(body);
    if let Some(text) = body.leading_text().await? {
        return Err(ApiError::bad_request(format!(
            "the publish body starts with text (`{text}`), not with a length: it is binary, not JSON (a u32 LE \
             metadata length, the metadata JSON, a u32 LE archive length and the archive; `ebpkg publish` sends \
             one)"
        )));
    }
    let len = body.length_prefix("publish metadata", registry_api::MAX_PUBLISH_METADATA.into(), "").await?;
    let metadata = registry_api::parse_publish_metadata(&body.exact(len).await?).map_err(framing)?;
    let id = PackageId::new(metadata.name.clone(), metadata.vers.clone());
    let bundle = match &metadata.bundle {
        Some(json) => Some(parse_bundle(json, &metadata, &id)?),
        None => {
            allows_unsigned(state, &id)?;
            None
        }
    };

    // Everything that needs no archive, before reading it.
    let keys = {
        let mut conn = state.db.acquire().await?;
        let allowed = authorize(&mut conn, caller, &metadata.name, &metadata.vers, &id).await?;
        match &bundle {
            Some(bundle) => {
                super::keys::signer_keys(&mut conn, bundle.key_hint(), &allowed.signers, &id.to_string()).await?
            }
            None => Vec::new(),
        }
    };
    let len = body.length_prefix("archive", state.config.max_archive_bytes, &format!("{id}: ")).await?;
    let archive = body.exact(len).await?;
    if !body.at_end().await? {
        return Err(ApiError::bad_request(format!("{id}: bytes follow the archive in the publish body")));
    }

    let (archive, checked) = check_archive(state, archive, &metadata).await?;
    // Hashed once, when checked: the signature, the index line and the blob's
    // name all use that digest.
    let cksum = *archive.digest();
    let mut entry = IndexEntry::from_manifest(&checked.manifest, cksum);
    // The keys were chosen before the archive was read; `commit` checks again,
    // under the package's lock, that the one that verified is still allowed.
    let signature = match &bundle {
        Some(bundle) => {
            let key = verify_signature(bundle, &keys, &cksum, &id)?;
            entry.signed_by = Some(key);
            Some(Signature { key, bundle })
        }
        None => None,
    };
    crash_point("unpacked");

    state.blobs.put_archive(&cksum, Bytes::from(archive.into_bytes())).await?;
    crash_point("archive-stored");
    commit(state, caller, &metadata, &entry, &checked, signature.as_ref(), &id).await?;
    tracing::info!(package = %id, user = %caller.login, cksum = %cksum, size = checked.size, "published");
    Ok(PublishResponse { entry })
}

/// Whether this token may publish this version: what a publish of it answers
/// before reading its archive (401, 403, 409), without publishing.
///
/// With `key`, the key is checked as the publish checks its signature's (registered,
/// live, an owner's); without it, no signature is checked (the archive may be signed
/// elsewhere: the publish refuses an unsigned one when the registry requires
/// signatures, as its `config.json` says).
///
/// Its limits: it sees neither the archive nor the signature itself, so what only
/// they decide (the checksum, the manifest, the size, whether the signature
/// verifies) is the publish's to say; it takes nothing from the publish rate limit,
/// so a publish can still answer 429; and it answers for now: an owner removed or a
/// version published in between changes the publish's answer.
#[utoipa::path(post, path = "/api/v1/packages/new/check", operation_id = "check_publish", tag = "packages",
    request_body(content_type = "application/json", description = "{\"name\", \"vers\"}: the version to publish"),
    responses(
        (status = 200, description = "A publish of it would get past the token, the owners and the names", content_type = "application/json"),
        (status = 401, description = "No valid token"),
        (status = 403, description = "Not an owner, the token's scopes or package globs do not allow it, or the key is not a live key of an owner: the publish's own message"),
        (status = 409, description = "The version exists, or the name collides with or is too close to another package"),
        (status = 503, description = "Database unavailable")),
    security(("token" = [])))]
pub async fn check(
    State(state): State<AppState>,
    caller: Caller,
    axum::Json(request): axum::Json<PublishCheck>,
) -> ApiResult<axum::Json<PublishAllowed>> {
    let id = PackageId::new(request.name.clone(), request.vers.clone());
    let mut conn = state.db.acquire().await?;
    let allowed = authorize(&mut conn, &caller, &request.name, &request.vers, &id).await?;
    if let Some(key) = &request.key {
        super::keys::signer_keys(&mut conn, Some(key), &allowed.signers, &id.to_string()).await?;
    }
    Ok(axum::Json(PublishAllowed { login: caller.login, new_package: allowed.new_package }))
}

/// Refuses an unsigned version unless the registry accepts them.
fn allows_unsigned(state: &AppState, id: &PackageId) -> ApiResult<()> {
    if state.config.allow_unsigned {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        format!(
            "{id} is not signed, and this registry accepts only signed versions: create a key with `ebpkg key \
             generate`, register it with `ebpkg owner key add`, then publish again (ebpkg signs with it)"
        ),
    ))
}

/// Who may sign a version the caller may publish.
struct Authorized {
    /// The users whose keys may sign it: the package's owners, or the caller
    /// for a new package.
    signers: Vec<i64>,
    new_package: bool,
}

/// The token, the owners and the names: whether `caller` may publish
/// `name@vers`. One function for the publish and its check ([`check`]), so that
/// they answer alike; [`commit`] asks again under the package's lock.
async fn authorize(
    conn: &mut sqlx::PgConnection,
    caller: &Caller,
    name: &PackageName,
    vers: &semver::Version,
    id: &PackageId,
) -> ApiResult<Authorized> {
    match db::packages::find(&mut *conn, &name.normalized()).await? {
        None => {
            caller.require(Scope::PublishNew, name.as_str())?;
            if let Some(existing) = db::packages::too_close(conn, name, caller.user_id).await? {
                return Err(too_close(id, &existing));
            }
            Ok(Authorized { signers: vec![caller.user_id], new_package: true })
        }
        Some(pkg) => {
            check_existing(conn, caller, name, vers, &pkg, id).await?;
            Ok(Authorized { signers: db::packages::owner_ids(&mut *conn, pkg.id).await?, new_package: false })
        }
    }
}

fn too_close(id: &PackageId, existing: &str) -> ApiError {
    ApiError::conflict(format!(
        "{id}: the name is too close to the existing package `{existing}` ({}), so one could pass for the \
         other; choose another name, publish as `{existing}` if it is yours, or ask the registry's operator \
         to release it",
        ebpkg_spec::names::LOOK_ALIKES
    ))
}

fn framing(e: registry_api::FramingError) -> ApiError {
    match e {
        registry_api::FramingError::TooLarge { .. } => ApiError::too_large(e.to_string()),
        _ => ApiError::bad_request(e.to_string()),
    }
}

/// Scope, ownership, spelling and existence of a version of an existing
/// package: checked before the archive is read, and again under the package's row
/// lock in [`commit`].
async fn check_existing(
    conn: &mut sqlx::PgConnection,
    caller: &Caller,
    name: &PackageName,
    vers: &semver::Version,
    pkg: &PackageRow,
    id: &PackageId,
) -> ApiResult<()> {
    if pkg.name != name.as_str() {
        return Err(ApiError::conflict(format!(
            "{id}: the name collides with the existing package `{}` (names that differ only in case or \
             `-`/`_` are one package); publish as `{}` or choose another name",
            pkg.name, pkg.name
        )));
    }
    if db::packages::version_exists(&mut *conn, pkg.id, vers).await? {
        return Err(ApiError::conflict(format!(
            "{id} already exists (versions are immutable, yanked ones too); bump the version in ebpkg.toml"
        )));
    }
    if !db::packages::is_owner(&mut *conn, pkg.id, caller.user_id).await? {
        return Err(ApiError::forbidden(format!(
            "{id}: `{}` is not an owner of `{}`; ask an owner to run `ebpkg owner add {} {}`",
            caller.login, pkg.name, pkg.name, caller.login
        )));
    }
    caller.require(Scope::PublishUpdate, name.as_str())
}

/// A verified signature: the key it verified with and the bundle as published.
struct Signature<'a> {
    key: KeyId,
    bundle: &'a SignedBundle,
}

/// The bundle from the publish metadata, checked to sign the archive the
/// metadata describes (before a byte of the archive is read).
fn parse_bundle(json: &serde_json::Value, metadata: &PublishMetadata, id: &PackageId) -> ApiResult<SignedBundle> {
    let bytes = serde_json::to_vec(json).map_err(|e| ApiError::bad_request(format!("{id}: the bundle: {e}")))?;
    let bundle = SignedBundle::parse(&bytes)
        .map_err(|e| ApiError::bad_request(format!("{id}: the signature bundle was refused: {e}")))?;
    if bundle.signed_digest() != &metadata.cksum {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "{id}: the bundle signs SHA-256 {}, but the archive's is {}: it was made for another archive; \
                 sign this one",
                bundle.signed_digest(),
                metadata.cksum
            ),
        ));
    }
    Ok(bundle)
}

/// The key among `keys` the bundle's signature over the archive (whose digest,
/// computed when it was checked, is `cksum`) verifies with.
fn verify_signature(
    bundle: &SignedBundle,
    keys: &[PublicKey],
    cksum: &Sha256Digest,
    id: &PackageId,
) -> ApiResult<KeyId> {
    let mut why = Vec::new();
    for key in keys {
        match bundle.verify_digest(key, cksum) {
            Ok(()) => return Ok(*key.id()),
            Err(e) => why.push(e.to_string()),
        }
    }
    Err(ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        format!("{id}: the signature does not hold: {}; nothing was published", why.join("; ")),
    ))
}

/// Under the package's lock: the key is still live and still an owner's, so a
/// revocation or an owner removal that committed during the publish wins.
async fn recheck_signer(tx: &mut sqlx::PgConnection, key: &KeyId, signers: &[i64], id: &PackageId) -> ApiResult<()> {
    match db::keys::by_id_for_share(tx, key).await? {
        Some(row) if row.revoked_at.is_none() && signers.contains(&row.user_id) => Ok(()),
        _ => Err(ApiError::conflict(format!(
            "{id}: key {key} was revoked, or its holder stopped being an owner, while the version was being \
             published; nothing was published"
        ))),
    }
}

/// What the archive held, once checked.
struct CheckedArchive {
    manifest: Manifest,
    /// `ebpkg.toml` as published.
    manifest_text: String,
    readme: Option<String>,
    /// Each chain's source, by chain name.
    chain_sources: std::collections::BTreeMap<String, String>,
    size: u64,
}

/// Hashes the archive once against the digest the metadata says, then reads it
/// in memory exactly as an installer unpacks it (ebpkg-archive's checks, the
/// manifest validated by ebpkg-spec and naming `name@version`), keeping only the
/// README, the chain sources and the shipped objects; off the async threads.
async fn check_archive(
    state: &AppState,
    archive: Bytes,
    metadata: &PublishMetadata,
) -> ApiResult<(VerifiedArchive, CheckedArchive)> {
    let (name, vers, cksum) = (metadata.name.clone(), metadata.vers.clone(), metadata.cksum);
    let limits = ebpkg_archive::Limits { max_archive_bytes: state.config.max_archive_bytes, ..Default::default() };
    let id = PackageId::new(name.clone(), vers.clone());
    tokio::task::spawn_blocking(move || {
        let size = archive.len() as u64;
        let archive = VerifiedArchive::check(Vec::from(archive), &cksum, &limits).map_err(|e| match e {
            UnpackError::DigestMismatch { actual, .. } => ApiError::bad_request(format!(
                "{id}: the archive's SHA-256 is {actual}, the metadata says {cksum}; the upload was damaged or the \
                 metadata is wrong"
            )),
            e => ApiError::bad_request(format!("{id}: the archive was refused: {e}")),
        })?;
        let files = ebpkg_archive::read_verified(&archive, &name, &vers, &limits, kept_file)
            .map_err(|e| ApiError::bad_request(format!("{id}: the archive was refused: {e}")))?;
        let manifest = &files.manifest;
        let text = |rel: &str, max: u64| -> Result<String, String> {
            let bytes = files.file(rel).ok_or_else(|| "is not in the archive".to_owned())?;
            if bytes.len() as u64 > max {
                return Err(format!("is {} bytes, more than the {max} kept", bytes.len()));
            }
            String::from_utf8(bytes.to_vec()).map_err(|_| "is not UTF-8 text".to_owned())
        };
        let readme = manifest.package.readme.as_ref().and_then(|rel| text(rel.as_str(), MAX_README_BYTES).ok());
        // Parsing decoded it as UTF-8 already.
        let manifest_text = String::from_utf8(files.manifest_bytes().to_vec())
            .map_err(|e| ApiError::internal(format!("{id}: the manifest is not UTF-8 once parsed: {e}")))?;
        // A shipped object holds what the manifest declares, and nothing more (as installs check).
        ebpkg_spec::object_items::check_prebuilt_with(manifest, |object| {
            let bytes = files.file(object).ok_or_else(|| "is not in the archive".to_owned())?;
            if bytes.len() as u64 > ebpkg_spec::MAX_OBJECT_BYTES {
                return Err(format!("is {} bytes, more than objects may be", bytes.len()));
            }
            Ok(bytes)
        })
        .map_err(|e| ApiError::bad_request(format!("{id}: {e}")))?;
        let mut chain_sources = std::collections::BTreeMap::new();
        for chain in &manifest.chains {
            let source = text(chain.source.as_str(), MAX_CHAIN_SOURCE_BYTES).map_err(|e| {
                ApiError::bad_request(format!("{id}: chain `{}`: its source {}: {e}", chain.name, chain.source))
            })?;
            chain_sources.insert(chain.name.to_string(), source);
        }
        let checked = CheckedArchive { manifest: files.manifest, manifest_text, readme, chain_sources, size };
        Ok((archive, checked))
    })
    .await
    .map_err(|e| ApiError::internal(format!("{e}")))?
}

/// The files of a published archive the registry keeps besides the archive: the
/// README and the chain sources (for the package's page) and the shipped objects
/// (checked against the manifest).
fn kept_file(manifest: &Manifest, rel: &str) -> bool {
    manifest.package.readme.as_ref().is_some_and(|r| r.as_str() == rel)
        || manifest.chains.iter().any(|c| c.source.as_str() == rel)
        || ebpkg_spec::object_items::prebuilt_objects(manifest).contains(&rel)
}

/// The one transaction that makes the version visible.
async fn commit(
    state: &AppState,
    caller: &Caller,
    metadata: &PublishMetadata,
    entry: &IndexEntry,
    checked: &CheckedArchive,
    signature: Option<&Signature<'_>>,
    id: &PackageId,
) -> ApiResult<()> {
    let name: &PackageName = &metadata.name;
    let mut tx = state.db.begin().await?;
    // A new package races other publishes of it: the loser of the insert waits for
    // the winner's commit, then finds the row.
    let normalized = name.normalized();
    let (pkg, new_package) = match db::packages::lock(&mut tx, &normalized).await? {
        Some(pkg) => (pkg, false),
        None if let Some(existing) = db::packages::too_close(&mut tx, name, caller.user_id).await? => {
            return Err(too_close(id, &existing));
        }
        None => match db::packages::create(&mut tx, name).await? {
            Some(created) => {
                caller.require(Scope::PublishNew, name.as_str())?;
                (PackageRow { id: created, name: name.to_string() }, true)
            }
            None => match db::packages::lock(&mut tx, &normalized).await? {
                Some(pkg) => (pkg, false),
                None => {
                    return Err(ApiError::unavailable(format!("{id}: the package changed during the publish; retry")));
                }
            },
        },
    };
    if !new_package {
        check_existing(&mut tx, caller, &metadata.name, &metadata.vers, &pkg, id).await?;
    }
    let package_id = pkg.id;
    if let Some(signature) = signature {
        let signers =
            if new_package { vec![caller.user_id] } else { db::packages::owner_ids(&mut *tx, package_id).await? };
        recheck_signer(&mut tx, &signature.key, &signers, id).await?;
    }
    let (action, bucket) = if new_package {
        (Action::NewPackage, state.config.new_package)
    } else {
        (Action::NewVersion, state.config.new_version)
    };
    if let Err(wait) = db::limits::take(&mut tx, caller.user_id, action, bucket).await? {
        let what = if new_package { "new packages" } else { "new versions" };
        return Err(ApiError::rate_limited(
            format!("{id}: you have published too many {what} in a short time; try again in {wait} s"),
            wait,
        ));
    }
    let new = db::packages::NewVersion {
        package_id,
        entry,
        size: checked.size,
        license: checked.manifest.package.license.as_deref(),
        readme: checked.readme.as_deref(),
        published_by: caller.user_id,
        bundle: signature.map(|s| s.bundle.json()),
        manifest: &checked.manifest_text,
        chain_sources: &checked.chain_sources,
    };
    match db::packages::insert_version(&mut tx, &new).await {
        Ok(()) => {}
        Err(e) if db::is_unique_violation(&e) => {
            return Err(ApiError::conflict(format!("{id} already exists; bump the version in ebpkg.toml")));
        }
        Err(e) => return Err(e.into()),
    }
    if new_package {
        db::packages::add_owner(&mut tx, package_id, caller.user_id, caller.user_id).await?;
    }
    if let Some(changed) = db::packages::refresh(&mut tx, package_id).await? {
        crate::tuf::follow(&mut tx, &state.config, vec![changed]).await?;
    }
    crash_point("before-commit");
    tx.commit().await?;
    // This replica's own next read sees the change (others drop it on NOTIFY).
    state.index_cache.forget(&normalized);
    crash_point("committed");
    Ok(())
}

/// Reads a request body in exact pieces, never holding more than asked for.
struct BodyReader {
    stream: axum::body::BodyDataStream,
    buffered: BytesMut,
    read: u64,
}

impl BodyReader {
    fn new(body: Body) -> BodyReader {
        BodyReader { stream: body.into_data_stream(), buffered: BytesMut::new(), read: 0 }
    }

    async fn prefix(&mut self) -> ApiResult<[u8; 4]> {
        let bytes = self.exact(4).await?;
        let mut out = [0u8; 4];
        out.copy_from_slice(&bytes);
        Ok(out)
    }

    /// The u32 LE length of the part `what` that follows, at most `max`. A
    /// length over `max` makes the body too large (413) only when the body really
    /// holds more than `max` bytes after it: one read from bytes that are not
    /// cargo's framing announces more than was sent, a malformed body (400).
    /// `context` starts the error messages. Reads at most `max + 1` bytes more.
    async fn length_prefix(&mut self, what: &'static str, max: u64, context: &str) -> ApiResult<u64> {
        let err = match registry_api::frame_length(self.prefix().await?, what, max) {
            Ok(len) => return Ok(len),
            Err(e) => e,
        };
        let registry_api::FramingError::TooLarge { len, .. } = err else {
            return Err(framing(err));
        };
        let have = self.fill(usize::try_from(max.saturating_add(1)).unwrap_or(usize::MAX)).await? as u64;
        if have > max {
            return Err(ApiError::too_large(format!("{context}{err}")));
        }
        Err(ApiError::bad_request(format!(
            "{context}the publish body is malformed: it announces {len} bytes of {what}, but only {have} byte(s) \
             follow (body of {} bytes); a publish body is a u32 LE metadata length, the metadata, a u32 LE archive \
             length and the archive",
            self.read
        )))
    }

    /// The body's first bytes, when they are text (printable ASCII or white
    /// space) rather than a length: a length the framing allows (at most
    /// [`registry_api::MAX_PUBLISH_METADATA`]) has zero high bytes, and a body is
    /// never shorter than two lengths.
    async fn leading_text(&mut self) -> ApiResult<Option<String>> {
        let have = self.fill(4).await?.min(4);
        let head = &self.buffered[..have];
        let text = !head.is_empty() && head.iter().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace());
        Ok(text.then(|| String::from_utf8_lossy(head).escape_debug().to_string()))
    }

    /// Reads until `len` bytes are buffered or the body ends; how many are.
    async fn fill(&mut self, len: usize) -> ApiResult<usize> {
        while self.buffered.len() < len {
            match self.stream.next().await {
                Some(Ok(chunk)) => {
                    self.read += chunk.len() as u64;
                    self.buffered.extend_from_slice(&chunk);
                }
                Some(Err(e)) => return Err(body_error(&e)),
                None => break,
            }
        }
        Ok(self.buffered.len())
    }

    /// Exactly `len` bytes (already checked against a limit by the caller).
    async fn exact(&mut self, len: u64) -> ApiResult<Bytes> {
        let len = usize::try_from(len).map_err(|_| ApiError::too_large("a part of the publish body is too large"))?;
        let have = self.fill(len).await?;
        if have < len {
            return Err(ApiError::bad_request(format!(
                "the publish body ended early: {} more byte(s) were announced than sent (body of {} bytes)",
                len - have,
                self.read
            )));
        }
        Ok(self.buffered.split_to(len).freeze())
    }

    async fn at_end(&mut self) -> ApiResult<bool> {
        if !self.buffered.is_empty() {
            return Ok(false);
        }
        loop {
            match self.stream.next().await {
                Some(Ok(chunk)) if chunk.is_empty() => continue,
                Some(Ok(_)) => return Ok(false),
                Some(Err(e)) => return Err(body_error(&e)),
                None => return Ok(true),
            }
        }
    }
}

fn body_error(e: &axum::Error) -> ApiError {
    // The body limit layer's error reads as "length limit exceeded".
    let text = e.to_string();
    if text.contains("length limit") {
        ApiError::too_large(format!("the publish body is larger than this registry accepts ({text})"))
    } else {
        ApiError::new(StatusCode::BAD_REQUEST, format!("the publish body could not be read: {text}"))
    }
}
