//! eBPF objects built into the runtime (compiled by build.rs from hike-sdk/bpf).

use hike_bytecode::Hook;

/// The VM continuation (program id 0) for a hook.
pub fn continuation(hook: Hook) -> &'static [u8] {
    match hook {
        Hook::Xdp => include_bytes!(concat!(env!("OUT_DIR"), "/hike_cont_xdp.o")),
        Hook::Tc => include_bytes!(concat!(env!("OUT_DIR"), "/hike_cont_tc.o")),
    }
}

/// The test entry loader for a hook (see `Runtime::test_run_chain`).
pub fn entry(hook: Hook) -> &'static [u8] {
    match hook {
        Hook::Xdp => include_bytes!(concat!(env!("OUT_DIR"), "/hike_entry_xdp.o")),
        Hook::Tc => include_bytes!(concat!(env!("OUT_DIR"), "/hike_entry_tc.o")),
    }
}

#[cfg(feature = "test-objects")]
/// HIKe programs used by the runtime's own kernel tests (`bpf/test/vmtest.bpf.c`).
pub fn vmtest(hook: Hook) -> &'static [u8] {
    match hook {
        Hook::Xdp => include_bytes!(concat!(env!("OUT_DIR"), "/vmtest_xdp.o")),
        Hook::Tc => include_bytes!(concat!(env!("OUT_DIR"), "/vmtest_tc.o")),
    }
}

#[cfg(feature = "test-objects")]
/// The XDP programs of `bpf/test/vmtest.bpf.c` built with `HIKE_DIRECT_PROGS=16`:
/// their VM dispatches ids 1 to 15 with direct jumps and every other id with an
/// indirect tail call, where the default build stops at 31.
pub fn vmtest_direct16() -> &'static [u8] {
    include_bytes!(concat!(env!("OUT_DIR"), "/vmtest_direct16_xdp.o"))
}

#[cfg(feature = "test-objects")]
/// A loader for the runtime's own tests (`bpf/test/testloader.bpf.c`): every packet
/// runs the chain in slot 0 of its map `test_cfg`.
pub fn testloader(hook: Hook) -> &'static [u8] {
    match hook {
        Hook::Xdp => include_bytes!(concat!(env!("OUT_DIR"), "/testloader_xdp.o")),
        Hook::Tc => include_bytes!(concat!(env!("OUT_DIR"), "/testloader_tc.o")),
    }
}

#[cfg(feature = "test-objects")]
/// A HIKe program the verifier rejects (`bpf/test/bad.bpf.c`), for testing how
/// rejections are reported.
pub fn bad() -> &'static [u8] {
    include_bytes!(concat!(env!("OUT_DIR"), "/bad.o"))
}

#[cfg(feature = "test-objects")]
/// How [`hostile`] is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostileBuild {
    /// With the SDK's declarations of the VM's maps.
    Sdk,
    /// Declaring them writable, as an object built before they were read-only.
    Undeclared,
    /// With a map of its own pinned by name among the VM's (`hike_extra`).
    ExtraVmMap,
}

#[cfg(feature = "test-objects")]
/// HIKe programs that try to write the VM's tables (`bpf/test/hostile.bpf.c`).
pub fn hostile(build: HostileBuild) -> &'static [u8] {
    match build {
        HostileBuild::Sdk => include_bytes!(concat!(env!("OUT_DIR"), "/hostile.o")),
        HostileBuild::Undeclared => include_bytes!(concat!(env!("OUT_DIR"), "/hostile_undeclared.o")),
        HostileBuild::ExtraVmMap => include_bytes!(concat!(env!("OUT_DIR"), "/hostile_extra.o")),
    }
}

#[cfg(feature = "test-objects")]
/// Plain tail-call chains without the VM, the baseline of the per-call benchmark
/// (`bpf/bench/rawtail.bpf.c`).
pub fn rawtail() -> &'static [u8] {
    include_bytes!(concat!(env!("OUT_DIR"), "/rawtail.o"))
}

#[cfg(feature = "test-objects")]
/// A HIKe program returning `hike_ktime_ns()` (`bpf/test/clocktest.bpf.c`), for
/// testing the instance's clock.
pub fn clocktest() -> &'static [u8] {
    include_bytes!(concat!(env!("OUT_DIR"), "/clocktest.o"))
}

#[cfg(feature = "test-objects")]
/// Two HIKe programs, `test_nop` and `test_verdict` (`bpf/test/mini.bpf.c`): what
/// deployment tests register when they only need a chain that ends packets.
pub fn mini() -> &'static [u8] {
    include_bytes!(concat!(env!("OUT_DIR"), "/mini.o"))
}
