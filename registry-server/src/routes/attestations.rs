//! Attestations of a version (kernel verifications and rebuilds): `GET` serves
//! the version's attestation file (the bytes TUF signs), `POST` adds one
//! bundle about this version's archive: a kernel verification signed with a
//! live key of one of the package's owners, or a rebuild signed with a live
//! key of the caller's own (anyone may rebuild a version and say what they
//! found; clients decide whose rebuilds they count).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ebpkg_signing::attestation::MAX_ATTESTATION_BYTES;
use ebpkg_signing::{PublicKey, SignedAttestation};
use ebpkg_spec::attestation::rebuild::REBUILD_PREDICATE_TYPE;
use ebpkg_spec::attestation::{MAX_ATTESTATION_FILE_BYTES, MAX_ATTESTATIONS, attestation_target};
use ebpkg_spec::registry_api::{AttestationAccepted, Scope};
use ebpkg_spec::types::{KeyId, Sha256Digest};
use ebpkg_spec::{PackageId, PackageName};

use super::{path_name, path_version};
use crate::auth::Caller;
use crate::db;
use crate::db::attestations::VersionRef;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// A version's attestation file: `{"attestations": [bundle, …]}`, oldest
/// first. It grows as attestations are added, so it is revalidated like an
/// index file (strong ETag: its SHA-256).
#[utoipa::path(get, path = "/api/v1/packages/{name}/{version}/attestations", operation_id = "get_attestations",
    tag = "attestations", params(("name" = String, Path), ("version" = String, Path)),
    responses(
        (status = 200, description = "The attestation file (the bytes TUF signs as \
            `attestations/<index path>/<version>.json`)", content_type = "application/json"),
        (status = 304, description = "Not modified since the ETag given"),
        (status = 404, description = "No such version, or no attestation was published for it")))]
pub async fn get(
    State(state): State<AppState>,
    Path((name, version)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let name = path_name(&name)?;
    let v = path_version(&version)?;
    let file = match db::attestations::file(&state.db, &name.normalized(), &v).await? {
        None => return Err(ApiError::not_found(format!("no {name}@{v} in this registry"))),
        Some(None) => {
            return Err(ApiError::not_found(format!(
                "{name}@{v} has no attestation: no kernel verification has been published for it (an owner \
                 publishes one with `ebpkg attest`)"
            )));
        }
        Some(Some(file)) => file,
    };
    let etag = format!("\"{}\"", hex::encode(&file.sha256));
    let mut out = HeaderMap::new();
    out.insert(header::CACHE_CONTROL, state.config.index_cache_control());
    if let Ok(v) = HeaderValue::from_str(&etag) {
        out.insert(header::ETAG, v);
    }
    if super::index::etag_matches(&headers, &etag) == Some(true) {
        return Ok((StatusCode::NOT_MODIFIED, out).into_response());
    }
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok((out, file.bytes).into_response())
}

/// Adds an attestation: one Sigstore bundle (v0.3, JSON) holding a DSSE
/// envelope over an in-toto Statement whose subject is this version's archive
/// and whose predicate is a kernel verification of it, signed with a live key
/// of one of the package's owners, or a rebuild of it, signed with a live key
/// of the caller's (any account). Yanked versions may be attested too.
#[utoipa::path(post, path = "/api/v1/packages/{name}/{version}/attestations", operation_id = "add_attestation",
    tag = "attestations", params(("name" = String, Path), ("version" = String, Path)),
    request_body(content_type = "application/json",
        description = "One Sigstore bundle (v0.3 JSON, at most 1 MiB), as `ebpkg attest` or `cosign attest-blob` \
            writes it"),
    responses(
        (status = 200, description = "Accepted (`added`: false when the registry had this very bundle already)",
            content_type = "application/json"),
        (status = 400, description = "Not a Sigstore bundle holding an in-toto Statement"),
        (status = 401, description = "No valid token"),
        (status = 403, description = "A kernel verification from a non-owner, a token without `publish-update` \
            for the package, or a bundle signed with a key that is not a live key of an owner (a kernel \
            verification) or of the caller (a rebuild)"),
        (status = 404, description = "No such version"),
        (status = 409, description = "The version has the most attestations it may have"),
        (status = 413, description = "A bundle larger than 1 MiB"),
        (status = 422, description = "The signature does not verify, or the statement is not a kernel \
            verification or a rebuild of this version's archive")),
    security(("token" = [])))]
pub async fn add(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, version)): Path<(String, String)>,
    body: Body,
) -> ApiResult<axum::Json<AttestationAccepted>> {
    let result = add_inner(&state, &caller, &name, &version, body).await;
    let outcome = match &result {
        Ok(a) if a.added => "added",
        Ok(_) => "unchanged",
        Err(e) if e.status.is_client_error() => {
            tracing::info!(package = %name, version = %version, user = %caller.login, status = %e.status,
                detail = %e.detail, "attestation refused");
            "refused"
        }
        Err(_) => "failed",
    };
    metrics::counter!("ebpkg_registry_attestations_total", "outcome" => outcome).increment(1);
    result.map(axum::Json)
}

