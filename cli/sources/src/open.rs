//! Opening a registry by its URL: the one place that knows every kind of
//! registry (the kinds themselves know only the `Registry` interface).

use ebpkg_tuf::TrustedIndex;

use crate::error::{Error, ErrorKind, Result};
use crate::file_registry::FileRegistry;
use crate::http_registry::{ClientTransport, HttpRegistry, OpenOptions};
use crate::registry::Registry;
use crate::tuf::TufTrust;
use crate::{RegistryId, RegistryKind};

/// Opens the registry at `url`: a directory (`file://`) or a registry server
/// (`http(s)://`).
pub fn open_registry(url: &RegistryId, options: &OpenOptions) -> Result<Box<dyn Registry>> {
    match url.kind() {
        RegistryKind::File => {
            Ok(Box::new(FileRegistry::open(url)?.with_tuf(options.tuf.clone(), options.tuf_online_key.clone())))
        }
        RegistryKind::Http => Ok(Box::new(HttpRegistry::open(url, options)?)),
    }
}

/// A candidate root is checked by a full update, never a view kept from before.
fn full_update(_: Option<&ebpkg_tuf::LastVerified>) -> ebpkg_tuf::Probe {
    ebpkg_tuf::Probe::NotAsked
}

/// Loads the metadata the registry at `registry` serves from the root in
/// `trust` (a candidate, for `ebpkg registry add --root`): a root that does not
/// verify the registry is not worth trusting. `cainfo`: as [`OpenOptions::cainfo`].
pub fn check_root(
    registry: &RegistryId,
    trust: &TufTrust,
    token: Option<String>,
    cainfo: Option<crate::CaInfo>,
) -> Result<TrustedIndex> {
    let refused = |cause: ebpkg_tuf::Error| -> Error { ErrorKind::Tuf { registry: registry.clone(), cause }.into() };
    let not_a_url = |what: String| refused(ebpkg_tuf::Error::Metadata { detail: what });
    match registry.kind() {
        RegistryKind::File => {
            let dir = registry.file_path().unwrap_or_default().join("tuf");
            let url = url::Url::from_directory_path(&dir).map_err(|()| not_a_url(format!("{}", dir.display())))?;
            crate::tuf::load_trusted(trust, &url, ebpkg_tuf::FilesystemTransport, full_update).map_err(refused)
        }
        RegistryKind::Http => {
            let base = registry.as_str().trim_end_matches('/');
            let url = url::Url::parse(&format!("{base}/tuf/")).map_err(|e| not_a_url(e.to_string()))?;
            let transport = ClientTransport::new(registry.as_str(), token, cainfo)?;
            crate::tuf::load_trusted(trust, &url, transport, full_update).map_err(refused)
        }
    }
}
