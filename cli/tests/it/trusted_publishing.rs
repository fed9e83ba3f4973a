//! Trusted publishing from the CLI, against a registry server that trusts an
//! OIDC issuer the test runs on loopback: an owner lets a repository's workflow
//! publish (`ebpkg owner trusted-publisher add`), and a CI job with no stored
//! token logs in with its OIDC identity (`ebpkg login --trusted-publishing`:
//! from a file, from EBPKG_OIDC_TOKEN, and from GitHub Actions' job-token
//! endpoint with the audience the registry advertises), then publishes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::Sandbox;
use ebpkg_registry::testing::oidc::{ACTIONS_REQUEST_TOKEN, trusting_registry};

#[test]
fn a_ci_job_logs_in_with_its_oidc_identity_and_publishes() {
    let (issuer, key, server) = trusting_registry();
    let mut sb = Sandbox::new("tpub");
    sb.use_server(server.url(), &server.token("alice", &[], &[]).unwrap()).ok();
    sb.publish_manifest("c", "1.0.0", &[]);
    let dir = sb.dir.path().to_owned();

    let add = sb
        .run(
            &dir,
            &[
                "owner",
                "trusted-publisher",
                "add",
                "c",
                "--repository",
                "acme/c",
                "--workflow",
                "publish.yml",
                "--issuer",
                &issuer.url,
            ],
        )
        .ok();
    assert!(add.stderr.contains("acme/c (publish.yml) may publish c"), "{}", add.stderr);
    let list = sb.run(&dir, &["owner", "trusted-publisher", "list", "c"]).ok();
    assert!(
        list.stdout.contains("acme/c workflow publish.yml") && list.stdout.contains("added by alice"),
        "{}",
        list.stdout
    );

    // The CI job: no stored token.
    sb.run(&dir, &["logout"]).ok();
    let jwt_file = sb.path("oidc.jwt");
    std::fs::write(&jwt_file, key.sign(&issuer.claims_for("acme/c"))).unwrap();
    let login = sb.run(&dir, &["login", "--trusted-publishing", "--oidc-token-file", jwt_file.to_str().unwrap()]).ok();
    assert!(login.stderr.contains("acting as `alice`") && login.stderr.contains("may publish c"), "{}", login.stderr);
    sb.publish_manifest("c", "1.1.0", &[]);
    // The token is for `c` only.
    let pkg_d = sb.path("gen/d-1.0.0");
    std::fs::create_dir_all(&pkg_d).unwrap();
    std::fs::write(pkg_d.join("ebpkg.toml"), "[package]\nname = \"d\"\nversion = \"1.0.0\"\n").unwrap();
    let refused = sb.run(&pkg_d, &["publish", "--no-verify"]);
    assert_ne!(refused.code, 0, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("publish-new") || refused.stderr.contains("limited to packages"),
        "{}",
        refused.stderr
    );

    // The same OIDC token again: refused (exit 10, a trust refusal), nothing saved.
    let replay =
        sb.run(&dir, &["login", "--trusted-publishing", "--oidc-token-file", jwt_file.to_str().unwrap()]).fails(10);
    assert!(replay.stderr.contains("already exchanged"), "{}", replay.stderr);

    // From the environment.
    let jwt = key.sign(&issuer.claims_for("acme/c"));
    let env = sb.run_with(&dir, &["login", "--trusted-publishing"], &[("EBPKG_OIDC_TOKEN", &jwt)], None).ok();
    assert!(env.stderr.contains("may publish c"), "{}", env.stderr);

    // From GitHub Actions' job-token endpoint, for the audience config.json names.
    issuer.serve_job_tokens(key.clone(), issuer.claims_for("acme/c"));
    let actions_url = format!("{}/actions-token?api-version=2.0", issuer.url);
    let actions = [
        ("ACTIONS_ID_TOKEN_REQUEST_URL", actions_url.as_str()),
        ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", ACTIONS_REQUEST_TOKEN),
    ];
    let gha = sb.run_with(&dir, &["login", "--trusted-publishing"], &actions, None).ok();
    assert!(gha.stderr.contains("may publish c"), "{}", gha.stderr);
    sb.publish_manifest("c", "1.2.0", &[]);

    // Another repository: no package trusts it.
    let other = sb.path("other.jwt");
    std::fs::write(&other, key.sign(&issuer.claims_for("mallory/c"))).unwrap();
    let r = sb.run(&dir, &["login", "--trusted-publishing", "--oidc-token-file", other.to_str().unwrap()]).fails(10);
    assert!(r.stderr.contains("no package trusts mallory/c"), "{}", r.stderr);
    // No OIDC token at all.
    let none = sb.run(&dir, &["login", "--trusted-publishing"]).fails(2);
    assert!(none.stderr.contains("no OIDC token"), "{}", none.stderr);
}
