//! A registry server over HTTP (`ebpkg-registry`, or anything speaking its
//! protocol: `ebpkg_spec::registry_api`): the sparse index, cached on disk with
//! its validators and revalidated; archives; and the API for publishing, yanking,
//! owners and search. README.md ("The HTTP registry") says what is cached,
//! retried and refused.

mod client;
mod index_cache;
mod oidc;
mod tuf;

pub(crate) use self::tuf::ClientTransport;

use std::path::PathBuf;
use std::sync::OnceLock;

use ebpkg_signing::{PublicKey, SigningKey};
use ebpkg_spec::index::{IndexEntry, parse_index_file};
use ebpkg_spec::registry_api::{
    self, IndexConfig, Me, NewPublisherKey, NewToken, NewTrustedPublisher, OkResponse, Owner, OwnersRequest,
    OwnersResponse, PublishAllowed, PublishCheck, PublishMetadata, PublishResponse, PublisherKey, PublisherKeyList,
    SearchResponse, TokenCreated, TokenInfo, TokenList, TrustedPublisher, TrustedPublisherList,
    TrustedPublishingExchange, TrustedPublishingToken, VersionInfo,
};
use ebpkg_spec::types::KeyId;
use ebpkg_spec::{Manifest, PackageName};
use semver::Version;

pub use self::client::{ANSWER_DEADLINE_ENV, ARCHIVE_DEADLINE_ENV, Deadlines, Progress};
use self::client::{Client, Method, Request};
use self::index_cache::IndexCache;
pub use self::oidc::github_actions_oidc_token;
use crate::RegistryId;
use crate::error::{ErrorKind, Result};
use crate::registry::{
    IndexFingerprint, IndexText, KeyRecord, PublishSignature, Registry, SearchHit, SignedVersion, SignedWith,
};

/// Largest index file accepted: as for file registries.
const MAX_INDEX_BYTES: u64 = crate::file_registry::MAX_INDEX_FILE_BYTES;
/// Largest JSON answer accepted (a search page, a version's README).
const MAX_JSON_BYTES: u64 = 8 * 1024 * 1024;
/// Most names [`Registry::names`] lists (it only feeds "did you mean").
const MAX_NAMES: usize = 2000;
/// The server's largest search page.
const MAX_PER_PAGE: usize = 100;

/// Largest archive accepted: what `ebpkg-archive` would unpack.
fn max_archive_bytes() -> u64 {
    ebpkg_archive::Limits::default().max_archive_bytes
}

/// How to open a registry ([`crate::open_registry`]). File registries use none of it.
#[derive(Clone, Default)]
pub struct OpenOptions {
    /// The API token, sent on writes (and on reads when the registry's
    /// `config.json` says `auth-required`).
    pub token: Option<String>,
    /// The cache directory (`ebpkg_spec::cache_layout`): HTTP index files are kept
    /// in its `index/`. `None`: nothing cached, nothing usable offline.
    pub cache_dir: Option<PathBuf>,
    /// Never touch the network: index files come from the cache only, and what
    /// needs the server fails with [`ErrorKind::OfflineIndex`] or
    /// [`ErrorKind::OfflineRegistry`].
    pub offline: bool,
    /// Told `(bytes sent, total)` during a publish's upload (a progress bar).
    pub upload_progress: Option<Progress>,
    /// The TUF root this machine trusts for the registry: when set, every index
    /// file read is checked against the registry's signed metadata.
    pub tuf: Option<crate::TufTrust>,
    /// The registry's online TUF key, for writers: a publish to a registry with
    /// TUF metadata re-signs it (`EBPKG_TUF_ONLINE_KEY`).
    pub tuf_online_key: Option<PathBuf>,
    /// How long one exchange with the server may take in all.
    pub deadlines: Deadlines,
    /// CA certificates trusted besides the system's, for this registry's
    /// `https://` URLs (index, API, downloads, attestations, TUF metadata).
    pub cainfo: Option<crate::CaInfo>,
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.offline)
            .field("cainfo", &self.cainfo)
            .finish_non_exhaustive()
    }
}

