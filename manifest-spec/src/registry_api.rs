//! The registry server's HTTP API, as client and server both see it: the sparse
//! index's `config.json`, the publish body's framing, and the JSON bodies of
//! `/api/v1`. One definition, so the two ends cannot drift apart.
//!
//! The protocol follows cargo's registry web API where ebpkg has the same concept
//! (publish framing, yank, owners, the `{"errors":[{"detail":…}]}` error body,
//! `config.json`'s `dl`/`api`/`auth-required`), so operators and tools that know
//! cargo's know this one.

use schemars::JsonSchema;
use semver::Version;
use serde::{Deserialize, Serialize};

use crate::index::IndexEntry;
use crate::names::{ItemName, PackageName};
use crate::types::{KeyId, Sha256Digest};

pub mod limits;

/// Where the sparse index's configuration lives, relative to the registry URL.
pub const INDEX_CONFIG_PATH: &str = "index/config.json";
/// The prefix of index files, relative to the registry URL.
pub const INDEX_PREFIX: &str = "index/";
/// The API's prefix, relative to the registry URL.
pub const API_PREFIX: &str = "api/v1/";
/// Largest publish metadata (the JSON part of the publish body).
pub const MAX_PUBLISH_METADATA: u32 = 64 * 1024;

/// `index/config.json`: where archives are downloaded from and where the API is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct IndexConfig {
    /// Download URL template. Markers: `{name}`, `{version}`, `{cksum}` (the
    /// archive's SHA-256), `{prefix}` (the package's index directory, as in
    /// cargo); without any marker, `/{name}/{version}/download` is appended.
    pub dl: String,
    /// The API's base URL (the part before `/api/v1`); absent for a registry
    /// that only serves an index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// Whether reading the index and downloading need a token.
    #[serde(rename = "auth-required", default)]
    pub auth_required: bool,
    /// Whether the registry refuses unsigned publishes, so that a client can say
    /// so before uploading.
    #[serde(rename = "require-signatures", default)]
    pub require_signatures: bool,
    /// The audience an OIDC token must name to be exchanged for a publish token
    /// (trusted publishing); absent when the registry trusts no issuer.
    #[serde(rename = "trusted-publishing-audience", default, skip_serializing_if = "Option::is_none")]
    pub trusted_publishing_audience: Option<String>,
}

impl IndexConfig {
    /// The URL of one archive.
    pub fn download_url(&self, name: &PackageName, version: &Version, cksum: &Sha256Digest) -> String {
        const MARKERS: [&str; 4] = ["{name}", "{version}", "{cksum}", "{prefix}"];
        if !MARKERS.iter().any(|m| self.dl.contains(m)) {
            return format!("{}/{name}/{version}/download", self.dl.trim_end_matches('/'));
        }
        let path = crate::index::index_path(name.as_str());
        let prefix = path.rsplit_once('/').map_or("", |(dir, _)| dir);
        self.dl
            .replace("{name}", name.as_str())
            .replace("{version}", &version.to_string())
            .replace("{cksum}", &cksum.to_string())
            .replace("{prefix}", prefix)
    }
}

/// The JSON part of a publish body. The archive follows it; the server reads it
/// only after the token and this metadata passed every check that needs no
/// archive (ownership, scope, the version being new, the size).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishMetadata {
    pub name: PackageName,
    #[schemars(with = "String")]
    pub vers: Version,
    /// SHA-256 of the archive, as the publisher computed it; the server computes
    /// it again and refuses a mismatch.
    pub cksum: Sha256Digest,
    /// The Sigstore bundle (v0.3 JSON, as `cosign sign-blob --bundle` writes it)
    /// signing the archive with a key one of the package's owners registered.
    /// Refused when absent unless the registry allows unsigned publishes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<serde_json::Value>,
}

/// A package name a publish may take, as a schema: the characters and length of
/// SPEC §2.1, and not one of the reserved names.
fn publishable_name_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "description": "A package name: ASCII lowercase letters, digits, `-` and `_`, starting with a letter, at most 64 characters, not a reserved name.",
        "pattern": limits::PACKAGE_NAME_PATTERN,
        "not": {"enum": crate::names::reserved_package_names()},
    })
}

