//! TUF over a registry server: its metadata is served under `tuf/`, fetched
//! through the registry's own bounded client (with the token when the registry
//! wants one for reads), and index files are checked against it.

use std::sync::Arc;

use ebpkg_tuf::{TransportError, TransportErrorKind, TransportStream, TrustedIndex};

use super::HttpRegistry;
use super::client::{Client, Method, Request};
use crate::error::{ErrorKind, Result};

/// Largest metadata file fetched (the limits `ebpkg-tuf` applies are smaller for
/// most roles).
const MAX_METADATA_BYTES: u64 = 8 * 1024 * 1024;
/// Largest timestamp fetched (as `ebpkg-tuf`'s limit).
const MAX_TIMESTAMP_BYTES: u64 = 16 * 1024;

/// `tough`'s transport over the registry's client.
#[derive(Clone)]
pub(crate) struct ClientTransport {
    client: Arc<Client>,
    token: Option<String>,
}

impl ClientTransport {
    pub(crate) fn new(registry: &str, token: Option<String>, cainfo: Option<crate::CaInfo>) -> Result<ClientTransport> {
        Ok(ClientTransport { client: Arc::new(Client::new(registry, None)?.with_cainfo(cainfo)), token })
    }

    /// Over an existing client (a registry's own).
    pub(crate) fn with_client(client: Arc<Client>, token: Option<String>) -> ClientTransport {
        ClientTransport { client, token }
    }
}

impl std::fmt::Debug for ClientTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTransport").field("token", &self.token.as_ref().map(|_| "***")).finish_non_exhaustive()
    }
}

#[ebpkg_tuf::async_trait]
impl ebpkg_tuf::Transport for ClientTransport {
    async fn fetch(&self, url: url::Url) -> std::result::Result<TransportStream, TransportError> {
        let this = self.clone();
        let target = url.to_string();
        let fetched = tokio::task::spawn_blocking(move || {
            let mut request = Request::new(Method::Get, &target, "reading TUF metadata", MAX_METADATA_BYTES);
            request.token = this.token.as_deref();
            this.client.send(&request)
        })
        .await;
        match fetched {
            Ok(Ok(response)) => {
                let chunks = vec![Ok(ebpkg_tuf::Bytes::from(response.body))];
                Ok(Box::pin(futures_util::stream::iter(chunks)))
            }
            Ok(Err(e)) if matches!(e.kind(), ErrorKind::Http { status: 404, .. }) => {
                Err(TransportError::new(TransportErrorKind::FileNotFound, url))
            }
            Ok(Err(e)) => Err(TransportError::new_with_cause(TransportErrorKind::Other, url, e)),
            Err(e) => Err(TransportError::new_with_cause(TransportErrorKind::Other, url, e)),
        }
    }
}

impl HttpRegistry {
    fn tuf_error(&self, cause: ebpkg_tuf::Error) -> crate::Error {
        ErrorKind::Tuf { registry: self.url.clone(), cause }.into()
    }

    /// The verified metadata, loaded on first use; `None` without a trusted root,
    /// and offline (nothing can be fetched: said once, then the cached index
    /// files are used as they are).
    pub(super) fn trusted(&self) -> Result<Option<&TrustedIndex>> {
        let Some(reader) = &self.tuf else { return Ok(None) };
        if self.offline {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                tracing::warn!(
                    "{}: offline, so its TUF metadata was not checked: cached index files are used as they are",
                    self.url
                );
            });
            return Ok(None);
        }
        let index = reader.index(|trust| {
            let url = url::Url::parse(&self.endpoint("tuf/"))
                .map_err(|e| self.tuf_error(ebpkg_tuf::Error::Metadata { detail: format!("the metadata URL: {e}") }))?;
            let token = self.read_token()?.map(str::to_owned);
            let transport = ClientTransport::with_client(Arc::clone(&self.client), token.clone());
            let probe = |last: Option<&ebpkg_tuf::LastVerified>| self.probe_timestamp(&url, token.as_deref(), last);
            crate::tuf::load_trusted(trust, &url, transport, probe).map_err(|e| self.tuf_error(e))
        })?;
        Ok(Some(index))
    }

    /// Asks for the registry's timestamp, conditionally on the last one verified:
    /// the one request a warm resolution makes when nothing was published. A
    /// failure is left to the full update, which says what went wrong.
    fn probe_timestamp(
        &self,
        metadata: &url::Url,
        token: Option<&str>,
        last: Option<&ebpkg_tuf::LastVerified>,
    ) -> ebpkg_tuf::Probe {
        let Ok(url) = metadata.join("timestamp.json") else { return ebpkg_tuf::Probe::NotAsked };
        let validators: Option<super::client::Validators> =
            last.and_then(|l| serde_json::from_slice(&l.validators).ok());
        let mut request = Request::new(Method::Get, url.as_str(), "reading TUF metadata", MAX_TIMESTAMP_BYTES);
        request.token = token;
        request.conditional = validators.as_ref();
        match self.client.send(&request) {
            Ok(response) if response.not_modified => {
                tracing::debug!("{url}: not modified (304): the signed index is the one verified last");
                ebpkg_tuf::Probe::Unchanged
            }
            Ok(response) => ebpkg_tuf::Probe::Fetched {
                validators: serde_json::to_vec(&response.validators).unwrap_or_default(),
                timestamp: response.body,
            },
            Err(e) => {
                tracing::debug!("{url}: {e}");
                ebpkg_tuf::Probe::NotAsked
            }
        }
    }

    /// Checks an index file (`index/…`) against the signed metadata, in two
    /// steps: the metadata is loaded (its errors are the outer ones), then the
    /// returned check says whether these bytes are the file it describes.
    #[allow(clippy::type_complexity)]
    pub(super) fn check_tuf_file<'a>(&'a self, target: &'a str) -> Result<Box<dyn Fn(&[u8]) -> Result<()> + 'a>> {
        match self.trusted()? {
            None => Ok(Box::new(|_| Ok(()))),
            Some(index) => Ok(Box::new(move |bytes| index.check(target, bytes).map_err(|e| self.tuf_error(e)))),
        }
    }

    /// An index file the server says does not exist, but signed metadata lists.
    pub(super) fn check_tuf_absent(&self, target: &str) -> Result<()> {
        let Some(index) = self.trusted()? else { return Ok(()) };
        crate::tuf::check_absent(index, target).map_err(|e| self.tuf_error(e))
    }
}
