//! An OIDC issuer for trusted-publishing tests, on loopback: its own keys
//! (made with Debian's `openssl`), a discovery document, a JWKS endpoint that
//! counts its fetches, and GitHub Actions' job-token endpoint (which hands out a
//! token for the audience asked, as `ACTIONS_ID_TOKEN_REQUEST_URL` does).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::missing_panics_doc)]

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// What the job-token endpoint wants as `Authorization: bearer …`.
pub const ACTIONS_REQUEST_TOKEN: &str = "actions-request-token";

/// A signing key the test's issuer holds (or an attacker holds, for the forgeries).
#[derive(Clone)]
pub struct Key {
    pub kid: String,
    pub alg: Algorithm,
    pub encoding: EncodingKey,
    pub jwk: Jwk,
}

fn openssl(args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl").args(args).output().expect("openssl (Debian's)");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// A fresh private key from `openssl genpkey`, converted by `openssl convert…`
/// to the DER form jsonwebtoken reads.
fn openssl_key(generate: &[&str], convert: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("key.pem");
    openssl(&[generate, &["-out", pem.to_str().unwrap()]].concat());
    openssl(&[convert, &["-in", pem.to_str().unwrap(), "-outform", "DER"]].concat())
}

impl Key {
    pub fn ec(kid: &str) -> Key {
        // PKCS#8 (genpkey's DER would be SEC1).
        let der = openssl_key(
            &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
            &["pkcs8", "-topk8", "-nocrypt"],
        );
        Key::new(kid, Algorithm::ES256, EncodingKey::from_ec_der(&der))
    }

    pub fn rsa(kid: &str) -> Key {
        // PKCS#1, as jsonwebtoken wants RSA keys.
        let der = openssl_key(
            &["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
            &["rsa", "-traditional"],
        );
        Key::new(kid, Algorithm::RS256, EncodingKey::from_rsa_der(&der))
    }

    pub fn new(kid: &str, alg: Algorithm, encoding: EncodingKey) -> Key {
        let mut jwk = Jwk::from_encoding_key(&encoding, alg).unwrap();
        jwk.common.key_id = Some(kid.to_owned());
        jwk.common.key_algorithm =
            Some(if alg == Algorithm::ES256 { KeyAlgorithm::ES256 } else { KeyAlgorithm::RS256 });
        Key { kid: kid.to_owned(), alg, encoding, jwk }
    }

    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

/// The test's OIDC issuer: discovery and JWKS over HTTP on loopback.
pub struct Issuer {
    pub url: String,
    keys: Arc<Mutex<Vec<Jwk>>>,
    jwks_fetches: Arc<AtomicUsize>,
    /// What the job-token endpoint signs with, and the claims it signs.
    job_token: Arc<Mutex<Option<(Key, Value)>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Issuer {
    pub fn start() -> Issuer {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let keys: Arc<Mutex<Vec<Jwk>>> = Arc::default();
        let jwks_fetches: Arc<AtomicUsize> = Arc::default();
        let discovery = json!({"issuer": url, "jwks_uri": format!("{url}/jwks")});
        let signer: Arc<Mutex<Option<(Key, Value)>>> = Arc::default();
        let app = axum::Router::new()
            .route(
                "/actions-token",
                axum::routing::get({
                    let signer = signer.clone();
                    move |headers: axum::http::HeaderMap,
                          query: axum::extract::Query<std::collections::HashMap<String, String>>| async move {
                        let authorized = headers
                            .get("authorization")
                            .and_then(|v| v.to_str().ok())
                            .is_some_and(|v| v.eq_ignore_ascii_case(&format!("bearer {ACTIONS_REQUEST_TOKEN}")));
                        let guard = signer.lock().unwrap();
                        match (&*guard, authorized) {
                            (Some((key, claims)), true) => {
                                let mut claims = claims.clone();
                                claims["aud"] = json!(query.get("audience").cloned().unwrap_or_default());
                                Ok(axum::Json(json!({"value": key.sign(&claims)})))
                            }
                            _ => Err(axum::http::StatusCode::UNAUTHORIZED),
                        }
                    }
                }),
            )
            .route(
                "/.well-known/openid-configuration",
                axum::routing::get(move || async move { axum::Json(discovery) }),
            )
            .route(
                "/jwks",
                axum::routing::get({
                    let (keys, fetches) = (keys.clone(), jwks_fetches.clone());
                    move || async move {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        axum::Json(JwkSet { keys: keys.lock().unwrap().clone() })
                    }
                }),
            );
        runtime.spawn(async move { axum::serve(listener, app).await });
        Issuer { url, keys, jwks_fetches, job_token: signer, _runtime: runtime }
    }

    /// The job-token endpoint (`{url}/actions-token`) hands out tokens with
    /// `claims` (and the audience asked), signed by `key`.
    pub fn serve_job_tokens(&self, key: Key, claims: Value) {
        *self.job_token.lock().unwrap() = Some((key, claims));
    }

    pub fn publish_key(&self, key: &Key) {
        self.keys.lock().unwrap().push(key.jwk.clone());
    }

    pub fn fetches(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }

    /// The claims GitHub Actions puts in a token for `acme/meter`'s publish workflow.
    pub fn claims(&self) -> Value {
        self.claims_for("acme/meter")
    }

    /// The same for another repository's `publish.yml` (release environment).
    pub fn claims_for(&self, repository: &str) -> Value {
        let now = jsonwebtoken::get_current_timestamp() as i64;
        json!({
            "iss": self.url, "aud": AUDIENCE, "iat": now, "nbf": now, "exp": now + 300,
            "jti": format!("jti-{}", rand_suffix()),
            "sub": format!("repo:{repository}:ref:refs/tags/v1.1.0"),
            "repository": repository,
            "job_workflow_ref": format!("{repository}/.github/workflows/publish.yml@refs/tags/v1.1.0"),
            "environment": "release",
        })
    }
}

fn rand_suffix() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst))
}

/// The audience the tests' registries want.
pub const AUDIENCE: &str = "ebpkg-test";

/// A registry that trusts a fresh issuer (for [`AUDIENCE`]), and the issuer's
/// one published key, `k1`.
pub fn trusting_registry() -> (Issuer, Key, super::TestRegistry) {
    let issuer = Issuer::start();
    let key = Key::ec("k1");
    issuer.publish_key(&key);
    let url = issuer.url.clone();
    let registry = super::TestRegistry::start_with(Box::new(move |c| {
        c.trusted_issuers = vec![url];
        c.trusted_audience = AUDIENCE.into();
    }))
    .unwrap();
    (issuer, key, registry)
}