/// A token's package globs, as a schema: at most so many, each a package name once
/// each `*` stands for a letter, so none that is then a reserved name.
fn package_globs_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "maxItems": limits::TOKEN_MAX_GLOBS,
        "items": {
            "type": "string",
            "pattern": limits::PACKAGE_GLOB_PATTERN,
            "not": {"enum": crate::names::reserved_package_globs()},
        },
    })
}

/// `null` is the field left out, as serde reads it.
fn key_id_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["string", "null"],
        "description": "A publisher key id: standard base64 of the SHA-256 of the key's SubjectPublicKeyInfo DER; null or absent: no key.",
        "pattern": limits::KEY_ID_PATTERN,
    })
}

/// The path, under the API prefix, that answers whether a token may publish a
/// version ([`PublishCheck`]), as a publish of it would before reading its archive.
pub const PUBLISH_CHECK_PATH: &str = "packages/new/check";

/// `POST /api/v1/packages/new/check`: may the caller's token publish this version?
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishCheck {
    #[schemars(schema_with = "publishable_name_schema")]
    pub name: PackageName,
    #[schemars(with = "String", regex(pattern = limits::VERSION_PATTERN))]
    pub vers: Version,
    /// The key the version would be signed with: checked as the publish checks
    /// its signature's key (registered, live, an owner's). Absent: no signature is
    /// checked (the archive may be signed elsewhere, with cosign say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "key_id_schema")]
    pub key: Option<KeyId>,
}

/// The answer to a [`PublishCheck`] the publish would pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PublishAllowed {
    /// The user the token publishes as.
    pub login: String,
    /// True when no package has the name yet: the publish would create it, with
    /// this user as its first owner.
    pub new_package: bool,
}

/// The path, under the API prefix, of the Sigstore bundle of a version.
pub fn bundle_path(name: &PackageName, version: &Version) -> String {
    format!("packages/{name}/{version}/bundle")
}

/// The path, under the API prefix, of a version's attestations: `GET` serves its
/// [`AttestationFile`](crate::attestation::AttestationFile) (the bytes TUF
/// signs as [`attestation_target`](crate::attestation::attestation_target)),
/// `POST` adds one (a Sigstore bundle, JSON).
pub fn attestations_path(name: &PackageName, version: &Version) -> String {
    format!("packages/{name}/{version}/attestations")
}

/// What `POST …/attestations` answers: the version's attestations now, and the
/// kernels the new one covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AttestationAccepted {
    /// How many attestations the version has, this one included.
    pub attestations: usize,
    /// The kernel releases the attestation covers (`uname -r`).
    pub kernels: Vec<String>,
    /// False when the registry had this very bundle already (nothing changed).
    pub added: bool,
}

/// The path, under the API prefix, of a publisher key's PEM. The id is written in
/// hex here: its base64 form holds `/` and `+`.
pub fn key_path(id: &KeyId) -> String {
    format!("keys/{}", id.to_hex())
}

/// `POST /api/v1/me/keys`: a public key to sign the caller's packages with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPublisherKey {
    /// The public key, PEM (`cosign.pub`, `ebpkg key export`): ECDSA P-256.
    #[schemars(length(max = limits::MAX_PEM_BYTES), regex(pattern = limits::PEM_PUBLIC_KEY_PATTERN))]
    pub pem: String,
    /// Proof that the caller holds the private key: a Sigstore bundle signing
    /// [`key_proof_message`] for the caller's login with it. Without it, anyone
    /// could register someone else's public key first and so block, or be
    /// credited with, their signatures.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub proof: serde_json::Value,
}

/// The bytes a [`NewPublisherKey::proof`] signs: bound to the key and to the
/// user registering it, so a proof cannot be replayed by another account.
pub fn key_proof_message(login: &str, id: &KeyId) -> String {
    format!("ebpkg publisher key {id} registered by user {login}\n")
}

/// A publisher key as registered: whose it is and whether it still signs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PublisherKey {
    pub id: KeyId,
    pub pem: String,
    /// The user who registered it.
    pub owner: String,
    pub added_at: String,
    /// When its owner removed it: publishes signed by it are refused from then on,
    /// and versions it signed say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
}

/// `GET /api/v1/me/keys`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PublisherKeyList {
    pub keys: Vec<PublisherKey>,
}

