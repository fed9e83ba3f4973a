//! What every kernel test of the workspace needs (feature `testing`).

/// Fails the test, saying what is missing, when this machine cannot load eBPF
/// programs: kernel tests are never skipped.
pub fn require_kernel() {
    assert!(
        rustix::process::geteuid().is_root(),
        "kernel tests need root (CAP_BPF, CAP_NET_ADMIN); run them as root, e.g. with ./ci/test"
    );
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    assert!(
        mounts.lines().any(|l| l.split_whitespace().nth(1) == Some("/sys/fs/bpf") && l.contains(" bpf ")),
        "kernel tests need bpffs at /sys/fs/bpf: mount it with `mount -t bpf -o mode=0700 bpf /sys/fs/bpf` (ci/setup does)"
    );
}

/// A HIKe root of the test's own under `/sys/fs/bpf`, after checking the
/// machine can run kernel tests.
pub fn scratch_root(prefix: &str) -> crate::ScratchRoot {
    require_kernel();
    let guard = crate::ScratchPath::unique(std::path::Path::new("/sys/fs/bpf"), prefix);
    match crate::ScratchRoot::init(guard, crate::InitOptions::default()) {
        Ok(root) => root,
        Err(e) => panic!("cannot create a HIKe root for the test: {e}"),
    }
}
