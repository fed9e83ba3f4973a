//! Per-client-IP request limits on the API (GCRA: a steady rate with a burst),
//! in memory per replica. Publish budgets per user live in the database
//! (`db::limits`), since they must hold across replicas.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub struct IpLimiter {
    /// Time between requests at the steady rate; `None`: no limit.
    interval: Option<Duration>,
    /// How far ahead of the steady rate a client may run (the burst).
    tolerance: Duration,
    /// Per IP, the theoretical arrival time of its next request.
    next: Mutex<HashMap<IpAddr, Instant>>,
}

/// Entries are forgotten once their client has been quiet this long.
const FORGET_AFTER: Duration = Duration::from_secs(600);

impl IpLimiter {
    /// `per_minute` requests a minute with a burst of a quarter of that (at least
    /// 10); 0 disables the limit.
    pub fn new(per_minute: u32) -> IpLimiter {
        let interval = (per_minute > 0).then(|| Duration::from_secs(60) / per_minute);
        let burst = (per_minute / 4).max(10);
        let tolerance = interval.map_or(Duration::ZERO, |i| i * (burst - 1));
        IpLimiter { interval, tolerance, next: Mutex::new(HashMap::new()) }
    }

    /// `Err(wait)` when `ip` is over its limit.
    pub fn check(&self, ip: IpAddr) -> Result<(), Duration> {
        self.check_at(ip, Instant::now())
    }

    fn check_at(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let Some(interval) = self.interval else { return Ok(()) };
        let mut next = self.next.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if next.len() > 100_000 {
            next.retain(|_, at| *at + FORGET_AFTER > now);
        }
        let tat = next.get(&ip).copied().unwrap_or(now).max(now);
        let ahead = tat - now;
        if ahead > self.tolerance {
            return Err(ahead - self.tolerance);
        }
        next.insert(ip, tat + interval);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_then_the_steady_rate() {
        let limiter = IpLimiter::new(60); // 1/s, burst 15
        let ip: IpAddr = [10, 0, 0, 1].into();
        let other: IpAddr = [10, 0, 0, 2].into();
        let t0 = Instant::now();
        for _ in 0..15 {
            assert!(limiter.check_at(ip, t0).is_ok());
        }
        let wait = limiter.check_at(ip, t0).err();
        assert!(wait.is_some_and(|w| w > Duration::ZERO && w <= Duration::from_secs(1)), "{wait:?}");
        assert!(limiter.check_at(other, t0).is_ok(), "limits are per IP");
        assert!(limiter.check_at(ip, t0 + Duration::from_secs(1)).is_ok(), "one more after a second");
        assert!(IpLimiter::new(0).check_at(ip, t0).is_ok());
    }
}
