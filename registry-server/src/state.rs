//! What every request handler shares. The application's own parts only: what a
//! part of the HTTP surface keeps for itself (the catalog's rendered pages and
//! READMEs) is that part's, so this module imports no handler (as crates.io's
//! `App` knows no controller).

use std::sync::Arc;

use sqlx::PgPool;

use crate::archive_cache::ArchiveCache;
use crate::config::Config;
use crate::downloads::DownloadCounter;
use crate::index_cache::IndexCache;
use crate::ratelimit::IpLimiter;
use crate::storage::Blobs;

#[derive(Clone)]
pub struct AppState {
    pub db: PgPool,
    pub blobs: Blobs,
    pub config: Arc<Config>,
    pub ip_limiter: Arc<IpLimiter>,
    pub downloads: Arc<DownloadCounter>,
    pub index_cache: Arc<IndexCache>,
    pub archives: Arc<ArchiveCache>,
    /// Trusted publishing: the OIDC issuers' keys.
    pub jwks: Arc<crate::trusted_publishing::JwksCache>,
    /// Whether this process saw its `index/config.json` signed by the TUF
    /// metadata (checked before the first metadata file is served).
    pub config_signed: Arc<std::sync::atomic::AtomicBool>,
}
