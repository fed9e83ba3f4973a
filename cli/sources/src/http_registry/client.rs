//! HTTP for the registry client: one connection pool per registry, timeouts,
//! bounded reads, retries with backoff for what is safe to repeat, and errors
//! that name what was being done, the method, URL, status and the server's own
//! words, and what to do about it.

use std::hash::{BuildHasher, Hasher};
use std::io::Read;
use std::time::{Duration, Instant, SystemTime};

use ebpkg_spec::registry_api::ApiErrors;
use reqwest::StatusCode;
use reqwest::header::{
    AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, ETAG, HeaderMap, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED,
    RETRY_AFTER,
};

use crate::cainfo::{CaInfo, certificate_hint, certificate_problem};
use crate::error::{ErrorKind, Result};

/// Establishing a connection (TCP and TLS).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Waiting for an answer's headers, and for each read of its body: a server that
/// says nothing for this long is given up on (and asked again, when that is safe).
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one exchange may take in all, its answer's body included: each read
/// is bounded by [`READ_TIMEOUT`], but a server sending a byte now and then would
/// otherwise keep a command waiting forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadlines {
    /// Index files, TUF metadata, API answers: small, wanted quickly.
    pub answer: Duration,
    /// Package archives and their signatures' bundles: up to the archive limit.
    pub archive: Duration,
}

/// Sets [`Deadlines::answer`], in seconds.
pub const ANSWER_DEADLINE_ENV: &str = "EBPKG_HTTP_DEADLINE";
/// Sets [`Deadlines::archive`], in seconds.
pub const ARCHIVE_DEADLINE_ENV: &str = "EBPKG_DOWNLOAD_DEADLINE";

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines { answer: Duration::from_secs(120), archive: Duration::from_secs(600) }
    }
}

impl Deadlines {
    /// The defaults, with [`ANSWER_DEADLINE_ENV`] and [`ARCHIVE_DEADLINE_ENV`]
    /// applied (whole seconds above zero; anything else is ignored with a warning).
    pub fn from_env() -> Deadlines {
        let read = |var: &str, default: Duration| match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => match v.trim().parse::<u64>() {
                Ok(secs) if secs > 0 => Duration::from_secs(secs),
                _ => {
                    tracing::warn!("${var}={v} is not a number of seconds above 0; using {} s", default.as_secs());
                    default
                }
            },
            _ => default,
        };
        let d = Deadlines::default();
        Deadlines { answer: read(ANSWER_DEADLINE_ENV, d.answer), archive: read(ARCHIVE_DEADLINE_ENV, d.archive) }
    }
}

/// A publish gets [`READ_TIMEOUT`] plus the time its body takes at this rate.
const MIN_UPLOAD_BYTES_PER_SEC: u64 = 64 * 1024;
/// Most of an error answer read: the server's `{"errors":…}` are a few hundred bytes.
const MAX_ERROR_BODY: u64 = 64 * 1024;

/// When to ask again. Only idempotent requests are repeated, after connection
/// failures, timeouts, 5xx answers and 429s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The first backoff; it doubles with each attempt.
    pub base: Duration,
    /// The longest wait. A server asking (`Retry-After`) for longer is not asked
    /// again: the error says how long to wait instead.
    pub max_wait: Duration,
}

/// The policy of every registry request.
pub const RETRY: RetryPolicy =
    RetryPolicy { attempts: 3, base: Duration::from_millis(500), max_wait: Duration::from_secs(10) };

impl RetryPolicy {
    /// How long to wait after failed attempt `attempt` (1 for the first) before the
    /// next one; `None`: give up. `retry_after` is what the server asked for;
    /// `jitter` in `[0, 1)` spreads clients that failed together ("equal jitter":
    /// between half and all of the exponential backoff).
    pub fn wait(&self, attempt: u32, retry_after: Option<Duration>, jitter: f64) -> Option<Duration> {
        if attempt >= self.attempts {
            return None;
        }
        match retry_after {
            Some(asked) if asked > self.max_wait => None,
            Some(asked) => Some(asked),
            None => {
                let doubled = self.base.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
                let full = doubled.min(self.max_wait);
                Some(full / 2 + (full / 2).mul_f64(jitter.clamp(0.0, 1.0)))
            }
        }
    }
}

