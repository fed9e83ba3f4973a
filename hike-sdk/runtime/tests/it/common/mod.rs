//! Shared helpers for the kernel tests: an isolated HIKe root per test, removed by
//! a guard even when the test fails, and a loud failure when the machine cannot run
//! kernel tests (they are never skipped).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use hike_bytecode::Hook;
use hike_runtime::{
    ChainId, ConfigMapSpec, InitOptions, LoaderObject, MapEntry, ProgramObject, RegisteredProgram, ScratchPath,
    ScratchRoot, objects,
};

pub use hike_runtime::testing::require_kernel;

/// A HIKe root of the test's own, destroyed on drop.
pub type TestRoot = ScratchRoot;

/// What the runtime's tests do with their roots.
pub trait TestRootExt: Sized {
    fn new(tag: &str) -> Self;
    fn with(tag: &str, opts: InitOptions) -> Self;
    fn register_vmtest(&self, hook: Hook) -> Vec<RegisteredProgram>;
    fn register_vmtest_as(&self, package: &str, version: &str) -> Vec<RegisteredProgram>;
    fn register_vmtest_tc_as(&self, package: &str) -> Vec<RegisteredProgram>;
    fn register_as(&self, package: &str, version: &str, hook: Hook) -> Vec<RegisteredProgram>;
    fn path(&self) -> &Path;
    fn load_test_loader(&self, instance: &str, hook: Hook);
    fn point_test_loader(&self, instance: &str, chain: ChainId);
}

impl TestRootExt for ScratchRoot {
    fn new(tag: &str) -> TestRoot {
        TestRoot::with(tag, InitOptions::default())
    }

    fn with(tag: &str, opts: InitOptions) -> TestRoot {
        require_kernel();
        let guard = ScratchPath::unique(Path::new("/sys/fs/bpf"), &format!("hike-test-{tag}"));
        ScratchRoot::init(guard, opts).expect("init a test root")
    }

    /// Registers the test programs (bpf/test/vmtest.bpf.c) for a hook.
    fn register_vmtest(&self, hook: Hook) -> Vec<RegisteredProgram> {
        self.register_as("hike-test", "0.0.0", hook)
    }

    /// Registers the XDP test programs under another package name and version.
    fn register_vmtest_as(&self, package: &str, version: &str) -> Vec<RegisteredProgram> {
        self.register_as(package, version, Hook::Xdp)
    }

    /// Registers the TC test programs under another package name.
    fn register_vmtest_tc_as(&self, package: &str) -> Vec<RegisteredProgram> {
        self.register_as(package, "0.0.0", Hook::Tc)
    }

    fn register_as(&self, package: &str, version: &str, hook: Hook) -> Vec<RegisteredProgram> {
        self.rt
            .register_object(&ProgramObject {
                package,
                version,
                object_name: "vmtest.bpf.c",
                elf: objects::vmtest(hook),
                hook,
            })
            .expect("register the test programs")
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Loads the test loader (bpf/test/testloader.bpf.c) as `instance`.
    fn load_test_loader(&self, instance: &str, hook: Hook) {
        self.rt
            .load_loader(&LoaderObject {
                instance,
                package: "hike-test",
                version: "0.0.0",
                object_name: "testloader.bpf.c",
                elf: objects::testloader(hook),
                program: "test_loader",
                hook,
                config_maps: vec![ConfigMapSpec { name: "test_cfg".into(), chain_offsets: vec![0] }],
            })
            .expect("load the test loader");
    }

    /// Points the test loader `instance` at `chain`.
    fn point_test_loader(&self, instance: &str, chain: ChainId) {
        self.rt
            .configure_loader(
                instance,
                "test_cfg",
                &[MapEntry { key: vec![0; 4], value: chain.0.to_le_bytes().to_vec() }],
            )
            .expect("configure the test loader");
    }
}

/// The id of program `name` among `regs`, as chain assembly writes it.
pub fn id_of(regs: &[RegisteredProgram], name: &str) -> u32 {
    regs.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("no program {name}")).id.0
}

/// A minimal Ethernet + IPv6 + UDP packet.
pub fn ipv6_udp_packet() -> Vec<u8> {
    let mut p = vec![0u8; 14 + 40 + 8 + 8];
    p[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    p[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    p[12] = 0x86;
    p[13] = 0xdd;
    p[14] = 0x60;
    p[18..20].copy_from_slice(&16u16.to_be_bytes());
    p[20] = 17; // UDP
    p[21] = 64;
    p[22] = 0xfd;
    p[37] = 1;
    p[38] = 0xfd;
    p[53] = 2;
    p[54..56].copy_from_slice(&1234u16.to_be_bytes());
    p[56..58].copy_from_slice(&5678u16.to_be_bytes());
    p[58..60].copy_from_slice(&16u16.to_be_bytes());
    p
}

/// A fresh temporary directory for one test (removed by the test).
pub fn tempdir(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir =
        std::env::temp_dir().join(format!("hike-{tag}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Packets run through loader `instance` on a thread of their own until
/// [`Traffic::stop`], counting the verdicts seen.
pub struct Traffic {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<std::collections::BTreeMap<u32, u64>>,
}

impl Traffic {
    pub fn start(t: &std::sync::Arc<TestRoot>, instance: &str) -> Traffic {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (t, flag, instance) = (std::sync::Arc::clone(t), std::sync::Arc::clone(&stop), instance.to_owned());
        let thread = std::thread::spawn(move || {
            let mut seen = std::collections::BTreeMap::new();
            while !flag.load(Ordering::Relaxed) {
                let v = t.rt.test_run_loader(&instance, &ipv6_udp_packet(), 50).unwrap().verdict;
                *seen.entry(v).or_insert(0u64) += 1;
            }
            seen
        });
        Traffic { stop, thread }
    }

    /// Stops the packets; the number of each verdict seen.
    pub fn stop(self) -> std::collections::BTreeMap<u32, u64> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}
