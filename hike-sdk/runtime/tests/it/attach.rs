//! A loader attached to a veth in network namespaces the test creates (and
//! removes), with real traffic between them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::fd::AsFd;
use std::process::Command;

use common::*;
use hike_bytecode::{Hook, asm::assemble};
use hike_runtime::{AttachMode, ChainId, ChainSpec};

/// Two network namespaces joined by a veth pair, deleted on drop.
struct Netns {
    a: String,
    b: String,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip (iproute2; ci/setup installs it)");
    assert!(out.status.success(), "ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
}

impl Netns {
    fn new(tag: &str) -> Netns {
        let n = Netns { a: format!("hk{tag}a{}", std::process::id()), b: format!("hk{tag}b{}", std::process::id()) };
        ip(&["netns", "add", &n.a]);
        ip(&["netns", "add", &n.b]);
        // IPv6 neighbour and router solicitations arrive whenever they like: the
        // counters below must count the test's pings alone.
        for ns in [&n.a, &n.b] {
            // /proc/sys/net is the network namespace of whoever opens it.
            Netns::run_in(ns, || {
                for conf in ["all", "default"] {
                    std::fs::write(format!("/proc/sys/net/ipv6/conf/{conf}/disable_ipv6"), "1").unwrap();
                }
            });
        }
        ip(&["link", "add", "va", "netns", &n.a, "type", "veth", "peer", "name", "vb", "netns", &n.b]);
        for (ns, dev, addr) in [(&n.a, "va", "10.77.0.1/24"), (&n.b, "vb", "10.77.0.2/24")] {
            ip(&["-n", ns, "addr", "add", addr, "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        n
    }

    /// Runs `f` on a thread that has entered namespace `ns`.
    fn run_in<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/var/run/netns/{ns}");
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).unwrap();
            rustix::thread::move_into_link_name_space(file.as_fd(), Some(rustix::thread::LinkNameSpaceType::Network))
                .unwrap();
            f()
        })
        .join()
        .unwrap()
    }

