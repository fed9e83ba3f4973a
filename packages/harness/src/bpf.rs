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

/// Compiles a plain (non-HIKe) BPF C file against the running kernel's BTF, with
/// the toolchain packages are built with. `cache` holds the generated vmlinux.h.
pub fn compile(source: &Path, cache: &Path) -> Result<Vec<u8>> {
    let tools = ebpkg_build::Toolchain::detect(&ebpkg_build::ToolchainOptions::default())?;
    let btf = ebpkg_build::Btf::kernel()?;
    let vmlinux = btf.vmlinux_h(cache, &tools.bpftool)?;
    let out = tempfile_path(source)?;
    let run = Command::new(&tools.clang)
        .args(["-O2", "-g", "-target", "bpf", &format!("-D__TARGET_ARCH_{}", tools.arch), "-Wall", "-Werror"])
        .arg("-I")
        .arg(&vmlinux.dir)
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
    let _ = std::fs::remove_file(&out);
    Ok(bytes)
}

fn tempfile_path(source: &Path) -> Result<std::path::PathBuf> {
    let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(std::env::temp_dir().join(format!("{stem}-{}-{:?}.o", std::process::id(), std::thread::current().id())))
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

/// `BPF_F_TEST_XDP_LIVE_FRAMES`.
const LIVE_FRAMES: u32 = 1 << 1;

/// Runs `prog_fd` on `packet` with BPF_PROG_TEST_RUN. `ingress_ifindex` (when not
/// 0) is the interface the packet arrives on, in the calling thread's namespace;
/// with `live`, what the program transmits or redirects really goes out.
pub fn test_run(prog_fd: RawFd, packet: &[u8], ingress_ifindex: u32, live: bool, repeat: u32) -> Result<Run> {
    let mut out = vec![0u8; packet.len() + 256];
    // struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex.
    let mut ctx = [0u32; 6];
    ctx[1] = packet.len() as u32;
    ctx[3] = ingress_ifindex;
    let mut opts = libbpf_sys::bpf_test_run_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _,
        data_in: packet.as_ptr().cast(),
        data_size_in: packet.len() as u32,
        repeat: repeat as i32,
        ..Default::default()
    };
    if live {
        opts.flags = LIVE_FRAMES;
    } else {
        opts.data_out = out.as_mut_ptr().cast();
        opts.data_size_out = out.len() as u32;
    }
    if ingress_ifindex != 0 || live {
        opts.ctx_in = ctx.as_mut_ptr().cast();
        opts.ctx_size_in = std::mem::size_of_val(&ctx) as u32;
    }
    // Like the runtime's test runs: on one CPU, so variants are measured alike.
    let before = rustix::thread::sched_getaffinity(None).context("sched_getaffinity")?;
    let mut only = rustix::thread::CpuSet::new();
    only.set(rustix::thread::sched_getcpu());
    rustix::thread::sched_setaffinity(None, &only).context("sched_setaffinity")?;
    // SAFETY: the buffers outlive the call and their sizes are given.
    let rc = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog_fd, &mut opts) };
    rustix::thread::sched_setaffinity(None, &before).context("sched_setaffinity")?;
    if rc < 0 {
        return Err(std::io::Error::from_raw_os_error(-rc)).context("BPF_PROG_TEST_RUN");
    }
    out.truncate((opts.data_size_out as usize).min(out.len()));
    if live {
        out.clear();
    }
    Ok(Run { verdict: opts.retval, packet: out, duration: Duration::from_nanos(u64::from(opts.duration)) })
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
