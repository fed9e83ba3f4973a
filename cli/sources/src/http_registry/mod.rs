//! A registry server over HTTP (`ebpkg-registry`, or anything speaking its
//! protocol: `ebpkg_spec::registry_api`): the sparse index, cached on disk with
//! its ETag and revalidated; archives; and the API for publishing, yanking,
//! owners and search.

mod client;
mod index_cache;

use std::path::PathBuf;
use std::sync::OnceLock;

use ebpkg_spec::index::{IndexEntry, parse_index_file};
use ebpkg_spec::registry_api::{
    self, IndexConfig, OkResponse, Owner, OwnersRequest, OwnersResponse, PublishMetadata, PublishResponse,
    SearchResponse,
};
use ebpkg_spec::{Manifest, PackageName};
use semver::Version;

pub use self::client::Progress;
use self::client::{Client, Method};
use self::index_cache::IndexCache;
use crate::error::{ErrorKind, Result};
use crate::registry::{Registry, SearchHit};
use crate::url::RegistryUrl;

/// Largest index file accepted, as for file registries.
const MAX_INDEX_BYTES: u64 = 64 * 1024 * 1024;
/// Largest archive accepted, as ebpkg-archive unpacks.
const MAX_ARCHIVE_BYTES: u64 = 96 * 1024 * 1024;
/// Largest JSON answer accepted (a search page, a package's versions).
const MAX_JSON_BYTES: u64 = 16 * 1024 * 1024;
/// Most names [`Registry::names`] lists (it only feeds "did you mean").
const MAX_NAMES: usize = 2000;

/// How to open a registry.
#[derive(Clone, Default)]
pub struct OpenOptions {
    /// The API token, for writes (and reads when the registry requires it).
    pub token: Option<String>,
    /// The cache directory (`ebpkg_spec::cache_layout`); HTTP index files are kept
    /// there. `None`: nothing cached.
    pub cache_dir: Option<PathBuf>,
    /// Never touch the network: index files come from the cache only.
    pub offline: bool,
    /// Told `(bytes sent, total)` during a publish's upload (a progress bar).
    pub upload_progress: Option<Progress>,
}

impl std::fmt::Debug for OpenOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenOptions")
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("cache_dir", &self.cache_dir)
            .field("offline", &self.offline)
            .finish_non_exhaustive()
    }
}

/// A registry server.
pub struct HttpRegistry {
    url: RegistryUrl,
    client: Client,
    token: Option<String>,
    cache: Option<IndexCache>,
    offline: bool,
    config: OnceLock<IndexConfig>,
}

impl HttpRegistry {
    pub fn open(url: &RegistryUrl, options: &OpenOptions) -> Result<HttpRegistry> {
        Ok(HttpRegistry {
            url: url.clone(),
            client: Client::new(options.upload_progress.clone())?,
            token: options.token.clone(),
            cache: options.cache_dir.as_ref().map(|dir| IndexCache::new(dir, url)),
            offline: options.offline,
            config: OnceLock::new(),
        })
    }

    fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.url.as_str())
    }

    /// `index/config.json`, fetched once.
    fn config(&self) -> Result<&IndexConfig> {
        if let Some(config) = self.config.get() {
            return Ok(config);
        }
        let url = self.endpoint(registry_api::INDEX_CONFIG_PATH);
        let body = self.client.send(Method::Get, &url, None, self.read_token(), None, MAX_JSON_BYTES)?.body;
        let config: IndexConfig = client::json(&url, &body)?;
        Ok(self.config.get_or_init(|| config))
    }

    /// The token for reads: only when the registry says it needs one.
    fn read_token(&self) -> Option<&str> {
        self.config.get().filter(|c| c.auth_required).and(self.token.as_deref())
    }

    fn write_token(&self, what: &'static str) -> Result<&str> {
        self.token.as_deref().ok_or_else(|| ErrorKind::NeedsToken { what, url: self.url.clone() }.into())
    }

    fn api(&self, path: &str) -> String {
        self.endpoint(&format!("{}{path}", registry_api::API_PREFIX))
    }

    fn ok(&self, method: Method, path: &str, what: &'static str, json: Option<Vec<u8>>) -> Result<OkResponse> {
        let url = self.api(path);
        let token = self.write_token(what)?;
        let body = self.client.send(method, &url, json, Some(token), None, MAX_JSON_BYTES)?.body;
        client::json(&url, &body)
    }

    fn owners_change(&self, name: &PackageName, users: &[String], method: Method) -> Result<OkResponse> {
        let request = serde_json::to_vec(&OwnersRequest { users: users.to_vec() }).unwrap_or_default();
        self.ok(method, &format!("packages/{name}/owners"), "changing owners", Some(request))
    }
}

impl Registry for HttpRegistry {
    fn url(&self) -> &RegistryUrl {
        &self.url
    }

