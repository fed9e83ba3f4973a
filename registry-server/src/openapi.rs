//! `/api/openapi.json`: paths, parameters and each route's own statuses come from
//! the handlers' `utoipa::path` attributes (each with its `operation_id`); the
//! JSON bodies' schemas, requests and responses, are the wire types' own
//! (schemars, the same ones ebpkg-spec publishes), added as components and
//! referenced from the operations by id. The statuses every route of a kind can
//! answer (a timeout, a database outage, a rate limit, a body refused by its
//! extractor) are added here, with the error body, so that the document lists
//! everything the server can say: `openapi-spec-validator` and Schemathesis
//! check it in `tests/it/conformance.rs`.

use ebpkg_spec::registry_api as api;
use schemars::JsonSchema;
use serde_json::{Map, Value, json};

use crate::config::Config;

/// A wire type as a component: its name and its schema.
type Body = (&'static str, fn() -> Value);

/// What an operation takes and answers, beyond its attribute.
struct Operation {
    id: &'static str,
    /// The JSON body it reads.
    request: Option<Body>,
    /// The JSON body of its 200.
    response: Option<Body>,
}

fn schema<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
}

macro_rules! body {
    ($t:ident) => {
        Some((stringify!($t), schema::<api::$t> as fn() -> Value))
    };
}

/// A Sigstore bundle (v0.3, JSON): what `POST …/attestations` reads. Its own
/// schema is Sigstore's; the document states what the registry reads of it
/// (`ebpkg_signing::SignedAttestation::parse`): the media type, a DSSE envelope
/// of an in-toto Statement with exactly one signature, and its bound.
fn sigstore_bundle() -> Value {
    use ebpkg_signing::attestation::{IN_TOTO_PAYLOAD_TYPE, MAX_ATTESTATION_BYTES};
    json!({
        "title": "SigstoreBundle",
        "description": format!("A Sigstore bundle v0.3 (JSON) whose content is a DSSE envelope over an in-toto \
            Statement (predicate type https://ebpkg.dev/attestation/kernel-verification/v1 or \
            https://ebpkg.dev/attestation/rebuild/v1), with one signature by a registered, live publisher key (of \
            one of the package's owners for a kernel verification, of the caller for a rebuild); at most \
            {MAX_ATTESTATION_BYTES} bytes"),
        "type": "object",
        "required": ["mediaType", "verificationMaterial", "dsseEnvelope"],
        "properties": {
            "mediaType": {"type": "string", "pattern": "^application/vnd\\.dev\\.sigstore\\.bundle"},
            "verificationMaterial": {"type": "object"},
            "dsseEnvelope": {
                "type": "object",
                "required": ["payload", "payloadType", "signatures"],
                "properties": {
                    "payload": {"type": "string", "contentEncoding": "base64", "minLength": 1},
                    "payloadType": {"const": IN_TOTO_PAYLOAD_TYPE},
                    "signatures": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["sig"],
                            "properties": {"sig": {"type": "string", "contentEncoding": "base64", "minLength": 1}},
                        },
                    },
                },
            },
        },
    })
}

/// The publish body (cargo's framing; `registry_api::encode_publish` writes it).
/// Bytes, not JSON: what is inside cannot be said in a schema, so the
/// description does.
fn publish_body() -> Value {
    json!({
        "type": "string",
        "format": "binary",
        "description": format!("u32 LE length of the metadata (at most {} bytes), the metadata JSON \
            (`PublishMetadata`: name, vers, cksum, bundle), u32 LE length of the archive, the archive (.tar.gz); \
            nothing after it. A body of another form is refused (400)", api::MAX_PUBLISH_METADATA),
        "minLength": 8,
    })
}

