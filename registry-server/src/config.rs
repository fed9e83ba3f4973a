//! Settings: command-line flags over environment variables (`EBPKG_REGISTRY_*`,
//! which clap reads into the same flags) over `--config FILE.toml` over defaults.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::http::HeaderValue;
use clap::Args;
use ebpkg_spec::{RegistryId, RegistryKind};
use serde::Deserialize;
use url::Url;

use crate::error::ConfigError;

/// What the command line (and the environment) may set. Everything is optional
/// here so the file can fill what they leave out.
#[derive(Debug, Default, Clone, Args)]
pub struct ConfigArgs {
    /// A TOML file with these settings (kebab-case keys).
    #[arg(long, env = "EBPKG_REGISTRY_CONFIG", value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// PostgreSQL URL, e.g. postgres://ebpkg@db/ebpkg.
    // Its value may hold a password: --help must not print it.
    #[arg(long, env = "EBPKG_REGISTRY_DATABASE_URL", value_name = "URL", global = true, hide_env_values = true)]
    pub database_url: Option<String>,
    /// Where to listen [default: 127.0.0.1:8080].
    #[arg(long, env = "EBPKG_REGISTRY_LISTEN", value_name = "ADDR:PORT", global = true)]
    pub listen: Option<SocketAddr>,
    /// The blob store: file:///dir or s3://bucket/prefix (credentials and endpoint
    /// from the usual AWS_* environment).
    #[arg(long, env = "EBPKG_REGISTRY_STORAGE", value_name = "URL", global = true, hide_env_values = true)]
    pub storage: Option<String>,
    /// The URL clients reach this registry at [default: http://LISTEN/].
    #[arg(long, env = "EBPKG_REGISTRY_PUBLIC_URL", value_name = "URL", global = true)]
    pub public_url: Option<String>,
    /// Download URL template for config.json when the blob store (or a CDN in front
    /// of it) serves archives itself; markers {name} {version} {cksum} {prefix}.
    /// Archives are stored at `archives/{cksum}.tar.gz`.
    #[arg(long, env = "EBPKG_REGISTRY_DL_TEMPLATE", value_name = "TEMPLATE", global = true)]
    pub dl_template: Option<String>,
    /// Largest archive accepted, in bytes [default: 32 MiB].
    #[arg(long, env = "EBPKG_REGISTRY_MAX_ARCHIVE_BYTES", value_name = "BYTES", global = true)]
    pub max_archive_bytes: Option<u64>,
    /// Seconds a request may take [default: 60].
    #[arg(long, env = "EBPKG_REGISTRY_REQUEST_TIMEOUT", value_name = "SECS", global = true)]
    pub request_timeout: Option<u64>,
    /// MiB of recently downloaded archives kept in memory (0: none) [default: 256].
    #[arg(long, env = "EBPKG_REGISTRY_ARCHIVE_CACHE_MIB", value_name = "MIB", global = true)]
    pub archive_cache_mib: Option<u64>,
    /// Database connections per replica [default: 16].
    #[arg(long, env = "EBPKG_REGISTRY_DB_POOL", value_name = "N", global = true)]
    pub db_pool: Option<u32>,
    /// API requests per minute per client IP (0: no limit) [default: 600].
    #[arg(long, env = "EBPKG_REGISTRY_IP_RATE", value_name = "N", global = true)]
    pub ip_rate_per_minute: Option<u32>,
    /// New packages a user may publish at once, then one per --new-package-interval [default: 30].
    /// Takes effect at once, also for users who spent the old bucket.
    #[arg(long, env = "EBPKG_REGISTRY_NEW_PACKAGE_BURST", value_name = "N", global = true)]
    pub new_package_burst: Option<u32>,
    /// Seconds per new package after the burst [default: 600].
    #[arg(long, env = "EBPKG_REGISTRY_NEW_PACKAGE_INTERVAL", value_name = "SECS", global = true)]
    pub new_package_interval: Option<u64>,
    /// New versions a user may publish at once, then one per --new-version-interval [default: 30].
    #[arg(long, env = "EBPKG_REGISTRY_NEW_VERSION_BURST", value_name = "N", global = true)]
    pub new_version_burst: Option<u32>,
    /// Seconds per new version after the burst [default: 60].
    #[arg(long, env = "EBPKG_REGISTRY_NEW_VERSION_INTERVAL", value_name = "SECS", global = true)]
    pub new_version_interval: Option<u64>,
    /// A load balancer or proxy in front (repeatable): for requests from it, the
    /// client is the last address in X-Forwarded-For that is not a trusted proxy.
    #[arg(
        long = "trusted-proxy",
        env = "EBPKG_REGISTRY_TRUSTED_PROXIES",
        value_delimiter = ',',
        value_name = "IP",
        global = true
    )]
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// Reading the index, downloading and searching need a token too (a private
    /// registry); `index/config.json` says so, as cargo's `auth-required`.
    #[arg(long, env = "EBPKG_REGISTRY_AUTH_REQUIRED", global = true)]
    pub auth_required: bool,
    /// Accept publishes without a signature (refused by default: every version
    /// is then signed with a key one of its owners registered).
    #[arg(long, env = "EBPKG_REGISTRY_ALLOW_UNSIGNED", global = true)]
    pub allow_unsigned: bool,
    /// The online TUF key (`ebpkg-registry tuf init` made it): every publish and
    /// yank re-signs the metadata with it.
    #[arg(long, env = "EBPKG_REGISTRY_TUF_ONLINE_KEY", value_name = "FILE", global = true)]
    pub tuf_online_key: Option<PathBuf>,
    /// Logs as JSON lines.
    #[arg(long, env = "EBPKG_REGISTRY_LOG_JSON", global = true)]
    pub log_json: bool,
    /// An OIDC issuer whose tokens pipelines may exchange for short-lived publish
    /// tokens (trusted publishing; repeatable), e.g.
    /// https://token.actions.githubusercontent.com. https only (http for loopback).
    #[arg(
        long = "trusted-issuer",
        env = "EBPKG_REGISTRY_TRUSTED_ISSUERS",
        value_delimiter = ',',
        value_name = "URL",
        global = true
    )]
    pub trusted_issuers: Vec<String>,
    /// The audience those tokens must be for [default: the public URL, without
    /// its trailing `/`].
    #[arg(long, env = "EBPKG_REGISTRY_TRUSTED_AUDIENCE", value_name = "AUD", global = true)]
    pub trusted_audience: Option<String>,
}

