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