/// A number in `[0, 1)`, different on every call (std's randomly keyed hasher).
fn jitter() -> f64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// `Retry-After`: delay-seconds, or an HTTP date (a date in the past is "now").
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Put,
    /// Creates something: not repeated, like a publish.
    Post,
    Delete,
    /// `PUT api/v1/packages/new`: never repeated, since a publish that reached the
    /// server and then lost its answer would come back as "already exists".
    Publish,
    /// A `PUT` that creates something (`PUT api/v1/tokens`): not repeated
    /// either, or a lost answer would make a second one.
    PutOnce,
}

impl Method {
    pub fn name(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put | Method::Publish | Method::PutOnce => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
        }
    }

    fn idempotent(self) -> bool {
        !matches!(self, Method::Publish | Method::Post | Method::PutOnce)
    }
}

/// What makes a cached copy revalidatable: the answer's `ETag` and `Last-Modified`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Validators {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(default, rename = "last-modified", skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Validators {
    fn of(headers: &HeaderMap) -> Validators {
        let text = |name| headers.get(name).and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok());
        Validators { etag: text(ETAG).map(str::to_owned), last_modified: text(LAST_MODIFIED).map(str::to_owned) }
    }
}

/// One request.
pub struct Request<'a> {
    pub method: Method,
    pub url: &'a str,
    /// What it is for, for messages: "reading the index of `meter`".
    pub what: &'a str,
    pub body: Option<Vec<u8>>,
    pub token: Option<&'a str>,
    /// Ask for the body only if it changed since these (`If-None-Match`,
    /// `If-Modified-Since`); unchanged is [`Response::not_modified`].
    pub conditional: Option<&'a Validators>,
    /// Largest body accepted.
    pub max: u64,
    /// An archive download: given [`Deadlines::archive`] rather than
    /// [`Deadlines::answer`].
    pub archive: bool,
}

impl<'a> Request<'a> {
    pub fn new(method: Method, url: &'a str, what: &'a str, max: u64) -> Request<'a> {
        Request { method, url, what, body: None, token: None, conditional: None, max, archive: false }
    }
}

pub struct Response {
    pub body: Vec<u8>,
    pub validators: Validators,
    /// 304: the caller's copy is current (and `body` is empty).
    pub not_modified: bool,
}

/// Redirects followed at most, as reqwest's default policy.
const MAX_REDIRECTS: usize = 10;

/// Told `(bytes sent, total)` while an upload runs.
pub type Progress = std::sync::Arc<dyn Fn(u64, u64) + Send + Sync>;

/// One registry's HTTP client: a connection pool (HTTP/2 where the server offers
/// it), shared by the threads using the registry.
pub struct Client {
    /// For `http://` URLs: built without TLS roots, which an `http://` request
    /// never uses and which cost milliseconds per command to load (a directory of
    /// certificates, where `SSL_CERT_DIR` names one). It does not follow a
    /// redirect to `https://`; [`Client::once`] sends that request with `tls`.
    plain: std::sync::OnceLock<reqwest::blocking::Client>,
    /// For `https://` URLs. Both are built on first use.
    tls: std::sync::OnceLock<reqwest::blocking::Client>,
    /// The registry's URL, for the hints (`ebpkg login --registry …`).
    registry: String,
    /// The registry's origin (scheme, host, port): the only one a token is sent to.
    origin: url::Origin,
    progress: Option<Progress>,
    policy: RetryPolicy,
    deadlines: Deadlines,
    /// CA certificates trusted besides the system's, read when the TLS client is built.
    cainfo: Option<CaInfo>,
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

/// A failed attempt: worth repeating (when the request may be repeated), or not.
enum Failure {
    Retryable { error: Box<ErrorKind>, retry_after: Option<Duration> },
    Final(Box<ErrorKind>),
}

impl Client {
    /// A client for the registry at `registry` (proxies from the environment:
    /// `HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`). Nothing is built yet: the
    /// plain and TLS clients (a TLS client loads the system's roots, which
    /// costs milliseconds) are made by the first request that needs each.
    pub fn new(registry: &str, progress: Option<Progress>) -> Result<Client> {
        let origin = origin_of(registry);
        Ok(Client {
            plain: std::sync::OnceLock::new(),
            tls: std::sync::OnceLock::new(),
            registry: registry.to_owned(),
            origin,
            progress,
            policy: RETRY,
            deadlines: Deadlines::default(),
            cainfo: None,
        })
    }

