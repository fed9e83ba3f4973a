//! JSON Schemas of the three formats, generated from the types that parse them.
//! The checked-in copies under `schemas/` are compared with these by a test, so
//! they cannot drift; regenerate them with `EBPKG_BLESS=1 cargo test -p ebpkg-spec`.

use schemars::{JsonSchema, generate::SchemaSettings};

use crate::index::IndexEntry;
use crate::lockfile::RawLockfile;
use crate::manifest::raw::RawManifest;

/// `(file name under schemas/, pretty JSON)` for every format.
pub fn all() -> Vec<(&'static str, String)> {
    vec![
        ("ebpkg.toml.schema.json", render::<RawManifest>()),
        ("ebpkg.lock.schema.json", render::<RawLockfile>()),
        ("index-entry.schema.json", render::<IndexEntry>()),
    ]
}

fn render<T: JsonSchema>() -> String {
    let schema = SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>();
    // A schema is plain JSON; serializing it cannot fail.
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}