/// A registry server. One connection pool, shared by the threads using it.
pub struct HttpRegistry {
    url: RegistryId,
    /// Shared with the TUF metadata's transport: one connection pool (and one
    /// set of TLS roots loaded) per command.
    client: std::sync::Arc<Client>,
    token: Option<String>,
    cache: Option<IndexCache>,
    offline: bool,
    /// `index/config.json` as fetched (and its bytes), on first need.
    fetched_config: OnceLock<(IndexConfig, Vec<u8>)>,
    /// `index/config.json` once checked against the TUF metadata (when the
    /// registry has a trusted root).
    config: OnceLock<IndexConfig>,
    /// A trusted TUF root, when the user configured one.
    tuf: Option<crate::tuf::TufReader>,
    /// Without TUF: the packages (normalized) whose cached index files this
    /// command revalidated, which are then read from the cache unasked.
    revalidated: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Index files asked of the server (see [`Registry::index_requests`]).
    index_requests: std::sync::atomic::AtomicU64,
}

impl HttpRegistry {
    /// A client of the server at `url`. Nothing is sent yet.
    pub fn open(url: &RegistryId, options: &OpenOptions) -> Result<HttpRegistry> {
        Ok(HttpRegistry {
            url: url.clone(),
            client: std::sync::Arc::new(
                Client::new(url.as_str(), options.upload_progress.clone())?
                    .with_deadlines(options.deadlines)
                    .with_cainfo(options.cainfo.clone()),
            ),
            token: options.token.clone(),
            cache: options.cache_dir.as_ref().map(|dir| IndexCache::new(dir, url)),
            offline: options.offline,
            fetched_config: OnceLock::new(),
            config: OnceLock::new(),
            tuf: options.tuf.clone().map(crate::tuf::TufReader::new),
            revalidated: std::sync::Mutex::default(),
            index_requests: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The audience the registry wants OIDC tokens for (trusted publishing), if
    /// it trusts any issuer.
    pub fn trusted_publishing_audience(&self) -> Result<Option<String>> {
        Ok(self.config()?.trusted_publishing_audience.clone())
    }

    /// Exchanges a CI pipeline's OIDC token for a short-lived publish token
    /// (`POST api/v1/trusted_publishing/tokens`).
    pub fn exchange_oidc_token(&self, jwt: &str) -> Result<TrustedPublishingToken> {
        self.online("exchanging an OIDC token")?;
        let body = serde_json::to_vec(&TrustedPublishingExchange { jwt: jwt.to_owned() })
            .map_err(|e| ErrorKind::BadResponse { url: self.url.to_string(), problem: e.to_string() })?;
        self.api_json(Method::Post, "trusted_publishing/tokens", "exchanging the OIDC token", Some(body), None)
    }

    /// Who the token belongs to (`GET api/v1/me`): how `ebpkg login` checks a
    /// token before saving it.
    pub fn whoami(&self) -> Result<Me> {
        self.online("checking a token")?;
        let token = self.write_token("checking a token")?;
        self.api_json(Method::Get, "me", "checking the token", None, Some(token))
    }

    /// The file a package's index is cached in (whether or not it is there yet);
    /// `None` without a cache directory.
    pub fn cached_index_path(&self, name: &PackageName) -> Option<PathBuf> {
        self.cache.as_ref().map(|c| c.path(name))
    }

    fn was_revalidated(&self, name: &PackageName) -> bool {
        self.revalidated.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains(&name.normalized())
    }

    /// The fingerprint of `name`'s cached index file, once it has settled.
    fn cached_fingerprint(&self, name: &PackageName) -> Option<IndexFingerprint> {
        let path = self.cache.as_ref()?.path(name);
        crate::file_registry::statx_fingerprint(rustix::fs::CWD, &path, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
    }

    fn online(&self, what: &'static str) -> Result<()> {
        if self.offline {
            return Err(ErrorKind::OfflineRegistry { what, url: self.url.clone() }.into());
        }
        Ok(())
    }

    fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.url.as_str())
    }

    fn api(&self, path: &str) -> String {
        self.endpoint(&format!("{}{path}", registry_api::API_PREFIX))
    }

    /// `index/config.json`, fetched once, unchecked: only for whether reads need
    /// the token (the TUF metadata itself may need it). A forged answer can at
    /// worst withhold the token from, or show it to, this same origin. With TUF,
    /// the copy an earlier command kept serves, unasked: [`HttpRegistry::config`]
    /// checks it against the signed hash before anything else uses it.
    fn fetched_config(&self) -> Result<&(IndexConfig, Vec<u8>)> {
        if let Some(fetched) = self.fetched_config.get() {
            return Ok(fetched);
        }
        if self.tuf.is_some()
            && !self.offline
            && let Some(bytes) = self.cache.as_ref().and_then(IndexCache::read_config)
            && let Ok(config) = serde_json::from_slice::<IndexConfig>(&bytes)
        {
            return Ok(self.fetched_config.get_or_init(|| (config, bytes)));
        }
        self.fetch_config().map(|fetched| self.fetched_config.get_or_init(|| fetched))
    }

    /// `index/config.json` from the server (kept in the cache for the next command).
    fn fetch_config(&self) -> Result<(IndexConfig, Vec<u8>)> {
        self.online("reading the registry's config.json")?;
        let url = self.endpoint(registry_api::INDEX_CONFIG_PATH);
        let what = format!("reading the configuration of the registry {}", self.url);
        let body = match self.client.send(&Request::new(Method::Get, &url, &what, MAX_JSON_BYTES)) {
            Ok(response) => response.body,
            Err(e) => {
                return Err(match e.kind() {
                    // Not an ebpkg server at all (or a URL one level off).
                    ErrorKind::Http { status: status @ (404 | 405 | 410), .. } => {
                        ErrorKind::NotARegistryServer { url: self.url.clone(), status: *status }.into()
                    }
                    _ => e,
                });
            }
        };
        let config: IndexConfig = client::json(&url, &body)?;
        // Kept only where its signed hash will say whether it is current.
        if let Some(cache) = self.cache.as_ref().filter(|_| self.tuf.is_some()) {
            cache.write_config(&body);
        }
        Ok((config, body))
    }

    /// `index/config.json`, fetched once and, with a trusted TUF root, checked
    /// against the signed metadata like an index file (it says where archives
    /// come from and where the API is).
    fn config(&self) -> Result<&IndexConfig> {
        if let Some(config) = self.config.get() {
            return Ok(config);
        }
        let (config, bytes) = self.fetched_config()?;
        let check = self.check_tuf_file(registry_api::INDEX_CONFIG_PATH)?;
        if check(bytes).is_ok() {
            return Ok(self.config.get_or_init(|| config.clone()));
        }
        // The kept copy is not the signed one (the server's changed): fetched.
        let (config, bytes) = self.fetch_config()?;
        check(&bytes)?;
        Ok(self.config.get_or_init(|| config))
    }

    /// The token for reads: only when the registry says it needs one (a token of
    /// one registry is not shown to another's download host needlessly).
    fn read_token(&self) -> Result<Option<&str>> {
        Ok(if self.fetched_config()?.0.auth_required { self.token.as_deref() } else { None })
    }

    fn write_token(&self, what: &'static str) -> Result<&str> {
        self.token.as_deref().ok_or_else(|| ErrorKind::NeedsToken { what, url: self.url.clone() }.into())
    }

    /// An API call answered with JSON.
    fn api_json<T: serde::de::DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        what: &str,
        body: Option<Vec<u8>>,
        token: Option<&str>,
    ) -> Result<T> {
        let url = self.api(path);
        let mut request = Request::new(method, &url, what, MAX_JSON_BYTES);
        request.body = body;
        request.token = token;
        let response = self.client.send(&request)?;
        client::json(&url, &response.body)
    }

    fn change_owners(&self, name: &PackageName, users: &[String], method: Method, what: &str) -> Result<String> {
        self.online("changing owners")?;
        let token = self.write_token("changing owners")?;
        let request = serde_json::to_vec(&OwnersRequest { users: users.to_vec() }).map_err(|e| {
            ErrorKind::BadResponse { url: self.url.to_string(), problem: format!("cannot encode the request: {e}") }
        })?;
        let path = format!("packages/{name}/owners");
        let answer: OkResponse = self.api_json(method, &path, what, Some(request), Some(token))?;
        Ok(answer.msg.unwrap_or_else(|| format!("the owners of `{name}` are changed")))
    }

    fn search_page(&self, query: &str, page: usize, per_page: usize) -> Result<SearchResponse> {
        let mut url = url::Url::parse(&self.api("packages"))
            .map_err(|e| ErrorKind::BadResponse { url: self.url.to_string(), problem: e.to_string() })?;
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("page", &page.to_string())
            .append_pair("per_page", &per_page.to_string());
        let what = format!("searching for `{query}`");
        let mut request = Request::new(Method::Get, url.as_str(), &what, MAX_JSON_BYTES);
        request.token = self.read_token()?;
        let response = self.client.send(&request)?;
        client::json(url.as_str(), &response.body)
    }

    /// Pages of search results until `limit` hits or the last page.
    fn search_pages(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        let mut hits = Vec::new();
        let mut page = 1;
        while hits.len() < limit {
            let per_page = (limit - hits.len()).min(MAX_PER_PAGE);
            let found = self.search_page(query, page, per_page)?;
            let got = found.packages.len();
            hits.extend(found.packages);
            if got < per_page || (page * per_page) as u64 >= found.meta.total {
                break;
            }
            page += 1;
        }
        hits.truncate(limit);
        Ok(hits)
    }

    /// The names of the packages in the cache (offline `names`).
    fn cached_names(&self) -> Vec<PackageName> {
        let Some(cache) = &self.cache else { return Vec::new() };
        let mut names: Vec<PackageName> = cache
            .bodies()
            .into_iter()
            .filter_map(|(path, body)| {
                let file = path.file_name()?.to_str()?.to_owned();
                parse_index_file(&file, &body).entries.into_iter().next().map(|e| e.name)
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

impl Registry for HttpRegistry {
    fn url(&self) -> &RegistryId {
        &self.url
    }

    /// One request per name (the server matches names in normalized form),
    /// revalidating the cached copy: a 304 costs no body.
    fn index_text(&self, name: &PackageName) -> Result<Option<IndexText>> {
        let index_path = ebpkg_spec::index_path(name.as_str());
        let url = self.endpoint(&format!("{}{index_path}", registry_api::INDEX_PREFIX));
        let target = ebpkg_spec::index_target(name.as_str());
        // Once more, unconditionally, when the cached copy a 304 confirmed is
        // not the file the signed metadata describes.
        let mut conditional = true;
        if !self.offline
            && self.tuf.is_none()
            && self.was_revalidated(name)
            && let Some(entry) = self.cache.as_ref().and_then(|c| c.read(name))
        {
            let fingerprint = self.cached_fingerprint(name);
            return Ok(Some(IndexText { bytes: entry.body, origin: url, fingerprint }));
        }
        loop {
            let cached = self.cache.as_ref().and_then(|c| c.read(name)).filter(|_| conditional);
            // With TUF, a cached copy whose bytes are the signed ones is current:
            // the metadata is fresh (its timestamp was asked for), and names
            // every index file's hash. Nothing is asked of the server.
            if let Some(entry) = &cached
                && self.tuf.is_some()
                && !self.offline
                && self.check_tuf_file(&target)?(&entry.body).is_ok()
            {
                tracing::trace!("{url}: the cached copy is the signed one");
                // (Its hash was just checked against the signed one: no need to hash it again.)
                let fingerprint = self.trusted()?.and_then(|index| IndexFingerprint::signed(index, name));
                return Ok(Some(IndexText { bytes: entry.body.clone(), origin: url, fingerprint }));
            }
            // A new answer's validators: it is cached only once it passed the trust check.
            let mut fresh = None;
            let body = if self.offline {
                match cached {
                    Some(entry) => entry.body,
                    None => return Err(ErrorKind::OfflineIndex { name: name.clone(), url: self.url.clone() }.into()),
                }
            } else {
                let what = format!("reading the index of `{name}`");
                let mut request = Request::new(Method::Get, &url, &what, MAX_INDEX_BYTES);
                request.token = self.read_token()?;
                request.conditional = cached.as_ref().map(|c| &c.validators);
                self.index_requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match self.client.send(&request) {
                    Ok(response) if response.not_modified => match cached {
                        Some(entry) => {
                            tracing::debug!("{url}: index not modified (304); using the cached copy");
                            entry.body
                        }
                        None => {
                            let problem = "304 Not Modified to a request that had nothing to compare with".into();
                            return Err(ErrorKind::BadResponse { url, problem }.into());
                        }
                    },
                    Ok(response) => {
                        fresh = Some(response.validators);
                        response.body
                    }
                    Err(e) if matches!(e.kind(), ErrorKind::Http { status: 404, .. }) => {
                        if let Some(cache) = &self.cache {
                            cache.remove(name);
                        }
                        self.check_tuf_absent(&target)?;
                        return Ok(None);
                    }
                    Err(e) => return Err(e),
                }
            };
            // Metadata that cannot be trusted (a rollback, expiry) fails here and
            // leaves the cache alone: its copies passed the check when they came.
            if let Err(e) = self.check_tuf_file(&target)?(&body) {
                // This file is not the signed one (a forged answer, a proxy's): it
                // is never kept, nor asked for again by its validators.
                if let Some(cache) = &self.cache {
                    cache.remove(name);
                }
                if fresh.is_none() && !self.offline && conditional {
                    tracing::info!("{url}: the cached index file is not the signed one; asking again unconditionally");
                    conditional = false;
                    continue;
                }
                return Err(e);
            }
            if let (Some(cache), Some(validators)) = (&self.cache, fresh) {
                cache.write(name, &validators, &body);
            }
            let offline_view = self.offline && self.tuf.as_ref().and_then(crate::tuf::TufReader::kept_view).is_some();
            let fingerprint = if self.tuf.is_some() && !self.offline {
                // Checked against its signed hash above: that is its fingerprint.
                self.trusted()?.and_then(|index| IndexFingerprint::signed(index, name))
            } else if offline_view {
                Some(IndexFingerprint::of_contents(&body))
            } else {
                // Of the cached file read (or just written), taken after (see `index_fingerprint`).
                if !self.offline {
                    self.revalidated
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(name.normalized());
                }
                self.cached_fingerprint(name)
            };
            return Ok(Some(IndexText { bytes: body, origin: url, fingerprint }));
        }
    }

    fn index_requests(&self) -> u64 {
        self.index_requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// With TUF, the signed hash of the index file; otherwise the cached copy as
    /// a file, as a directory registry's index files are fingerprinted (the copy
    /// is only ever replaced by a rename), once it is known current: offline, as
    /// it is; online, after revalidating it.
    fn index_fingerprint(&self, name: &PackageName) -> Result<Option<IndexFingerprint>> {
        if self.offline {
            // With TUF, under the hash the last verified view lists, as online.
            if let Some(view) = self.tuf.as_ref().and_then(crate::tuf::TufReader::kept_view) {
                return Ok(IndexFingerprint::signed(view, name));
            }
            return Ok(self.cached_fingerprint(name));
        }
        if self.tuf.is_none() {
            // Revalidated now (the conditional request every resolution makes of
            // it): an unchanged copy is then fingerprinted as a file, and read
            // again unasked if its record is not cached.
            if self.cache.is_none() {
                return Ok(None);
            }
            return Ok(self.index_text(name)?.and_then(|text| text.fingerprint));
        }
        let Some(index) = self.trusted()? else { return Ok(None) };
        Ok(IndexFingerprint::signed(index, name))
    }

    /// From the search API (the sparse index has no listing), at most 2000 names;
    /// offline, the names of the cached index files.
    fn names(&self) -> Result<Vec<PackageName>> {
        if self.offline {
            return Ok(self.cached_names());
        }
        let mut names: Vec<PackageName> = self.search_pages("", MAX_NAMES)?.into_iter().map(|h| h.name).collect();
        names.sort();
        Ok(names)
    }

    fn download(&self, entry: &IndexEntry) -> Result<Vec<u8>> {
        self.online("downloading a package")?;
        let url = self.config()?.download_url(&entry.name, &entry.vers, &entry.cksum);
        let what = format!("downloading {}@{}", entry.name, entry.vers);
        let mut request = Request::new(Method::Get, &url, &what, max_archive_bytes());
        request.token = self.read_token()?;
        request.archive = true;
        Ok(self.client.send(&request)?.body)
    }

    /// Sent once, never repeated: a publish whose answer was lost may have
    /// happened, and a second one would be refused as a duplicate.
    fn publish(
        &self,
        archive: &ebpkg_archive::VerifiedArchive,
        manifest: &Manifest,
        signature: Option<&PublishSignature>,
    ) -> Result<IndexEntry> {
        self.online("publishing")?;
        let token = self.write_token("publishing")?;
        if signature.is_none() && self.config()?.require_signatures {
            return Err(ErrorKind::UnsignedRefused {
                package: manifest.package.name.clone(),
                version: manifest.package.version.clone(),
                registry: self.url.clone(),
            }
            .into());
        }
        let bundle = match signature {
            Some(s) => Some(serde_json::from_str(s.bundle.json()).map_err(|e| ErrorKind::BadResponse {
                url: self.url.to_string(),
                problem: format!("the signature bundle is not JSON: {e}"),
            })?),
            None => None,
        };
        let metadata = PublishMetadata {
            name: manifest.package.name.clone(),
            vers: manifest.package.version.clone(),
            // The packer's: the archive is sent as it was hashed, not hashed again.
            cksum: *archive.digest(),
            bundle,
        };
        let what = format!("publishing {}@{}", metadata.name, metadata.vers);
        let body = registry_api::encode_publish(&metadata, archive.bytes());
        let published: PublishResponse =
            self.api_json(Method::Publish, "packages/new", &what, Some(body), Some(token))?;
        Ok(published.entry)
    }

    fn bundle(&self, entry: &SignedVersion) -> Result<Vec<u8>> {
        self.online("downloading a signature")?;
        let url = self.api(&registry_api::bundle_path(&entry.name, &entry.version));
        let what = format!("downloading the signature of {}@{}", entry.name, entry.version);
        let mut request = Request::new(Method::Get, &url, &what, ebpkg_signing::MAX_BUNDLE_BYTES as u64);
        request.token = self.read_token()?;
        match self.client.send(&request) {
            Ok(response) => Ok(response.body),
            Err(e) if matches!(e.kind(), ErrorKind::Http { status: 404, .. }) => Err(ErrorKind::BundleMissing {
                package: entry.name.clone(),
                version: entry.version.clone(),
                registry: self.url.clone(),
            }
            .into()),
            Err(e) => Err(e),
        }
    }

    /// With TUF, a version whose attestation file the signed metadata does not
    /// list has none: nothing is asked.
    fn attestations(&self, name: &PackageName, version: &Version) -> Result<Option<Vec<u8>>> {
        self.online("reading attestations")?;
        let target = ebpkg_spec::attestation::attestation_target(name, version);
        if self.trusted()?.is_some_and(|index| !index.lists(&target)) {
            return Ok(None);
        }
        let url = self.api(&registry_api::attestations_path(name, version));
        let what = format!("reading the attestations of {name}@{version}");
        let mut request = Request::new(Method::Get, &url, &what, ebpkg_spec::attestation::MAX_ATTESTATION_FILE_BYTES);
        request.token = self.read_token()?;
        match self.client.send(&request) {
            Ok(response) => {
                self.check_tuf_file(&target)?(&response.body)?;
                Ok(Some(response.body))
            }
            Err(e) if matches!(e.kind(), ErrorKind::Http { status: 404, .. }) => {
                self.check_tuf_absent(&target)?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    fn add_attestation(
        &self,
        name: &PackageName,
        version: &Version,
        attestation: &ebpkg_signing::SignedAttestation,
    ) -> Result<crate::registry::AttestationAccepted> {
        self.online("publishing an attestation")?;
        let token = self.write_token("publishing an attestation")?;
        let what = format!("publishing an attestation of {name}@{version}");
        let path = registry_api::attestations_path(name, version);
        self.api_json(Method::Post, &path, &what, Some(attestation.json().as_bytes().to_vec()), Some(token))
    }

    fn publisher_key(&self, id: &KeyId) -> Result<KeyRecord> {
        self.online("reading a publisher key")?;
        let what = format!("reading publisher key {id}");
        let token = self.read_token()?;
        let answer: Result<PublisherKey> = self.api_json(Method::Get, &registry_api::key_path(id), &what, None, token);
        let record = match answer {
            Ok(record) => record,
            Err(e) if matches!(e.kind(), ErrorKind::Http { status: 404, .. }) => {
                return Err(ErrorKind::NoSuchKey { key: *id, registry: self.url.clone() }.into());
            }
            Err(e) => return Err(e),
        };
        let key = PublicKey::from_pem(&record.pem).map_err(|e| ErrorKind::BadResponse {
            url: self.api(&registry_api::key_path(id)),
            problem: format!("the key is not a public key: {e}"),
        })?;
        Ok(KeyRecord { key, revoked_at: record.revoked_at })
    }

    fn my_keys(&self) -> Result<Vec<PublisherKey>> {
        self.online("listing publisher keys")?;
        let token = self.write_token("listing your publisher keys")?;
        let list: PublisherKeyList =
            self.api_json(Method::Get, "me/keys", "listing your publisher keys", None, Some(token))?;
        Ok(list.keys)
    }

    fn add_key(&self, key: &SigningKey) -> Result<PublisherKey> {
        self.online("registering a publisher key")?;
        let public = key.public();
        let what = format!("registering publisher key {}", public.id());
        let me = self.whoami()?;
        let message = registry_api::key_proof_message(&me.login, public.id());
        let proof = ebpkg_signing::sign(key, message.as_bytes())
            .map_err(|e| ErrorKind::Signing { what: format!("proving possession of key {}", public.id()), cause: e })?;
        let proof: serde_json::Value = serde_json::from_str(proof.json())
            .map_err(|e| ErrorKind::BadResponse { url: self.url.to_string(), problem: e.to_string() })?;
        let token = self.write_token("registering a publisher key")?;
        let body = serde_json::to_vec(&NewPublisherKey { pem: public.to_pem(), proof })
            .map_err(|e| ErrorKind::BadResponse { url: self.url.to_string(), problem: e.to_string() })?;
        self.api_json(Method::Post, "me/keys", &what, Some(body), Some(token))
    }

    fn trusted_publishers(&self, name: &PackageName) -> Result<Vec<TrustedPublisher>> {
        self.online("listing trusted publishers")?;
        let token = self.write_token("listing trusted publishers")?;
        let path = format!("packages/{name}/trusted_publishers");
        let list: TrustedPublisherList = self.api_json(
            Method::Get,
            &path,
            &format!("listing the trusted publishers of `{name}`"),
            None,
            Some(token),
        )?;
        Ok(list.publishers)
    }

    fn add_trusted_publisher(&self, name: &PackageName, new: &NewTrustedPublisher) -> Result<Vec<TrustedPublisher>> {
        self.online("adding a trusted publisher")?;
        let token = self.write_token("adding a trusted publisher")?;
        let body = serde_json::to_vec(new)
            .map_err(|e| ErrorKind::BadResponse { url: self.url.to_string(), problem: e.to_string() })?;
        let path = format!("packages/{name}/trusted_publishers");
        let what = format!("trusting {} ({}) to publish `{name}`", new.repository, new.workflow);
        let list: TrustedPublisherList = self.api_json(Method::Post, &path, &what, Some(body), Some(token))?;
        Ok(list.publishers)
    }

    fn remove_trusted_publisher(&self, name: &PackageName, id: i64) -> Result<String> {
        self.online("removing a trusted publisher")?;
        let token = self.write_token("removing a trusted publisher")?;
        let path = format!("packages/{name}/trusted_publishers/{id}");
        let what = format!("removing trusted publisher {id} of `{name}`");
        let answer: OkResponse = self.api_json(Method::Delete, &path, &what, None, Some(token))?;
        Ok(answer.msg.unwrap_or_else(|| format!("trusted publisher {id} of `{name}` removed")))
    }

    fn revoke_key(&self, id: &KeyId) -> Result<PublisherKey> {
        self.online("revoking a publisher key")?;
        let what = format!("revoking publisher key {id}");
        let token = self.write_token("revoking a publisher key")?;
        self.api_json(Method::Delete, &format!("me/{}", registry_api::key_path(id)), &what, None, Some(token))
    }

    /// Said as the publish would say it ("publishing NAME@VERSION"), with the
    /// server's own words: the check runs the publish's own authorisation.
    fn may_publish(
        &self,
        name: &PackageName,
        version: &Version,
        signed: SignedWith<'_>,
    ) -> Result<Option<PublishAllowed>> {
        self.online("checking a publish")?;
        let token = self.write_token("publishing")?;
        if signed == SignedWith::Unsigned && self.config()?.require_signatures {
            return Err(ErrorKind::UnsignedRefused {
                package: name.clone(),
                version: version.clone(),
                registry: self.url.clone(),
            }
            .into());
        }
        let key = match signed {
            SignedWith::Key(key) => Some(*key),
            SignedWith::Elsewhere | SignedWith::Unsigned => None,
        };
        let check = PublishCheck { name: name.clone(), vers: version.clone(), key };
        let body = serde_json::to_vec(&check)
            .map_err(|e| ErrorKind::BadResponse { url: self.url.to_string(), problem: e.to_string() })?;
        let what = format!("publishing {name}@{version} (--dry-run)");
        self.api_json(Method::Post, registry_api::PUBLISH_CHECK_PATH, &what, Some(body), Some(token)).map(Some)
    }

    fn tokens(&self) -> Result<Vec<TokenInfo>> {
        self.online("listing tokens")?;
        let token = self.write_token("listing your tokens")?;
        let list: TokenList = self.api_json(Method::Get, "tokens", "listing your tokens", None, Some(token))?;
        Ok(list.tokens)
    }

    fn create_token(&self, new: &NewToken) -> Result<TokenCreated> {
        self.online("creating a token")?;
        let token = self.write_token("creating a token")?;
        let body = serde_json::to_vec(new)
            .map_err(|e| ErrorKind::BadResponse { url: self.url.to_string(), problem: e.to_string() })?;
        let what = format!("creating the token `{}`", new.name);
        self.api_json(Method::PutOnce, "tokens", &what, Some(body), Some(token))
    }

    fn revoke_token(&self, id: i64) -> Result<String> {
        self.online("revoking a token")?;
        let token = self.write_token("revoking a token")?;
        let what = format!("revoking token {id}");
        let answer: OkResponse = self.api_json(Method::Delete, &format!("tokens/{id}"), &what, None, Some(token))?;
        Ok(answer.msg.unwrap_or_else(|| format!("token {id} revoked")))
    }

    fn set_yanked(&self, name: &PackageName, version: &Version, yanked: bool) -> Result<IndexEntry> {
        let verb = if yanked { "yanking" } else { "un-yanking" };
        self.online(verb)?;
        let token = self.write_token(verb)?;
        let what = format!("{verb} {name}@{version}");
        let _: OkResponse = if yanked {
            self.api_json(Method::Delete, &format!("packages/{name}/{version}/yank"), &what, None, Some(token))?
        } else {
            self.api_json(Method::Put, &format!("packages/{name}/{version}/unyank"), &what, None, Some(token))?
        };
        let what = format!("reading {name}@{version}");
        let token = self.read_token()?;
        let info: VersionInfo =
            self.api_json(Method::Get, &format!("packages/{name}/{version}"), &what, None, token)?;
        Ok(info.entry)
    }

    fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        self.online("searching")?;
        self.search_pages(query, limit)
    }

    fn owners(&self, name: &PackageName) -> Result<Vec<Owner>> {
        self.online("listing owners")?;
        let token = self.read_token()?;
        let what = format!("listing the owners of `{name}`");
        let answer: OwnersResponse =
            self.api_json(Method::Get, &format!("packages/{name}/owners"), &what, None, token)?;
        Ok(answer.users)
    }

    fn add_owners(&self, name: &PackageName, users: &[String]) -> Result<String> {
        self.change_owners(name, users, Method::Put, &format!("adding {} to the owners of `{name}`", users.join(", ")))
    }

    fn remove_owners(&self, name: &PackageName, users: &[String]) -> Result<String> {
        let what = format!("removing {} from the owners of `{name}`", users.join(", "));
        self.change_owners(name, users, Method::Delete, &what)
    }
}