fn operations() -> Vec<Operation> {
    let op = |id, request, response| Operation { id, request, response };
    vec![
        op("get_index_config", None, body!(IndexConfig)),
        op("publish_version", None, body!(PublishResponse)),
        op("check_publish", body!(PublishCheck), body!(PublishAllowed)),
        op("search_packages", None, body!(SearchResponse)),
        op("get_package", None, body!(PackageInfo)),
        op("get_version", None, body!(VersionInfo)),
        op("yank_version", None, body!(OkResponse)),
        op("unyank_version", None, body!(OkResponse)),
        op("list_owners", None, body!(OwnersResponse)),
        op("add_owners", body!(OwnersRequest), body!(OkResponse)),
        op("remove_owners", body!(OwnersRequest), body!(OkResponse)),
        op("get_me", None, body!(Me)),
        op("create_token", body!(NewToken), body!(TokenCreated)),
        op("list_tokens", None, body!(TokenList)),
        op("revoke_token", None, body!(OkResponse)),
        op("list_my_keys", None, body!(PublisherKeyList)),
        op("add_my_key", body!(NewPublisherKey), body!(PublisherKey)),
        op("revoke_my_key", None, body!(PublisherKey)),
        op("get_key", None, body!(PublisherKey)),
        op("list_trusted_publishers", None, body!(TrustedPublisherList)),
        op("add_trusted_publisher", body!(NewTrustedPublisher), body!(TrustedPublisherList)),
        op("remove_trusted_publisher", None, body!(OkResponse)),
        op("exchange_oidc_token", body!(TrustedPublishingExchange), body!(TrustedPublishingToken)),
        op(
            "get_attestations",
            None,
            Some(("AttestationFile", schema::<ebpkg_spec::attestation::AttestationFile> as fn() -> Value)),
        ),
        op("add_attestation", Some(("SigstoreBundle", sigstore_bundle as fn() -> Value)), body!(AttestationAccepted)),
    ]
}

/// What no route chooses to say but any can: `(status, description)`.
fn common_errors(
    path: &str,
    method: &str,
    op: &Map<String, Value>,
    config: &Config,
    open: bool,
) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("408", format!("The request took longer than {} s", config.request_timeout.as_secs())),
        ("500", "A bug in the registry; its logs have details".to_owned()),
    ];
    let api = path.starts_with("/api/");
    let index = path.starts_with("/index/") || path.starts_with("/tuf/");
    if api || index {
        out.push(("503", "The registry's database or blob store is unavailable; retry after `Retry-After`".into()));
    }
    let has_params = op.get("parameters").and_then(Value::as_array).is_some_and(|p| !p.is_empty());
    if has_params {
        out.push(("400", "A path or query parameter that is not of its documented form".into()));
    }
    let has_body = op.contains_key("requestBody");
    if has_body {
        out.push(("400", "A body that is not JSON, or not of the documented form".into()));
        out.push(("413", "A body larger than the registry accepts".into()));
        out.push(("415", "A body that does not say it is JSON (`Content-Type: application/json`)".into()));
        out.push(("422", "A JSON body without a field the operation needs, or with one of the wrong type".into()));
    }
    let secured = op.get("security").is_some_and(|s| s.as_array().is_some_and(|a| !a.is_empty()));
    if secured || (config.auth_required && !open) {
        out.push(("401", "No token, or one that is not valid (unknown, revoked, expired)".into()));
    }
    // Downloads, bundles and attestation files are served like the index: not limited per IP.
    let unlimited = path.ends_with("/download")
        || path.ends_with("/bundle")
        || (path.ends_with("/attestations") && method == "get");
    if api && !unlimited && config.ip_rate_per_minute > 0 {
        out.push(("429", "Too many requests from this address; retry after `Retry-After` seconds".into()));
    }
    out
}

