//! Helpers shared by the integration tests: package directories on disk, hand-made
//! tar streams, and an unpack site whose surroundings can be checked for leaks.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use ebpkg_spec::types::Sha256Digest;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use ebpkg_archive::{Limits, PackageFiles, UnpackError, Unpacked, VerifiedArchive, read_verified, unpack};
use ebpkg_spec::PackageName;
use flate2::Compression;
use flate2::write::GzEncoder;
use tempfile::TempDir;

pub const MANIFEST: &str = r#"[package]
name = "demo"
version = "1.0.0"
readme = "README.md"

[[program]]
name = "counter"
source = "src/counter.bpf.c"
hook = "xdp"

[[chain]]
name = "ddos"
source = "chains/ddos.eclat"
"#;

pub fn manifest_for(name: &str, version: &str) -> String {
    format!("[package]\nname = \"{name}\"\nversion = \"{version}\"\n")
}

/// Writes `files` (path, contents) under `root`, creating directories.
pub fn write_files(root: &Path, files: &[(&str, &[u8])]) {
    for (path, contents) in files {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, contents).unwrap();
    }
}

/// A small valid package: manifest, readme, one program, one chain, a script.
pub fn demo_package(root: &Path) {
    write_files(
        root,
        &[
            ("ebpkg.toml", MANIFEST.as_bytes()),
            ("README.md", b"# demo\n"),
            ("src/counter.bpf.c", b"int counter(void) { return 0; }\n"),
            ("chains/ddos.eclat", b"def chain():\n    return 0\n"),
            ("tools/gen.sh", b"#!/bin/sh\necho hi\n"),
        ],
    );
    fs::set_permissions(root.join("tools/gen.sh"), fs::Permissions::from_mode(0o755)).unwrap();
}

/// Every file under `root` as (relative path, contents, mode), sorted.
pub fn tree(root: &Path) -> Vec<(String, Vec<u8>, u32)> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                pending.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_str().unwrap().to_owned();
                out.push((rel, fs::read(&path).unwrap(), meta.permissions().mode() & 0o7777));
            }
        }
    }
    out.sort();
    out
}

pub fn gzip(tar: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(tar).unwrap();
    encoder.finish().unwrap()
}

pub fn gunzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
    out
}

/// A tar stream written block by block, with headers set byte for byte so that the
/// tar crate's own path checks cannot stop a hostile name.
#[derive(Default)]
pub struct RawTar {
    pub bytes: Vec<u8>,
}

impl RawTar {
    pub fn new() -> Self {
        RawTar::default()
    }

    /// A GNU header for `path` (at most 100 bytes), type `kind`, claiming `size` bytes.
    pub fn header(path: &[u8], kind: tar::EntryType, size: u64) -> tar::Header {
        let mut header = tar::Header::new_gnu();
        header.as_gnu_mut().unwrap().name[..path.len()].copy_from_slice(path);
        header.set_entry_type(kind);
        header.set_size(size);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        header
    }

    /// Appends `header` then `data`, padded to a block, as given: sizes may disagree.
    pub fn raw(&mut self, header: &tar::Header, data: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(header.as_bytes());
        self.bytes.extend_from_slice(data);
        let pad = (512 - data.len() % 512) % 512;
        self.bytes.extend(std::iter::repeat_n(0, pad));
        self
    }

    pub fn file(&mut self, path: &[u8], data: &[u8]) -> &mut Self {
        let header = Self::header(path, tar::EntryType::Regular, data.len() as u64);
        self.raw(&header, data)
    }

    pub fn dir(&mut self, path: &[u8]) -> &mut Self {
        let mut header = Self::header(path, tar::EntryType::Directory, 0);
        header.set_mode(0o755);
        header.set_cksum();
        self.raw(&header, &[])
    }

    /// An entry of type `kind` whose link target is `target`.
    pub fn link(&mut self, path: &[u8], kind: tar::EntryType, target: &[u8]) -> &mut Self {
        let mut header = Self::header(path, kind, 0);
        header.as_old_mut().linkname[..target.len()].copy_from_slice(target);
        header.set_cksum();
        self.raw(&header, &[])
    }

    /// The valid manifest of `demo` 1.0.0, at its place.
    pub fn demo_manifest(&mut self) -> &mut Self {
        self.file(b"demo-1.0.0/ebpkg.toml", manifest_for("demo", "1.0.0").as_bytes())
    }

    /// The stream with its end-of-archive blocks, gzipped.
    pub fn finish(&self) -> Vec<u8> {
        let mut bytes = self.bytes.clone();
        bytes.extend(std::iter::repeat_n(0, 1024));
        gzip(&bytes)
    }
}

/// Where a test unpacks: `<tmp>/cache/pkg` is the destination and `<tmp>/sentinel` a
/// directory an escaping entry would land near. After a refused archive the whole
/// temporary tree must hold nothing but those two empty directories.
pub struct Site {
    pub tmp: TempDir,
    pub dest: PathBuf,
}

impl Site {
    pub fn new() -> Self {
        let tmp = TempDir::new().unwrap();
        fs::create_dir(tmp.path().join("cache")).unwrap();
        fs::create_dir(tmp.path().join("sentinel")).unwrap();
        let dest = tmp.path().join("cache").join("pkg");
        Site { tmp, dest }
    }

    pub fn unpack(&self, bytes: &[u8], name: &str, version: &str, limits: &Limits) -> Result<Unpacked, UnpackError> {
        let name = PackageName::new(name).unwrap();
        let version = semver::Version::parse(version).unwrap();
        unpack(bytes, &Sha256Digest::of(bytes), &name, &version, &self.dest, limits)
    }

    /// Unpacks `bytes` as demo 1.0.0 with `limits`, expecting a refusal, and checks
    /// that nothing was left anywhere, and that reading it in memory
    /// ([`read_verified`]) refuses it alike.
    pub fn refuse(&self, bytes: &[u8], limits: &Limits) -> UnpackError {
        let err = match self.unpack(bytes, "demo", "1.0.0", limits) {
            Ok(u) => panic!("archive was accepted: {u:?}"),
            Err(e) => e,
        };
        self.assert_clean();
        match read_in_memory(bytes, "demo", "1.0.0", limits) {
            Ok(files) => panic!("unpacking refused it ({err}), reading it in memory did not: {:?}", files.manifest),
            Err(in_memory) => assert_eq!(in_memory.to_string(), err.to_string(), "refused alike in memory"),
        }
        err
    }

    /// Nothing but the empty `cache` and `sentinel` directories exists.
    pub fn assert_clean(&self) {
        let mut found = Vec::new();
        let mut pending = vec![self.tmp.path().to_path_buf()];
        while let Some(dir) = pending.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path.strip_prefix(self.tmp.path()).unwrap().to_string_lossy().into_owned();
                if fs::symlink_metadata(&path).unwrap().is_dir() {
                    pending.push(path);
                }
                found.push(rel);
            }
        }
        found.sort();
        assert_eq!(found, ["cache", "sentinel"], "something was left behind");
    }
}

/// `bytes` checked against their own digest and read in memory as `name`
/// `version`, every file kept.
pub fn read_in_memory(bytes: &[u8], name: &str, version: &str, limits: &Limits) -> Result<PackageFiles, UnpackError> {
    let name = PackageName::new(name).unwrap();
    let version = semver::Version::parse(version).unwrap();
    let archive = VerifiedArchive::check(bytes.to_vec(), &Sha256Digest::of(bytes), limits)?;
    read_verified(&archive, &name, &version, limits, |_, _| true)
}

/// Bytes that do not compress: a xorshift stream.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
