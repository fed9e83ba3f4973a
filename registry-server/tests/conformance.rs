//! The registry's API description against the tools others use to read it:
//! `openapi-spec-validator` checks `/api/openapi.json` against the OpenAPI
//! specification, and Schemathesis generates requests from it against a live
//! server — anonymous, then with a token — and checks every answer: no 5xx, no
//! status the document does not list, no body outside its schema, no content
//! type other than the documented one. Both run from venvs `ci/setup` makes
//! (`EBPKG_TEST_OPENAPI_VENV` overrides the path), bounded in time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use ebpkg_registry::testing::{TestRegistry, pack_with, publish_body};

fn venv() -> PathBuf {
    let venv = std::env::var_os("EBPKG_TEST_OPENAPI_VENV")
        .map_or_else(|| PathBuf::from("/opt/ebpkg-ci/openapi"), PathBuf::from);
    assert!(
        venv.join("bin/schemathesis").is_file(),
        "Schemathesis is not installed in {} (ci/setup installs it)",
        venv.display()
    );
    venv
}

/// A registry with a package (two versions, one yanked) and an owner's token.
fn populated() -> (TestRegistry, String) {
    let reg = TestRegistry::start().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    for version in ["1.0.0", "1.1.0"] {
        let packed = pack_with(scratch.path(), "net", version, "", &[]).unwrap();
        let r = common::publish(&reg, &token, &publish_body(&packed, "net", version).unwrap());
        assert!(r.status().is_success(), "{}", r.text().unwrap());
    }
    (reg, token)
}

#[test]
fn openapi_spec_validator_accepts_the_document() {
    let (reg, _token) = populated();
    let document = common::get(&reg, "api/openapi.json").bytes().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &document).unwrap();
    let out = Command::new(venv().join("bin/openapi-spec-validator")).arg(&file).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "openapi-spec-validator refused /api/openapi.json:\n{said}");
}

/// Schemathesis against `reg`, with `headers`; its report on failure.
fn schemathesis(reg: &TestRegistry, headers: &[String], report: &std::path::Path) {
    let mut command = Command::new(venv().join("bin/schemathesis"));
    command
        .arg("run")
        .arg(format!("{}api/openapi.json", reg.url()))
        .args(["--checks", "not_a_server_error,status_code_conformance,content_type_conformance"])
        .args(["--checks", "response_schema_conformance,response_headers_conformance"])
        .args(["--phases", "examples,coverage,fuzzing"])
        // One worker: with two, Debian 12's Python 3.11 parses hypothesis's lambda
        // sources from two threads and fails in `ast.parse` ("AST constructor
        // recursion depth mismatch"), an error of the tool, not of the server.
        .args(["--max-examples", "25", "--seed", "20261128", "--workers", "1"])
        .args(["--max-time", "45", "--request-timeout", "20", "--no-shrink"])
        .args(["--report", "ndjson", "--report-dir"])
        .arg(report)
        .env("SCHEMATHESIS_HOOKS", "")
        .env("NO_COLOR", "1")
        // Schemathesis keeps its example database (`.schemathesis/`) in the working
        // directory: the run's own, never the source tree.
        .current_dir(report);
    for h in headers {
        command.args(["--header", h]);
    }
    if !headers.is_empty() {
        // Revoking the run's own token would leave the rest of it anonymous (the
        // anonymous run covers this operation; tests/api.rs its effect).
        command.args(["--exclude-operation-id", "revoke_token"]);
    }
    let out = command.output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "Schemathesis found problems:\n{said}\n{}", String::from_utf8_lossy(&out.stderr));
    eprintln!("{said}");
    // With a token, the operations behind it were reached (Schemathesis warns
    // when an operation only ever answered 401/403).
    if !headers.is_empty() {
        assert!(!said.contains("Authentication failed"), "the token was not accepted:\n{said}");
    }
}

#[test]
fn schemathesis_finds_no_5xx_no_undocumented_status_and_no_body_outside_its_schema() {
    let (reg, token) = populated();
    let report = tempfile::tempdir().unwrap();
    schemathesis(&reg, &[], report.path());
    schemathesis(&reg, &[format!("Authorization: {token}")], report.path());
}