    /// The same client, trusting the CA certificates of `cainfo` too.
    pub fn with_cainfo(mut self, cainfo: Option<CaInfo>) -> Client {
        self.cainfo = cainfo;
        self
    }

    /// The same client with other deadlines.
    pub fn with_deadlines(mut self, deadlines: Deadlines) -> Client {
        self.deadlines = deadlines;
        self
    }

    /// Sends a request; idempotent ones are repeated per the [`RetryPolicy`].
    /// Answers other than 2xx and 304 are errors ([`ErrorKind::Http`]).
    pub fn send(&self, request: &Request<'_>) -> Result<Response> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let failure = match self.once(request) {
                Ok(response) => return Ok(response),
                Err(Failure::Final(error)) => return Err((*error).into()),
                Err(Failure::Retryable { error, retry_after }) => (error, retry_after),
            };
            let (error, retry_after) = failure;
            let wait =
                if request.method.idempotent() { self.policy.wait(attempt, retry_after, jitter()) } else { None };
            let Some(wait) = wait else {
                return Err(match *error {
                    ErrorKind::Network { what, method, url, cause, .. } => {
                        ErrorKind::Network { what, method, url, cause, attempts: attempt }
                    }
                    other => other,
                }
                .into());
            };
            let why = match &*error {
                ErrorKind::Http { status, detail, .. } => format!("{}: {detail}", crate::error::status_text(*status)),
                ErrorKind::Network { cause, .. } => cause.clone(),
                other => other.to_string(),
            };
            let (method, url) = (request.method.name(), request.url);
            let next = format!(
                "trying again in {:.1} s (attempt {} of {})",
                wait.as_secs_f64(),
                attempt + 1,
                self.policy.attempts
            );
            // A wait one notices is said; a short one is logged.
            if wait >= Duration::from_secs(1) {
                tracing::warn!("{method} {url}: {why}; {next}");
            } else {
                tracing::info!("{method} {url}: {why}; {next}");
            }
            std::thread::sleep(wait);
        }
    }

    /// The client for `url`'s scheme, built on first use.
    fn inner(&self, url: &str) -> std::result::Result<&reqwest::blocking::Client, Failure> {
        let plain = url.starts_with("http://");
        let cell = if plain { &self.plain } else { &self.tls };
        if let Some(client) = cell.get() {
            return Ok(client);
        }
        let mut builder = reqwest::blocking::Client::builder()
            .user_agent(concat!("ebpkg/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(READ_TIMEOUT);
        let failed = |e: reqwest::Error| {
            Failure::Final(Box::new(ErrorKind::HttpClient { url: self.registry.clone(), cause: cause_of(&e) }))
        };
        if plain {
            builder = builder.tls_certs_only(std::iter::empty()).redirect(reqwest::redirect::Policy::custom(|a| {
                if a.url().scheme() == "https" || a.previous().len() >= MAX_REDIRECTS { a.stop() } else { a.follow() }
            }));
        } else if let Some(cainfo) = &self.cainfo {
            // Added to the system's roots (the platform verifier's), as cargo's `http.cainfo`.
            let ders = cainfo.certificates().map_err(|e| Failure::Final(Box::new(ErrorKind::CaInfo(e))))?;
            let certificates =
                ders.iter().map(|der| reqwest::Certificate::from_der(der)).collect::<Result<Vec<_>, _>>();
            builder = builder.tls_certs_merge(certificates.map_err(failed)?);
        }
        let built = builder.build().map_err(failed)?;
        Ok(cell.get_or_init(|| built))
    }

    fn once(&self, r: &Request<'_>) -> std::result::Result<Response, Failure> {
        let inner = self.inner(r.url)?;
        let mut request = match r.method {
            Method::Get => inner.get(r.url),
            Method::Put | Method::Publish | Method::PutOnce => inner.put(r.url),
            Method::Post => inner.post(r.url),
            Method::Delete => inner.delete(r.url),
        };
        // A token is bound to the registry's origin: a download from another host
        // (a CDN, a bucket named by the registry's `dl` template) goes without it.
        // (reqwest drops it too when a redirect leaves the origin.)
        if let Some(token) = r.token {
            if origin_of(r.url) == self.origin && self.origin.is_tuple() {
                request = request.header(AUTHORIZATION, token);
            } else {
                tracing::debug!(
                    url = r.url,
                    registry = self.registry,
                    "not sending the registry's token to another origin"
                );
            }
        }
        if let Some(v) = r.conditional {
            if let Some(etag) = &v.etag {
                request = request.header(IF_NONE_MATCH, etag);
            }
            if let Some(date) = &v.last_modified {
                request = request.header(IF_MODIFIED_SINCE, date);
            }
        }
        if let Some(body) = &r.body {
            let total = body.len() as u64;
            if r.method == Method::Publish {
                request = request
                    .header(CONTENT_TYPE, "application/octet-stream")
                    .timeout(READ_TIMEOUT + Duration::from_secs(total / MIN_UPLOAD_BYTES_PER_SEC));
                request = match &self.progress {
                    Some(progress) => {
                        let reader =
                            Reporting { bytes: std::io::Cursor::new(body.clone()), total, progress: progress.clone() };
                        request.body(reqwest::blocking::Body::sized(reader, total))
                    }
                    None => request.body(body.clone()),
                };
            } else {
                request = request.header(CONTENT_TYPE, "application/json").body(body.clone());
            }
        }
        let network = |cause: String| ErrorKind::Network {
            what: r.what.to_owned(),
            method: r.method.name(),
            url: r.url.to_owned(),
            cause,
            attempts: 1,
        };
        let started = Instant::now();
        let response = request.send().map_err(|e| {
            // A refused certificate is refused again: said at once, with what to do.
            if let Some(problem) = certificate_problem(&e) {
                return Failure::Final(Box::new(ErrorKind::Certificate {
                    what: r.what.to_owned(),
                    method: r.method.name(),
                    url: r.url.to_owned(),
                    cause: rustls::Error::InvalidCertificate(problem.clone()).to_string(),
                    hint: certificate_hint(problem, self.cainfo.as_ref()),
                }));
            }
            let error = Box::new(network(cause_of(&e)));
            // Connection refused or reset, DNS, TLS, timeouts: worth asking again.
            // (A redirect loop or a malformed URL is not.)
            if e.is_connect() || e.is_timeout() || e.is_request() || e.is_body() {
                Failure::Retryable { error, retry_after: None }
            } else {
                Failure::Final(error)
            }
        })?;
        let status = response.status();
        tracing::debug!("{} {} → {} in {} ms", r.method.name(), r.url, status.as_u16(), started.elapsed().as_millis());
        // Where the plain client stopped: a redirect to https://, sent with TLS.
        if status.is_redirection()
            && let Some(to) = response.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok())
            && let Ok(to) = response.url().join(to)
            && to.scheme() == "https"
            && r.url.starts_with("http://")
        {
            let redirected = Request { url: to.as_str(), body: r.body.clone(), ..*r };
            return self.once(&redirected);
        }
        let validators = Validators::of(response.headers());
        if status == StatusCode::NOT_MODIFIED {
            return Ok(Response { body: Vec::new(), validators, not_modified: true });
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let max = if status.is_success() { r.max } else { MAX_ERROR_BODY };
        let announced = response.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if let Some(len) = announced.filter(|len| status.is_success() && *len > max) {
            return Err(Failure::Final(Box::new(too_large(r, len, max))));
        }
        let (deadline, var) = if r.archive {
            (self.deadlines.archive, ARCHIVE_DEADLINE_ENV)
        } else {
            (self.deadlines.answer, ANSWER_DEADLINE_ENV)
        };
        let mut body = Vec::new();
        let mut reader = response.take(max + 1);
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let n = reader.read(&mut chunk).map_err(|e| Failure::Retryable {
                error: Box::new(network(format!("the answer broke off: {e}"))),
                retry_after: None,
            })?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
            // Not asked again: a server this slow would only be as slow again.
            if started.elapsed() > deadline {
                return Err(Failure::Final(Box::new(ErrorKind::TooSlow {
                    what: r.what.to_owned(),
                    method: r.method.name(),
                    url: r.url.to_owned(),
                    secs: deadline.as_secs(),
                    var,
                })));
            }
        }
        if body.len() as u64 > max {
            if status.is_success() {
                return Err(Failure::Final(Box::new(too_large(r, body.len() as u64, max))));
            }
            body.truncate(max as usize);
        }
        if status.is_success() {
            return Ok(Response { body, validators, not_modified: false });
        }
        let detail = detail_of(&body, status);
        let error = Box::new(ErrorKind::Http {
            what: r.what.to_owned(),
            method: r.method.name(),
            url: r.url.to_owned(),
            status: status.as_u16(),
            hint: hint(status, &self.registry, retry_after, &detail),
            detail,
            retry_after: retry_after.map(|d| d.as_secs()),
        });
        let retryable = status == StatusCode::TOO_MANY_REQUESTS
            || (status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED);
        Err(if retryable { Failure::Retryable { error, retry_after } } else { Failure::Final(error) })
    }
}