/// The file's form of the same settings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ConfigFile {
    database_url: Option<String>,
    listen: Option<SocketAddr>,
    storage: Option<String>,
    public_url: Option<String>,
    dl_template: Option<String>,
    max_archive_bytes: Option<u64>,
    request_timeout: Option<u64>,
    db_pool: Option<u32>,
    archive_cache_mib: Option<u64>,
    ip_rate_per_minute: Option<u32>,
    new_package_burst: Option<u32>,
    new_package_interval: Option<u64>,
    new_version_burst: Option<u32>,
    new_version_interval: Option<u64>,
    #[serde(default)]
    trusted_proxies: Vec<std::net::IpAddr>,
    auth_required: Option<bool>,
    allow_unsigned: Option<bool>,
    tuf_online_key: Option<PathBuf>,
    log_json: Option<bool>,
    #[serde(default)]
    trusted_issuers: Vec<String>,
    trusted_audience: Option<String>,
}

/// A token bucket: `burst` at once, then one per `interval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub burst: u32,
    pub interval: Duration,
}

/// The settings the server runs with.
#[derive(Clone)]
pub struct Config {
    pub database_url: String,
    pub listen: SocketAddr,
    pub storage: StorageUrl,
    /// Ends in `/`.
    pub public_url: RegistryId,
    pub dl_template: Option<String>,
    pub max_archive_bytes: u64,
    pub request_timeout: Duration,
    pub db_pool: u32,
    pub archive_cache_mib: u64,
    pub ip_rate_per_minute: u32,
    pub new_package: Bucket,
    pub new_version: Bucket,
    pub trusted_proxies: Vec<std::net::IpAddr>,
    pub auth_required: bool,
    pub allow_unsigned: bool,
    pub tuf_online_key: Option<PathBuf>,
    pub log_json: bool,
    /// Trusted publishing: the OIDC issuers trusted, and the audience their
    /// tokens must name.
    pub trusted_issuers: Vec<String>,
    pub trusted_audience: String,
}

/// Where archives are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageUrl {
    Dir(PathBuf),
    /// `s3://bucket/prefix?key=value&…`: object_store's S3 settings
    /// (`endpoint`, `region`, `allow_http`, `access_key_id`, …) over the AWS_*
    /// environment.
    S3 {
        bucket: String,
        prefix: String,
        options: Vec<(String, String)>,
    },
}

