//! Running packets through a chain with `BPF_PROG_TEST_RUN`, through the instance's
//! test entry loader: the same VM, programs and chains traffic would use, with the
//! packet and final state handed back.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::Duration;

use hike_bytecode::Hook;
use hike_bytecode::limits::SCRATCH_SIZE;
use libbpf_rs::libbpf_sys;
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::abi::{self, state};
use crate::error::{IoContext, KernelContext, Result, RuntimeError};
use crate::link;
use crate::runtime::{Runtime, key};
use crate::sys;
use hike_bytecode::ChainId;

/// Room left after the packet for programs that grow it.
const HEADROOM: usize = 512;

/// `BPF_F_TEST_XDP_LIVE_FRAMES`: XDP_TX and XDP_REDIRECT really send the frames.
const XDP_LIVE_FRAMES: u32 = 1 << 1;

/// How to run a packet through a loader.
#[derive(Debug, Clone, Copy, Default)]
pub struct TestRunOptions {
    /// Runs (0 means once).
    pub repeat: u32,
    /// The interface the packet "arrives" on (its index in the calling thread's
    /// network namespace; 0: none). Programs see it as `ctx->ingress_ifindex`
    /// and `bpf_fib_lookup` routes from it. The interface must have XDP enabled
    /// (a loader attached).
    pub ingress_ifindex: u32,
    /// Really send what the program transmits or redirects (XDP only); the packet
    /// and state are then not handed back.
    pub live_frames: bool,
}

/// What one test run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestRun {
    /// The program's return value: the XDP action (or TC verdict).
    pub verdict: u32,
    /// The packet after the run.
    pub packet: Vec<u8>,
    /// Registers r0..r10 of the VM when the run ended (last run when repeated).
    pub regs: [u64; 11],
    /// The scratch bank after the run.
    pub scratch: Vec<u8>,
    /// The CPU the run happened on.
    pub cpu: usize,
    /// Average time per run, as the kernel measured it.
    pub duration: Duration,
}

impl Runtime {
    /// Runs `packet` through chain `chain` (`repeat` times; 0 means once) with the
    /// instance's test entry loader, and returns the verdict, the packet and the VM
    /// state afterwards.
    pub fn test_run_chain(&self, hook: Hook, chain: ChainId, packet: &[u8], repeat: u32) -> Result<TestRun> {
        let _lock = self.lock()?;
        let (entry, chain_map) = self.test_entry(hook)?;
        chain_map.update(&key(0), &chain.0.to_le_bytes(), MapFlags::ANY).kernel(|| "select the test chain".into())?;
        let result = self.test_run_pinned(&entry, packet, repeat);
        let _ = chain_map.update(&key(0), &0u32.to_le_bytes(), MapFlags::ANY);
        result
    }

    /// The hook's test entry program (pinned) and the map that selects its chain,
    /// loaded and pinned on first use (the caller holds the instance's lock). A
    /// crash before the pin leaves nothing: the program goes with the process.
    fn test_entry(&self, hook: Hook) -> Result<(std::path::PathBuf, MapHandle)> {
        let vm = self.layout.vm_dir();
        let pin = vm.join(format!("entry_{hook}"));
        if !pin.exists() {
            let mut obj = crate::runtime::load_vm_program(&vm, hook, crate::objects::entry(hook), "hike_entry")?;
            let mut prog = crate::runtime::vm_program(&mut obj, "hike_entry")?;
            prog.pin(&pin).kernel(|| format!("pin {}", pin.display()))?;
        }
        let map = MapHandle::from_pinned_path(vm.join("hike_entry_map")).kernel(|| "open hike_entry_map".into())?;
        Ok((pin, map))
    }

    /// Runs `packet` through a loader instance's program, as if it had arrived on
    /// an interface the loader is attached to. Takes no lock: it changes nothing
    /// but counters, so it can run while chains are replaced.
    pub fn test_run_loader(&self, instance: &str, packet: &[u8], repeat: u32) -> Result<TestRun> {
        self.test_run_loader_with(instance, packet, &TestRunOptions { repeat, ..Default::default() })
    }

