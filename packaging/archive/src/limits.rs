//! How much an archive may hold, when packing and when unpacking.

/// Bounds on what [`unpack`](crate::unpack) accepts. Archives come from the network, so
/// every resource they can make us spend is capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes the archive itself (the compressed file) may have. Checked before
    /// it is read, so a huge or endless file is refused without reading it.
    pub max_archive_bytes: u64,
    /// Most bytes the gzip stream may decompress to (the tar stream: headers, padding
    /// and file contents). Counted on the bytes really decompressed, so a header that
    /// lies about sizes cannot get past it.
    pub max_total_bytes: u64,
    /// Most bytes a single file may hold.
    pub max_file_bytes: u64,
    /// Most entries (files and directories) the archive may have.
    pub max_entries: u64,
    /// Most bytes decompressed per compressed byte consumed; above it the archive is
    /// taken for a decompression bomb.
    pub max_ratio: u64,
    /// The ratio is checked only once this many bytes have been decompressed, so that
    /// small, highly compressible archives (a few short text files) are not refused.
    pub ratio_grace_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // Anything `pack` makes fits: 64 MiB of files plus at most 20,000 headers
            // and paddings of 1 KiB each, which gzip does not grow.
            max_archive_bytes: 96 * MIB,
            max_total_bytes: 256 * MIB,
            max_file_bytes: 64 * MIB,
            max_entries: 20_000,
            max_ratio: 200,
            ratio_grace_bytes: MIB,
        }
    }
}

/// Bounds on what [`pack_with_limits`](crate::pack_with_limits) puts in an archive.
/// The defaults stay well inside [`Limits::default`], so anything packed with them
/// unpacks everywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackLimits {
    /// Most bytes the packed files may add up to, before compression.
    pub max_total_bytes: u64,
    /// Most files a package may hold.
    pub max_files: u64,
}

impl Default for PackLimits {
    fn default() -> Self {
        PackLimits { max_total_bytes: 64 * MIB, max_files: 20_000 }
    }
}

pub(crate) const MIB: u64 = 1024 * 1024;
