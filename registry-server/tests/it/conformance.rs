//! The registry's API description against the tools others use to read it:
//! `openapi-spec-validator` checks `/api/openapi.json` against the OpenAPI
//! specification, and Schemathesis generates requests from it against a live
//! server, with a token, and runs every check it has: no 5xx, no status the
//! document does not list, no body outside its schema, no content type other
//! than the documented one, every request valid under the document accepted
//! (positive data) and every invalid one refused (negative data), no secured
//! operation answering without the token. Both run from venvs `ci/setup` makes
//! (`EBPKG_TEST_OPENAPI_VENV` overrides the path), bounded in time.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use ebpkg_registry::testing::oidc::{self, Issuer};
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

/// A registry with a package (two versions, one yanked) and an owner's token,
/// trusting an OIDC issuer (so that trusted publishers can be added; it serves
/// its keys while it lives).
fn populated() -> (TestRegistry, String, Issuer) {
    let (issuer, _key, reg) = oidc::trusting_registry();
    let scratch = tempfile::tempdir().unwrap();
    let token = reg.token("alice", &[], &[]).unwrap();
    for version in ["1.0.0", "1.1.0"] {
        let packed = pack_with(scratch.path(), "net", version, "", &[]).unwrap();
        let r = common::publish(&reg, &token, &publish_body(&packed, "net", version).unwrap());
        assert!(r.status().is_success(), "{}", r.text().unwrap());
    }
    (reg, token, issuer)
}

#[test]
fn openapi_spec_validator_accepts_the_document() {
    let (reg, _token, _issuer) = populated();
    let document = common::get(&reg, "api/openapi.json").bytes().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &document).unwrap();
    let out = Command::new(venv().join("bin/openapi-spec-validator")).arg(&file).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "openapi-spec-validator refused /api/openapi.json:\n{said}");
}

/// What a schema cannot say: a signature verifies, a key is a point of P-256, a
/// publish body's bytes frame a valid archive. Requests to these operations
/// valid under the document may still be refused for that (400, 422; the
/// document lists both); everything a schema can say, it says, so that
/// positive-data acceptance holds everywhere else.
///
/// The operations on a package's versions are sent to the package
/// [`populated`] publishes (`net@1.0.0`), not only to names that do not exist
/// (404), so that what they read of their bodies is checked too.
const SCHEMATHESIS_CONFIG: &str = r#"
[[operations]]
include-operation-id = ["add_my_key", "add_attestation", "publish_version"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "422", "429", "5xx"]

[[operations]]
include-operation-id = [
    "get_version", "yank_version", "unyank_version", "list_owners", "add_owners", "remove_owners",
    "list_trusted_publishers", "add_trusted_publisher", "get_attestations", "add_attestation",
]
parameters = { "path.name" = "net", "path.version" = "1.0.0" }
"#;

/// Schemathesis against `reg` with every check, as `token`'s user; its report on
/// failure.
fn schemathesis(reg: &TestRegistry, token: &str, report: &std::path::Path) {
    let config = report.join("schemathesis.toml");
    std::fs::write(&config, SCHEMATHESIS_CONFIG).unwrap();
    let mut command = Command::new(venv().join("bin/schemathesis"));
    command
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(format!("{}api/openapi.json", reg.url()))
        .args(["--checks", "all"])
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
        .current_dir(report)
        .args(["--header", &format!("Authorization: {token}")])
        // Revoking the run's own token would leave the rest of it anonymous
        // (tests/it/api.rs checks this operation's effect).
        .args(["--exclude-operation-id", "revoke_token"]);
    let out = command.output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "Schemathesis found problems:\n{said}\n{}", String::from_utf8_lossy(&out.stderr));
    eprintln!("{said}");
    // The operations behind the token were reached (Schemathesis warns when an
    // operation only ever answered 401/403), and every check ran, positive data
    // acceptance among them.
    assert!(!said.contains("Authentication failed"), "the token was not accepted:\n{said}");
    let mut events = String::new();
    for entry in std::fs::read_dir(report).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "ndjson") {
            events.push_str(&std::fs::read_to_string(&path).unwrap());
        }
    }
    for check in ["positive_data_acceptance", "negative_data_rejection", "ignored_auth"] {
        assert!(events.contains(&format!("\"{check}\"")), "the {check} check did not run:\n{said}");
    }
}

/// One run with every check: the anonymous answers of secured operations are
/// what `ignored_auth` checks (each is also sent without the token).
#[test]
fn schemathesis_finds_no_5xx_no_undocumented_status_no_body_outside_its_schema_and_no_valid_request_refused() {
    let (reg, token, _issuer) = populated();
    let report = tempfile::tempdir().unwrap();
    schemathesis(&reg, &token, report.path());
}
