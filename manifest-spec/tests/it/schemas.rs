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
        "schemas out of date: {stale:?}; run `EBPKG_BLESS=1 cargo test -p ebpkg-spec --test it schemas::` and commit the result"
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

/// A validator for the checked-in schema `name`, with formats (`date-time`)
/// asserted, as JSON Schema leaves them optional.
struct Validator {
    schemas: boon::Schemas,
    index: boon::SchemaIndex,
}

impl Validator {
    fn new(name: &str) -> Validator {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas").join(name);
        let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler.enable_format_assertions();
        let url = format!("file://{}", path.display());
        compiler.add_resource(&url, schema).unwrap();
        let index = compiler.compile(&url, &mut schemas).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        Validator { schemas, index }
    }

    /// Why `value` is refused, or `None`.
    fn refuses(&self, value: &serde_json::Value) -> Option<String> {
        self.schemas.validate(value, self.index).err().map(|e| format!("{e:#}"))
    }

    fn accepts(&self, what: &str, value: &serde_json::Value) {
        if let Some(why) = self.refuses(value) {
            panic!("{what} is refused by its schema: {why}\n{value:#}");
        }
    }

    fn toml(text: &str) -> serde_json::Value {
        toml::from_str(text).unwrap()
    }
}

const SPEC: &str = include_str!("../../SPEC.md");

fn spec_blocks(lang: &str, first_line: &str) -> Vec<String> {
    let fence = format!("```{lang}\n");
    let mut out = Vec::new();
    let mut rest = SPEC;
    while let Some(start) = rest.find(&fence) {
        let body = &rest[start + fence.len()..];
        let end = body.find("```\n").unwrap();
        if body.starts_with(first_line) {
            out.push(body[..end].to_owned());
        }
        rest = &body[end..];
    }
    out
}

/// A kernel verification predicate as `ebpkg attest` writes one.
fn kernel_verification() -> serde_json::Value {
    let digest = "ab".repeat(32);
    serde_json::json!({
        "package": {"name": "flow", "version": "1.0.0", "archive": {"sha256": digest}},
        "attester": {"tool": "ebpkg 0.1.0"},
        "kernels": [{
            "kernel": {"release": "6.18.0-1-amd64", "architecture": "x86_64", "btf": {"sha256": digest}},
            "build": "#1 SMP PREEMPT_DYNAMIC Debian 6.18.1-1 (2026-12-01)",
            "observedAt": "2026-12-07T20:00:00Z",
            "items": [{
                "kind": "program",
                "name": "flow_count",
                "object": {
                    "source": "src/flow.bpf.c",
                    "shipped": "prebuilt/xdp/src/flow.bpf.c.o",
                    "hook": "xdp",
                    "digest": {"sha256": digest},
                    "compiler": "clang version 19.1.7",
                },
                "verdict": "verified",
                "insnsProcessed": 42,
                "verificationMicros": 120,
                "tier": "native",
            }],
        }],
    })
}

#[test]
fn the_schemas_accept_what_ebpkg_writes_and_the_spec_shows() {
    let manifest = Validator::new("ebpkg.toml.schema.json");
    for block in spec_blocks("toml", "# ebpkg.toml") {
        ebpkg_spec::Manifest::parse(&block, "SPEC.md").unwrap();
        manifest.accepts("a SPEC.md manifest", &Validator::toml(&block));
    }
    let lock = Validator::new("ebpkg.lock.schema.json");
    for block in spec_blocks("toml", "# ebpkg.lock") {
        // What ebpkg writes: the canonical form of what it read.
        let written = ebpkg_spec::Lockfile::parse(&block, "SPEC.md").unwrap().to_toml_string();
        lock.accepts("a lockfile ebpkg writes", &Validator::toml(&written));
    }
    let index = Validator::new("index-entry.schema.json");
    for line in spec_blocks("jsonl", "").iter().flat_map(|b| b.lines().map(str::to_owned).collect::<Vec<_>>()) {
        let entry = ebpkg_spec::IndexEntry::parse_line(&line).unwrap().unwrap();
        index.accepts("an index line ebpkg writes", &serde_json::from_str(&entry.to_line()).unwrap());
    }
    let predicate = kernel_verification();
    let parsed: ebpkg_spec::attestation::KernelVerification = serde_json::from_value(predicate.clone()).unwrap();
    parsed.check().unwrap();
    let attestation = Validator::new("kernel-verification.schema.json");
    attestation.accepts("a kernel verification", &predicate);
    attestation.accepts("a kernel verification", &serde_json::to_value(&parsed).unwrap());
    // One made before `shipped` (the shipped path in `source`) still reads.
    let mut old = predicate.clone();
    old["kernels"][0]["items"][0]["object"]["source"] = "prebuilt/xdp/src/flow.bpf.c.o".into();
    old["kernels"][0]["items"][0]["object"].as_object_mut().unwrap().remove("shipped");
    attestation.accepts("a kernel verification made before `shipped`", &old);
}

#[test]
fn the_schemas_refuse_what_ebpkg_refuses() {
    let lock = Validator::new("ebpkg.lock.schema.json");
    let block = spec_blocks("toml", "# ebpkg.lock").remove(0);
    let mut value = Validator::toml(&block);
    value["package"][0]["checksum"] = "abc".into();
    assert!(lock.refuses(&value).is_some(), "a lockfile checksum of \"abc\"");

    let attestation = Validator::new("kernel-verification.schema.json");
    type Change = fn(&mut serde_json::Value);
    let wrong: [(&str, Change); 5] = [
        ("observedAt \"yesterday\"", |p| p["kernels"][0]["observedAt"] = "yesterday".into()),
        ("a control character in build", |p| p["kernels"][0]["build"] = "#1 SMP\u{1b}[31m".into()),
        ("U+0085 in an item's name", |p| p["kernels"][0]["items"][0]["name"] = "flow\u{85}".into()),
        ("a newline in the shipped path", |p| p["kernels"][0]["items"][0]["object"]["shipped"] = "a\nb".into()),
        ("an empty release", |p| p["kernels"][0]["kernel"]["release"] = "".into()),
    ];
    for (what, change) in wrong {
        let mut predicate = kernel_verification();
        change(&mut predicate);
        assert!(attestation.refuses(&predicate).is_some(), "{what} is accepted by the schema");
        // ebpkg refuses it too.
        let parsed: Result<ebpkg_spec::attestation::KernelVerification, _> = serde_json::from_value(predicate);
        assert!(parsed.map_or(true, |p| p.check().is_err()), "{what} is accepted by ebpkg");
    }
}