    /// Like [`Runtime::test_run_loader`], with an ingress interface or live frames.
    pub fn test_run_loader_with(&self, instance: &str, packet: &[u8], opts: &TestRunOptions) -> Result<TestRun> {
        let prog = self.layout.loader_dir(instance)?.join("prog");
        if !prog.exists() {
            return Err(RuntimeError::NotFound(format!("loader instance `{instance}`")));
        }
        self.test_run_pinned_with(&prog, packet, opts)
    }

    fn test_run_pinned(&self, pin: &std::path::Path, packet: &[u8], repeat: u32) -> Result<TestRun> {
        self.test_run_pinned_with(pin, packet, &TestRunOptions { repeat, ..Default::default() })
    }

    fn test_run_pinned_with(&self, pin: &std::path::Path, packet: &[u8], run: &TestRunOptions) -> Result<TestRun> {
        let prog = link::obj_get(pin).io("cannot open", pin)?;
        let ProgramRun { verdict, packet: out, cpu, duration } =
            run_program(prog.as_fd(), packet, run).io("BPF_PROG_TEST_RUN failed on", pin)?;
        let states = self.raw_states()?;
        let st = states.get(cpu).cloned().unwrap_or_default();
        let mut regs = [0u64; 11];
        for (i, r) in regs.iter_mut().enumerate() {
            *r = abi::u64_at(&st, state::REGS + i * 8);
        }
        let scratch =
            st.get(state::SCRATCH..state::SCRATCH + SCRATCH_SIZE as usize).map(<[u8]>::to_vec).unwrap_or_default();
        Ok(TestRun { verdict, packet: out, regs, scratch, cpu, duration })
    }
}

/// What one `BPF_PROG_TEST_RUN` of a program gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramRun {
    /// The program's return value.
    pub verdict: u32,
    /// The packet after the run (empty with live frames).
    pub packet: Vec<u8>,
    /// The CPU it ran on.
    pub cpu: usize,
    /// Average time per repetition, as the kernel measured it.
    pub duration: Duration,
}

/// Runs an XDP or TC program on `packet` with `BPF_PROG_TEST_RUN`, pinned to the
/// current CPU for the call (so repeated runs and the per-CPU state read after
/// them are on one CPU).
pub fn run_program(prog: BorrowedFd<'_>, packet: &[u8], run: &TestRunOptions) -> std::io::Result<ProgramRun> {
    let mut out = vec![0u8; packet.len() + HEADROOM];
    // struct xdp_md: data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex.
    let mut ctx = [0u32; 6];
    ctx[1] = packet.len() as u32;
    ctx[3] = run.ingress_ifindex;
    let with_ctx = run.ingress_ifindex != 0 || run.live_frames;
    let (cpu, (rc, retval, size_out, duration)) = sys::on_one_cpu(|| {
        let mut opts = libbpf_sys::bpf_test_run_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_test_run_opts>() as _,
            data_in: packet.as_ptr().cast(),
            data_size_in: packet.len() as u32,
            repeat: run.repeat as i32,
            ..Default::default()
        };
        if run.live_frames {
            opts.flags = XDP_LIVE_FRAMES;
        } else {
            opts.data_out = out.as_mut_ptr().cast();
            opts.data_size_out = out.len() as u32;
        }
        if with_ctx {
            opts.ctx_in = ctx.as_mut_ptr().cast();
            opts.ctx_size_in = std::mem::size_of_val(&ctx) as u32;
        }
        // SAFETY: the buffers outlive the call and their sizes are given.
        let rc = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog.as_raw_fd(), &mut opts) };
        (rc, opts.retval, opts.data_size_out, opts.duration)
    })?;
    if rc < 0 {
        return Err(std::io::Error::from_raw_os_error(-rc));
    }
    out.truncate(if run.live_frames { 0 } else { (size_out as usize).min(out.len()) });
    Ok(ProgramRun { verdict: retval, packet: out, cpu, duration: Duration::from_nanos(u64::from(duration)) })
}