/// The generated document, completed: the project's `info`, the body schemas, the
/// statuses every route can answer and the error body. `open` lists the paths a
/// private registry serves without a token.
pub fn document(generated: utoipa::openapi::OpenApi, config: &Config, open: &[&str]) -> Value {
    let mut doc = serde_json::to_value(&generated).unwrap_or(Value::Null);
    doc["info"] = json!({
        "title": "ebpkg registry",
        "description": "The API of an ebpkg registry server (`ebpkg-registry`): the sparse index, TUF metadata, \
            publishing, search, owners, tokens, publisher keys, trusted publishing and kernel verification attestations. Errors answer \
            `{\"errors\": [{\"detail\": \"…\"}]}`.",
        "version": env!("CARGO_PKG_VERSION"),
        "license": {"name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0"},
    });
    let mut components = Map::new();
    let mut add = |name: &str, mut schema: Value| {
        if let Some(Value::Object(defs)) = schema.as_object_mut().and_then(|o| o.remove("$defs")) {
            components.extend(defs);
        }
        if let Some(o) = schema.as_object_mut() {
            o.remove("$schema");
        }
        components.insert(name.to_owned(), schema);
    };
    let operations = operations();
    for op in &operations {
        for (name, make) in op.request.iter().chain(op.response.iter()) {
            add(name, make());
        }
    }
    add("ApiErrors", schema::<api::ApiErrors>());
    // schemars refers to `#/$defs/X`; in OpenAPI they live in components.
    let text = Value::Object(components).to_string().replace("#/$defs/", "#/components/schemas/");
    doc["components"]["schemas"] = serde_json::from_str(&text).unwrap_or(Value::Null);
    // A trusted publisher names one of the issuers this registry trusts (with
    // none, the operation answers 404 whatever the body).
    if !config.trusted_issuers.is_empty() {
        doc["components"]["schemas"]["NewTrustedPublisher"]["properties"]["issuer"]["enum"] =
            json!(config.trusted_issuers);
    }
    doc["components"]["securitySchemes"]["token"] = json!({"type": "apiKey", "in": "header", "name": "Authorization", "description": "An API token (`ebpkg login`)"});
    let errors = json!({"application/json": {"schema": {"$ref": "#/components/schemas/ApiErrors"}}});
    let refer = |name: &str| json!({"schema": {"$ref": format!("#/components/schemas/{name}")}});
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else { continue };
            for (method, op) in item.iter_mut() {
                let Some(op) = op.as_object_mut() else { continue };
                let id = op.get("operationId").and_then(Value::as_str).unwrap_or_default().to_owned();
                let known = operations.iter().find(|o| o.id == id);
                if let Some((name, _)) = known.and_then(|o| o.request.as_ref()) {
                    op.insert(
                        "requestBody".into(),
                        json!({"required": true, "content": {"application/json": refer(name)}}),
                    );
                }
                if id == "publish_version" {
                    op.insert(
                        "requestBody".into(),
                        json!({"required": true, "content": {"application/octet-stream": {"schema": publish_body()}}}),
                    );
                }
                // A package name in a path is of the form SPEC §2.1 gives (checked
                // by the handlers, which answer 404 to anything else).
                for param in op.get_mut("parameters").and_then(Value::as_array_mut).into_iter().flatten() {
                    if param["in"] == "path" && param["name"] == "name" {
                        param["schema"] = json!({"type": "string", "pattern": api::limits::PACKAGE_NAME_PATTERN});
                    }
                }
                let extra = common_errors(path, method, op, config, open.contains(&path.as_str()));
                let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else { continue };
                for (status, description) in extra {
                    responses.entry(status).or_insert_with(|| json!({"description": description}));
                }
                for (status, response) in responses.iter_mut() {
                    if status.starts_with('2') {
                        if let Some((name, _)) = known.and_then(|o| o.response.as_ref())
                            && response.get("content").is_some_and(|c| c.get("application/json").is_some())
                        {
                            response["content"]["application/json"] = refer(name);
                        }
                    } else if status.starts_with('4') || status.starts_with('5') {
                        if response.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
                            response["description"] = json!("An error; the body says what and what to do");
                        }
                        response["content"] = errors.clone();
                    }
                }
            }
        }
    }
    doc
}