impl StorageUrl {
    pub fn parse(text: &str) -> Result<StorageUrl, ConfigError> {
        let bad = |why: &str| ConfigError::Invalid { setting: "storage", value: text.into(), why: why.into() };
        let url = Url::parse(text).map_err(|e| bad(&format!("{e}; write file:///dir or s3://bucket/prefix")))?;
        match url.scheme() {
            "file" => {
                if url.host_str().is_some_and(|h| !h.is_empty() && h != "localhost") {
                    return Err(bad("a file:// URL must name a local directory (file:///dir)"));
                }
                let path = url.to_file_path().map_err(|()| bad("not a local directory"))?;
                Ok(StorageUrl::Dir(path))
            }
            "s3" => {
                let bucket = url.host_str().filter(|b| !b.is_empty()).ok_or_else(|| bad("s3:// needs a bucket"))?;
                let options = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
                Ok(StorageUrl::S3 { bucket: bucket.into(), prefix: url.path().trim_matches('/').into(), options })
            }
            other => Err(bad(&format!("the scheme `{other}` is not supported; use file:// or s3://"))),
        }
    }
}

impl fmt::Display for StorageUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageUrl::Dir(p) => write!(f, "file://{}", p.display()),
            StorageUrl::S3 { bucket, prefix, options } => {
                write!(f, "s3://{bucket}/{prefix}")?;
                for (i, (k, v)) in options.iter().enumerate() {
                    let secret = k.contains("secret") || k.contains("token");
                    write!(f, "{}{k}={}", if i == 0 { '?' } else { '&' }, if secret { "***" } else { v })?;
                }
                Ok(())
            }
        }
    }
}

const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Bounded like every file ebpkg reads.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// What the administration commands (migrate, user, token, tuf) need: the
/// database and, to re-sign, the online key; not a blob store or an address.
pub struct AdminConfig {
    pub database_url: String,
    pub tuf_online_key: Option<PathBuf>,
}

impl AdminConfig {
    pub fn load(args: &ConfigArgs) -> Result<AdminConfig, ConfigError> {
        let file = config_file(args)?;
        Ok(AdminConfig {
            database_url: database_url(args, &file)?,
            tuf_online_key: args.tuf_online_key.clone().or(file.tuf_online_key),
        })
    }

    pub fn masked_database_url(&self) -> String {
        mask_password(&self.database_url)
    }
}

fn config_file(args: &ConfigArgs) -> Result<ConfigFile, ConfigError> {
    match &args.config {
        Some(path) => read_file(path),
        None => Ok(ConfigFile::default()),
    }
}

fn listen(args: &ConfigArgs, file: &ConfigFile) -> Result<SocketAddr, ConfigError> {
    match args.listen.or(file.listen) {
        Some(a) => Ok(a),
        None => DEFAULT_LISTEN.parse().map_err(|_| ConfigError::Missing { setting: "listen", how: "--listen" }),
    }
}

fn public_url_of(args: &ConfigArgs, file: &ConfigFile, listen: SocketAddr) -> Result<RegistryId, ConfigError> {
    parse_public_url(
        &args.public_url.clone().or(file.public_url.clone()).unwrap_or_else(|| format!("http://{listen}/")),
    )
}

/// The URL clients reach the registry at, as `serve` announces it with these
/// settings (flag, environment, then the file; else `http://LISTEN/`).
pub fn public_url(args: &ConfigArgs) -> Result<RegistryId, ConfigError> {
    let file = config_file(args)?;
    public_url_of(args, &file, listen(args, &file)?)
}

fn database_url(args: &ConfigArgs, file: &ConfigFile) -> Result<String, ConfigError> {
    args.database_url.clone().or(file.database_url.clone()).ok_or(ConfigError::Missing {
        setting: "database-url",
        how: "--database-url, EBPKG_REGISTRY_DATABASE_URL or `database-url` in --config",
    })
}

