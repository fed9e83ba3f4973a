//! Trusted publishing against an OIDC issuer the test runs itself on loopback
//! (its own keys, its own discovery document and JWKS endpoint, counting key
//! fetches), a real registry (PostgreSQL, HTTP), and tokens made to be wrong in
//! every way that matters: expired, not yet valid, too long-lived, for another
//! audience, from another issuer, another repository or workflow or
//! environment, signed by another key under the same key id, `alg: none`, HMAC
//! with the public key as the secret, a key id the issuer does not have, and a
//! token used twice. The minted token publishes the trusted package only, as
//! the owner who configured it, and expires.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use base64::Engine as _;
use common::*;
use ebpkg_registry::testing::oidc::{AUDIENCE, Key, trusting_registry};
use ebpkg_registry::testing::{TestRegistry, pack_with, publish_body};
use ebpkg_spec::registry_api::{ApiErrors, TrustedPublisherList, TrustedPublishingToken};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn exchange(reg: &TestRegistry, jwt: &str) -> reqwest::blocking::Response {
    http().post(format!("{}api/v1/trusted_publishing/tokens", reg.url())).json(&json!({"jwt": jwt})).send().unwrap()
}

fn refused(r: reqwest::blocking::Response, status: StatusCode, needle: &str) {
    let got = r.status();
    let text = r.json::<ApiErrors>().map(|e| e.joined()).unwrap_or_default();
    assert_eq!(got, status, "{text}");
    assert!(text.contains(needle), "`{needle}` not in: {text}");
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[test]
fn a_pipeline_exchanges_its_oidc_token_for_a_scoped_short_lived_publish_token() {
    let (issuer, key, reg) = trusting_registry();
    let alice = reg.token("alice", &[], &[]).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    for name in ["meter", "other"] {
        let packed = pack_with(scratch.path(), name, "1.0.0", "", &[]).unwrap();
        assert_eq!(publish(&reg, &alice, &publish_body(&packed, name, "1.0.0").unwrap()).status(), StatusCode::OK);
    }
    let config: Value = get(&reg, "index/config.json").json().unwrap();
    assert_eq!(config["trusted-publishing-audience"], AUDIENCE);

    // Nothing trusts the pipeline yet.
    refused(exchange(&reg, &key.sign(&issuer.claims())), StatusCode::FORBIDDEN, "no package trusts acme/meter");

    // Alice trusts acme/meter's publish.yml in the release environment for `meter`.
    let trust = |body: Value| send(&reg, Method::POST, "api/v1/packages/meter/trusted_publishers", &alice, Some(body));
    let unknown_issuer =
        trust(json!({"issuer": "https://evil.example", "repository": "acme/meter", "workflow": "publish.yml"}));
    refused(unknown_issuer, StatusCode::BAD_REQUEST, "not an issuer this registry trusts");
    refused(
        trust(json!({"issuer": issuer.url, "repository": "acme/../x", "workflow": "publish.yml"})),
        StatusCode::BAD_REQUEST,
        "owner/repo",
    );
    // What /api/openapi.json says (limits::WORKFLOW_PATTERN, ENVIRONMENT_*):
    // Schemathesis found `.yml` passing the handler and failing the table's
    // CHECK (a 500), and an environment counted in bytes there.
    for (workflow, environment) in
        [(".yml", json!(null)), ("publish.yml", json!("")), ("publish.yml", json!("a\u{9f}"))]
    {
        let body =
            json!({"issuer": issuer.url, "repository": "acme/meter", "workflow": workflow, "environment": environment});
        refused(trust(body), StatusCode::BAD_REQUEST, "owner/repo");
    }
    let added = trust(
        json!({"issuer": issuer.url, "repository": "acme/meter", "workflow": "publish.yml", "environment": "release"}),
    );
    assert_eq!(added.status(), StatusCode::OK);
    let list: TrustedPublisherList = added.json().unwrap();
    assert_eq!(list.publishers.len(), 1);
    assert_eq!(list.publishers[0].added_by, "alice");
    // A narrow token may not configure it; a non-owner may not either.
    let narrow = reg.token("alice", &[ebpkg_spec::registry_api::Scope::PublishUpdate], &[]).unwrap();
    let r = send(
        &reg,
        Method::POST,
        "api/v1/packages/meter/trusted_publishers",
        &narrow,
        Some(json!({"issuer": issuer.url, "repository": "acme/x", "workflow": "publish.yml"})),
    );
    refused(r, StatusCode::FORBIDDEN, "unrestricted token");
    let bob = reg.token("bob", &[], &[]).unwrap();
    let r = send(
        &reg,
        Method::POST,
        "api/v1/packages/meter/trusted_publishers",
        &bob,
        Some(json!({"issuer": issuer.url, "repository": "bob/meter", "workflow": "publish.yml"})),
    );
    refused(r, StatusCode::FORBIDDEN, "not an owner");

    // The exchange: a token for `meter` only, acting as alice, for 30 minutes.
    let minted = exchange(&reg, &key.sign(&issuer.claims()));
    assert_eq!(minted.status(), StatusCode::OK);
    let minted: TrustedPublishingToken = minted.json().unwrap();
    assert_eq!(minted.packages.iter().map(|p| p.as_str()).collect::<Vec<_>>(), ["meter"]);
    assert_eq!(minted.acting_as, "alice");
    let expires = chrono::DateTime::parse_from_rfc3339(&minted.expires_at).unwrap();
    let minutes = (expires.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_minutes();
    assert!((28..=30).contains(&minutes), "{minutes} minutes");
    let v2 = pack_with(scratch.path(), "meter", "1.1.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &minted.token, &publish_body(&v2, "meter", "1.1.0").unwrap()).status(), StatusCode::OK);
    let info: Value = get(&reg, "api/v1/packages/meter").json().unwrap();
    assert_eq!(info["versions"][1]["published_by"], "alice");
    let other = pack_with(scratch.path(), "other", "1.1.0", "", &[]).unwrap();
    refused(
        publish(&reg, &minted.token, &publish_body(&other, "other", "1.1.0").unwrap()),
        StatusCode::FORBIDDEN,
        "limited to packages",
    );
    let new = pack_with(scratch.path(), "brand-new", "1.0.0", "", &[]).unwrap();
    refused(
        publish(&reg, &minted.token, &publish_body(&new, "brand-new", "1.0.0").unwrap()),
        StatusCode::FORBIDDEN,
        "",
    );
    // It cannot mint a stronger token either.
    let r = send(&reg, Method::PUT, "api/v1/tokens", &minted.token, Some(json!({"name": "escalate"})));
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // And it expires.
    reg.block_on(
        sqlx::query!(
            "UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE name LIKE 'trusted publishing:%'",
        )
        .execute(reg.pool()),
    )
    .unwrap();
    let v3 = pack_with(scratch.path(), "meter", "1.2.0", "", &[]).unwrap();
    refused(
        publish(&reg, &minted.token, &publish_body(&v3, "meter", "1.2.0").unwrap()),
        StatusCode::UNAUTHORIZED,
        "expired",
    );

    // Replay: each OIDC token is good for one exchange.
    let once = key.sign(&issuer.claims());
    assert_eq!(exchange(&reg, &once).status(), StatusCode::OK);
    refused(exchange(&reg, &once), StatusCode::UNAUTHORIZED, "already exchanged");

    // Every way a token can be wrong.
    let now = jsonwebtoken::get_current_timestamp() as i64;
    let with = |change: &dyn Fn(&mut Value)| {
        let mut c = issuer.claims();
        change(&mut c);
        c
    };
    let cases: Vec<(&str, String, StatusCode, &str)> = vec![
        (
            "expired",
            key.sign(&with(&|c| {
                c["iat"] = json!(now - 900);
                c["exp"] = json!(now - 120);
            })),
            StatusCode::UNAUTHORIZED,
            "expired",
        ),
        (
            "not yet valid",
            key.sign(&with(&|c| {
                c["nbf"] = json!(now + 600);
                c["exp"] = json!(now + 900);
                c["iat"] = json!(now);
            })),
            StatusCode::UNAUTHORIZED,
            "not valid yet",
        ),
        (
            "too long-lived",
            key.sign(&with(&|c| c["exp"] = json!(now + 7200))),
            StatusCode::UNAUTHORIZED,
            "at most 3600 s",
        ),
        (
            "no iat",
            key.sign(&with(&|c| {
                c.as_object_mut().unwrap().remove("iat");
            })),
            StatusCode::UNAUTHORIZED,
            "`iat`",
        ),
        (
            "wrong audience",
            key.sign(&with(&|c| c["aud"] = json!("pypi"))),
            StatusCode::UNAUTHORIZED,
            "`aud` must contain `ebpkg-test`",
        ),
        (
            "no audience",
            key.sign(&with(&|c| {
                c.as_object_mut().unwrap().remove("aud");
            })),
            StatusCode::UNAUTHORIZED,
            "aud",
        ),
        (
            "another issuer",
            key.sign(&with(&|c| c["iss"] = json!("https://token.actions.githubusercontent.com"))),
            StatusCode::UNAUTHORIZED,
            "not one this registry trusts",
        ),
        (
            "wrong repository",
            key.sign(&with(&|c| {
                c["repository"] = json!("mallory/meter");
                c["job_workflow_ref"] = json!("mallory/meter/.github/workflows/publish.yml@refs/heads/main");
            })),
            StatusCode::FORBIDDEN,
            "no package trusts mallory/meter",
        ),
        (
            "wrong workflow",
            key.sign(&with(&|c| c["job_workflow_ref"] = json!("acme/meter/.github/workflows/ci.yml@refs/heads/main"))),
            StatusCode::FORBIDDEN,
            "no package trusts",
        ),
        (
            "wrong environment",
            key.sign(&with(&|c| c["environment"] = json!("staging"))),
            StatusCode::FORBIDDEN,
            "environment staging",
        ),
        (
            "no repository claim",
            key.sign(&with(&|c| {
                c.as_object_mut().unwrap().remove("repository");
            })),
            StatusCode::UNAUTHORIZED,
            "`repository`",
        ),
        (
            "signed by another key, same kid",
            Key::ec("k1").sign(&issuer.claims()),
            StatusCode::UNAUTHORIZED,
            "signature is not the issuer's",
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                b64(br#"{"alg":"none","typ":"JWT","kid":"k1"}"#),
                b64(issuer.claims().to_string().as_bytes())
            ),
            StatusCode::UNAUTHORIZED,
            "not a JWT",
        ),
        (
            "HS256 with the public key as secret",
            {
                let mut header = Header::new(Algorithm::HS256);
                header.kid = Some("k1".into());
                let secret = serde_json::to_vec(&key.jwk).unwrap();
                jsonwebtoken::encode(&header, &issuer.claims(), &EncodingKey::from_secret(&secret)).unwrap()
            },
            StatusCode::UNAUTHORIZED,
            "only RS256 and ES256",
        ),
        (
            "payload tampered after signing",
            {
                let good = key.sign(&issuer.claims());
                let parts: Vec<&str> = good.split('.').collect();
                let evil = b64(with(&|c| c["repository"] = json!("acme/meter"))
                    .to_string()
                    .replace("release", "staging")
                    .as_bytes());
                format!("{}.{}.{}", parts[0], evil, parts[2])
            },
            StatusCode::UNAUTHORIZED,
            "signature",
        ),
        ("garbage", "not-a-token".into(), StatusCode::UNAUTHORIZED, "not a JWT"),
        ("huge", "a".repeat(20_000), StatusCode::UNAUTHORIZED, "longer than"),
    ];
    for (what, jwt, status, needle) in cases {
        let r = exchange(&reg, &jwt);
        let got = r.status();
        let text = r.json::<ApiErrors>().map(|e| e.joined()).unwrap_or_default();
        assert_eq!(got, status, "{what}: {text}");
        assert!(text.contains(needle), "{what}: `{needle}` not in: {text}");
    }

    // Rotation: a token under a key id the cache lacks makes one refetch.
    let fetched = issuer.fetches();
    let rotated = Key::rsa("k2");
    issuer.publish_key(&rotated);
    assert_eq!(exchange(&reg, &rotated.sign(&issuer.claims())).status(), StatusCode::OK, "RS256 after a rotation");
    assert_eq!(issuer.fetches(), fetched + 1);
    // A flood of made-up key ids right after costs the issuer nothing more.
    for i in 0..20 {
        let forged = Key::new(&format!("made-up-{i}"), Algorithm::ES256, key.encoding.clone());
        refused(exchange(&reg, &forged.sign(&issuer.claims())), StatusCode::UNAUTHORIZED, "has no key");
    }
    assert_eq!(issuer.fetches(), fetched + 1, "unknown key ids are refetched at most once per 30 s");

    // Removing the trusted publisher stops the exchange; so does alice leaving
    // the owners (her configurations go with her).
    let id = list.publishers[0].id;
    let r = send(&reg, Method::DELETE, &format!("api/v1/packages/meter/trusted_publishers/{id}"), &alice, None);
    assert_eq!(r.status(), StatusCode::OK);
    refused(exchange(&reg, &key.sign(&issuer.claims())), StatusCode::FORBIDDEN, "no package trusts");
}

#[test]
fn an_owner_who_leaves_takes_their_trusted_publishers_along() {
    let (issuer, key, reg) = trusting_registry();
    let alice = reg.token("alice", &[], &[]).unwrap();
    reg.token("bob", &[], &[]).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let packed = pack_with(scratch.path(), "meter", "1.0.0", "", &[]).unwrap();
    assert_eq!(publish(&reg, &alice, &publish_body(&packed, "meter", "1.0.0").unwrap()).status(), StatusCode::OK);
    let body = json!({"issuer": issuer.url, "repository": "acme/meter", "workflow": "publish.yml"});
    assert_eq!(
        send(&reg, Method::POST, "api/v1/packages/meter/trusted_publishers", &alice, Some(body)).status(),
        StatusCode::OK
    );
    // An environment is 1 to 255 characters (limits::ENVIRONMENT_MAX), as the
    // table now counts them too (it counted bytes: a 500).
    let wide = json!({"issuer": issuer.url, "repository": "acme/meter", "workflow": "a.yaml", "environment": "\u{e9}".repeat(255)});
    assert_eq!(
        send(&reg, Method::POST, "api/v1/packages/meter/trusted_publishers", &alice, Some(wide)).status(),
        StatusCode::OK,
        "255 characters of environment"
    );
    assert_eq!(exchange(&reg, &key.sign(&issuer.claims())).status(), StatusCode::OK);
    let r = send(&reg, Method::PUT, "api/v1/packages/meter/owners", &alice, Some(json!({"users": ["bob"]})));
    assert_eq!(r.status(), StatusCode::OK);
    let r = send(&reg, Method::DELETE, "api/v1/packages/meter/owners", &alice, Some(json!({"users": ["alice"]})));
    assert_eq!(r.status(), StatusCode::OK);
    refused(exchange(&reg, &key.sign(&issuer.claims())), StatusCode::FORBIDDEN, "no package trusts");
}