/// Why a publish body could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    #[error("the publish body ends after {got} byte(s) of {what}; {expected} were announced")]
    Truncated { what: &'static str, expected: u64, got: u64 },
    #[error("the {what} is {len} bytes, more than the {max} this registry accepts")]
    TooLarge { what: &'static str, len: u64, max: u64 },
    #[error("the publish metadata is not valid: {0}")]
    Metadata(String),
    #[error("{0} byte(s) follow the archive in the publish body")]
    Trailing(u64),
}

/// Reads a u32 little-endian length prefix of `what`, refusing one over `max`.
pub fn frame_length(prefix: [u8; 4], what: &'static str, max: u64) -> Result<u64, FramingError> {
    let len = u64::from(u32::from_le_bytes(prefix));
    if len > max {
        return Err(FramingError::TooLarge { what, len, max });
    }
    Ok(len)
}

/// Parses the publish metadata (at most [`MAX_PUBLISH_METADATA`] bytes).
pub fn parse_publish_metadata(json: &[u8]) -> Result<PublishMetadata, FramingError> {
    if json.len() as u64 > u64::from(MAX_PUBLISH_METADATA) {
        return Err(FramingError::TooLarge {
            what: "publish metadata",
            len: json.len() as u64,
            max: MAX_PUBLISH_METADATA.into(),
        });
    }
    serde_json::from_slice(json).map_err(|e| FramingError::Metadata(e.to_string()))
}

/// A publish body: u32 LE metadata length, metadata JSON, u32 LE archive length,
/// archive (cargo's framing).
pub fn encode_publish(metadata: &PublishMetadata, archive: &[u8]) -> Vec<u8> {
    // Serializing plain strings and a digest cannot fail.
    let json = serde_json::to_vec(metadata).unwrap_or_default();
    let mut body = Vec::with_capacity(8 + json.len() + archive.len());
    body.extend_from_slice(&(json.len() as u32).to_le_bytes());
    body.extend_from_slice(&json);
    body.extend_from_slice(&(archive.len() as u32).to_le_bytes());
    body.extend_from_slice(archive);
    body
}

/// Decodes a whole publish body held in memory, with the archive at most
/// `max_archive` bytes. (The server reads the same framing incrementally with
/// [`frame_length`] and [`parse_publish_metadata`].)
pub fn decode_publish(body: &[u8], max_archive: u64) -> Result<(PublishMetadata, &[u8]), FramingError> {
    let (json, rest) = take_frame(body, "publish metadata", MAX_PUBLISH_METADATA.into())?;
    let metadata = parse_publish_metadata(json)?;
    let (archive, rest) = take_frame(rest, "archive", max_archive)?;
    if !rest.is_empty() {
        return Err(FramingError::Trailing(rest.len() as u64));
    }
    Ok((metadata, archive))
}

fn take_frame<'a>(bytes: &'a [u8], what: &'static str, max: u64) -> Result<(&'a [u8], &'a [u8]), FramingError> {
    let Some((prefix, rest)) = bytes.split_first_chunk::<4>() else {
        return Err(FramingError::Truncated { what: "a length prefix", expected: 4, got: bytes.len() as u64 });
    };
    let len = frame_length(*prefix, what, max)?;
    if (rest.len() as u64) < len {
        return Err(FramingError::Truncated { what, expected: len, got: rest.len() as u64 });
    }
    // len <= rest.len() <= usize::MAX, so the cast is exact.
    Ok(rest.split_at(len as usize))
}

/// The body of every error response: `{"errors":[{"detail":"…"}]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApiErrors {
    pub errors: Vec<ApiErrorDetail>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApiErrorDetail {
    pub detail: String,
}

impl ApiErrors {
    pub fn one(detail: impl Into<String>) -> ApiErrors {
        ApiErrors { errors: vec![ApiErrorDetail { detail: detail.into() }] }
    }

    /// The details joined, for a message.
    pub fn joined(&self) -> String {
        self.errors.iter().map(|e| e.detail.as_str()).collect::<Vec<_>>().join("; ")
    }
}

/// A successful publish: the version's index line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PublishResponse {
    pub entry: IndexEntry,
}

/// `{"ok": true, "msg": …}`: yank, unyank, owner changes, token revocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OkResponse {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
}

