//! The instance's clock (`vm/hike_clock`, `hike/time.h`): what `hike_ktime_ns()`
//! returns to programs. Real time unless a test freezes or shifts it, so meters
//! and expiries can be tested without sleeping.

use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use crate::error::{KernelContext, Result};
use crate::layout::Layout;

/// Size of `struct hike_clock`.
pub const CLOCK_SIZE: usize = 16;

/// What `hike_ktime_ns()` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// `bpf_ktime_get_ns()`.
    Real,
    /// Always this instant (must not be 0).
    Frozen(u64),
    /// `bpf_ktime_get_ns()` plus this.
    Offset(i64),
}

impl Clock {
    /// This clock moved `ns` forward (backward when negative): a frozen clock is
    /// frozen later, an offset grows, real time becomes an offset.
    pub fn advanced(self, ns: i64) -> Clock {
        match self {
            Clock::Real => Clock::Offset(ns),
            Clock::Frozen(t) => Clock::Frozen(t.saturating_add_signed(ns).max(1)),
            Clock::Offset(o) => Clock::Offset(o.saturating_add(ns)),
        }
    }

    fn encode(self) -> [u8; CLOCK_SIZE] {
        let (frozen, offset) = match self {
            Clock::Real => (0u64, 0i64),
            Clock::Frozen(t) => (t.max(1), 0),
            Clock::Offset(o) => (0, o),
        };
        let mut v = [0u8; CLOCK_SIZE];
        v[..8].copy_from_slice(&frozen.to_le_bytes());
        v[8..].copy_from_slice(&offset.to_le_bytes());
        v
    }

    fn decode(v: &[u8]) -> Clock {
        let frozen = crate::abi::u64_at(v, 0);
        let offset = crate::abi::u64_at(v, 8) as i64;
        match (frozen, offset) {
            (0, 0) => Clock::Real,
            (0, o) => Clock::Offset(o),
            (t, _) => Clock::Frozen(t),
        }
    }
}

impl std::fmt::Display for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Clock::Real => write!(f, "real (bpf_ktime_get_ns)"),
            Clock::Frozen(t) => write!(f, "frozen at {t} ns"),
            Clock::Offset(o) => write!(f, "real {o:+} ns"),
        }
    }
}

/// Creates and pins the clock map in `vm_dir` (as libbpf would for an object
/// declaring it, so either may come first), read-only to programs.
pub(crate) fn create(vm_dir: &std::path::Path) -> Result<MapHandle> {
    let opts = crate::vm_access::read_only_create_opts();
    let mut map = MapHandle::create(MapType::Array, Some("hike_clock"), 4, CLOCK_SIZE as u32, 1, &opts)
        .kernel(|| "create hike_clock".into())?;
    let path = vm_dir.join("hike_clock");
    map.pin(&path).kernel(|| format!("pin {}", path.display()))?;
    Ok(map)
}

/// The pinned clock map of the instance at `layout`, created when missing.
fn map(layout: &Layout) -> Result<MapHandle> {
    let path = layout.vm_map("hike_clock");
    if path.exists() {
        MapHandle::from_pinned_path(&path).kernel(|| format!("open {}", path.display()))
    } else {
        create(&layout.vm_dir())
    }
}

/// Sets the clock of the instance at `layout` ([`Runtime::set_clock`](crate::Runtime::set_clock)).
pub(crate) fn write(layout: &Layout, clock: Clock) -> Result<()> {
    map(layout)?.update(&0u32.to_le_bytes(), &clock.encode(), MapFlags::ANY).kernel(|| "write hike_clock".into())
}

/// The clock of the instance at `layout`.
pub(crate) fn read(layout: &Layout) -> Result<Clock> {
    let v = map(layout)?.lookup(&0u32.to_le_bytes(), MapFlags::ANY).kernel(|| "read hike_clock".into())?;
    Ok(v.map_or(Clock::Real, |v| Clock::decode(&v)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_moves_each_kind_of_clock() {
        assert_eq!(Clock::Real.advanced(5), Clock::Offset(5));
        assert_eq!(Clock::Frozen(10).advanced(5), Clock::Frozen(15));
        assert_eq!(Clock::Frozen(10).advanced(-50), Clock::Frozen(1), "0 would mean real time");
        assert_eq!(Clock::Offset(-3).advanced(5), Clock::Offset(2));
        for c in [Clock::Real, Clock::Frozen(7), Clock::Offset(-9)] {
            assert_eq!(Clock::decode(&c.encode()), c);
        }
    }
}
