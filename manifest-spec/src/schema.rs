//! JSON Schemas of the three formats, generated from the types that parse them.
//! The checked-in copies under `schemas/` are compared with these by a test, so
//! they cannot drift; regenerate them with `EBPKG_BLESS=1 cargo test -p ebpkg-spec`.

use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema, generate::SchemaSettings};
use serde_json::Value;

use crate::index::IndexEntry;
use crate::lockfile::RawLockfile;
use crate::manifest::raw::RawManifest;

/// `(file name under schemas/, pretty JSON)` for every format.
pub fn all() -> Vec<(&'static str, String)> {
    vec![
        ("ebpkg.toml.schema.json", render::<RawManifest>(Format::Toml)),
        ("ebpkg.lock.schema.json", render::<RawLockfile>(Format::Toml)),
        ("index-entry.schema.json", render::<IndexEntry>(Format::Json)),
        ("kernel-verification.schema.json", render::<crate::attestation::KernelVerification>(Format::Json)),
        ("rebuild.schema.json", render::<crate::attestation::rebuild::Rebuild>(Format::Json)),
    ]
}

/// The schema of a TOML file read as `T` (pretty JSON): for the formats other
/// crates read (the trust policy, the CLI's configuration files), rendered as
/// the ones here are.
pub fn render_toml<T: JsonSchema>() -> String {
    render::<T>(Format::Toml)
}

/// TOML has no null: an absent optional key is just absent. JSON index lines do
/// write `null`, so their optional fields admit it.
enum Format {
    Toml,
    Json,
}

fn render<T: JsonSchema>(format: Format) -> String {
    let mut settings = SchemaSettings::draft2020_12();
    if matches!(format, Format::Toml) {
        settings = settings.with_transform(RecursiveTransform(drop_null));
    }
    let schema = settings.into_generator().into_root_schema_for::<T>();
    // A schema is plain JSON; serializing it cannot fail.
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// Removes `null` from `type` lists and `anyOf` alternatives.
fn drop_null(schema: &mut Schema) {
    let Some(obj) = schema.as_object_mut() else { return };
    if let Some(Value::Array(types)) = obj.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            obj.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(alternatives)) = obj.get_mut("anyOf") {
        alternatives.retain(|a| a.get("type").is_none_or(|t| t != "null"));
        if let [only] = alternatives.as_slice() {
            let only = only.clone();
            obj.remove("anyOf");
            if let Value::Object(fields) = only {
                obj.extend(fields);
            }
        }
    }
}
