//! The JSON Schemas under `schemas/` are what the Rust types generate. After
//! changing a format, regenerate them with `EBPKG_BLESS=1 cargo test -p ebpkg-spec`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests fail loudly on purpose

use std::path::Path;

#[test]
fn checked_in_schemas_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    let bless = std::env::var_os("EBPKG_BLESS").is_some();
    let mut stale = Vec::new();
    for (name, generated) in ebpkg_spec::schema::all() {
        let path = dir.join(name);
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &generated).unwrap();
            continue;
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        if on_disk != generated {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "schemas out of date: {stale:?}; run `EBPKG_BLESS=1 cargo test -p ebpkg-spec --test schemas` and commit the result"
    );
}

#[test]
fn schemas_are_json_and_name_their_format() {
    for (name, text) in ebpkg_spec::schema::all() {
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["$schema"], "https://json-schema.org/draft/2020-12/schema", "{name}");
        assert!(value["title"].is_string(), "{name} has no title");
    }
}
