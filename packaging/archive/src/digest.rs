//! SHA-256 of files read in blocks, as [`Sha256Digest`]s.

use std::io::{self, Read};
use std::path::Path;

use ebpkg_fs::ReadError;
use ebpkg_spec::digest::Hasher;
use ebpkg_spec::types::Sha256Digest;

/// The SHA-256 of the regular file at `path`, read in blocks so large files cost
/// little memory, and refused (without reading) when it is not a regular file or
/// is larger than `max` bytes.
pub fn sha256_file(path: &Path, max: u64) -> Result<Sha256Digest, ReadError> {
    let mut reader = ebpkg_fs::open(path, max)?.into_reader();
    let mut hasher = Hasher::new();
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
    Ok(hasher.finish())
}
