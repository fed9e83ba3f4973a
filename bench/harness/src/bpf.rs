//! Plain BPF objects beside HIKe: built with the same toolchain and kernel BTF as
//! packages, loaded with libbpf, attached to interfaces inside namespaces, and run
//! with BPF_PROG_TEST_RUN (optionally as live frames that really go out).

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use libbpf_rs::libbpf_sys;
use libbpf_rs::{MapCore, MapFlags, Object, ObjectBuilder};

use crate::netns::Netns;

/// Compiles a plain (non-HIKe) BPF C file, portable like packages' objects: against
/// the SDK's reference kernel types (`#include "vmlinux.h"`), so libbpf relocates
/// it on whatever kernel loads it. The object is kept in `cache` (a build cache)
/// under the digest of the source, the flags and the SDK, so a machine (or a test
/// guest) that has it runs no compiler; clang is looked for only to build it.
pub fn compile(source: &Path, cache: &Path) -> Result<Vec<u8>> {
    let text =
        ebpkg_fs::read(source, ebpkg_spec::MAX_OBJECT_BYTES).with_context(|| format!("read {}", source.display()))?;
    let host = std::env::consts::ARCH;
    let arch = ebpkg_build::target_arch(host).with_context(|| format!("no BPF target for {host}"))?;
    let mut flags: Vec<String> = hike_sdk_headers::CFLAGS.iter().map(|f| (*f).to_owned()).collect();
    flags.extend([format!("-D__TARGET_ARCH_{arch}"), "-Wall".to_owned(), "-Werror".to_owned()]);
    let mut key = ebpkg_spec::digest::FieldHasher::new();
    key.field("harness-object", &1u32.to_le_bytes());
    key.field("source", &text);
    for f in &flags {
        key.field("flag", f.as_bytes());
    }
    key.field("sdk", &ebpkg_build::sdk_headers::digest().0);
    let object = ebpkg_build::object_path(cache, &key.finish());
    if let Ok(bytes) = ebpkg_fs::read(&object, ebpkg_spec::MAX_OBJECT_BYTES)
        && ebpkg_build::check_bpf_object(&bytes).is_ok()
    {
        return Ok(bytes);
    }

    let tools = ebpkg_build::Toolchain::detect(&ebpkg_build::ToolchainOptions::default())?;
    let sdk =
        ebpkg_build::sdk_headers::install(cache).with_context(|| format!("install the SDK in {}", cache.display()))?;
    let dir = object.parent().with_context(|| format!("{} has no directory", object.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let out = tempfile::Builder::new()
        .prefix(&ebpkg_build::temps::prefix())
        .suffix(".o")
        .tempfile_in(dir)
        .with_context(|| format!("a temporary file in {}", dir.display()))?
        .into_temp_path();
    let run = Command::new(&tools.clang)
        .args(&flags)
        .arg("-I")
        .arg(&sdk.reference)
        .arg("-c")
        .arg(source)
        .arg("-o")
        .arg(&out)
        .output()
        .with_context(|| format!("run {}", tools.clang.display()))?;
    if !run.status.success() {
        bail!("clang failed on {}:\n{}", source.display(), String::from_utf8_lossy(&run.stderr));
    }
    let bytes = std::fs::read(&out).with_context(|| format!("read {}", out.display()))?;
    out.persist(&object).with_context(|| format!("keep {}", object.display()))?;
    Ok(bytes)
}

/// A loaded object; its attachments go when it is dropped.
pub struct Loaded {
    obj: Object,
    links: Vec<OwnedFd>,
}

/// What a test run produced.
#[derive(Debug, Clone)]
pub struct Run {
    pub verdict: u32,
    pub packet: Vec<u8>,
    /// Average per repetition, as the kernel measured it.
    pub duration: Duration,
}

/// Runs `prog_fd` on `packet` with BPF_PROG_TEST_RUN (the runtime's one way of
/// doing it). `ingress_ifindex` (when not 0) is the interface the packet arrives
/// on, in the calling thread's namespace; with `live`, what the program transmits
/// or redirects really goes out.
pub fn test_run(prog_fd: RawFd, packet: &[u8], ingress_ifindex: u32, live: bool, repeat: u32) -> Result<Run> {
    // SAFETY: the caller's descriptor stays open for the call.
    let prog = unsafe { std::os::fd::BorrowedFd::borrow_raw(prog_fd) };
    let opts = hike_runtime::TestRunOptions { repeat, ingress_ifindex, live_frames: live };
    let run = hike_runtime::run_program(prog, packet, &opts).context("BPF_PROG_TEST_RUN")?;
    Ok(Run { verdict: run.verdict, packet: run.packet, duration: run.duration })
}

impl Loaded {
    /// Loads an object (all its programs; maps unpinned).
    pub fn load(elf: &[u8], name: &str) -> Result<Loaded> {
        let mut b = ObjectBuilder::default();
        b.name(name)?;
        let obj = b.open_memory(elf)?.load().with_context(|| format!("load {name}"))?;
        Ok(Loaded { obj, links: Vec::new() })
    }

    /// The file descriptor of program `name`.
    pub fn prog_fd(&self, name: &str) -> Result<RawFd> {
        self.obj
            .progs()
            .find(|p| p.name() == name)
            .map(|p| p.as_fd().as_raw_fd())
            .with_context(|| format!("no program {name}"))
    }

    /// Attaches program `prog` to interface `dev` of namespace `ns` (an XDP link,
    /// detached when this object is dropped).
    pub fn attach(&mut self, prog: &str, ns: &Netns, dev: &str) -> Result<()> {
        let fd = self.prog_fd(prog)?;
        let ifindex = ns.ifindex(dev)?;
        let link = ns.run(move || {
            // SAFETY: an all-zero opts struct with its size set is valid.
            let opts = libbpf_sys::bpf_link_create_opts {
                sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _,
                ..Default::default()
            };
            // SAFETY: `fd` is a valid program fd and `opts` is initialized.
            unsafe { libbpf_sys::bpf_link_create(fd, ifindex as i32, libbpf_sys::BPF_XDP, &opts) }
        })?;
        if link < 0 {
            return Err(std::io::Error::from_raw_os_error(-link)).with_context(|| format!("attach {prog} to {dev}"));
        }
        // SAFETY: bpf_link_create returned a new fd that nothing else owns.
        self.links.push(unsafe { OwnedFd::from_raw_fd(link) });
        Ok(())
    }

    fn map(&self, name: &str) -> Result<libbpf_rs::Map<'_>> {
        self.obj.maps().find(|m| m.name() == name).with_context(|| format!("no map {name}"))
    }

    /// Writes an entry of map `map`.
    pub fn update(&self, map: &str, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.map(map)?.update(key, value, MapFlags::ANY)?)
    }

    /// Puts program `prog` at `index` of program array `map`.
    pub fn set_prog(&self, map: &str, index: u32, prog: &str) -> Result<()> {
        let fd = self.prog_fd(prog)?;
        self.update(map, &index.to_le_bytes(), &(fd as u32).to_le_bytes())
    }

    /// The sum over CPUs of the u64 at the start of a per-CPU map's value.
    pub fn percpu_u64(&self, map: &str, key: &[u8]) -> Result<u64> {
        self.counter(map, key)?.read()
    }

    /// A handle on that sum that can be read from another thread.
    pub fn counter(&self, map: &str, key: &[u8]) -> Result<Counter> {
        let handle = libbpf_rs::MapHandle::try_from(&self.map(map)?)?;
        Ok(Counter { handle, key: key.to_vec() })
    }
}

/// The u64 at the start of one per-CPU map value, summed over CPUs.
pub struct Counter {
    handle: libbpf_rs::MapHandle,
    key: Vec<u8>,
}

impl Counter {
    pub fn read(&self) -> Result<u64> {
        let values = self.handle.lookup_percpu(&self.key, MapFlags::ANY)?.unwrap_or_default();
        Ok(values.iter().map(|v| v.get(..8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or_default()))).sum())
    }
}
