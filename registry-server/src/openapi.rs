//! `/api/openapi.json`: paths, parameters and statuses come from the handlers'
//! `utoipa::path` attributes; the JSON bodies' schemas are the wire types' own
//! (schemars, the same ones ebpkg-spec publishes), added as components and
//! referenced from the operations that return them.

use ebpkg_spec::registry_api as api;
use schemars::JsonSchema;
use serde_json::{Value, json};

/// Which operation (by handler name) answers 200 with which wire type.
fn bodies() -> Vec<(&'static str, &'static str, Value)> {
    fn schema<T: JsonSchema>() -> Value {
        serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null)
    }
    vec![
        ("config", "IndexConfig", schema::<api::IndexConfig>()),
        ("publish", "PublishResponse", schema::<api::PublishResponse>()),
        ("search", "SearchResponse", schema::<api::SearchResponse>()),
        ("info", "PackageInfo", schema::<api::PackageInfo>()),
        ("version", "VersionInfo", schema::<api::VersionInfo>()),
        ("yank", "OkResponse", schema::<api::OkResponse>()),
        ("unyank", "OkResponse", schema::<api::OkResponse>()),
        ("list", "OwnersResponse", schema::<api::OwnersResponse>()),
        ("add", "OkResponse", schema::<api::OkResponse>()),
        ("remove", "OkResponse", schema::<api::OkResponse>()),
        ("me", "Me", schema::<api::Me>()),
        ("create", "TokenCreated", schema::<api::TokenCreated>()),
        ("revoke", "OkResponse", schema::<api::OkResponse>()),
    ]
}

/// Completes the generated document with the body schemas and the error body.
pub fn document(generated: utoipa::openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(&generated).unwrap_or(Value::Null);
    let mut components = serde_json::Map::new();
    let mut add = |name: &str, mut schema: Value| {
        if let Some(defs) = schema.as_object_mut().and_then(|o| o.remove("$defs")).and_then(|d| match d {
            Value::Object(map) => Some(map),
            _ => None,
        }) {
            for (k, v) in defs {
                components.insert(k, v);
            }
        }
        if let Some(o) = schema.as_object_mut() {
            o.remove("$schema");
        }
        components.insert(name.to_owned(), schema);
    };
    let bodies = bodies();
    for (_, name, schema) in &bodies {
        add(name, schema.clone());
    }
    add("TokenList", serde_json::to_value(schemars::schema_for!(api::TokenList)).unwrap_or(Value::Null));
    add("ApiErrors", serde_json::to_value(schemars::schema_for!(api::ApiErrors)).unwrap_or(Value::Null));
    // schemars refers to `#/$defs/X`; in OpenAPI they live in components.
    let text = Value::Object(components).to_string().replace("#/$defs/", "#/components/schemas/");
    let components: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    doc["components"]["schemas"] = components;
    doc["components"]["securitySchemes"]["token"] = json!({"type": "apiKey", "in": "header", "name": "Authorization", "description": "An API token (`ebpkg login`)"});
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else { continue };
            for (_, op) in item.iter_mut() {
                let id = op.get("operationId").and_then(Value::as_str).unwrap_or_default().to_owned();
                let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else { continue };
                for (status, response) in responses.iter_mut() {
                    if status.starts_with('2') {
                        // Owners' `list` and tokens' `list` share a handler name.
                        let name = match (id.as_str(), path.as_str()) {
                            ("list", "/api/v1/tokens") => Some("TokenList"),
                            (id, _) => bodies.iter().find(|(op, _, _)| *op == id).map(|(_, n, _)| *n),
                        };
                        if let Some(name) = name
                            .filter(|_| response.get("content").is_some_and(|c| c.get("application/json").is_some()))
                        {
                            response["content"]["application/json"]["schema"] =
                                json!({"$ref": format!("#/components/schemas/{name}")});
                        }
                    } else if status.starts_with('4') || status.starts_with('5') {
                        if response.get("description").and_then(Value::as_str).is_none_or(str::is_empty) {
                            response["description"] = json!("An error; the body says what and what to do");
                        }
                        response["content"] =
                            json!({"application/json": {"schema": {"$ref": "#/components/schemas/ApiErrors"}}});
                    }
                }
            }
        }
    }
    doc
}