impl Config {
    /// Merges flags and environment (`args`) over the file they name over defaults.
    pub fn load(args: &ConfigArgs) -> Result<Config, ConfigError> {
        let file = config_file(args)?;
        let database_url = database_url(args, &file)?;
        let listen = listen(args, &file)?;
        let storage = args.storage.clone().or(file.storage.clone()).ok_or(ConfigError::Missing {
            setting: "storage",
            how: "--storage file:///DIR (or s3://bucket/prefix), EBPKG_REGISTRY_STORAGE or `storage` in --config",
        })?;
        let storage = StorageUrl::parse(&storage)?;
        let public_url = public_url_of(args, &file, listen)?;
        let new_package = Bucket {
            // A team's first import of its packages fits (the first-party set is 8);
            // a token spraying names is still stopped within minutes.
            burst: args.new_package_burst.or(file.new_package_burst).unwrap_or(30),
            interval: Duration::from_secs(args.new_package_interval.or(file.new_package_interval).unwrap_or(600)),
        };
        let new_version = Bucket {
            burst: args.new_version_burst.or(file.new_version_burst).unwrap_or(30),
            interval: Duration::from_secs(args.new_version_interval.or(file.new_version_interval).unwrap_or(60)),
        };
        Ok(Config {
            database_url,
            listen,
            storage,
            dl_template: args.dl_template.clone().or(file.dl_template),
            max_archive_bytes: args.max_archive_bytes.or(file.max_archive_bytes).unwrap_or(32 * 1024 * 1024),
            request_timeout: Duration::from_secs(args.request_timeout.or(file.request_timeout).unwrap_or(60)),
            db_pool: args.db_pool.or(file.db_pool).unwrap_or(16).max(1),
            archive_cache_mib: args.archive_cache_mib.or(file.archive_cache_mib).unwrap_or(256),
            ip_rate_per_minute: args.ip_rate_per_minute.or(file.ip_rate_per_minute).unwrap_or(600),
            new_package,
            new_version,
            trusted_proxies: if args.trusted_proxies.is_empty() {
                file.trusted_proxies
            } else {
                args.trusted_proxies.clone()
            },
            auth_required: args.auth_required || file.auth_required.unwrap_or(false),
            allow_unsigned: args.allow_unsigned || file.allow_unsigned.unwrap_or(false),
            tuf_online_key: args.tuf_online_key.clone().or(file.tuf_online_key),
            log_json: args.log_json || file.log_json.unwrap_or(false),
            trusted_issuers: if args.trusted_issuers.is_empty() {
                &file.trusted_issuers
            } else {
                &args.trusted_issuers
            }
            .iter()
            .map(|i| parse_issuer(i))
            .collect::<Result<_, _>>()?,
            trusted_audience: args
                .trusted_audience
                .clone()
                .or(file.trusted_audience)
                .unwrap_or_else(|| public_url.as_str().trim_end_matches('/').to_owned()),
            public_url,
        })
    }

    /// The database URL with its password replaced, for logs.
    pub fn masked_database_url(&self) -> String {
        mask_password(&self.database_url)
    }
}

fn read_file(path: &Path) -> Result<ConfigFile, ConfigError> {
    let text = ebpkg_fs::read_text(path, MAX_CONFIG_BYTES)
        .map_err(|e| ConfigError::File { path: path.to_owned(), why: e.to_string() })?;
    toml::from_str(&text).map_err(|e: toml::de::Error| {
        let mut why = e.to_string().trim_end().to_owned();
        if let Some(key) = nearest_key(e.message()) {
            why.push_str(&format!("\ndid you mean `{key}`?"));
        }
        ConfigError::File { path: path.to_owned(), why }
    })
}

/// For a key the file may not have, the one it most likely meant: serde's
/// message names the key and the keys there are ("unknown field `a`, expected
/// one of `b`, `c`").
fn nearest_key(message: &str) -> Option<&str> {
    let (unknown, expected) = message.strip_prefix("unknown field `")?.split_once('`')?;
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|key| (strsim::damerau_levenshtein(unknown, key), key))
        .filter(|(distance, key)| *distance <= (unknown.len() / 3).max(2) || key.starts_with(unknown))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, key)| key)
}

/// An OIDC issuer: https (tokens and keys must not be readable or forgeable on
/// the way), or http on a loopback address (a test's own issuer). Kept exactly
/// as written: it is compared with the tokens' `iss` byte for byte.
fn parse_issuer(text: &str) -> Result<String, ConfigError> {
    let bad = |why: &str| ConfigError::Invalid { setting: "trusted-issuer", value: text.into(), why: why.into() };
    let url = Url::parse(text).map_err(|e| bad(&e.to_string()))?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    };
    if !(url.scheme() == "https" || (url.scheme() == "http" && loopback)) {
        return Err(bad("an issuer must be https:// (http:// only on a loopback address)"));
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(bad("an issuer URL has no credentials, query or fragment"));
    }
    Ok(text.to_owned())
}