/// Why a package matched a search, best first; hits are ranked in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MatchedOn {
    /// The query is the name (compared in normalized form: `my_pkg` is `my-pkg`).
    Name,
    /// The name starts with the query.
    NamePrefix,
    /// The name contains the query.
    NameSubstring,
    /// A keyword contains the query.
    Keyword,
    /// A program's name contains the query.
    Program,
    /// The description contains the query.
    Description,
    /// The query was empty: every package matches.
    Everything,
}

/// One package found by a search, described by its newest version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchHit {
    pub name: PackageName,
    /// The newest version that is neither yanked nor a pre-release; failing that the
    /// newest non-yanked one; failing that (everything yanked) the newest.
    #[schemars(with = "String")]
    pub version: Version,
    /// True only when every version is yanked.
    pub yanked: bool,
    pub description: Option<String>,
    pub keywords: Vec<String>,
    pub programs: Vec<ItemName>,
    /// What matched the query.
    pub matched_on: MatchedOn,
}

/// `GET /api/v1/packages?q=&page=&per_page=`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchResponse {
    pub packages: Vec<SearchHit>,
    pub meta: SearchMeta,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SearchMeta {
    /// Matches in all pages.
    pub total: u64,
    pub page: u32,
    pub per_page: u32,
}

/// `GET /api/v1/packages/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PackageInfo {
    pub name: PackageName,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
    pub owners: Vec<Owner>,
    /// Every version, newest publication last.
    pub versions: Vec<VersionSummary>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VersionSummary {
    #[schemars(with = "String")]
    pub vers: Version,
    pub yanked: bool,
    pub cksum: Sha256Digest,
    /// The archive's size in bytes.
    pub size: u64,
    pub published_at: String,
    pub published_by: String,
    pub downloads: u64,
}

/// `GET /api/v1/packages/{name}/{version}`: the index line and what only the
/// archive holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VersionInfo {
    pub entry: IndexEntry,
    pub summary: VersionSummary,
    pub license: Option<String>,
    /// The README named by the manifest, as published (Markdown).
    pub readme: Option<String>,
}

/// A user who owns a package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Owner {
    pub login: String,
}

/// `GET /api/v1/packages/{name}/owners`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct OwnersResponse {
    pub users: Vec<Owner>,
}

/// `PUT`/`DELETE /api/v1/packages/{name}/owners`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnersRequest {
    /// User names.
    #[schemars(length(min = 1, max = limits::MAX_OWNERS_PER_REQUEST), inner(length(min = 1, max = limits::LOGIN_MAX), regex(pattern = limits::LOGIN_PATTERN)))]
    pub users: Vec<String>,
}