    /// Whether 3 pings from a to b get answers.
    fn ping(&self) -> bool {
        Command::new("ip")
            .args(["netns", "exec", &self.a, "ping", "-c", "3", "-i", "0.2", "-W", "1", "10.77.0.2"])
            .output()
            .expect("run ping (iputils-ping; ci/setup installs it)")
            .status
            .success()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
fn a_loader_on_a_veth_runs_its_chain_on_real_traffic() {
    let t = TestRoot::new("veth");
    let progs = t.register_vmtest(Hook::Xdp);
    let verdict = id_of(&progs, "test_verdict");
    t.load_test_loader("veth", Hook::Xdp);
    // Drop IPv4 ICMP, pass everything else (ARP must pass for ping to work at all).
    let insns = drop_icmp(verdict, 1);
    let drop =
        t.rt.install_chain(&ChainSpec { name: "drop_icmp", owner: "attach", hook: Hook::Xdp, insns: &insns, nargs: 0 })
            .unwrap();
    t.point_test_loader("veth", drop);

    let net = Netns::new("at");
    assert!(net.ping(), "before attaching, ping works");
    let rt_path = t.path.clone();
    Netns::run_in(&net.b, move || {
        hike_runtime::Runtime::open(&rt_path).unwrap().attach_loader("veth", "vb", AttachMode::Xdp).unwrap();
    });
    let status = t.rt.status().unwrap();
    let attached = &status.loaders[0].attachments;
    assert_eq!((attached[0].interface.as_str(), attached[0].mode.name()), ("vb", "xdp"));

    assert!(!net.ping(), "the chain drops ICMP");
    let counters = t.rt.counters().unwrap();
    assert!(counters.chain_runs[drop.0 as usize] >= 3, "{}", counters.chain_runs[drop.0 as usize]);
    assert!(counters.prog_calls[verdict as usize] >= 3);

    // Swap in a chain that passes everything: one map update, traffic flows.
    let pass = assemble("exit").unwrap();
    let pass =
        t.rt.replace_chain(drop, &ChainSpec { name: "pass", owner: "attach", hook: Hook::Xdp, insns: &pass, nargs: 0 })
            .unwrap();
    assert!(net.ping(), "after the swap, ping works");
    assert!(t.rt.counters().unwrap().chain_runs[pass.0 as usize] >= 3);

    let rt_path = t.path.clone();
    Netns::run_in(&net.b, move || {
        hike_runtime::Runtime::open(&rt_path).unwrap().detach_loader("veth", "vb").unwrap();
    });
    assert!(t.rt.status().unwrap().loaders[0].attachments.is_empty());
    // A packet another CPU was running through the chain as it was detached still
    // finishes (and counts) after the detach returns: counted from when those are done.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let runs = t.rt.counters().unwrap().chain_runs[pass.0 as usize];
    assert!(net.ping());
    assert_eq!(t.rt.counters().unwrap().chain_runs[pass.0 as usize], runs, "detached: the chain no longer runs");
    // No attachment means no pin left for it either.
    assert!(
        !std::fs::read_dir(t.path.join("loaders/veth"))
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("link@"))
    );
}

/// The chain of `a_loader_...`: drop IPv4 ICMP through `test_verdict(verdict)`.
fn drop_icmp(verdict_prog: u32, verdict: u32) -> Vec<hike_bytecode::Insn> {
    assemble(&format!(
        "r1 = 0
         r2 = *(u16 *)(packet + r1 + 12)
         r2 = be16 r2
         if r2 != 0x800 goto +4
         r3 = *(u8 *)(packet + r1 + 23)
         if r3 != 1 goto +2
         r1 = {verdict}
         call prog {verdict_prog}, 1
         exit"
    ))
    .unwrap()
}

/// An interface that already has an XDP program: the refusal names it (id and
/// name) and says how to see and remove it.
#[test]
fn an_interface_taken_by_another_program_is_named_in_the_refusal() {
    let t = TestRoot::new("taken");
    let progs = t.register_vmtest(Hook::Xdp);
    let insns = drop_icmp(id_of(&progs, "test_verdict"), 1);
    let c =
        t.rt.install_chain(&ChainSpec { name: "drop_icmp", owner: "taken", hook: Hook::Xdp, insns: &insns, nargs: 0 })
            .unwrap();
    for instance in ["first", "second"] {
        t.load_test_loader(instance, Hook::Xdp);
        t.point_test_loader(instance, c);
    }
    let net = Netns::new("tk");
    let p = t.path.clone();
    Netns::run_in(&net.b, move || {
        hike_runtime::Runtime::open(&p).unwrap().attach_loader("first", "vb", AttachMode::XdpGeneric).unwrap()
    });
    let p = t.path.clone();
    let err = Netns::run_in(&net.b, move || {
        hike_runtime::Runtime::open(&p).unwrap().attach_loader("second", "vb", AttachMode::XdpGeneric).unwrap_err()
    })
    .to_string();
    assert!(err.contains("interface vb already has XDP program "), "{err}");
    assert!(err.contains("`ip link set dev vb xdp off`") && err.contains("`bpftool net show dev vb`"), "{err}");
}

#[test]
fn generic_xdp_and_tc_attachments_run_chains_too() {
    let t = TestRoot::new("modes");
    let xdp = t.register_vmtest(Hook::Xdp);
    let tc = t.register_vmtest_tc_as("tcpkg");
    let net = Netns::new("md");
    for (hook, mode, progs, verdict) in
        [(Hook::Xdp, AttachMode::XdpGeneric, &xdp, 1u32), (Hook::Tc, AttachMode::TcIngress, &tc, 2u32)]
    {
        let instance = format!("l{}", mode.name().replace('-', "_"));
        t.load_test_loader(&instance, hook);
        let insns = drop_icmp(id_of(progs, "test_verdict"), verdict);
        let c =
            t.rt.install_chain(&ChainSpec { name: "drop_icmp", owner: mode.name(), hook, insns: &insns, nargs: 0 })
                .unwrap();
        t.point_test_loader(&instance, c);
        let (p, i) = (t.path.clone(), instance.clone());
        Netns::run_in(&net.b, move || hike_runtime::Runtime::open(&p).unwrap().attach_loader(&i, "vb", mode).unwrap());
        let att = t.rt.loader_info(&instance).unwrap().attachments;
        assert_eq!(att[0].mode, mode);
        assert!(!net.ping(), "{}: ICMP is dropped", mode.name());
        assert!(t.rt.counters().unwrap().chain_runs[c.0 as usize] >= 3, "{}", mode.name());
        let (p, i) = (t.path.clone(), instance.clone());
        Netns::run_in(&net.b, move || hike_runtime::Runtime::open(&p).unwrap().detach_loader(&i, "vb").unwrap());
        assert!(net.ping(), "{}: detached", mode.name());
    }
}

/// Mode `xdp` is driver mode when the driver can, generic otherwise: veth refuses
/// driver-mode XDP while its peer's MTU is larger than a page (ERANGE), and the
/// loader is then attached in generic mode, still running its chain.
#[test]
fn mode_xdp_falls_back_to_generic_when_the_driver_refuses() {
    let t = TestRoot::new("fallback");
    let progs = t.register_vmtest(Hook::Xdp);
    let net = Netns::new("fb");
    ip(&["-n", &net.a, "link", "set", "va", "mtu", "9000"]);
    ip(&["-n", &net.b, "link", "set", "vb", "mtu", "9000"]);
    t.load_test_loader("fb", Hook::Xdp);
    let insns = drop_icmp(id_of(&progs, "test_verdict"), 1);
    let c =
        t.rt.install_chain(&ChainSpec { name: "drop_icmp", owner: "fb", hook: Hook::Xdp, insns: &insns, nargs: 0 })
            .unwrap();
    t.point_test_loader("fb", c);
    // Driver mode alone is refused: the fallback is what makes mode xdp work here.
    let (p, i) = (t.path.clone(), "fb".to_owned());
    let err = Netns::run_in(&net.b, move || {
        hike_runtime::Runtime::open(&p).unwrap().attach_loader(&i, "vb", AttachMode::XdpDriver).unwrap_err()
    });
    assert!(err.to_string().contains("cannot attach to vb"), "{err}");
    let (p, i) = (t.path.clone(), "fb".to_owned());
    Netns::run_in(&net.b, move || {
        hike_runtime::Runtime::open(&p).unwrap().attach_loader(&i, "vb", AttachMode::Xdp).unwrap()
    });
    let shown = Command::new("ip").args(["-n", &net.b, "link", "show", "vb"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("xdpgeneric"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
    assert!(!net.ping(), "ICMP is dropped by the chain in generic mode");
    assert!(t.rt.counters().unwrap().chain_runs[c.0 as usize] >= 3);
}

#[test]
fn attaching_to_a_missing_interface_says_so() {
    let t = TestRoot::new("noif");
    t.load_test_loader("x", Hook::Xdp);
    t.point_test_loader("x", ChainId(0));
    let err = t.rt.attach_loader("x", "nosuchdev0", AttachMode::Xdp).unwrap_err();
    assert!(err.to_string().starts_with("interface `nosuchdev0` does not exist in this network namespace"), "{err}");
}

#[test]
fn switching_loaders_is_atomic_idempotent_and_survives_a_half_done_switch() {
    let t = TestRoot::new("switch");
    let progs = t.register_vmtest(Hook::Xdp);
    let drop = drop_icmp(id_of(&progs, "test_verdict"), 1);
    let drop =
        t.rt.install_chain(&ChainSpec { name: "drop", owner: "sw", hook: Hook::Xdp, insns: &drop, nargs: 0 }).unwrap();
    let pass = assemble("exit").unwrap();
    let pass =
        t.rt.install_chain(&ChainSpec { name: "pass", owner: "sw", hook: Hook::Xdp, insns: &pass, nargs: 0 }).unwrap();
    t.load_test_loader("dropper", Hook::Xdp);
    t.point_test_loader("dropper", drop);
    t.load_test_loader("passer", Hook::Xdp);
    t.point_test_loader("passer", pass);

    let net = Netns::new("sw");
    let p = t.path.clone();
    Netns::run_in(&net.b, move || {
        hike_runtime::Runtime::open(&p).unwrap().attach_loader("dropper", "vb", AttachMode::Xdp).unwrap()
    });
    assert!(!net.ping(), "the dropper is attached");

    t.rt.switch_loader("dropper", "passer", "vb").unwrap();
    assert!(net.ping(), "switched to the passer");
    assert!(t.rt.loader_info("dropper").unwrap().attachments.is_empty());
    assert_eq!(t.rt.loader_info("passer").unwrap().attachments[0].interface, "vb");
    // Again: nothing changes, no error (a recovering process may repeat the step).
    t.rt.switch_loader("dropper", "passer", "vb").unwrap();
    assert!(net.ping());

    // A process killed between updating the link and moving its pin leaves the pin
    // with the old instance while the link runs the new one. Going back finds it.
    t.rt.switch_loader("passer", "dropper", "vb").unwrap();
    assert!(!net.ping(), "back to the dropper");
    let pin_in = |i: &str| {
        std::fs::read_dir(t.path.join("loaders").join(i))
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("link@"))
            .map(|e| e.path())
    };
    t.rt.switch_loader("dropper", "passer", "vb").unwrap();
    let pin = pin_in("passer").unwrap();
    std::fs::rename(&pin, t.path.join("loaders/dropper").join(pin.file_name().unwrap())).unwrap();
    assert!(net.ping(), "the link runs the passer although its pin sits with the dropper");
    t.rt.switch_loader("passer", "dropper", "vb").unwrap();
    assert!(!net.ping(), "rolled back to the dropper");
    assert!(pin_in("dropper").is_some() && pin_in("passer").is_none());
}
