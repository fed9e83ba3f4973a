//! Attestations in a directory registry: one file per version,
//! `<root>/attestations/<index path>/<version>.json` (the TUF target of the same
//! name), every attestation accepted for the version, oldest first.
//!
//! A directory has no accounts, so "a key it knows for the package" is a key
//! that signed one of the package's versions here: whoever holds it is the
//! package's publisher as far as this registry can tell: kernel verifications
//! are accepted from those keys. A rebuild is accepted from any key the
//! registry holds (`keys/<hex>.pem`) whose signature verifies: its worth is an
//! independent rebuilder's word, so the publisher's keys are no better here,
//! and the client's trust policy decides which rebuilders count. Installs
//! judge every attestation by their own trust policy.

use std::path::PathBuf;

use ebpkg_signing::SignedAttestation;
use ebpkg_spec::PackageName;
use ebpkg_spec::attestation::{AttestationFile, MAX_ATTESTATION_FILE_BYTES, MAX_ATTESTATIONS, attestation_target};
use ebpkg_spec::registry_api::AttestationAccepted;
use semver::Version;

use super::FileRegistry;
use crate::atomic::write_atomic;
use crate::error::{ErrorKind, Result};
use crate::registry::Registry;

impl FileRegistry {
    fn attestation_path(&self, name: &PackageName, version: &Version) -> PathBuf {
        self.root.join(attestation_target(name, version))
    }

    pub(super) fn read_attestations(&self, name: &PackageName, version: &Version) -> Result<Option<Vec<u8>>> {
        self.require_registry_once()?;
        let path = self.attestation_path(name, version);
        match ebpkg_fs::read(&path, MAX_ATTESTATION_FILE_BYTES) {
            Ok(bytes) => {
                self.check_tuf(&path, &bytes)?;
                Ok(Some(bytes))
            }
            Err(e) if e.is_not_found() => {
                self.check_tuf_absent(&path)?;
                Ok(None)
            }
            Err(e) => Err(self.damaged(e)),
        }
    }

    /// A mirror's copy of its origin's attestation file for a version, byte for
    /// byte (the origin's TUF metadata signs those bytes).
    pub(crate) fn write_attestations_verbatim(
        &self,
        name: &PackageName,
        version: &Version,
        bytes: &[u8],
    ) -> Result<()> {
        let path = self.attestation_path(name, version);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(crate::Error::io("create", dir))?;
        }
        write_atomic(&path, bytes)
    }

    pub(super) fn attach_attestation(
        &self,
        name: &PackageName,
        version: &Version,
        attestation: &SignedAttestation,
    ) -> Result<AttestationAccepted> {
        self.require_registry()?;
        let refused = |reason: String| -> crate::Error {
            ErrorKind::AttestationRefused {
                package: name.clone(),
                version: version.clone(),
                registry: self.url.clone(),
                reason,
            }
            .into()
        };
        let entries =
            self.index(name)?.ok_or_else(|| ErrorKind::NoSuchPackage { name: name.clone(), url: self.url.clone() })?;
        let entry = self.entry_for(&entries, name, version)?;
        let Some(key_id) = attestation.key_hint() else {
            return Err(refused(
                "it names no key (a bundle's publicKey.hint); attest with `ebpkg attest --key`".into(),
            ));
        };
        let rebuild =
            attestation.statement().predicate_type == ebpkg_spec::attestation::rebuild::REBUILD_PREDICATE_TYPE;
        if !rebuild && !entries.iter().any(|e| e.signed_by.as_ref() == Some(key_id)) {
            return Err(refused(format!(
                "it is signed by key {key_id}, which signed no version of {name} in this registry: attest with the \
                 key the package is published with"
            )));
        }
        let key = self.publisher_key(key_id)?.key;
        attestation.verify(&key).map_err(|e| refused(e.to_string()))?;
        // A kernel verification names the kernels it observed; a rebuild none.
        let kernels: Vec<String> = if rebuild {
            attestation.rebuild(name, version, &entry.cksum).map_err(|e| refused(e.to_string()))?;
            Vec::new()
        } else {
            let observed =
                attestation.kernel_verification(name, version, &entry.cksum).map_err(|e| refused(e.to_string()))?;
            observed.kernels.iter().map(|k| k.kernel.release.clone()).collect()
        };
        let bundle: serde_json::Value =
            serde_json::from_str(attestation.json()).map_err(|e| refused(format!("its JSON: {e}")))?;

        let tuf_key = self.tuf_signer()?;
        let _lock = self.lock_for_writing()?;
        let path = self.attestation_path(name, version);
        let mut file = match ebpkg_fs::read(&path, MAX_ATTESTATION_FILE_BYTES) {
            Ok(bytes) => AttestationFile::parse(&bytes)
                .map_err(|e| ErrorKind::CorruptIndex { path: path.clone(), problem: e.to_string() })?,
            Err(e) if e.is_not_found() => AttestationFile::default(),
            Err(e) => return Err(self.damaged(e)),
        };
        if file.attestations.contains(&bundle) {
            return Ok(AttestationAccepted { attestations: file.attestations.len(), kernels, added: false });
        }
        if file.attestations.len() >= MAX_ATTESTATIONS {
            return Err(refused(format!(
                "{name}@{version} has {MAX_ATTESTATIONS} attestations, as many as a version may have"
            )));
        }
        file.attestations.push(bundle);
        let bytes = file.to_bytes();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(crate::Error::io("create", dir))?;
        }
        write_atomic(&path, &bytes)?;
        self.sign_tuf(tuf_key, &[(&path, &bytes)])?;
        tracing::info!(package = %name, %version, key = %key_id, registry = %self.url, "attestation added");
        Ok(AttestationAccepted { attestations: file.attestations.len(), kernels, added: true })
    }
}