    fn index(&self, name: &PackageName) -> Result<Option<Vec<IndexEntry>>> {
        let path = ebpkg_spec::index_path(name.as_str());
        let cached = self.cache.as_ref().and_then(|c| c.read(&path));
        let body = if self.offline {
            match cached {
                Some(entry) => entry.body,
                None => return Err(ErrorKind::OfflineIndex { name: name.clone(), url: self.url.clone() }.into()),
            }
        } else {
            // A read token may be needed: learn it from config.json first.
            self.config()?;
            let url = self.endpoint(&format!("{}{path}", registry_api::INDEX_PREFIX));
            let etag = cached.as_ref().and_then(|c| c.etag.as_deref());
            match self.client.send(Method::Get, &url, None, self.read_token(), etag, MAX_INDEX_BYTES) {
                Ok(response) if response.not_modified => match cached {
                    Some(entry) => {
                        tracing::debug!(%url, "index not modified (304)");
                        entry.body
                    }
                    None => {
                        return Err(ErrorKind::BadResponse {
                            url,
                            problem: "304 Not Modified without a cached copy".into(),
                        }
                        .into());
                    }
                },
                Ok(response) => {
                    if let Some(cache) = &self.cache {
                        cache.write(&path, response.etag.as_deref(), &response.body);
                    }
                    response.body
                }
                Err(e) if matches!(e.kind(), ErrorKind::Http { status: 404, .. }) => {
                    if let Some(cache) = &self.cache {
                        cache.remove(&path);
                    }
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        };
        let parsed = parse_index_file(name.as_str(), &body);
        for problem in &parsed.problems {
            tracing::warn!("{}index/{path}: {problem}; that line is skipped", self.url);
        }
        Ok(Some(parsed.entries))
    }

    fn names(&self) -> Result<Vec<PackageName>> {
        let mut names = Vec::new();
        let mut page = 1;
        while names.len() < MAX_NAMES {
            let found = self.search_page("", page, 100)?;
            let done = found.packages.len() < 100;
            names.extend(found.packages.into_iter().map(|h| h.name));
            if done {
                break;
            }
            page += 1;
        }
        names.sort();
        Ok(names)
    }

    fn download(&self, entry: &IndexEntry) -> Result<Vec<u8>> {
        let url = self.config()?.download_url(&entry.name, &entry.vers, &entry.cksum);
        Ok(self.client.send(Method::Get, &url, None, self.read_token(), None, MAX_ARCHIVE_BYTES)?.body)
    }

    fn publish(&self, archive: &[u8], manifest: &Manifest) -> Result<IndexEntry> {
        let token = self.write_token("publishing")?;
        let metadata = PublishMetadata {
            name: manifest.package.name.clone(),
            vers: manifest.package.version.clone(),
            cksum: ebpkg_spec::types::Sha256Digest::of(archive),
        };
        let url = self.api("packages/new");
        let body = registry_api::encode_publish(&metadata, archive);
        let answer = self.client.send(Method::Publish, &url, Some(body), Some(token), None, MAX_JSON_BYTES)?.body;
        let published: PublishResponse = client::json(&url, &answer)?;
        Ok(published.entry)
    }

    fn set_yanked(&self, name: &PackageName, version: &Version, yanked: bool) -> Result<IndexEntry> {
        if yanked {
            self.ok(Method::Delete, &format!("packages/{name}/{version}/yank"), "yanking", None)?;
        } else {
            self.ok(Method::Put, &format!("packages/{name}/{version}/unyank"), "un-yanking", None)?;
        }
        let entries = self.index(name)?.unwrap_or_default();
        entries.into_iter().find(|e| e.vers == *version).ok_or_else(|| {
            ErrorKind::BadResponse {
                url: self.url.to_string(),
                problem: format!("{name}@{version} is not in the index after changing its yanked flag"),
            }
            .into()
        })
    }

    fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        let mut hits = Vec::new();
        let mut page = 1;
        while hits.len() < limit {
            let per_page = (limit - hits.len()).min(100) as u32;
            let found = self.search_page(query, page, per_page.max(1))?;
            let done = (found.packages.len() as u32) < per_page;
            hits.extend(found.packages);
            if done {
                break;
            }
            page += 1;
        }
        hits.truncate(limit);
        Ok(hits)
    }

    fn owners(&self, name: &PackageName) -> Result<Vec<Owner>> {
        let url = self.api(&format!("packages/{name}/owners"));
        let body = self.client.send(Method::Get, &url, None, self.token.as_deref(), None, MAX_JSON_BYTES)?.body;
        Ok(client::json::<OwnersResponse>(&url, &body)?.users)
    }

    fn add_owners(&self, name: &PackageName, users: &[String]) -> Result<String> {
        Ok(self.owners_change(name, users, Method::Put)?.msg.unwrap_or_default())
    }

    fn remove_owners(&self, name: &PackageName, users: &[String]) -> Result<String> {
        Ok(self.owners_change(name, users, Method::Delete)?.msg.unwrap_or_default())
    }
}

impl HttpRegistry {
    fn search_page(&self, query: &str, page: u32, per_page: u32) -> Result<SearchResponse> {
        let mut url = url::Url::parse(&self.api("packages"))
            .map_err(|e| ErrorKind::BadResponse { url: self.url.to_string(), problem: e.to_string() })?;
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("page", &page.to_string())
            .append_pair("per_page", &per_page.to_string());
        let body = self.client.send(Method::Get, url.as_str(), None, self.read_token(), None, MAX_JSON_BYTES)?.body;
        client::json(url.as_str(), &body)
    }

    /// Who the token belongs to (`GET api/v1/me`): how `ebpkg login` checks a token.
    pub fn whoami(&self) -> Result<registry_api::Me> {
        let url = self.api("me");
        let token = self.write_token("checking a token")?;
        let body = self.client.send(Method::Get, &url, None, Some(token), None, MAX_JSON_BYTES)?.body;
        client::json(&url, &body)
    }
}
