//! Where [`unpack`](crate::unpack)'s walk over an archive puts each entry: the
//! staging directory (`extract.rs`) or a comparison with a tree unpacked before
//! (`compare.rs`). Below all three, so that the walk and its targets do not
//! import each other.

use std::io::Write;
use std::path::PathBuf;

use crate::error::UnpackError;

/// Where the entries of an archive go: a staging directory when unpacking, a
/// comparison with an unpacked tree when checking one.
pub(crate) trait Target {
    type File: Write;
    fn create_dir(&mut self, rel: &str) -> Result<(), UnpackError>;
    fn create_file(&mut self, rel: &str, executable: bool, size: u64) -> Result<Self::File, UnpackError>;
    /// Called after the entry's bytes were all written to `file`.
    fn finish_file(&mut self, rel: &str, file: Self::File) -> Result<(), UnpackError>;
    /// Called with the bytes of `ebpkg.toml` once they were all read.
    fn manifest_read(&mut self, bytes: &[u8]) {
        let _ = bytes;
    }
    /// The path errors about `rel` name.
    fn path_of(&self, rel: &str) -> PathBuf;
}
