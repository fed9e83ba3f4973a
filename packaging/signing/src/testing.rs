//! Sigstore's own `cosign`, for interoperability tests (feature `testing`): the
//! pinned binary `ci/setup` builds into /opt/ebpkg-ci/cosign/bin, or the one
//! `EBPKG_TEST_COSIGN` names. A missing cosign is an error that says how to get
//! it: interoperability tests are never skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A cosign binary and the passphrase its keys are encrypted with.
pub struct Cosign {
    path: PathBuf,
    password: String,
    /// cosign's TUF cache (it never reaches for the public instance here): out of
    /// the directories it runs in, which may be a package being signed.
    tuf_root: tempfile::TempDir,
}

impl Cosign {
    pub fn locate(password: &str) -> Result<Cosign, String> {
        let path = std::env::var_os("EBPKG_TEST_COSIGN")
            .map_or_else(|| PathBuf::from("/opt/ebpkg-ci/cosign/bin/cosign"), PathBuf::from);
        if !path.is_file() {
            return Err(format!("cosign is not at {} (run ./ci/setup, or set EBPKG_TEST_COSIGN)", path.display()));
        }
        let tuf_root = tempfile::tempdir().map_err(|e| format!("a temporary directory for cosign: {e}"))?;
        Ok(Cosign { path, password: password.to_owned(), tuf_root })
    }

    /// Runs `cosign args…` in `dir`, offline; its output, or what it said when it failed.
    pub fn run(&self, dir: &Path, args: &[&str]) -> Result<Output, String> {
        let out = Command::new(&self.path)
            .args(args)
            .current_dir(dir)
            .env("COSIGN_PASSWORD", &self.password)
            // Never reach for the public Sigstore instance or a TUF mirror.
            .env("TUF_ROOT", self.tuf_root.path())
            .env("SIGSTORE_NO_CACHE", "1")
            .output()
            .map_err(|e| format!("running {}: {e}", self.path.display()))?;
        if !out.status.success() {
            return Err(format!(
                "cosign {args:?} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(out)
    }

    /// `cosign sign-blob` of `blob` with the private key file `key`, writing the
    /// bundle to `bundle` (all in `dir`), with a signing configuration that
    /// names no transparency log or timestamp authority.
    pub fn sign_blob(&self, dir: &Path, key: &str, bundle: &str, blob: &str) -> Result<(), String> {
        if !dir.join("sc.json").is_file() {
            self.run(dir, &["signing-config", "create", "--out", "sc.json"])?;
        }
        self.run(dir, &["sign-blob", "--key", key, "--bundle", bundle, "--signing-config", "sc.json", "--yes", blob])?;
        Ok(())
    }

    /// `cosign attest-blob` of `blob` with the private key file `key` and the
    /// predicate file `predicate` of type `predicate_type`, writing the bundle to
    /// `bundle` (all in `dir`), with no transparency log or timestamp authority.
    pub fn attest_blob(
        &self,
        dir: &Path,
        key: &str,
        predicate: &str,
        predicate_type: &str,
        bundle: &str,
        blob: &str,
    ) -> Result<(), String> {
        if !dir.join("sc.json").is_file() {
            self.run(dir, &["signing-config", "create", "--out", "sc.json"])?;
        }
        self.run(
            dir,
            &[
                "attest-blob",
                "--key",
                key,
                "--predicate",
                predicate,
                "--type",
                predicate_type,
                "--bundle",
                bundle,
                "--signing-config",
                "sc.json",
                "--yes",
                blob,
            ],
        )?;
        Ok(())
    }

    /// `cosign verify-blob-attestation` of `blob` against the bundle `bundle`,
    /// with the public key file `key`, for `predicate_type`, offline.
    pub fn verify_blob_attestation(
        &self,
        dir: &Path,
        key: &str,
        bundle: &str,
        predicate_type: &str,
        blob: &str,
    ) -> Result<Output, String> {
        self.run(
            dir,
            &[
                "verify-blob-attestation",
                "--key",
                key,
                "--bundle",
                bundle,
                "--type",
                predicate_type,
                "--insecure-ignore-tlog",
                blob,
            ],
        )
    }
}
