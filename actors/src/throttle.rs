//! Throttles, in memory: failed-attempt blocking ([`Throttle`]) and request-rate windows
//! ([`RateWindow`]).
//!
//! Failed-login throttling works per account and per client address.
//!
//! After `free` consecutive failures a key is blocked, first for `base`, then twice as long
//! after each further failure, capped. A success resets the account's counter (an address keeps
//! its own). Counters live in the directory's memory: a restart forgives, which is acceptable
//! for throttling and keeps failed logins free of disk writes.

use std::{
    collections::HashMap,
    hash::Hash,
    net::{IpAddr, Ipv6Addr},
    time::{Duration, Instant},
};

/// The key a client address is counted under, by every per-address limit (end-user and
/// dashboard logins, registrations, guests, texts, connections): IPv4 as is, IPv6 by its /64
/// (one subscriber's allocation), so rotating through a prefix does not reset the counters.
/// An IPv4-mapped address (`::ffff:a.b.c.d`, how a dual-stack listener sees IPv4 peers) is
/// its IPv4 address first: otherwise every IPv4 client would share the one bucket `::/64`.
pub fn throttle_ip(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        v4 @ IpAddr::V4(_) => v4,
        IpAddr::V6(v6) => {
            let mut s = v6.segments();
            s[4..].fill(0);
            IpAddr::V6(Ipv6Addr::from(s))
        }
    }
}

/// Counts for one key.
#[derive(Debug, Clone, Copy)]
struct Count {
    failures: u32,
    blocked_until: Option<Instant>,
    last: Instant,
}

/// A throttle over keys of type `K`.
#[derive(Debug)]
pub struct Throttle<K> {
    free: u32,
    base: Duration,
    cap: Duration,
    forget_after: Duration,
    counts: HashMap<K, Count>,
    /// Pruning scans the whole map: at most once a second.
    last_prune: Option<Instant>,
}

impl<K: Hash + Eq + Clone> Throttle<K> {
    pub fn new(free: u32, base: Duration, cap: Duration) -> Self {
        Throttle {
            free,
            base,
            cap,
            forget_after: cap * 2,
            counts: HashMap::new(),
            last_prune: None,
        }
    }

    /// Seconds to wait before trying again, if blocked now.
    pub fn blocked(&self, key: &K, now: Instant) -> Option<u64> {
        let c = self.counts.get(key)?;
        let until = c.blocked_until?;
        (until > now).then(|| (until - now).as_secs_f64().ceil().max(1.0) as u64)
    }

    /// Records a failure; answers the new block, if any.
    pub fn fail(&mut self, key: &K, now: Instant) -> Option<u64> {
        self.prune(now);
        let c = self.counts.entry(key.clone()).or_insert(Count {
            failures: 0,
            blocked_until: None,
            last: now,
        });
        if now.duration_since(c.last) > self.forget_after {
            c.failures = 0;
        }
        c.failures += 1;
        c.last = now;
        if c.failures >= self.free {
            let exp = (c.failures - self.free).min(20);
            let wait = self.base.saturating_mul(1u32 << exp).min(self.cap);
            c.blocked_until = Some(now + wait);
            Some(wait.as_secs())
        } else {
            None
        }
    }

    pub fn reset(&mut self, key: &K) {
        self.counts.remove(key);
    }

    /// Drops keys idle long enough to be forgotten, when the map grows.
    fn prune(&mut self, now: Instant) {
        if self.counts.len() < 10_000
            || self
                .last_prune
                .is_some_and(|at| now.duration_since(at) < Duration::from_secs(1))
        {
            return;
        }
        self.last_prune = Some(now);
        let forget = self.forget_after;
        self.counts.retain(|_, c| {
            now.duration_since(c.last) <= forget || c.blocked_until.is_some_and(|u| u > now)
        });
    }
}

/// At most `limit` requests per `period` and key, counted in fixed windows that start at a
/// key's first request. Over the limit, the answer is the seconds until the window ends.
#[derive(Debug)]
pub struct RateWindow<K> {
    limit: u32,
    period: Duration,
    windows: HashMap<K, (Instant, u32)>,
    /// Pruning scans the whole map: at most once a second.
    last_prune: Option<Instant>,
}

impl<K: Hash + Eq + Clone> RateWindow<K> {
    pub fn new(limit: u32, period: Duration) -> Self {
        RateWindow {
            limit,
            period,
            windows: HashMap::new(),
            last_prune: None,
        }
    }

    /// Counts one request; `Err(retry_after_secs)` when it is over the limit (not counted).
    pub fn hit(&mut self, key: &K, now: Instant) -> Result<(), u64> {
        let due = self
            .last_prune
            .is_none_or(|at| now.duration_since(at) >= Duration::from_secs(1));
        if self.windows.len() >= 10_000 && due {
            self.last_prune = Some(now);
            let period = self.period;
            self.windows
                .retain(|_, (start, _)| now.duration_since(*start) < period);
        }
        let entry = self.windows.entry(key.clone()).or_insert((now, 0));
        if now.duration_since(entry.0) >= self.period {
            *entry = (now, 0);
        }
        if entry.1 >= self.limit {
            let left = self.period.saturating_sub(now.duration_since(entry.0));
            return Err(left.as_secs_f64().ceil().max(1.0) as u64);
        }
        entry.1 += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_windows_allow_the_limit_then_refuse_until_the_window_ends() {
        let mut w = RateWindow::new(5, Duration::from_secs(60));
        let now = Instant::now();
        for _ in 0..5 {
            assert_eq!(w.hit(&"ip", now), Ok(()));
        }
        assert_eq!(w.hit(&"ip", now + Duration::from_secs(10)), Err(50));
        assert_eq!(w.hit(&"other", now), Ok(()));
        assert_eq!(w.hit(&"ip", now + Duration::from_secs(60)), Ok(()));
    }

    #[test]
    fn blocks_after_the_free_failures_growing_to_the_cap() {
        let mut t = Throttle::new(5, Duration::from_secs(1), Duration::from_secs(900));
        let now = Instant::now();
        for _ in 0..4 {
            assert_eq!(t.fail(&"a", now), None);
        }
        assert_eq!(t.blocked(&"a", now), None);
        assert_eq!(t.fail(&"a", now), Some(1));
        assert_eq!(t.blocked(&"a", now), Some(1));
        assert_eq!(t.fail(&"a", now), Some(2));
        assert_eq!(t.fail(&"a", now), Some(4));
        for _ in 0..20 {
            t.fail(&"a", now);
        }
        assert_eq!(t.blocked(&"a", now), Some(900));
        assert_eq!(t.blocked(&"a", now + Duration::from_secs(901)), None);
        assert_eq!(t.blocked(&"b", now), None);
        t.reset(&"a");
        assert_eq!(t.blocked(&"a", now), None);
    }
}
