//! `ebpkg.toml`: the package manifest.
//!
//! Reading happens in three steps, each with its own errors: bytes (size, UTF-8),
//! TOML shape (serde, unknown keys refused with a suggestion), then the rules of
//! SPEC.md (names, semver, SPDX, paths, uniqueness), where every problem in the file
//! is reported at once.

mod model;
pub(crate) mod raw;
mod validate;

use std::path::Path;

pub use model::*;

use crate::diagnostic::Diagnostics;
use crate::toml_input;

/// The file name of a manifest.
pub const MANIFEST_FILE: &str = "ebpkg.toml";

/// Why a manifest file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Missing, not a regular file (a FIFO, a device), too large, or unreadable.
    #[error(transparent)]
    Io(#[from] ebpkg_fs::ReadError),
    #[error("{diagnostics}")]
    Invalid {
        diagnostics: Diagnostics,
        /// The file's text, for rendering the diagnostics with source lines; empty
        /// when the file was not text.
        source_text: String,
    },
}

impl ManifestError {
    /// The error with source lines and carets, as the CLI prints it.
    pub fn render(&self) -> String {
        match self {
            ManifestError::Io(_) => format!("{self}\n"),
            ManifestError::Invalid { diagnostics, source_text } => diagnostics.render(source_text),
        }
    }
}

impl Manifest {
    /// Parses and validates manifest text. `file` is the name used in errors.
    pub fn parse(source: &str, file: &str) -> Result<Manifest, Diagnostics> {
        Manifest::parse_bytes(source.as_bytes(), file)
    }

    /// Parses and validates manifest bytes, checking size and encoding first.
    pub fn parse_bytes(bytes: &[u8], file: &str) -> Result<Manifest, Diagnostics> {
        let source = toml_input::decode(bytes, file, toml_input::MAX_TOML_BYTES)?;
        let raw: raw::RawManifest = toml_input::from_str(source, file)?;
        let mut checker = validate::Checker::new(file, source);
        checker.item_namespace(&raw);
        let manifest = checker.manifest(raw);
        match (manifest, Diagnostics::from_vec(checker.diags)) {
            (Some(m), None) => Ok(m),
            (_, Some(d)) => Err(d),
            // The checker only withholds a manifest when it reported why.
            (None, None) => Err(crate::diagnostic::Diagnostic::new(file, source, 0..0, "invalid manifest").into()),
        }
    }

    /// Reads and validates the manifest at `path`. Errors name the path as given.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        Manifest::load_with_bytes(path).map(|(manifest, _)| manifest)
    }

    /// [`Manifest::load`], with the bytes it was read from: for a caller that
    /// hashes or stores the file, so that it is read once.
    pub fn load_with_bytes(path: &Path) -> Result<(Manifest, Vec<u8>), ManifestError> {
        let bytes = read_capped(path, toml_input::MAX_TOML_BYTES)?;
        let file = path.display().to_string();
        match Manifest::parse_bytes(&bytes, &file) {
            Ok(manifest) => Ok((manifest, bytes)),
            Err(diagnostics) => {
                Err(ManifestError::Invalid { diagnostics, source_text: String::from_utf8(bytes).unwrap_or_default() })
            }
        }
    }
}

/// Reads a TOML file of at most the size any such file may have; a FIFO, a device
/// or a huge file is refused without being read.
pub(crate) fn read_capped(path: &Path, limit: usize) -> Result<Vec<u8>, ManifestError> {
    Ok(ebpkg_fs::read(path, limit as u64)?)
}
