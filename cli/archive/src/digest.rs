//! SHA-256 of archives and files, as [`Sha256Digest`]s.

use std::io::{self, Read};
use std::path::Path;

use ebpkg_input::ReadError;
use ebpkg_spec::types::Sha256Digest;
use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> Sha256Digest {
    Sha256Digest(Sha256::digest(bytes).into())
}

/// The SHA-256 of the regular file at `path`, read in blocks so large files cost
/// little memory, and refused (without reading) when it is not a regular file or
/// is larger than `max` bytes.
pub fn sha256_file(path: &Path, max: u64) -> Result<Sha256Digest, ReadError> {
    let mut reader = ebpkg_input::open(path, max)?.into_reader();
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(cause) => return Err(ReadError::Io { path: path.to_owned(), cause }),
        };
        hasher.update(&buf[..n]);
    }
    Ok(Sha256Digest(hasher.finalize().into()))
}
