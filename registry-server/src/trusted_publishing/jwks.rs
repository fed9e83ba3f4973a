//! The issuers' signing keys (JWKS), fetched through their OIDC discovery
//! document and kept for an hour. A token naming a key the cache does not hold
//! makes one refetch (an issuer rotated its keys), at most one such refetch
//! every [`REFETCH_INTERVAL`] per issuer: a flood of tokens with made-up key ids
//! costs the issuer one request, not one each.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use tokio::sync::Mutex;

/// How long fetched keys are used without asking again.
const TTL: Duration = Duration::from_secs(3600);
/// The least time between two fetches for one issuer.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// Largest discovery document or key set read.
const MAX_BYTES: usize = 256 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    #[error("{url}: {why}")]
    Fetch { url: String, why: String },
    #[error("the issuer {issuer} has no key `{kid}` (its key set was fetched {age} s ago)")]
    UnknownKey { issuer: String, kid: String, age: u64 },
}

/// A key the issuer publishes, ready to verify with.
#[derive(Clone)]
pub struct IssuerKey {
    pub key: DecodingKey,
    pub jwk: Jwk,
}

struct Fetched {
    keys: HashMap<String, IssuerKey>,
    at: Instant,
    /// The last refetch an unknown key id caused.
    forced_at: Option<Instant>,
}

pub struct JwksCache {
    client: reqwest::Client,
    /// One lock per issuer would be finer; fetches are rare and bounded in time.
    issuers: Mutex<HashMap<String, Fetched>>,
}

impl Default for JwksCache {
    fn default() -> JwksCache {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        JwksCache { client, issuers: Mutex::new(HashMap::new()) }
    }
}

impl JwksCache {
    /// The key `kid` of `issuer`.
    pub async fn key(&self, issuer: &str, kid: &str) -> Result<IssuerKey, JwksError> {
        let mut issuers = self.issuers.lock().await;
        let mut forced = None;
        if let Some(f) = issuers.get(issuer)
            && f.at.elapsed() < TTL
        {
            if let Some(k) = f.keys.get(kid) {
                return Ok(k.clone());
            }
            if f.forced_at.is_some_and(|t| t.elapsed() < REFETCH_INTERVAL) {
                return Err(JwksError::UnknownKey {
                    issuer: issuer.to_owned(),
                    kid: kid.to_owned(),
                    age: f.at.elapsed().as_secs(),
                });
            }
            forced = Some(Instant::now());
        }
        let keys = self.fetch(issuer).await;
        // A failed fetch counts as a fetch: it is not retried for every token.
        let fetched = issuers.entry(issuer.to_owned()).or_insert(Fetched {
            keys: HashMap::new(),
            at: Instant::now(),
            forced_at: None,
        });
        fetched.at = Instant::now();
        fetched.forced_at = forced.or(fetched.forced_at);
        fetched.keys = keys?;
        fetched.keys.get(kid).cloned().ok_or_else(|| JwksError::UnknownKey {
            issuer: issuer.to_owned(),
            kid: kid.to_owned(),
            age: 0,
        })
    }

    async fn fetch(&self, issuer: &str) -> Result<HashMap<String, IssuerKey>, JwksError> {
        let discovery = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
        let document: serde_json::Value = self.get_json(&discovery).await?;
        let fail = |why: String| JwksError::Fetch { url: discovery.clone(), why };
        // The document must be the issuer's own (OIDC Discovery §4.3).
        if document["issuer"].as_str() != Some(issuer) {
            return Err(fail(format!("it names the issuer {}, not {issuer}", document["issuer"])));
        }
        let jwks_uri = document["jwks_uri"].as_str().ok_or_else(|| fail("it has no `jwks_uri`".into()))?;
        let same_scheme = url::Url::parse(jwks_uri)
            .is_ok_and(|u| u.scheme() == "https" || (u.scheme() == "http" && issuer.starts_with("http://")));
        if !same_scheme {
            return Err(fail(format!("its jwks_uri {jwks_uri} is not https")));
        }
        let set: JwkSet = self.get_json(jwks_uri).await?;
        let mut keys = HashMap::new();
        for jwk in set.keys {
            let Some(kid) = jwk.common.key_id.clone() else { continue };
            // Keys of a kind this server cannot verify with are skipped, not fatal.
            if let Ok(key) = DecodingKey::from_jwk(&jwk) {
                keys.insert(kid, IssuerKey { key, jwk });
            }
        }
        tracing::info!(issuer, keys = keys.len(), "trusted publishing: fetched the issuer's keys");
        Ok(keys)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, JwksError> {
        let fail = |why: String| JwksError::Fetch { url: url.to_owned(), why };
        let mut response = self.client.get(url).send().await.map_err(|e| fail(e.to_string()))?;
        if !response.status().is_success() {
            return Err(fail(format!("HTTP {}", response.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| fail(e.to_string()))? {
            if body.len() + chunk.len() > MAX_BYTES {
                return Err(fail(format!("larger than {MAX_BYTES} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| fail(format!("not the JSON expected: {e}")))
    }
}