/// The origin of a URL; an opaque one (never equal to another) when it does not parse.
fn origin_of(url: &str) -> url::Origin {
    url::Url::parse(url).map(|u| u.origin()).unwrap_or_else(|_| url::Origin::new_opaque())
}

fn too_large(r: &Request<'_>, len: u64, max: u64) -> ErrorKind {
    ErrorKind::BadResponse {
        url: r.url.to_owned(),
        problem: format!("{} needs at most {max} bytes, and the answer has {len} or more; nothing was kept", r.what),
    }
}

/// What really failed, in a few words: the innermost cause (connection refused,
/// DNS, a certificate), since reqwest's own message is "error sending request".
fn cause_of(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    let innermost = cause.to_string();
    if e.is_timeout() {
        format!("no answer in time ({innermost})")
    } else if e.is_connect() {
        format!("cannot connect ({innermost})")
    } else {
        innermost
    }
}

/// The server's `{"errors":[{"detail"}]}`, else the start of the body, else the
/// status's name.
fn detail_of(body: &[u8], status: StatusCode) -> String {
    if let Ok(errors) = serde_json::from_slice::<ApiErrors>(body) {
        let joined = errors.joined();
        if !joined.trim().is_empty() {
            return joined;
        }
    }
    let text: String =
        String::from_utf8_lossy(&body[..body.len().min(300)]).split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() { status.canonical_reason().unwrap_or("no details").to_owned() } else { text }
}

