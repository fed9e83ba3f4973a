//! HTTP for the registry client: one connection pool per registry, timeouts,
//! bounded reads, retries with backoff for what is safe to repeat, and errors
//! that name the method, URL, status and the server's own words.

use std::io::Read;
use std::time::Duration;

use ebpkg_spec::registry_api::ApiErrors;
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_LENGTH, ETAG, IF_NONE_MATCH, RETRY_AFTER};

use crate::error::{ErrorKind, Result};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A whole request, upload included; a 96 MiB archive at 1 MiB/s fits.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
const ATTEMPTS: u32 = 3;
const MAX_BACKOFF: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Put,
    Delete,
    /// `PUT api/v1/packages/new`: never repeated, since a publish that reached the
    /// server and then lost its answer would come back as "already exists".
    Publish,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put | Method::Publish => "PUT",
            Method::Delete => "DELETE",
        }
    }

    fn idempotent(self) -> bool {
        self != Method::Publish
    }
}

pub struct Response {
    pub body: Vec<u8>,
    pub etag: Option<String>,
    pub not_modified: bool,
}

/// Told `(bytes sent, total)` while an upload runs.
pub type Progress = std::sync::Arc<dyn Fn(u64, u64) + Send + Sync>;

pub struct Client {
    inner: reqwest::blocking::Client,
    progress: Option<Progress>,
}

/// An upload body that reports how much of it was read.
struct Reporting {
    bytes: std::io::Cursor<Vec<u8>>,
    total: u64,
    progress: Progress,
}

impl Read for Reporting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.bytes.read(buf)?;
        (self.progress)(self.bytes.position(), self.total);
        Ok(n)
    }
}

impl Client {
    pub fn new(progress: Option<Progress>) -> Result<Client> {
        let inner = reqwest::blocking::Client::builder()
            .user_agent(concat!("ebpkg/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| ErrorKind::Network { method: "GET", url: String::new(), cause: e.to_string() })?;
        Ok(Client { inner, progress })
    }

    /// Sends a request, retrying idempotent ones on network errors, 5xx and 429.
    pub fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<Vec<u8>>,
        token: Option<&str>,
        if_none_match: Option<&str>,
        max: u64,
    ) -> Result<Response> {
        let attempts = if method.idempotent() { ATTEMPTS } else { 1 };
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.once(method, url, body.clone(), token, if_none_match, max) {
                Ok(response) => return Ok(response),
                Err(Failure::Retryable { error, wait }) if attempt < attempts => {
                    let wait = wait.unwrap_or_else(|| backoff(attempt)).min(MAX_BACKOFF);
                    tracing::info!("{error}; retrying in {} ms", wait.as_millis());
                    std::thread::sleep(wait);
                }
                Err(Failure::Retryable { error, .. } | Failure::Final(error)) => return Err((*error).into()),
            }
        }
    }

    fn once(
        &self,
        method: Method,
        url: &str,
        body: Option<Vec<u8>>,
        token: Option<&str>,
        if_none_match: Option<&str>,
        max: u64,
    ) -> std::result::Result<Response, Failure> {
        let mut request = match method {
            Method::Get => self.inner.get(url),
            Method::Put | Method::Publish => self.inner.put(url),
            Method::Delete => self.inner.delete(url),
        };
        if let Some(token) = token {
            request = request.header(AUTHORIZATION, token);
        }
        if let Some(etag) = if_none_match {
            request = request.header(IF_NONE_MATCH, etag);
        }
        if let Some(body) = body {
            let json = method != Method::Publish;
            request = request.header(
                reqwest::header::CONTENT_TYPE,
                if json { "application/json" } else { "application/octet-stream" },
            );
            request = match (&self.progress, method) {
                (Some(progress), Method::Publish) => {
                    let total = body.len() as u64;
                    let reader = Reporting { bytes: std::io::Cursor::new(body), total, progress: progress.clone() };
                    request.body(reqwest::blocking::Body::sized(reader, total))
                }
                _ => request.body(body),
            };
        }
        let network = |e: reqwest::Error| {
            let error = ErrorKind::Network { method: method.name(), url: url.to_owned(), cause: cause_of(&e) };
            if e.is_connect() || e.is_timeout() || e.is_request() {
                Failure::Retryable { error: Box::new(error), wait: None }
            } else {
                Failure::Final(Box::new(error))
            }
        };
        let response = request.send().map_err(network)?;
        let status = response.status();
        if status == StatusCode::NOT_MODIFIED {
            return Ok(Response { body: Vec::new(), etag: None, not_modified: true });
        }
        let etag = response.headers().get(ETAG).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let announced = response.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if let Some(len) = announced.filter(|len| status.is_success() && *len > max) {
            return Err(Failure::Final(Box::new(too_large(url, len, max))));
        }
        let mut body = Vec::new();
        response.take(max + 1).read_to_end(&mut body).map_err(|e| Failure::Retryable {
            error: Box::new(ErrorKind::Network { method: method.name(), url: url.to_owned(), cause: e.to_string() }),
            wait: None,
        })?;
        if body.len() as u64 > max {
            return Err(Failure::Final(Box::new(too_large(url, body.len() as u64, max))));
        }
        if status.is_success() {
            return Ok(Response { body, etag, not_modified: false });
        }
        let error = ErrorKind::Http {
            method: method.name(),
            url: url.to_owned(),
            status: status.as_u16(),
            detail: detail_of(&body, status),
            hint: hint_for(status, retry_after),
        };
        let retryable = status == StatusCode::TOO_MANY_REQUESTS
            || (status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED);
        let error = Box::new(error);
        Err(if retryable { Failure::Retryable { error, wait: retry_after } } else { Failure::Final(error) })
    }
}