/// The registry's own URL, by the rules of every registry URL (`RegistryId`): what
/// clients will write in their lockfiles.
fn parse_public_url(text: &str) -> Result<RegistryId, ConfigError> {
    let bad = |why: String| ConfigError::Invalid { setting: "public-url", value: text.into(), why };
    let url = RegistryId::parse_url(text).map_err(|e| bad(e.to_string()))?;
    if url.kind() != RegistryKind::Http {
        return Err(bad("a registry server is reached at http(s)://host[:port][/path]".into()));
    }
    Ok(url)
}

/// What a configuration tells clients: the index configuration and how long
/// answers may be kept. Here, below every handler, because the API, the catalog
/// and the TUF signer all say it.
impl Config {
    /// The bytes of `index/config.json`: a TUF target, so the same configuration is
    /// always the same bytes.
    pub fn index_config_bytes(&self) -> Vec<u8> {
        let public = self.public_url.as_str().trim_end_matches('/');
        let index = ebpkg_spec::registry_api::IndexConfig {
            dl: self.dl_template.clone().unwrap_or_else(|| format!("{public}/api/v1/packages")),
            api: Some(public.to_owned()),
            auth_required: self.auth_required,
            require_signatures: !self.allow_unsigned,
            trusted_publishing_audience: (!self.trusted_issuers.is_empty()).then(|| self.trusted_audience.clone()),
        };
        // A struct of strings and booleans always serializes.
        serde_json::to_vec(&index).unwrap_or_default()
    }

    /// How long clients and caches may keep an index file without revalidating.
    /// A private registry's responses are for the token holder only: a shared
    /// cache in front must not keep them.
    pub fn index_cache_control(&self) -> HeaderValue {
        HeaderValue::from_static(if self.auth_required { "private, max-age=600" } else { "public, max-age=600" })
    }