async fn add_inner(
    state: &AppState,
    caller: &Caller,
    name: &str,
    version: &str,
    body: Body,
) -> ApiResult<AttestationAccepted> {
    let name = path_name(name)?;
    let v = path_version(version)?;
    // The token's scope, before a byte of the body is read (and with no
    // connection held while it is); who may attach what once its type is known.
    caller.require(Scope::PublishUpdate, name.as_str())?;
    let (target, owner) = {
        let mut conn = state.db.acquire().await?;
        let Some(pkg) = db::packages::find(&mut *conn, &name.normalized()).await? else {
            return Err(ApiError::not_found(format!("no package `{name}` in this registry")));
        };
        let owner = db::packages::is_owner(&mut *conn, pkg.id, caller.user_id).await?;
        let target = db::attestations::version(&mut *conn, &name.normalized(), &v).await?.ok_or_else(|| {
            ApiError::not_found(format!(
                "no {}@{v} in this registry; attest a published version (`ebpkg info {}` lists them)",
                pkg.name, pkg.name
            ))
        })?;
        (target, owner)
    };
    let (id, archive) = identity(&target)?;
    let bytes = read_body(body, &id).await?;
    let attestation = SignedAttestation::parse(&bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "{id}: the body is not an attestation: {e}; send one Sigstore bundle holding an in-toto Statement (what \
             `ebpkg attest` makes)"
        ))
    })?;
    let rebuild = attestation.statement().predicate_type == REBUILD_PREDICATE_TYPE;
    if !rebuild && !owner {
        return Err(not_an_owner(caller, &target.package));
    }
    let keys = {
        let mut conn = state.db.acquire().await?;
        let signers = signers(&mut conn, rebuild, caller, target.package_id).await?;
        let subject = format!("the attestation of {id}");
        super::keys::signer_keys(&mut conn, attestation.key_hint(), &signers, &subject).await?
    };
    let key = verify(&attestation, &keys, &id)?;
    let kernels = check_statement(&attestation, &id, &archive)?;
    let outcome = commit(state, caller, &target, &attestation, &key, &id).await?;
    match outcome {
        Committed::Added(count) => {
            tracing::info!(package = %id, user = %caller.login, key = %key, kernels = ?kernels, "attestation added");
            Ok(AttestationAccepted { attestations: count, kernels, added: true })
        }
        Committed::Had(count) => {
            tracing::info!(package = %id, user = %caller.login, key = %key, "attestation uploaded again; unchanged");
            Ok(AttestationAccepted { attestations: count, kernels, added: false })
        }
    }
}

fn not_an_owner(caller: &Caller, package: &str) -> ApiError {
    ApiError::forbidden(format!(
        "`{}` is not an owner of `{package}`, and only owners attach kernel verification attestations (anyone may \
         attach a rebuild); ask an owner to run `ebpkg owner add {package} {}`",
        caller.login, caller.login
    ))
}

/// The accounts whose keys may sign the attestation: for a rebuild, the
/// caller's own (a rebuild is the rebuilder's word, whoever they are); for a
/// kernel verification, the package's owners'.
async fn signers(
    conn: &mut sqlx::PgConnection,
    rebuild: bool,
    caller: &Caller,
    package_id: i64,
) -> ApiResult<Vec<i64>> {
    if rebuild {
        return Ok(vec![caller.user_id]);
    }
    Ok(db::packages::owner_ids(&mut *conn, package_id).await?)
}

/// The body, whole, refused past [`MAX_ATTESTATION_BYTES`].
async fn read_body(body: Body, id: &PackageId) -> ApiResult<bytes::Bytes> {
    axum::body::to_bytes(body, MAX_ATTESTATION_BYTES).await.map_err(|e| {
        let text = e.to_string();
        if text.contains("length limit") {
            ApiError::too_large(format!(
                "{id}: the attestation is more than the 1 MiB ({MAX_ATTESTATION_BYTES} bytes) an attestation bundle \
                 may be; nothing was added"
            ))
        } else {
            ApiError::bad_request(format!("{id}: the attestation could not be read: {text}"))
        }
    })
}

/// The key among `keys` the envelope's signature verifies with.
fn verify(attestation: &SignedAttestation, keys: &[PublicKey], id: &PackageId) -> ApiResult<KeyId> {
    let mut why = Vec::new();
    for key in keys {
        match attestation.verify(key) {
            Ok(()) => return Ok(*key.id()),
            Err(e) => why.push(e.to_string()),
        }
    }
    Err(ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        format!("the attestation of {id} was refused: {}; nothing was added", why.join("; ")),
    ))
}

