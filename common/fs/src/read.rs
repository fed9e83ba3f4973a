//! Reading files that come from outside the process: a registry, a cache, a
//! package, a project directory. Whoever controls such a file may have replaced it
//! with a symbolic link to `/dev/zero`, a FIFO that never delivers, or a sparse file
//! of many gigabytes, so every read here
//!
//! - opens without blocking (a FIFO opens at once instead of waiting for a writer),
//! - refuses anything but a regular file, before reading a byte,
//! - compares the size the file system reports with the caller's bound before
//!   reading, and
//! - still stops one byte past the bound, because a file can grow while it is read.
//!
//! Symbolic links are followed: a link to a regular file is that file.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path} does not exist")]
    NotFound { path: PathBuf },
    #[error("{path} is a {kind}, not a regular file; it cannot be read as one (replace it with the file it should be)")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{path} is {size} bytes, more than the {max} bytes such a file may have")]
    TooLarge { path: PathBuf, size: u64, max: u64 },
    #[error("cannot read {path}: {cause}")]
    Io { path: PathBuf, cause: io::Error },
}

impl ReadError {
    /// Whether the file was simply missing (callers often treat that as "none").
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::NotFound { .. })
    }

    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::NotFound { path }
            | ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::Io { path, .. } => path,
        }
    }
}

/// A regular file opened for reading, with its size checked against `max`.
pub struct Regular {
    pub file: File,
    pub size: u64,
    max: u64,
    path: PathBuf,
}

impl Regular {
    /// Reads the whole file into memory, never more than `max` bytes.
    pub fn read_all(self) -> Result<Vec<u8>, ReadError> {
        self.read_all_keep().map(|(bytes, _)| bytes)
    }

    /// [`Regular::read_all`], and the file itself afterwards, so that what it is
    /// (device, inode, times) can be told of exactly the bytes read.
    pub fn read_all_keep(self) -> Result<(Vec<u8>, File), ReadError> {
        let Regular { mut file, size, max, path } = self;
        // The size is a hint (the file may change): capacity no larger than the bound.
        let mut bytes = Vec::with_capacity(size.min(max) as usize);
        let read = (&mut file).take(max + 1).read_to_end(&mut bytes);
        read.map_err(|cause| ReadError::Io { path: path.clone(), cause })?;
        if bytes.len() as u64 > max {
            return Err(ReadError::TooLarge { path, size: bytes.len() as u64, max });
        }
        Ok((bytes, file))
    }

    /// A reader over the file that ends with an error once more than `max` bytes
    /// have been read, for callers that stream (hashing, copying).
    pub fn into_reader(self) -> Capped {
        Capped { inner: self.file, left: self.max, max: self.max, path: self.path }
    }
}

/// A file reader that fails instead of reading past its bound.
pub struct Capped {
    inner: File,
    left: u64,
    max: u64,
    path: PathBuf,
}

impl Read for Capped {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            // One probe byte tells a file of exactly `max` bytes from a longer one.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::new(
                    io::ErrorKind::FileTooLarge,
                    format!("{} grew past {} bytes while it was read", self.path.display(), self.max),
                )),
            };
        }
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Opens `path` if it is a regular file of at most `max` bytes.
pub fn open(path: &Path, max: u64) -> Result<Regular, ReadError> {
    // Every read of a file from outside passes here: `EBPKG_LOG=ebpkg_fs=trace`
    // shows (and a test counts) what a command reads, and how often.
    tracing::trace!(path = %path.display(), "opening to read");
    let owned = || path.to_owned();
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32 | rustix::fs::OFlags::NOCTTY.bits() as i32)
        .open(path)
        .map_err(|cause| match cause.kind() {
            io::ErrorKind::NotFound => ReadError::NotFound { path: owned() },
            _ => ReadError::Io { path: owned(), cause },
        })?;
    let meta = file.metadata().map_err(|cause| ReadError::Io { path: owned(), cause })?;
    check_regular(path, &meta)?;
    if meta.len() > max {
        return Err(ReadError::TooLarge { path: owned(), size: meta.len(), max });
    }
    Ok(Regular { file, size: meta.len(), max, path: owned() })
}

/// The whole of the regular file at `path`, at most `max` bytes.
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    open(path, max)?.read_all()
}

