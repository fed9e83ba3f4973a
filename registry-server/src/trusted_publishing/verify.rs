//! Checking an OIDC token (a JWT) from a CI system, and reading who it says
//! the pipeline is.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;

use super::jwks::{JwksCache, JwksError};

/// Largest token considered (GitHub's are about 1.5 KB).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Clock skew tolerated on `exp`, `nbf` and `iat`.
const LEEWAY_SECS: u64 = 60;
/// Longest lifetime (`exp - iat`) accepted: CI tokens live minutes; one that
/// lives for days is a credential that could leak from a log and be replayed
/// elsewhere before it expires.
const MAX_LIFETIME_SECS: i64 = 3600;
/// Only asymmetric algorithms: an HMAC "signature" would be checked with a key
/// everyone can read (the public key), which is the classic forgery.
const ALGORITHMS: [Algorithm; 2] = [Algorithm::RS256, Algorithm::ES256];

/// Why a token was refused: said to the caller (it holds the token; nothing
/// here is secret).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("the token is not a JWT: {0}")]
    Malformed(String),
    #[error("the token is signed with {0:?}; only RS256 and ES256 are accepted")]
    Algorithm(Algorithm),
    #[error("the token's issuer `{0}` is not one this registry trusts")]
    Issuer(String),
    #[error("{0}")]
    Keys(#[from] JwksError),
    #[error("the token does not verify: {0}")]
    Invalid(String),
    #[error("the token is valid for {0} s; at most {MAX_LIFETIME_SECS} s is accepted")]
    Lifetime(i64),
    #[error("the token has no `{0}` claim")]
    Missing(&'static str),
}

/// The pipeline a verified token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub issuer: String,
    /// `owner/repo`.
    pub repository: String,
    /// `owner/repo/.github/workflows/publish.yml@refs/tags/v1.0.0`.
    pub workflow_ref: String,
    pub environment: Option<String>,
    /// What makes the token single-use: its `jti`, or the SHA-256 of the token.
    pub jti: String,
    /// Unix seconds.
    pub expires: i64,
}

impl Identity {
    /// Whether the token comes from `workflow` (a file name under
    /// `.github/workflows/`) of `repository` (any ref).
    pub fn is_workflow(&self, repository: &str, workflow: &str) -> bool {
        let path = self.workflow_ref.split('@').next().unwrap_or_default();
        self.repository == repository && path == format!("{repository}/.github/workflows/{workflow}")
    }
}

#[derive(Deserialize)]
struct Claims {
    iat: Option<i64>,
    exp: i64,
    jti: Option<String>,
    repository: Option<String>,
    job_workflow_ref: Option<String>,
    workflow_ref: Option<String>,
    environment: Option<String>,
}

/// Checks `token` against the issuers in `trusted`, for `audience`.
pub async fn verify(token: &str, trusted: &[String], audience: &str, keys: &JwksCache) -> Result<Identity, Refusal> {
    if token.len() > MAX_TOKEN_BYTES {
        return Err(Refusal::Malformed(format!("longer than {MAX_TOKEN_BYTES} bytes")));
    }
    let header = jsonwebtoken::decode_header(token).map_err(|e| Refusal::Malformed(e.to_string()))?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(Refusal::Algorithm(header.alg));
    }
    // Keys only from the issuer's published set: a key or key URL inside the
    // token (`jwk`, `jku`) is the token vouching for itself, and is ignored.
    let kid = header.kid.ok_or(Refusal::Missing("kid"))?;
    // The issuer, read before the signature is checked only to know whose keys
    // to check it with; it is verified with them below.
    let issuer = unverified_issuer(token)?;
    if !trusted.contains(&issuer) {
        return Err(Refusal::Issuer(issuer));
    }
    let key = keys.key(&issuer, &kid).await?;
    if let Some(alg) = key.jwk.common.key_algorithm
        && format!("{alg:?}") != format!("{:?}", header.alg)
    {
        return Err(Refusal::Invalid(format!("key `{kid}` is for {alg:?}, the token says {:?}", header.alg)));
    }
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[&issuer]);
    validation.set_audience(&[audience]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.validate_nbf = true;
    validation.leeway = LEEWAY_SECS;
    let claims = jsonwebtoken::decode::<Claims>(token, &key.key, &validation)
        .map_err(|e| Refusal::Invalid(describe(&e, audience)))?
        .claims;
    let iat = claims.iat.ok_or(Refusal::Missing("iat"))?;
    let now = jsonwebtoken::get_current_timestamp() as i64;
    if iat > now + LEEWAY_SECS as i64 {
        return Err(Refusal::Invalid("it was issued in the future (`iat`)".into()));
    }
    if claims.exp - iat > MAX_LIFETIME_SECS {
        return Err(Refusal::Lifetime(claims.exp - iat));
    }
    let jti = match claims.jti {
        Some(jti) if !jti.is_empty() && jti.len() <= 256 => jti,
        _ => hex::encode(<sha2::Sha256 as sha2::Digest>::digest(token.as_bytes())),
    };
    Ok(Identity {
        issuer,
        repository: claims.repository.ok_or(Refusal::Missing("repository"))?,
        workflow_ref: claims.job_workflow_ref.or(claims.workflow_ref).ok_or(Refusal::Missing("job_workflow_ref"))?,
        environment: claims.environment,
        jti,
        expires: claims.exp,
    })
}

fn unverified_issuer(token: &str) -> Result<String, Refusal> {
    let payload = token.split('.').nth(1).ok_or_else(|| Refusal::Malformed("no payload".into()))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|e| Refusal::Malformed(format!("the payload is not base64url: {e}")))?;
    #[derive(Deserialize)]
    struct Iss {
        iss: Option<String>,
    }
    let iss: Iss =
        serde_json::from_slice(&bytes).map_err(|e| Refusal::Malformed(format!("the payload is not JSON: {e}")))?;
    iss.iss.ok_or(Refusal::Missing("iss"))
}

fn describe(e: &jsonwebtoken::errors::Error, audience: &str) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match e.kind() {
        ErrorKind::ExpiredSignature => "it has expired (`exp`)".into(),
        ErrorKind::ImmatureSignature => "it is not valid yet (`nbf`)".into(),
        ErrorKind::InvalidAudience => format!("it is not for this registry (`aud` must contain `{audience}`)"),
        ErrorKind::InvalidIssuer => "its issuer does not match the key's".into(),
        ErrorKind::InvalidSignature => "the signature is not the issuer's".into(),
        ErrorKind::MissingRequiredClaim(c) => format!("it has no `{c}` claim"),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workflow_is_matched_by_repository_and_file_whatever_the_ref() {
        let id = Identity {
            issuer: "https://i".into(),
            repository: "acme/net".into(),
            workflow_ref: "acme/net/.github/workflows/publish.yml@refs/tags/v1.2.0".into(),
            environment: None,
            jti: "j".into(),
            expires: 0,
        };
        assert!(id.is_workflow("acme/net", "publish.yml"));
        assert!(!id.is_workflow("acme/net", "ci.yml"));
        assert!(!id.is_workflow("acme/other", "publish.yml"));
        let sneaky = Identity { workflow_ref: "acme/net/.github/workflows/publish.yml/../x.yml@r".into(), ..id };
        assert!(!sneaky.is_workflow("acme/net", "publish.yml"));
    }
}