/// The version and archive a stored version row names.
fn identity(target: &VersionRef) -> ApiResult<(PackageId, Sha256Digest)> {
    let stored = |what: &str| format!("the stored version {} of package `{}`: {what}", target.num, target.package);
    let name = PackageName::new(&target.package)
        .map_err(|e| ApiError::internal(stored(&format!("the package name does not parse: {e}"))))?;
    let version = semver::Version::parse(&target.num)
        .map_err(|e| ApiError::internal(stored(&format!("the version does not parse: {e}"))))?;
    let archive = Sha256Digest::from_canonical_hex(&target.cksum)
        .ok_or_else(|| ApiError::internal(stored("the checksum is damaged")))?;
    Ok((PackageId::new(name, version), archive))
}

/// The statement is a kernel verification or a rebuild of this version's
/// archive; the kernels a kernel verification observed.
fn check_statement(attestation: &SignedAttestation, id: &PackageId, archive: &Sha256Digest) -> ApiResult<Vec<String>> {
    let (name, version) = (&id.name, &id.version);
    let checked = if attestation.statement().predicate_type == REBUILD_PREDICATE_TYPE {
        attestation.rebuild(name, version, archive).map(|_| Vec::new())
    } else {
        attestation
            .kernel_verification(name, version, archive)
            .map(|p| p.kernels.iter().map(|k| k.kernel.release.clone()).collect())
    };
    checked.map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "the attestation of {id} was refused: {e}; attest the archive this registry serves for {id} (`ebpkg \
                 attest` and `ebpkg verify --rebuild` fetch it); nothing was added"
            ),
        )
    })
}

enum Committed {
    /// Added; the version's attestations now.
    Added(usize),
    /// The registry had this very bundle; nothing changed.
    Had(usize),
}

/// The one transaction: under the package's lock (as publishes and yanks
/// take it), the caller and the key are checked again, the bundle inserted,
/// the version's file rebuilt and TUF's metadata re-signed over it.
async fn commit(
    state: &AppState,
    caller: &Caller,
    target: &VersionRef,
    attestation: &SignedAttestation,
    key: &KeyId,
    id: &PackageId,
) -> ApiResult<Committed> {
    let normalized = ebpkg_spec::names::normalize(&target.package);
    let sha256 = Sha256Digest::of(attestation.json().as_bytes());
    let mut tx = state.db.begin().await?;
    let Some(pkg) = db::packages::lock(&mut tx, &normalized).await? else {
        return Err(ApiError::unavailable(format!("{id}: the package changed during the upload; retry")));
    };
    let rebuild = attestation.statement().predicate_type == REBUILD_PREDICATE_TYPE;
    if !rebuild && !db::packages::is_owner(&mut *tx, pkg.id, caller.user_id).await? {
        return Err(not_an_owner(caller, &pkg.name));
    }
    let signers = signers(&mut tx, rebuild, caller, pkg.id).await?;
    match db::keys::by_id_for_share(&mut tx, key).await? {
        Some(row) if row.revoked_at.is_none() && signers.contains(&row.user_id) => {}
        _ => {
            return Err(ApiError::conflict(format!(
                "{id}: key {key} was revoked, or its holder stopped being an owner, while the attestation was being \
                 added; nothing was added"
            )));
        }
    }
    if db::attestations::exists(&mut tx, target.id, &sha256.0).await? {
        return Ok(Committed::Had(db::attestations::count(&mut *tx, target.id).await?));
    }
    let count = db::attestations::count(&mut *tx, target.id).await?;
    if count >= MAX_ATTESTATIONS {
        return Err(ApiError::conflict(format!(
            "{id} has {count} attestations already, the most a version may have ({MAX_ATTESTATIONS}); nothing was \
             added. Attestations are permanent: publish a new version to attest it again"
        )));
    }
    let new = db::attestations::NewAttestation {
        version_id: target.id,
        bundle: attestation.json(),
        sha256: &sha256.0,
        key_id: &key.0,
        uploaded_by: caller.user_id,
    };
    match db::attestations::insert(&mut tx, &new).await {
        Ok(()) => {}
        Err(e) if db::is_unique_violation(&e) => {
            return Err(ApiError::conflict(format!("{id}: the same attestation was being added at once; retry")));
        }
        Err(e) => return Err(e.into()),
    }
    let file = db::attestations::build_file(&mut tx, target.id).await?;
    if file.len() as u64 > MAX_ATTESTATION_FILE_BYTES {
        return Err(ApiError::conflict(format!(
            "{id}: with this attestation, its attestation file would be {} bytes, more than the {} MiB a version's \
             may be; nothing was added. Attest with fewer kernels per attestation, or publish a new version",
            file.len(),
            MAX_ATTESTATION_FILE_BYTES >> 20
        )));
    }
    db::attestations::store_file(&mut tx, target.id, &file).await?;
    db::attestations::notify(&mut tx, pkg.id).await?;
    crate::tuf::follow(&mut tx, &state.config, vec![(attestation_target(&id.name, &id.version), file)]).await?;
    tx.commit().await?;
    // This replica's own next page shows it (others drop theirs on NOTIFY).
    state.index_cache.forget(&normalized);
    Ok(Committed::Added(count + 1))
}
