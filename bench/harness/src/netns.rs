//! Network namespaces (`ip netns`) and veth pairs for scenarios, removed on drop.

use std::os::fd::AsFd;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// A named network namespace, deleted (with its interfaces) on drop.
pub struct Netns {
    pub name: String,
}

/// Runs `ip` with `args`.
pub fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip").args(args).output().context("run ip (iproute2; ci/setup installs it)")?;
    if !out.status.success() {
        bail!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

impl Netns {
    /// Creates namespace `name` (replacing a stale one of the same name) with its
    /// loopback up and IPv6 neighbour discovery off unless `ipv6` (so that the
    /// only packets on its interfaces are the scenario's).
    pub fn new(name: &str, ipv6: bool) -> Result<Netns> {
        let _ = Command::new("ip").args(["netns", "del", name]).output();
        ip(&["netns", "add", name])?;
        let ns = Netns { name: name.to_owned() };
        ns.ip(&["link", "set", "lo", "up"])?;
        if !ipv6 {
            ns.sysctl("net/ipv6/conf/all/disable_ipv6", "1")?;
            ns.sysctl("net/ipv6/conf/default/disable_ipv6", "1")?;
        }
        Ok(ns)
    }

    /// `ip -n <ns> args…`
    pub fn ip(&self, args: &[&str]) -> Result<()> {
        let mut a = vec!["-n", self.name.as_str()];
        a.extend_from_slice(args);
        ip(&a)
    }

    /// Writes `/proc/sys/<key>` inside the namespace.
    pub fn sysctl(&self, key: &str, value: &str) -> Result<()> {
        let name = self.name.clone();
        let (key, value) = (key.to_owned(), value.to_owned());
        self.run(move || {
            std::fs::write(format!("/proc/sys/{key}"), value).with_context(|| format!("sysctl {key} in {name}"))
        })?
    }

    /// The index of interface `dev` in the namespace.
    pub fn ifindex(&self, dev: &str) -> Result<u32> {
        let name = dev.to_owned();
        self.run(move || {
            let sock = rustix::net::socket(rustix::net::AddressFamily::INET, rustix::net::SocketType::DGRAM, None)?;
            Ok::<u32, std::io::Error>(rustix::net::netdevice::name_to_index(&sock, &name)?)
        })?
        .with_context(|| format!("interface {dev} in {}", self.name))
    }

    /// Runs `f` on a thread inside the namespace (the rest of the process stays
    /// where it is).
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T> {
        let path = format!("/var/run/netns/{}", self.name);
        let file = std::fs::File::open(&path).with_context(|| format!("open {path}"))?;
        std::thread::scope(|s| {
            s.spawn(move || -> Result<T> {
                rustix::thread::move_into_link_name_space(
                    file.as_fd(),
                    Some(rustix::thread::LinkNameSpaceType::Network),
                )
                .context("setns")?;
                Ok(f())
            })
            .join()
            .map_err(|_| anyhow::anyhow!("the thread inside {} panicked", self.name))?
        })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

/// Creates a veth pair `a_dev` in `a` and `b_dev` in `b` (both up), with the given
/// interface indexes when not 0.
pub fn veth(a: &Netns, a_dev: &str, a_index: u32, b: &Netns, b_dev: &str, b_index: u32) -> Result<()> {
    let (ai, bi) = (a_index.to_string(), b_index.to_string());
    let mut args = vec!["-n", a.name.as_str(), "link", "add", a_dev];
    if a_index != 0 {
        args.extend(["index", ai.as_str()]);
    }
    args.extend(["type", "veth", "peer", "name", b_dev]);
    if b_index != 0 {
        args.extend(["index", bi.as_str()]);
    }
    args.extend(["netns", b.name.as_str()]);
    ip(&args)?;
    a.ip(&["link", "set", a_dev, "up"])?;
    b.ip(&["link", "set", b_dev, "up"])?;
    Ok(())
}

/// Sends `frame` `n` times out of interface `ifindex` of the calling thread's
/// namespace (call it inside [`Netns::run`]) through a packet socket, as a host's
/// stack would: the peer's XDP program sees each one. BPF_PROG_TEST_RUN's live
/// frames would do the same faster, but some hosts refuse them with EPERM (seen
/// on a 6.18 host that loads and test-runs programs otherwise), while a packet
/// socket needs only CAP_NET_RAW and works on every kernel the project tests.
pub fn send_frames(ifindex: u32, frame: &[u8], n: u32) -> Result<()> {
    // SAFETY: plain syscalls on a descriptor this function owns; the address is a
    // zeroed sockaddr_ll with the fields the kernel reads set.
    unsafe {
        let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error()).context("packet socket (needs CAP_NET_RAW)");
        }
        let fd = <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd);
        let mut addr: libc::sockaddr_ll = std::mem::zeroed();
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_ifindex = i32::try_from(ifindex).context("interface index")?;
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(frame.get(..6).context("a frame shorter than its Ethernet header")?);
        let len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        for _ in 0..n {
            let sent = libc::sendto(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&raw const addr).cast(),
                len,
            );
            if sent < 0 {
                return Err(std::io::Error::last_os_error())
                    .with_context(|| format!("send a frame out of interface {ifindex}"));
            }
        }
    }
    Ok(())
}