/// [`read`], as UTF-8 text. Invalid UTF-8 is an `InvalidData` I/O error naming the
/// byte offset of the first invalid byte.
pub fn read_text(path: &Path, max: u64) -> Result<String, ReadError> {
    let bytes = read(path, max)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        ReadError::Io {
            path: path.to_owned(),
            cause: io::Error::new(io::ErrorKind::InvalidData, format!("it is not UTF-8 text (byte {at})")),
        }
    })
}

/// Refuses what is not a regular file, naming what it is.
pub fn check_regular(path: &Path, meta: &Metadata) -> Result<(), ReadError> {
    if meta.file_type().is_file() {
        return Ok(());
    }
    Err(ReadError::NotRegular { path: path.to_owned(), kind: kind_name(meta.file_type()) })
}

/// What a file type is, in words: "directory", "named pipe", "character device", ….
pub fn kind_name(kind: FileType) -> &'static str {
    if kind.is_file() {
        "regular file"
    } else if kind.is_dir() {
        "directory"
    } else if kind.is_symlink() {
        "symbolic link"
    } else if kind.is_fifo() {
        "named pipe"
    } else if kind.is_char_device() {
        "character device"
    } else if kind.is_block_device() {
        "block device"
    } else if kind.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn reads_a_regular_file_and_a_link_to_one() {
        let dir = tmp();
        let file = dir.path().join("f");
        std::fs::write(&file, b"hello").unwrap();
        std::os::unix::fs::symlink(&file, dir.path().join("l")).unwrap();
        assert_eq!(read(&file, 5).unwrap(), b"hello");
        assert_eq!(read(&dir.path().join("l"), 5).unwrap(), b"hello");
    }

    #[test]
    fn refuses_devices_fifos_and_directories_without_reading() {
        let dir = tmp();
        let link = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(matches!(read(&link, 10), Err(ReadError::NotRegular { kind: "character device", .. })));
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        // Without O_NONBLOCK this open would wait for a writer forever.
        assert!(matches!(read(&fifo, 10), Err(ReadError::NotRegular { kind: "named pipe", .. })));
        assert!(matches!(read(dir.path(), 10), Err(ReadError::NotRegular { kind: "directory", .. })));
        let err = read(&link, 10).unwrap_err().to_string();
        assert!(err.contains("zero is a character device, not a regular file"), "{err}");
    }

    #[test]
    fn refuses_a_sparse_file_by_its_size_before_reading() {
        let dir = tmp();
        let path = dir.path().join("sparse");
        let f = File::create(&path).unwrap();
        f.set_len(50 << 30).unwrap();
        match read(&path, 1 << 20) {
            Err(ReadError::TooLarge { size, max, .. }) => assert_eq!((size, max), (50 << 30, 1 << 20)),
            other => panic!("{other:?}"),
        }
        assert!(read(&path, 1 << 20).unwrap_err().to_string().contains("53687091200 bytes, more than the 1048576"));
    }

    #[test]
    fn a_missing_file_is_not_found() {
        let dir = tmp();
        assert!(read(&dir.path().join("none"), 1).unwrap_err().is_not_found());
    }

    #[test]
    fn the_bound_is_inclusive_and_the_reader_is_capped() {
        let dir = tmp();
        let path = dir.path().join("f");
        std::fs::write(&path, [7u8; 100]).unwrap();
        assert_eq!(read(&path, 100).unwrap().len(), 100);
        assert!(matches!(read(&path, 99), Err(ReadError::TooLarge { .. })));
        let mut all = Vec::new();
        open(&path, 100).unwrap().into_reader().read_to_end(&mut all).unwrap();
        assert_eq!(all.len(), 100);
        // The file grows after the size check: the reader stops at the bound.
        let opened = open(&path, 100).unwrap();
        std::fs::write(&path, [7u8; 300]).unwrap();
        let err = opened.into_reader().read_to_end(&mut Vec::new()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
    }

    #[test]
    fn text_names_the_first_invalid_byte() {
        let dir = tmp();
        let path = dir.path().join("f");
        std::fs::write(&path, b"ab\xffc").unwrap();
        assert!(read_text(&path, 10).unwrap_err().to_string().contains("not UTF-8 text (byte 2)"));
    }
}
