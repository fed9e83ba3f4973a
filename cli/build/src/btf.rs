//! The kernel BTF the objects are built against, and the `vmlinux.h` bpftool
//! generates from it, cached by the BTF's digest.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ebpkg_spec::types::Sha256Digest;

use crate::cache;
use crate::error::BtfError;

/// Where the running kernel exposes its own BTF.
pub const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// A BTF file and the SHA-256 of its bytes. The digest, not the path, identifies
/// it: the same BTF copied elsewhere shares cached headers and objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Btf {
    path: PathBuf,
    digest: Sha256Digest,
}

/// A generated `vmlinux.h` in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VmlinuxHeader {
    /// The directory holding `vmlinux.h`, for `-I`.
    pub dir: PathBuf,
    /// The header itself.
    pub path: PathBuf,
    /// True when it was already in the cache (bpftool did not run).
    pub cached: bool,
}

/// Largest BTF file read; a kernel's is 5 to 10 MiB.
const MAX_BTF_BYTES: u64 = 256 * 1024 * 1024;

impl Btf {
    /// The running kernel's BTF, [`KERNEL_BTF`].
    pub fn kernel() -> Result<Btf, BtfError> {
        // (A test counts these: a command reads the kernel's BTF at most once.)
        tracing::debug!("reading the running kernel's BTF");
        let path = PathBuf::from(KERNEL_BTF);
        match ebpkg_fs::read(&path, MAX_BTF_BYTES) {
            Ok(bytes) => Btf::from_bytes(path, &bytes),
            Err(cause) => Err(BtfError::KernelMissing { cause }),
        }
    }

    /// A BTF file given by the user (`--btf FILE`), e.g. the target kernel's when
    /// building for another machine.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Btf, BtfError> {
        let path = path.as_ref().to_owned();
        let bytes = ebpkg_fs::read(&path, MAX_BTF_BYTES).map_err(BtfError::Read)?;
        Btf::from_bytes(path, &bytes)
    }

    fn from_bytes(path: PathBuf, bytes: &[u8]) -> Result<Btf, BtfError> {
        // BTF starts with the 16-bit magic 0xeB9F in the file's own byte order.
        if !(bytes.starts_with(&[0x9f, 0xeb]) || bytes.starts_with(&[0xeb, 0x9f])) {
            return Err(BtfError::NotBtf { path });
        }
        Ok(Btf { path, digest: Sha256Digest::of(bytes) })
    }

    /// The file the BTF was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// SHA-256 of the BTF bytes.
    pub fn digest(&self) -> Sha256Digest {
        self.digest
    }

    /// `<cache>/vmlinux/<btf digest>/vmlinux.h`, generated with `bpftool btf dump
    /// file <btf> format c` unless it is already there. Concurrent builders are
    /// safe: each writes its own temporary file and renames it into place, and
    /// bpftool's output depends only on the BTF bytes.
    pub fn vmlinux_h(&self, cache_dir: &Path, bpftool: &Path) -> Result<VmlinuxHeader, BtfError> {
        let dir = ebpkg_spec::cache_layout::CacheLayout::new(cache_dir).vmlinux_dir(&self.digest);
        let path = dir.join("vmlinux.h");
        if std::fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() > 0) {
            return Ok(VmlinuxHeader { dir, path, cached: true });
        }
        let out = Command::new(bpftool)
            .arg("btf")
            .arg("dump")
            .arg("file")
            .arg(&self.path)
            .args(["format", "c"])
            .stdin(Stdio::null())
            .output()
            .map_err(|cause| BtfError::RunBpftool { bpftool: bpftool.to_owned(), cause })?;
        if !out.status.success() || out.stdout.is_empty() {
            return Err(BtfError::Bpftool {
                btf: self.path.clone(),
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        let write = |cause| BtfError::Write { path: path.clone(), cause };
        cache::write_atomic(&path, &out.stdout).map_err(write)?;
        Ok(VmlinuxHeader { dir, path, cached: false })
    }
}
