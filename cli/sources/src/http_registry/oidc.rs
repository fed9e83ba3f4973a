//! The CI side of trusted publishing: getting the job's OIDC token from GitHub
//! Actions (the job needs `permissions: id-token: write`), through the same
//! bounded client registries use.

use super::client::{self, Client, Method, Request};
use crate::error::{ErrorKind, Result};

/// Largest answer read: a JWT of a few kilobytes in a small JSON object.
const MAX_BYTES: u64 = 64 * 1024;

/// The OIDC token GitHub Actions gives this job for `audience`, from
/// `ACTIONS_ID_TOKEN_REQUEST_URL` with `ACTIONS_ID_TOKEN_REQUEST_TOKEN`;
/// `cainfo`: extra CA certificates (the ones every registry gets).
pub fn github_actions_oidc_token(
    request_url: &str,
    request_token: &str,
    audience: &str,
    cainfo: Option<crate::CaInfo>,
) -> Result<String> {
    let mut url = url::Url::parse(request_url).map_err(|e| ErrorKind::BadResponse {
        url: request_url.to_owned(),
        problem: format!("ACTIONS_ID_TOKEN_REQUEST_URL is not a URL: {e}"),
    })?;
    url.query_pairs_mut().append_pair("audience", audience);
    let client = Client::new(url.as_str(), None)?.with_cainfo(cainfo);
    let mut request = Request::new(Method::Get, url.as_str(), "requesting the job's OIDC token", MAX_BYTES);
    let bearer = format!("bearer {request_token}");
    request.token = Some(&bearer);
    let response = client.send(&request)?;
    #[derive(serde::Deserialize)]
    struct Answer {
        value: String,
    }
    let answer: Answer = client::json(url.as_str(), &response.body)?;
    Ok(answer.value)
}
