//! Attaching a program to an interface through a pinned `bpf_link`: the attachment
//! outlives the process that made it and goes away when its pin is removed.
//! libbpf-rs has no call for a link with XDP mode flags or for pinning a link by
//! fd, so these use libbpf's own functions.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use libbpf_rs::libbpf_sys;

pub use hike_bytecode::AttachMode;

/// The kernel attach type and XDP flags of a mode.
fn attach_type_and_flags(mode: AttachMode) -> (libbpf_sys::bpf_attach_type, u32) {
    const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
    const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
    match mode {
        AttachMode::Xdp => (libbpf_sys::BPF_XDP, 0),
        AttachMode::XdpDriver => (libbpf_sys::BPF_XDP, XDP_FLAGS_DRV_MODE),
        AttachMode::XdpGeneric => (libbpf_sys::BPF_XDP, XDP_FLAGS_SKB_MODE),
        AttachMode::TcIngress => (libbpf_sys::BPF_TCX_INGRESS, 0),
        AttachMode::TcEgress => (libbpf_sys::BPF_TCX_EGRESS, 0),
    }
}

/// The XDP program already on `ifindex`, if any: its id and name (for an error
/// that says what is in the way).
pub fn attached_xdp(ifindex: u32) -> Option<(u32, String)> {
    // SAFETY: a zeroed opts struct with its size set is what libbpf expects; the
    // pointer is valid for the call.
    let mut opts: libbpf_sys::bpf_xdp_query_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of::<libbpf_sys::bpf_xdp_query_opts>() as _;
    check(unsafe { libbpf_sys::bpf_xdp_query(i32::try_from(ifindex).ok()?, 0, &mut opts) }).ok()?;
    let id = [opts.prog_id, opts.drv_prog_id, opts.skb_prog_id].into_iter().find(|&id| id != 0)?;
    Some((id, prog_name(id).unwrap_or_default()))
}

/// The name the kernel keeps for program `id`.
fn prog_name(id: u32) -> Option<String> {
    // SAFETY: libbpf returns a new fd that nothing else owns, or an error.
    let fd = check(unsafe { libbpf_sys::bpf_prog_get_fd_by_id(id) }).ok()?;
    // SAFETY: the fd was just returned to us.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: a zeroed info struct and its length, valid for the call.
    let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    check(unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) }).ok()?;
    let bytes: Vec<u8> = info.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| io::Error::other("path contains a NUL byte"))
}

fn check(ret: i32) -> io::Result<i32> {
    if ret < 0 { Err(io::Error::from_raw_os_error(-ret)) } else { Ok(ret) }
}

/// Opens a pinned object (program, map or link).
pub fn obj_get(path: &Path) -> io::Result<OwnedFd> {
    let c = c_path(path)?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    let fd = check(unsafe { libbpf_sys::bpf_obj_get(c.as_ptr()) })?;
    // SAFETY: libbpf returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Attaches the program pinned at `prog` to `ifindex` and pins the link at `pin`.
///
/// Mode `xdp` means "driver mode when the driver can, generic otherwise": the kernel
/// picks driver mode for any driver that has XDP support at all, and such a driver
/// may still refuse this program or this device's configuration (an MTU too large,
/// too few queues, …). Then the program is attached in generic mode instead.
pub fn attach_and_pin(prog: &Path, ifindex: u32, mode: AttachMode, pin: &Path) -> io::Result<()> {
    let prog_fd = obj_get(prog)?;
    let (attach_type, flags) = attach_type_and_flags(mode);
    let link = match link_create(&prog_fd, ifindex, attach_type, flags) {
        Err(driver) if mode == AttachMode::Xdp && driver_refused(&driver) => {
            let (_, generic) = attach_type_and_flags(AttachMode::XdpGeneric);
            let link = link_create(&prog_fd, ifindex, attach_type, generic)
                .map_err(|e| io::Error::new(e.kind(), format!("driver mode: {driver}; generic mode: {e}")))?;
            tracing::warn!(ifindex, "the driver refused XDP in driver mode ({driver}); attached in generic mode");
            link
        }
        Err(e) if matches!(mode, AttachMode::TcIngress | AttachMode::TcEgress) && !has_tcx() => {
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "{e}: attaching to TC needs Linux 6.6 or newer (tcx links), and this kernel is {}; \
                     attach to XDP instead, or upgrade the kernel",
                    kernel_release()
                ),
            ));
        }
        other => other?,
    };
    let c = c_path(pin)?;
    // SAFETY: the fd is valid and `c` is NUL-terminated.
    check(unsafe { libbpf_sys::bpf_obj_pin(link.as_raw_fd(), c.as_ptr()) })?;
    Ok(())
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease").map_or_else(|_| "unknown".into(), |r| r.trim().to_owned())
}

/// Whether the running kernel has tcx links (Linux 6.6).
fn has_tcx() -> bool {
    let release = kernel_release();
    let mut parts = release.split(|c: char| !c.is_ascii_digit()).map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (6, 6)
}

/// Whether an attach error is the driver's refusal of driver mode, after which
/// generic mode can still work (not: something is attached already, no such
/// device, no permission).
fn driver_refused(e: &io::Error) -> bool {
    use rustix::io::Errno;
    let Some(code) = e.raw_os_error() else { return false };
    ![Errno::BUSY, Errno::EXIST, Errno::PERM, Errno::ACCESS, Errno::NODEV].iter().any(|n| n.raw_os_error() == code)
}

fn link_create(
    prog: &OwnedFd,
    ifindex: u32,
    attach_type: libbpf_sys::bpf_attach_type,
    flags: u32,
) -> io::Result<OwnedFd> {
    let opts = libbpf_sys::bpf_link_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _,
        flags,
        ..Default::default()
    };
    // SAFETY: the fd is valid and `opts` is a properly sized, initialized struct.
    let link = check(unsafe { libbpf_sys::bpf_link_create(prog.as_raw_fd(), ifindex as i32, attach_type, &opts) })?;
    // SAFETY: libbpf returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(link) })
}

/// The interface index a pinned XDP or tcx link is attached to; 0 when the link
/// is defunct (its interface was deleted: a re-created interface of the same
/// name is another device, and the link stays detached from it).
pub fn link_ifindex(pin: &Path) -> io::Result<u32> {
    use std::os::fd::AsFd;
    let link = obj_get(pin)?;
    let info = libbpf_rs::query::LinkInfo::from_fd(link.as_fd()).map_err(io::Error::other)?;
    Ok(match info.info {
        libbpf_rs::query::LinkTypeInfo::Xdp(x) => x.ifindex,
        libbpf_rs::query::LinkTypeInfo::Tcx(t) => t.ifindex,
        _ => 0,
    })
}

/// Atomically replaces the program of the link pinned at `pin` with the one
/// pinned at `prog` (`bpf_link_update`): no packet sees the interface without one.
pub fn update_link(pin: &Path, prog: &Path) -> io::Result<()> {
    let link = obj_get(pin)?;
    let prog_fd = obj_get(prog)?;
    // SAFETY: both fds are valid; a null opts pointer means default options.
    check(unsafe { libbpf_sys::bpf_link_update(link.as_raw_fd(), prog_fd.as_raw_fd(), std::ptr::null()) })?;
    Ok(())
}