    /// For what never changes once published (archives, bundles, static files).
    pub fn immutable_cache_control(&self) -> HeaderValue {
        HeaderValue::from_static(if self.auth_required {
            "private, max-age=31536000, immutable"
        } else {
            "public, max-age=31536000, immutable"
        })
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`; a password in
/// the query (`?password=`) is masked too.
pub fn mask_password(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            let pairs: Vec<(String, String)> = u
                .query_pairs()
                .map(|(k, v)| {
                    let v = if k.eq_ignore_ascii_case("password") { "***".into() } else { v.into_owned() };
                    (k.into_owned(), v)
                })
                .collect();
            if !pairs.is_empty() {
                u.query_pairs_mut().clear().extend_pairs(pairs);
            }
            u.to_string()
        }
        Err(_) => "(not a URL)".into(),
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "database-url = {}", self.masked_database_url())?;
        writeln!(f, "listen = {}", self.listen)?;
        writeln!(f, "storage = {}", self.storage)?;
        writeln!(f, "public-url = {}", self.public_url)?;
        if let Some(dl) = &self.dl_template {
            writeln!(f, "dl-template = {dl}")?;
        }
        writeln!(f, "max-archive-bytes = {}", self.max_archive_bytes)?;
        writeln!(f, "request-timeout = {}s", self.request_timeout.as_secs())?;
        writeln!(f, "db-pool = {}", self.db_pool)?;
        writeln!(f, "archive-cache-mib = {}", self.archive_cache_mib)?;
        writeln!(f, "ip-rate-per-minute = {}", self.ip_rate_per_minute)?;
        writeln!(f, "auth-required = {}", self.auth_required)?;
        writeln!(f, "allow-unsigned = {}", self.allow_unsigned)?;
        if let Some(key) = &self.tuf_online_key {
            writeln!(f, "tuf-online-key = {}", key.display())?;
        }
        if !self.trusted_proxies.is_empty() {
            let list: Vec<String> = self.trusted_proxies.iter().map(ToString::to_string).collect();
            writeln!(f, "trusted-proxies = {}", list.join(", "))?;
        }
        writeln!(
            f,
            "new packages: burst {} then 1 per {}s; new versions: burst {} then 1 per {}s",
            self.new_package.burst,
            self.new_package.interval.as_secs(),
            self.new_version.burst,
            self.new_version.interval.as_secs()
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn secrets_are_masked() {
        assert_eq!(mask_password("postgres://u:hunter2@db/x"), "postgres://u:***@db/x");
        assert_eq!(
            mask_password("postgres://u@db/x?password=hunter2&sslmode=require"),
            "postgres://u@db/x?password=***&sslmode=require"
        );
        assert_eq!(mask_password("postgres:///x?host=/run/pg"), "postgres:///x?host=%2Frun%2Fpg");
    }

    #[test]
    fn issuers_are_https_or_loopback_http_and_kept_as_written() {
        assert_eq!(
            parse_issuer("https://token.actions.githubusercontent.com").ok().as_deref(),
            Some("https://token.actions.githubusercontent.com")
        );
        assert!(parse_issuer("http://127.0.0.1:8123").is_ok());
        assert!(parse_issuer("http://[::1]:8123").is_ok());
        assert!(parse_issuer("http://localhost:8123").is_ok());
        for bad in ["http://issuer.example", "ftp://x", "https://u:p@x", "https://x/?q=1", "not a url"] {
            assert!(parse_issuer(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn storage_urls() {
        assert_eq!(StorageUrl::parse("file:///srv/blobs").unwrap(), StorageUrl::Dir("/srv/blobs".into()));
        assert_eq!(
            StorageUrl::parse("s3://bucket/a/b/").unwrap(),
            StorageUrl::S3 { bucket: "bucket".into(), prefix: "a/b".into(), options: vec![] }
        );
        let with = StorageUrl::parse("s3://b/p?endpoint=http://127.0.0.1:9000&secret_access_key=hunter2").unwrap();
        assert_eq!(with.to_string(), "s3://b/p?endpoint=http://127.0.0.1:9000&secret_access_key=***");
        assert!(StorageUrl::parse("ftp://x/").is_err());
        assert!(StorageUrl::parse("file://other-host/x").is_err());
        assert!(StorageUrl::parse("/relative").is_err());
    }

    #[test]
    fn flags_win_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("registry.toml");
        std::fs::write(&file, "database-url = \"postgres://file/db\"\nstorage = \"file:///from-file\"\ndb-pool = 3\n")
            .unwrap();
        let args = ConfigArgs { config: Some(file.clone()), db_pool: Some(7), ..ConfigArgs::default() };
        let c = Config::load(&args).unwrap();
        assert_eq!(c.database_url, "postgres://file/db");
        assert_eq!(c.storage, StorageUrl::Dir("/from-file".into()));
        assert_eq!(c.db_pool, 7);
        assert_eq!(c.public_url.as_str(), "http://127.0.0.1:8080/");
        std::fs::write(&file, "databse-url = \"x\"\n").unwrap();
        let err = Config::load(&args).err().unwrap().to_string();
        assert!(err.contains("registry.toml") && err.contains("databse-url"), "{err}");
        assert!(err.ends_with("did you mean `database-url`?"), "{err}");
    }

    #[test]
    fn a_misspelt_key_is_told_the_key_it_meant() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("registry.toml");
        std::fs::write(&file, "database-url = \"postgres://db/x\"\ntrusted-proxy = [\"10.0.0.1\"]\n").unwrap();
        let args = ConfigArgs { config: Some(file.clone()), ..ConfigArgs::default() };
        let err = AdminConfig::load(&args).err().unwrap().to_string();
        assert!(err.contains("unknown field `trusted-proxy`"), "{err}");
        assert!(err.ends_with("did you mean `trusted-proxies`?"), "{err}");
        // Nothing near: no guess.
        std::fs::write(&file, "colour = \"blue\"\n").unwrap();
        let err = AdminConfig::load(&args).err().unwrap().to_string();
        assert!(!err.contains("did you mean"), "{err}");
    }

    #[test]
    fn the_public_url_is_the_files_when_no_flag_says_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("registry.toml");
        std::fs::write(&file, "listen = \"0.0.0.0:9090\"\npublic-url = \"https://ebpkg.corp.example\"\n").unwrap();
        let args = ConfigArgs { config: Some(file.clone()), ..ConfigArgs::default() };
        assert_eq!(public_url(&args).unwrap().as_str(), "https://ebpkg.corp.example/");
        std::fs::write(&file, "listen = \"127.0.0.1:9090\"\n").unwrap();
        assert_eq!(public_url(&args).unwrap().as_str(), "http://127.0.0.1:9090/");
    }
}