/// What a token may do. A token with no scopes may do everything, including
/// managing tokens; a scoped one only what its scopes (and package globs) allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// Publish the first version of a new package.
    PublishNew,
    /// Publish a new version of a package one owns.
    PublishUpdate,
    /// Yank and unyank versions.
    Yank,
    /// Add and remove owners.
    ChangeOwners,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::PublishNew, Scope::PublishUpdate, Scope::Yank, Scope::ChangeOwners];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::PublishNew => "publish-new",
            Scope::PublishUpdate => "publish-update",
            Scope::Yank => "yank",
            Scope::ChangeOwners => "change-owners",
        }
    }

    pub fn parse(text: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// [`Scope::parse`] for a command line's `--scope`: an unknown one is told
    /// the scopes there are.
    pub fn parse_arg(text: &str) -> Result<Scope, String> {
        Scope::parse(text).ok_or_else(|| {
            let all: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
            format!("`{text}` is not a scope; use one of {}", all.join(", "))
        })
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `PUT /api/v1/tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// Printable characters, not only white space (stored trimmed).
    #[schemars(length(min = 1, max = limits::TOKEN_NAME_MAX), regex(pattern = limits::TOKEN_NAME_PATTERN))]
    pub name: String,
    /// Empty: every power (only an unscoped token may create one).
    #[serde(default)]
    pub scopes: Vec<Scope>,
    /// Package name globs (`*` matches any run of characters) the token is
    /// limited to; empty: every package. A glob is a package name once each `*`
    /// stands for a letter, so not a reserved name (SPEC §2.1).
    #[serde(default)]
    #[schemars(schema_with = "package_globs_schema")]
    pub packages: Vec<String>,
    /// Days until the token expires; absent: it does not.
    #[serde(default, deserialize_with = "whole_number")]
    #[schemars(range(min = 1, max = limits::TOKEN_MAX_EXPIRY_DAYS))]
    pub expires_in_days: Option<u32>,
}

/// A JSON integer as JSON Schema has it: `7` and `7.0` alike (serde reads
/// `7.0` as a float, which a `u32` refuses).
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else { return Ok(None) };
    let whole = n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64));
    whole.and_then(|w| u32::try_from(w).ok()).map(Some).ok_or_else(|| {
        serde::de::Error::invalid_value(serde::de::Unexpected::Other(&n.to_string()), &"a whole number of days")
    })
}

/// A token as listed (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenInfo {
    pub id: i64,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub packages: Vec<String>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
}

impl TokenInfo {
    /// What the token may do, in words: its scopes, its packages, its expiry.
    pub fn powers(&self) -> String {
        let scopes = if self.scopes.is_empty() {
            "every power".to_owned()
        } else {
            self.scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        };
        let packages = if self.packages.is_empty() {
            "every package".to_owned()
        } else {
            format!("packages {}", self.packages.join(", "))
        };
        let expiry = self.expires_at.as_ref().map_or_else(|| "never expires".to_owned(), |at| format!("expires {at}"));
        format!("{scopes}; {packages}; {expiry}")
    }

    /// One line of a token listing (both command lines'): id, name, powers,
    /// creation and last use, tab-separated.
    pub fn listing_line(&self) -> String {
        let used = self.last_used_at.as_ref().map_or_else(|| "never used".to_owned(), |at| format!("last used {at}"));
        format!("{}\t{}\t{}\tcreated {}\t{used}", self.id, self.name, self.powers(), self.created_at)
    }
}

/// A new token: its secret, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenCreated {
    pub token: TokenInfo,
    pub secret: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenList {
    pub tokens: Vec<TokenInfo>,
}

/// A CI identity allowed to publish a package through trusted publishing
/// (`POST /api/v1/packages/{name}/trusted_publishers`): tokens from `issuer`
/// whose `repository` claim is this repository and whose workflow
/// (`job_workflow_ref`, as GitHub Actions sets it) is this file of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTrustedPublisher {
    /// One of the OIDC issuers the registry trusts (its document lists them).
    pub issuer: String,
    /// `owner/repo`.
    #[schemars(regex(pattern = limits::REPOSITORY_PATTERN))]
    pub repository: String,
    /// The workflow's file name under `.github/workflows/`: `publish.yml`.
    #[schemars(regex(pattern = limits::WORKFLOW_PATTERN))]
    pub workflow: String,
    /// When set, the token's `environment` claim must be this.
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::ENVIRONMENT_MAX), regex(pattern = limits::ENVIRONMENT_PATTERN))]
    pub environment: Option<String>,
}

/// A configured trusted publisher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrustedPublisher {
    pub id: i64,
    #[serde(flatten)]
    pub identity: NewTrustedPublisher,
    /// The owner who configured it; publishes through it are attributed to them.
    pub added_by: String,
    pub added_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrustedPublisherList {
    pub publishers: Vec<TrustedPublisher>,
}

/// `POST /api/v1/trusted_publishing/tokens`: an OIDC token (a JWT) from a
/// trusted issuer, to exchange.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustedPublishingExchange {
    pub jwt: String,
}

/// A short-lived publish token for the packages the OIDC identity may publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TrustedPublishingToken {
    pub token: String,
    /// RFC 3339.
    pub expires_at: String,
    pub packages: Vec<PackageName>,
    /// The owner whose configuration matched: publishes are attributed to them.
    pub acting_as: String,
}

/// `GET /api/v1/me`: whose token this is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Me {
    pub login: String,
    /// The token's scopes (empty: every power).
    pub scopes: Vec<Scope>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn metadata() -> PublishMetadata {
        PublishMetadata {
            name: PackageName::new("meter").unwrap(),
            vers: Version::new(1, 2, 3),
            cksum: Sha256Digest::of(b"archive"),
            bundle: None,
        }
    }

    #[test]
    fn publish_bodies_round_trip() {
        let body = encode_publish(&metadata(), b"archive");
        let (m, archive) = decode_publish(&body, 100).unwrap();
        assert_eq!(m, metadata());
        assert_eq!(archive, b"archive");
    }

    /// The publish check's schema excludes the names a package may not take,
    /// each spelling (a pattern cannot say it); the patterns themselves are
    /// exercised by Schemathesis' positive-data check (tests/it/conformance.rs).
    #[test]
    fn the_publish_check_schema_excludes_the_reserved_names() {
        let schema = serde_json::to_value(schemars::schema_for!(PublishCheck)).unwrap();
        let name = &schema["properties"]["name"];
        assert_eq!(name["pattern"], limits::PACKAGE_NAME_PATTERN);
        let excluded: Vec<&str> = name["not"]["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        for n in ["std", "hike_sdk", "hike-sdk", "while", "lpt3"] {
            assert!(excluded.contains(&n), "{n}");
        }
        for n in &excluded {
            assert!(PackageName::new(n).is_err(), "{n} is excluded but valid");
        }
        assert!(!excluded.contains(&"net") && PackageName::new("net").is_ok());
        assert_eq!(schema["properties"]["key"]["pattern"], limits::KEY_ID_PATTERN);
        assert_eq!(schema["properties"]["vers"]["pattern"], limits::VERSION_PATTERN);
    }

    #[test]
    fn publish_bodies_are_checked() {
        let body = encode_publish(&metadata(), b"archive");
        assert!(matches!(decode_publish(&body, 3), Err(FramingError::TooLarge { what: "archive", len: 7, max: 3 })));
        assert!(matches!(decode_publish(&body[..body.len() - 1], 100), Err(FramingError::Truncated { .. })));
        let mut longer = body.clone();
        longer.push(0);
        assert_eq!(decode_publish(&longer, 100), Err(FramingError::Trailing(1)));
        assert!(matches!(decode_publish(&[0xff, 0xff, 0xff, 0xff], 100), Err(FramingError::TooLarge { .. })));
        assert!(matches!(decode_publish(&[1, 0], 100), Err(FramingError::Truncated { .. })));
        let mut unknown = br#"{"name":"a","vers":"1.0.0","cksum":"00","x":1}"#.to_vec();
        unknown.splice(0..0, (unknown.len() as u32).to_le_bytes());
        assert!(matches!(decode_publish(&unknown, 100), Err(FramingError::Metadata(_))));
    }

    #[test]
    fn download_urls_follow_the_template() {
        let name = PackageName::new("meter").unwrap();
        let cksum = Sha256Digest::of(b"x");
        let plain = IndexConfig {
            dl: "https://r.example/api/v1/packages".into(),
            api: None,
            auth_required: false,
            require_signatures: false,
            trusted_publishing_audience: None,
        };
        assert_eq!(
            plain.download_url(&name, &Version::new(1, 0, 0), &cksum),
            "https://r.example/api/v1/packages/meter/1.0.0/download"
        );
        let blob = IndexConfig {
            dl: "https://cdn.example/{prefix}/{name}-{version}-{cksum}".into(),
            api: None,
            auth_required: false,
            require_signatures: false,
            trusted_publishing_audience: None,
        };
        assert_eq!(
            blob.download_url(&name, &Version::new(1, 0, 0), &cksum),
            format!("https://cdn.example/me/te/meter-1.0.0-{cksum}")
        );
    }

    #[test]
    fn a_token_expiry_is_a_json_integer_however_written() {
        let days = |json: &str| serde_json::from_str::<NewToken>(json).map(|t| t.expires_in_days);
        assert_eq!(days(r#"{"name":"ci","expires_in_days":30}"#).unwrap(), Some(30));
        assert_eq!(days(r#"{"name":"ci","expires_in_days":30.0}"#).unwrap(), Some(30));
        assert_eq!(days(r#"{"name":"ci","expires_in_days":null}"#).unwrap(), None);
        assert_eq!(days(r#"{"name":"ci"}"#).unwrap(), None);
        for bad in ["30.5", "-1", "-1.0", "1e10", "\"30\""] {
            assert!(days(&format!(r#"{{"name":"ci","expires_in_days":{bad}}}"#)).is_err(), "{bad}");
        }
    }

    #[test]
    fn scopes_have_one_spelling() {
        for s in Scope::ALL {
            assert_eq!(Scope::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
    }
}