/// What to do about an error answer, unless the server's detail already says it.
fn hint(status: StatusCode, registry: &str, retry_after: Option<Duration>, detail: &str) -> Option<String> {
    let said = |words: &[&str]| words.iter().any(|w| detail.contains(w));
    let hint = match status.as_u16() {
        401 if !said(&["ebpkg login"]) => {
            format!("The token is missing, wrong, expired or revoked: log in with `ebpkg login --registry {registry}`")
        }
        403 if !said(&["ebpkg owner add", "scope"]) => {
            "Ask an owner of the package to add you (`ebpkg owner add`), or use a token whose scopes and \
             packages allow this"
                .to_owned()
        }
        409 if !said(&["bump the version", "another name"]) => {
            "Published versions never change, yanked ones neither: bump the version in ebpkg.toml".to_owned()
        }
        413 => "The registry accepts no package this large: leave out what the package does not need".to_owned(),
        429 if !said(&["try again in", "retry in"]) => match retry_after {
            Some(wait) => format!("Wait {} s and try again", wait.as_secs().max(1)),
            None => "Wait a minute and try again".to_owned(),
        },
        500..=599 => {
            "The registry server has a problem, not this request: try again later, and tell its operator if it \
             lasts"
                .to_owned()
        }
        _ => return None,
    };
    Some(hint)
}

