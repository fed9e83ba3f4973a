//! The few system facilities the runtime needs beyond libbpf, through rustix.

use std::fs::File;
use std::io;
use std::path::Path;

use rustix::fs::FlockOperation;
use rustix::net::{AddressFamily, SocketType};
use rustix::thread::{CpuSet, MembarrierCommand};

/// An exclusive lock on a directory, released when dropped. Every operation that
/// changes a root holds it, so concurrent processes see each other's changes whole.
pub struct DirLock(File);

impl DirLock {
    /// Blocks until the lock on `dir` is ours.
    pub fn acquire(dir: &Path) -> io::Result<DirLock> {
        let f = File::open(dir)?;
        rustix::fs::flock(&f, FlockOperation::LockExclusive)?;
        Ok(DirLock(f))
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.0, FlockOperation::Unlock);
    }
}

/// Waits until every CPU has left the eBPF programs it was running when called.
///
/// XDP and TC programs run inside RCU read-side critical sections, and a packet's
/// whole chain (all its tail calls) runs inside one. `membarrier(GLOBAL)` waits
/// for an RCU grace period (`synchronize_rcu()` in the kernel), so after it no
/// packet can still be using a chain or program the caller has unlinked.
pub fn wait_for_readers() -> io::Result<()> {
    rustix::thread::membarrier(MembarrierCommand::Global).map_err(io::Error::from)
}

/// The index of network interface `name` in this network namespace.
pub fn ifindex(name: &str) -> io::Result<u32> {
    let sock = rustix::net::socket(AddressFamily::INET, SocketType::DGRAM, None)?;
    rustix::net::netdevice::name_to_index(&sock, name).map_err(io::Error::from)
}

/// Runs `f` with the calling thread pinned to the CPU it is on, restoring its
/// affinity afterwards, and returns the CPU with the result. Per-CPU state written
/// by a `BPF_PROG_TEST_RUN` is then found on that CPU.
pub fn on_one_cpu<T>(f: impl FnOnce() -> T) -> io::Result<(usize, T)> {
    let before = rustix::thread::sched_getaffinity(None)?;
    let cpu = rustix::thread::sched_getcpu();
    let mut only = CpuSet::new();
    only.set(cpu);
    rustix::thread::sched_setaffinity(None, &only)?;
    let out = f();
    rustix::thread::sched_setaffinity(None, &before)?;
    Ok((cpu, out))
}
