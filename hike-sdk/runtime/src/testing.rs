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

/// Prepares `root` (which must not exist) so that [`crate::Runtime::init`] makes
/// it as a runtime older than read-only VM tables did: its chain table writable
/// by programs (`vm_access.rs`), the rest as this runtime makes it. For tests of
/// what such roots do and how they are reported.
pub fn pin_writable_chain_table(root: &std::path::Path) -> crate::Result<()> {
    use std::os::unix::fs::DirBuilderExt;

    use crate::error::{IoContext, KernelContext};

    let vm = crate::Layout::new(root).vm_dir();
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&vm).io("cannot create", &vm)?;
    let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    let mut chains = libbpf_rs::MapHandle::create(
        libbpf_rs::MapType::Array,
        Some("hike_chains"),
        4,
        crate::abi::chain::SIZE as u32,
        hike_bytecode::limits::MAX_CHAINS,
        &opts,
    )
    .kernel(|| "create a writable hike_chains".into())?;
    let path = vm.join("hike_chains");
    chains.pin(&path).kernel(|| format!("pin {}", path.display()))
}