/// Parses a JSON answer.
pub fn json<T: serde::de::DeserializeOwned>(url: &str, body: &[u8]) -> Result<T> {
    serde_json::from_slice(body).map_err(|e| {
        ErrorKind::BadResponse { url: url.to_owned(), problem: format!("not the JSON expected: {e}") }.into()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// An `http://` answer redirecting to `https://` is followed with TLS (the
    /// plain client, built without TLS roots, stops there): here the TLS client
    /// is refused a connection, and says so for the `https://` URL.
    #[test]
    fn a_redirect_to_https_is_followed_with_tls() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let peer = ebpkg_registry_testing::HttpPeer::start(move |_, stream| {
            let location = format!("https://127.0.0.1:{closed}/index/1/c");
            let _ = ebpkg_registry_testing::respond(stream, "302 Found", &[("Location", &location)], b"");
        })
        .unwrap();
        let url = format!("{}index/1/c", peer.url());
        let mut client = Client::new(&url, None).unwrap();
        client.policy = RetryPolicy { attempts: 1, base: Duration::from_millis(1), max_wait: Duration::from_millis(1) };
        let err = client.send(&Request::new(Method::Get, &url, "reading", 1024)).err().unwrap().to_string();
        assert!(err.contains(&format!("https://127.0.0.1:{closed}/index/1/c")), "{err}");
        assert!(client.plain.get().is_some() && client.tls.get().is_some());
    }

    /// A CA (openssl's, as a company's would be made) and a certificate it
    /// issued for 127.0.0.1, in `dir`: `<name>-ca.pem`, `<name>.pem`, `<name>.key`.
    fn issue(dir: &std::path::Path, name: &str) {
        let run = |args: &[&str]| {
            let out = std::process::Command::new("openssl").args(args).current_dir(dir).output().unwrap();
            assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        let (ca, ca_key) = (format!("{name}-ca.pem"), format!("{name}-ca.key"));
        let (cert, key, csr, ext) =
            (format!("{name}.pem"), format!("{name}.key"), format!("{name}.csr"), format!("{name}.ext"));
        std::fs::write(dir.join(&ext), "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n").unwrap();
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
        run(&[&["req", "-x509"][..], &ec, &["-keyout", &ca_key, "-out", &ca, "-days", "2", "-subj", "/CN=Test CA"]]
            .concat());
        run(&[&["req", "-new"][..], &ec, &["-keyout", &key, "-out", &csr, "-subj", "/CN=127.0.0.1"]].concat());
        run(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &cert,
            "-days",
            "2",
            "-extfile",
            &ext,
        ]);
    }

    /// An HTTPS server on 127.0.0.1 with `dir`'s `<name>` certificate, answering
    /// `ok` to every request (while the peer lives); counts the connections it accepted.
    fn tls_server(
        dir: &std::path::Path,
        name: &str,
    ) -> (ebpkg_registry_testing::HttpPeer, String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use rustls::pki_types::pem::PemObject;
        let certs: Vec<_> = rustls::pki_types::CertificateDer::pem_file_iter(dir.join(format!("{name}.pem")))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_file(dir.join(format!("{name}.key"))).unwrap();
        let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = std::sync::Arc::new(
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(certs, key)
                .unwrap(),
        );
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        // A refused handshake ends the connection at the request's first read.
        let tls = move |stream: std::net::TcpStream| {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Some(rustls::StreamOwned::new(rustls::ServerConnection::new(config.clone()).unwrap(), stream))
        };
        let peer = ebpkg_registry_testing::HttpPeer::start_over(tls, |_, stream| {
            let _ = ebpkg_registry_testing::respond(stream, "200 OK", &[("Connection", "close")], b"ok");
        })
        .unwrap();
        let url = format!("https://{}/index/config.json", peer.addr());
        (peer, url, accepted)
    }

    /// A certificate from an unknown CA is refused once (the retry policy
    /// would ask three times), with the CA file setting as the hint; the CA's
    /// certificate given as the setting makes the same server trusted, added
    /// to the system's roots; another CA's leaves it refused, naming that file.
    #[test]
    fn a_private_ca_is_trusted_only_when_given_and_a_refusal_is_final() {
        let dir = tempfile::tempdir().unwrap();
        issue(dir.path(), "corp");
        issue(dir.path(), "other");
        let (_peer, url, accepted) = tls_server(dir.path(), "corp");
        let get = || Request::new(Method::Get, &url, "reading the registry's configuration", 1024);

        let err = Client::new(&url, None).unwrap().send(&get()).err().unwrap();
        assert!(matches!(err.kind(), ErrorKind::Certificate { .. }), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("UnknownIssuer") && text.contains("EBPKG_HTTP_CAINFO=/path/ca.pem"), "{text}");
        assert!(!text.contains("HTTPS_PROXY") && !text.contains("times"), "{text}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1, "asked once: {text}");

        let given = |name: &str| {
            Some(CaInfo { path: dir.path().join(format!("{name}-ca.pem")), setting: crate::CaInfoSetting::Env })
        };
        let trusted = Client::new(&url, None).unwrap().with_cainfo(given("corp"));
        assert_eq!(trusted.send(&get()).unwrap().body, b"ok");

        let other = Client::new(&url, None).unwrap().with_cainfo(given("other"));
        let text = other.send(&get()).err().unwrap().to_string();
        assert!(
            text.contains(&format!("{}-ca.pem ($EBPKG_HTTP_CAINFO)", dir.path().join("other").display())),
            "{text}"
        );
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 3);

        // A missing CA file: nothing sent, the file and the setting named.
        let missing = Client::new(&url, None).unwrap().with_cainfo(given("missing"));
        let err = missing.send(&get()).err().unwrap();
        assert!(matches!(err.kind(), ErrorKind::CaInfo(_)), "{err:?}");
        assert!(err.to_string().contains("missing-ca.pem ($EBPKG_HTTP_CAINFO) does not exist"), "{err}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[test]
    fn backoff_doubles_with_jitter_and_stays_bounded() {
        let p = RETRY;
        // Equal jitter: between half and all of base·2^(attempt-1).
        assert_eq!(p.wait(1, None, 0.0), Some(Duration::from_millis(250)));
        assert_eq!(p.wait(1, None, 0.999_999), Some(Duration::from_millis(500) - Duration::from_nanos(250)));
        assert_eq!(p.wait(2, None, 0.0), Some(Duration::from_millis(500)));
        let long = RetryPolicy { attempts: 40, ..p };
        assert_eq!(long.wait(30, None, 0.5), Some(p.max_wait / 2 + p.max_wait / 4), "capped");
        assert_eq!(p.wait(3, None, 0.0), None, "three attempts in all");
        assert_eq!(p.wait(3, Some(Duration::from_secs(1)), 0.0), None);
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let p = RETRY;
        assert_eq!(p.wait(1, Some(Duration::from_secs(3)), 0.7), Some(Duration::from_secs(3)), "no jitter added");
        assert_eq!(p.wait(1, Some(Duration::ZERO), 0.7), Some(Duration::ZERO));
        assert_eq!(p.wait(1, Some(p.max_wait + Duration::from_secs(1)), 0.0), None, "longer: give up, say it");
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480); // Wed, 21 Oct 2015 07:28:00 GMT
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after(" 5 ", now), Some(Duration::from_secs(5)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now), Some(Duration::from_secs(30)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), Some(Duration::ZERO), "past: now");
        assert_eq!(parse_retry_after("99999999999999999999999", now), Some(Duration::from_secs(u64::MAX)));
        for bad in ["", "-1", "1.5", "soon", "Wed, 32 Oct 2015 07:28:30 GMT"] {
            assert_eq!(parse_retry_after(bad, now), None, "`{bad}`");
        }
    }

    #[test]
    fn jitter_is_in_range_and_varies() {
        let all: Vec<f64> = (0..64).map(|_| jitter()).collect();
        assert!(all.iter().all(|j| (0.0..1.0).contains(j)));
        assert!(all.windows(2).any(|w| w[0] != w[1]));
    }

    #[test]
    fn details_come_from_the_server_and_hints_do_not_repeat_them() {
        let body = br#"{"errors":[{"detail":"meter@1.0.0 already exists; bump the version in ebpkg.toml"}]}"#;
        let detail = detail_of(body, StatusCode::CONFLICT);
        assert_eq!(detail, "meter@1.0.0 already exists; bump the version in ebpkg.toml");
        assert_eq!(hint(StatusCode::CONFLICT, "https://r/", None, &detail), None, "said once");
        assert!(hint(StatusCode::CONFLICT, "https://r/", None, "Conflict").unwrap().contains("bump the version"));
        assert_eq!(detail_of(b"", StatusCode::BAD_GATEWAY), "Bad Gateway");
        assert_eq!(detail_of(b"<html>\n oops\n</html>", StatusCode::BAD_GATEWAY), "<html> oops </html>");
        assert_eq!(detail_of(br#"{"errors":[]}"#, StatusCode::FORBIDDEN), "{\"errors\":[]}");
        let login = hint(StatusCode::UNAUTHORIZED, "https://r.example/", None, "no token").unwrap();
        assert!(login.contains("ebpkg login --registry https://r.example/"), "{login}");
        assert!(hint(StatusCode::TOO_MANY_REQUESTS, "", Some(Duration::from_secs(7)), "").unwrap().contains("7 s"));
        assert_eq!(hint(StatusCode::TOO_MANY_REQUESTS, "", Some(Duration::from_secs(7)), "try again in 7 s"), None);
        assert!(hint(StatusCode::SERVICE_UNAVAILABLE, "", None, "").unwrap().contains("try again later"));
        assert_eq!(hint(StatusCode::NOT_FOUND, "", None, ""), None);
        assert_eq!(crate::error::status_text(409), "409 Conflict");
        assert_eq!(crate::error::status_text(599), "599");
    }
}
