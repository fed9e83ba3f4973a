//! What a machine trusts about a registry's TUF metadata, and loading it so
//! that the trusted root follows the registry's rotations. Both kinds of
//! registry check their index files against the result.

use std::path::PathBuf;
use std::sync::OnceLock;

use ebpkg_tuf::TrustedIndex;

/// What a machine trusts about one registry's TUF metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TufTrust {
    /// The newest root this machine trusts (rewritten when the registry rotates it).
    pub root: PathBuf,
    /// Where the last trusted timestamp and snapshot are kept, against rollback.
    pub datastore: PathBuf,
    /// This host's clock is kept by a time service its operator trusts
    /// (`EBPKG_TUF_TRUST_CLOCK=1`, a fleet's unit): a clock behind the latest time
    /// a load recorded is believed, and the recorded time forgotten, rather than
    /// every load refused until the clock passes it.
    pub trust_clock: bool,
}

/// A registry reader's TUF state: what it trusts, and the metadata, loaded and
/// verified once per process (both kinds of registry hold one).
#[derive(Debug)]
pub(crate) struct TufReader {
    trust: TufTrust,
    loaded: OnceLock<TrustedIndex>,
    /// The view the last online load verified, read once (offline).
    kept: OnceLock<Option<TrustedIndex>>,
}

impl TufReader {
    pub(crate) fn new(trust: TufTrust) -> TufReader {
        TufReader { trust, loaded: OnceLock::new(), kept: OnceLock::new() }
    }

    /// Offline: the view the last online load verified, if one is kept. Not a
    /// check (nothing can be fetched to judge it current), but the names under
    /// which that load's index files were cached, so that offline resolutions use
    /// the same records as online ones.
    pub(crate) fn kept_view(&self) -> Option<&TrustedIndex> {
        self.kept
            .get_or_init(|| ebpkg_tuf::last_verified(&self.trust.datastore).map(ebpkg_tuf::LastVerified::into_view))
            .as_ref()
    }

    /// The verified metadata; `load` fetches and verifies it the first time.
    pub(crate) fn index(
        &self,
        load: impl FnOnce(&TufTrust) -> crate::Result<TrustedIndex>,
    ) -> crate::Result<&TrustedIndex> {
        if let Some(index) = self.loaded.get() {
            return Ok(index);
        }
        let index = load(&self.trust)?;
        Ok(self.loaded.get_or_init(|| index))
    }
}

/// A file the registry does not serve (`target`) must not be one the signed
/// metadata lists: that would be a file withheld from this reader.
pub(crate) fn check_absent(index: &TrustedIndex, target: &str) -> Result<(), ebpkg_tuf::Error> {
    if index.lists(target) {
        return Err(ebpkg_tuf::Error::Metadata {
            detail: format!("{target} is in the signed metadata but the registry does not serve it (withheld)"),
        });
    }
    Ok(())
}

/// Loads the metadata at `url` from the trusted root and persists the root it
/// ends up trusting (after any rotation). `probe` asks the registry whether its
/// timestamp is still the one the last load verified (given that load, if one
/// is kept): when it is, that load's view is used and nothing else is fetched
/// (`ebpkg_tuf::verified`).
pub(crate) fn load_trusted<T: ebpkg_tuf::Transport + Send + Sync + Clone + 'static>(
    trust: &TufTrust,
    url: &url::Url,
    transport: T,
    probe: impl FnOnce(Option<&ebpkg_tuf::LastVerified>) -> ebpkg_tuf::Probe,
) -> Result<TrustedIndex, ebpkg_tuf::Error> {
    if trust.trust_clock
        && let Some(recorded) = ebpkg_tuf::recorded_time_ahead(&trust.datastore)
    {
        let file = trust.datastore.join(ebpkg_tuf::LATEST_KNOWN_TIME);
        tracing::warn!(
            "{} recorded {recorded}, ahead of this machine's clock; forgotten, as EBPKG_TUF_TRUST_CLOCK says the \
             clock is right",
            file.display()
        );
        std::fs::remove_file(&file)
            .map_err(|e| ebpkg_tuf::Error::Io { what: format!("removing {}", file.display()), cause: e })?;
    }
    let last = ebpkg_tuf::last_verified(&trust.datastore);
    let probe = probe(last.as_ref());
    let index = ebpkg_tuf::load_probed(&trust.root, url, &trust.datastore, transport, last, probe)?;
    if ebpkg_fs::read(&trust.root, 1 << 20).ok().as_deref() != Some(&index.root_json[..]) {
        ebpkg_fs::write_atomic(&trust.root, &index.root_json, 0o644).map_err(|e| ebpkg_tuf::Error::Io {
            what: format!("writing the trusted root {}", trust.root.display()),
            cause: e,
        })?;
    }
    tracing::debug!(
        root = index.root_version,
        snapshot = index.snapshot_version,
        expires = %index.expires,
        "TUF metadata verified"
    );
    Ok(index)
}
