//! TUF signing keys: Ed25519, PKCS#8 DER files (what `tough` reads), written
//! private (0600).

use std::path::{Path, PathBuf};

use tough::key_source::{KeySource, LocalKeySource};
use tough::schema::decoded::{Decoded, Hex};
use tough::schema::key::Key;
use tough::sign::Sign;

use crate::{Error, Result};

/// Longest key file read.
const MAX_KEY_BYTES: u64 = 16 * 1024;

/// Writes a new Ed25519 key to `path` (which must not exist).
pub fn generate(path: &Path) -> Result<()> {
    use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&aws_lc_rs::rand::SystemRandom::new())
        .map_err(|e| Error::Metadata { detail: format!("generating a key: {e}") })?;
    // Checked once here so a key that cannot sign is never written.
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref())
        .map_err(|e| Error::Metadata { detail: format!("the generated key does not read back: {e}") })?;
    let _ = pair.public_key();
    if path.exists() {
        return Err(Error::BadFile { path: path.to_owned(), problem: "exists; refusing to overwrite a key".into() });
    }
    ebpkg_fs::write_atomic(path, pkcs8.as_ref(), 0o600)
        .map_err(|e| Error::Io { what: format!("writing {}", path.display()), cause: e })
}

/// A key file, as `tough` signs with it.
pub(crate) fn source(path: &Path) -> Box<dyn KeySource> {
    Box::new(LocalKeySource { path: PathBuf::from(path) })
}

/// The public half of a key file and its TUF key id.
pub(crate) fn public(path: &Path) -> Result<(Decoded<Hex>, Key)> {
    let bytes = ebpkg_fs::read(path, MAX_KEY_BYTES)
        .map_err(|e| Error::BadFile { path: path.to_owned(), problem: e.to_string() })?;
    let pair = tough::sign::parse_keypair(&bytes)
        .map_err(|e| Error::BadFile { path: path.to_owned(), problem: format!("not a signing key: {e}") })?;
    let key = pair.tuf_key();
    let id = key.key_id().map_err(|e| Error::BadFile { path: path.to_owned(), problem: format!("no key id: {e}") })?;
    Ok((id, key))
}