enum Failure {
    Retryable { error: Box<ErrorKind>, wait: Option<Duration> },
    Final(Box<ErrorKind>),
}

fn too_large(url: &str, len: u64, max: u64) -> ErrorKind {
    ErrorKind::BadResponse { url: url.to_owned(), problem: format!("{len} bytes or more, over the {max} accepted") }
}

/// The innermost cause, which says what really failed (connection refused, DNS).
fn cause_of(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// The server's `{"errors":[{"detail"}]}`, else the start of the body.
fn detail_of(body: &[u8], status: StatusCode) -> String {
    if let Ok(errors) = serde_json::from_slice::<ApiErrors>(body) {
        return errors.joined();
    }
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]).trim().to_owned();
    if text.is_empty() { status.canonical_reason().unwrap_or("error").to_owned() } else { text }
}

fn hint_for(status: StatusCode, retry_after: Option<Duration>) -> String {
    match status {
        StatusCode::UNAUTHORIZED => "Log in again with `ebpkg login`".into(),
        StatusCode::FORBIDDEN => "Ask an owner of the package, or use a token with the needed scope".into(),
        StatusCode::CONFLICT => "Published versions never change: bump the version in ebpkg.toml".into(),
        StatusCode::PAYLOAD_TOO_LARGE => "Make the package smaller (see `include`/`exclude` in ebpkg.toml)".into(),
        StatusCode::TOO_MANY_REQUESTS => match retry_after {
            Some(wait) => format!("Try again in {} s", wait.as_secs()),
            None => "Try again later".into(),
        },
        s if s.is_server_error() => "The registry has a problem; try again later or tell its operator".into(),
        _ => "Check the command's arguments".into(),
    }
}

/// Exponential backoff with jitter: ~0.25 s, ~0.5 s, ~1 s, …
fn backoff(attempt: u32) -> Duration {
    let base = Duration::from_millis(250) * 2u32.saturating_pow(attempt.saturating_sub(1));
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()) % 100);
    base + Duration::from_millis(jitter)
}

/// Parses a JSON answer.
pub fn json<T: serde::de::DeserializeOwned>(url: &str, body: &[u8]) -> Result<T> {
    serde_json::from_slice(body).map_err(|e| {
        ErrorKind::BadResponse { url: url.to_owned(), problem: format!("not the JSON expected: {e}") }.into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_stays_bounded() {
        assert!(backoff(1) < Duration::from_millis(400));
        assert!(backoff(2) >= Duration::from_millis(500));
        assert!(backoff(3) >= Duration::from_secs(1));
        assert!(backoff(40) >= MAX_BACKOFF, "callers cap it");
    }

    #[test]
    fn details_come_from_the_server() {
        let body = br#"{"errors":[{"detail":"meter@1.0.0 already exists"}]}"#;
        assert_eq!(detail_of(body, StatusCode::CONFLICT), "meter@1.0.0 already exists");
        assert_eq!(detail_of(b"", StatusCode::BAD_GATEWAY), "Bad Gateway");
        assert_eq!(detail_of(b"<html>oops</html>", StatusCode::BAD_GATEWAY), "<html>oops</html>");
        assert!(hint_for(StatusCode::TOO_MANY_REQUESTS, Some(Duration::from_secs(7))).contains("7 s"));
    }
}
