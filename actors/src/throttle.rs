//! Throttles: failed-attempt blocking ([`Throttle`]) and request-rate windows ([`RateWindow`]).
//! The sign-in rules built from them are [`crate::login_guard`]'s.
//!
//! A doubling throttle blocks a key after `free` consecutive failures, first for `base`, then
//! twice as long after each further failure, capped; a windowed one blocks a key that failed
//! `limit` times within a window opened by its first failure, until the window ends.
//!
//! A [`Throttle`] is kept in memory and mirrored on disk by its owner: every key it changes is
//! remembered until the owner takes the changes ([`Throttle::take_changes`]) into the batch it
//! writes next (for a failed login, the one with the failure's audit event), as a
//! [`SavedCount`] with wall-clock times, and loaded again when the owner starts
//! ([`Throttle::restore`]). A restart, or an idle tenant actor's retirement, therefore forgives
//! nothing. Keys forgotten in memory (reset, expired and swept) are removed on disk the same
//! way, so the records stay as few as the live entries. [`RateWindow`]s stay in memory only.

use std::{
    collections::{HashMap, HashSet},
    hash::Hash,
    net::{IpAddr, Ipv6Addr},
    time::{Duration, Instant},
};

use serde::{Deserialize, Serialize};
use tessera_storage::{ct_eq, Kind};
use time::OffsetDateTime;
use uuid::Uuid;

/// A key of a persisted throttle: how it is written in a record's key and read back.
pub trait ThrottleKey: Hash + Eq + Clone {
    fn to_key_bytes(&self) -> Vec<u8>;
    fn from_key_bytes(bytes: &[u8]) -> Option<Self>;
}

impl ThrottleKey for String {
    fn to_key_bytes(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }
    fn from_key_bytes(bytes: &[u8]) -> Option<Self> {
        String::from_utf8(bytes.to_vec()).ok()
    }
}

impl ThrottleKey for IpAddr {
    fn to_key_bytes(&self) -> Vec<u8> {
        match self {
            IpAddr::V4(v4) => v4.octets().to_vec(),
            IpAddr::V6(v6) => v6.octets().to_vec(),
        }
    }
    fn from_key_bytes(bytes: &[u8]) -> Option<Self> {
        match bytes.len() {
            4 => <[u8; 4]>::try_from(bytes).ok().map(IpAddr::from),
            16 => <[u8; 16]>::try_from(bytes).ok().map(IpAddr::from),
            _ => None,
        }
    }
}

/// An (address, account) pair: the address's length (4 or 16), its bytes, then the account.
impl ThrottleKey for (IpAddr, String) {
    fn to_key_bytes(&self) -> Vec<u8> {
        let ip = self.0.to_key_bytes();
        let mut out = Vec::with_capacity(1 + ip.len() + self.1.len());
        out.push(ip.len() as u8);
        out.extend_from_slice(&ip);
        out.extend_from_slice(self.1.as_bytes());
        out
    }
    fn from_key_bytes(bytes: &[u8]) -> Option<Self> {
        let (&len, rest) = bytes.split_first()?;
        let len = usize::from(len);
        if rest.len() < len {
            return None;
        }
        let (ip, account) = rest.split_at(len);
        Some((
            IpAddr::from_key_bytes(ip)?,
            String::from_key_bytes(account)?,
        ))
    }
}

impl ThrottleKey for Uuid {
    fn to_key_bytes(&self) -> Vec<u8> {
        self.as_bytes().to_vec()
    }
    fn from_key_bytes(bytes: &[u8]) -> Option<Self> {
        Uuid::from_slice(bytes).ok()
    }
}

/// One key's counts as stored: wall-clock times in Unix milliseconds, since an `Instant` means
/// nothing after a restart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedCount {
    pub failures: u32,
    pub blocked_until_ms: Option<i64>,
    pub last_ms: i64,
    /// A windowed throttle's window start (absent: the window opened at `last_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_start_ms: Option<i64>,
}

/// A tenant's throttle entry, keyed `throttle | key` (see [`saved_key`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TenantThrottleRecord(pub SavedCount);

tessera_storage::record!(
    TenantThrottleRecord in TenantRecord: Kind::Throttle, "throttle", version 1
);

/// A dashboard throttle entry of the directory, keyed `throttle | key`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PlatformThrottleRecord(pub SavedCount);

tessera_storage::record!(
    PlatformThrottleRecord in PlatformRecord: Kind::PlatformThrottle, "dashboard throttle", version 1
);

/// The record key of `key` in the throttle its owner numbers `throttle`.
pub fn saved_key<K: ThrottleKey>(throttle: u8, key: &K) -> Vec<u8> {
    let mut out = vec![throttle];
    out.extend_from_slice(&key.to_key_bytes());
    out
}

/// The clock pair that converts between `Instant`s and wall-clock milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Clocks {
    pub now: Instant,
    pub wall_ms: i64,
}

impl Clocks {
    /// The pair for a process whose wall clock reads `wall` now (the system clock, shifted by
    /// the fault drills' offset: a drill that restarts a server with its clock set back sees
    /// stored blocks end that much later).
    pub fn at(wall: time::OffsetDateTime) -> Self {
        let wall_ms = i64::try_from(wall.unix_timestamp_nanos() / 1_000_000).unwrap_or(0);
        Clocks {
            now: Instant::now(),
            wall_ms,
        }
    }

    #[cfg(test)]
    pub fn now() -> Self {
        Self::at(time::OffsetDateTime::now_utc())
    }

    fn to_wall(self, at: Instant) -> i64 {
        if at >= self.now {
            let ahead = i64::try_from((at - self.now).as_millis()).unwrap_or(i64::MAX);
            self.wall_ms.saturating_add(ahead)
        } else {
            let behind = i64::try_from((self.now - at).as_millis()).unwrap_or(i64::MAX);
            self.wall_ms.saturating_sub(behind)
        }
    }

    /// The `Instant` of a wall-clock time; `None` when it is before what `Instant` can hold.
    fn to_instant(self, ms: i64) -> Option<Instant> {
        let delta = ms.saturating_sub(self.wall_ms);
        if delta >= 0 {
            self.now
                .checked_add(Duration::from_millis(delta.unsigned_abs()))
        } else {
            self.now
                .checked_sub(Duration::from_millis(delta.unsigned_abs()))
        }
    }
}

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
    /// When the current window opened (a windowed throttle's; the first failure otherwise).
    start: Instant,
}

/// How a throttle turns failures into blocks.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// `free` consecutive failures, then a block of `base`, doubled by each further failure
    /// up to `cap`.
    Doubling {
        free: u32,
        base: Duration,
        cap: Duration,
    },
    /// At most `limit` failures in a window of `period` opened by the first; the failure that
    /// reaches the limit blocks the key until the window ends.
    Window { limit: u32, period: Duration },
}

/// A throttle over keys of type `K`.
#[derive(Debug)]
pub struct Throttle<K> {
    rule: Rule,
    forget_after: Duration,
    counts: HashMap<K, Count>,
    /// Keys changed (counted, reset or forgotten) since the owner last took the changes.
    changed: HashSet<K>,
    /// Pruning scans the whole map: at most once a second.
    last_prune: Option<Instant>,
}

impl<K: Hash + Eq + Clone> Throttle<K> {
    /// Blocks after `free` consecutive failures, for `base`, doubling up to `cap`.
    pub fn new(free: u32, base: Duration, cap: Duration) -> Self {
        Self::with_rule(Rule::Doubling { free, base, cap }, cap * 2)
    }

    /// Blocks a key that failed `limit` times within `period` of its window's first failure,
    /// until the window ends: at most `limit` failures per `period`.
    pub fn per_window(limit: u32, period: Duration) -> Self {
        Self::with_rule(
            Rule::Window {
                limit: limit.max(1),
                period,
            },
            period,
        )
    }

    fn with_rule(rule: Rule, forget_after: Duration) -> Self {
        Throttle {
            rule,
            forget_after,
            counts: HashMap::new(),
            changed: HashSet::new(),
            last_prune: None,
        }
    }

    /// Whether an entry holds nothing worth keeping: not blocked, and idle long enough for its
    /// failures to be forgotten.
    fn forgettable(&self, c: &Count, now: Instant) -> bool {
        now.duration_since(c.last) > self.forget_after && c.blocked_until.is_none_or(|u| u <= now)
    }

    /// Whether some key changed since the changes were last taken.
    pub fn has_changes(&self) -> bool {
        !self.changed.is_empty()
    }

    /// The keys changed since the last call, each with what to store (`None`: delete its
    /// record).
    pub fn take_changes(&mut self, clocks: Clocks) -> Vec<(K, Option<SavedCount>)> {
        let changed = std::mem::take(&mut self.changed);
        changed
            .into_iter()
            .map(|k| {
                let windowed = matches!(self.rule, Rule::Window { .. });
                let saved = self.counts.get(&k).map(|c| SavedCount {
                    failures: c.failures,
                    blocked_until_ms: c.blocked_until.map(|u| clocks.to_wall(u)),
                    last_ms: clocks.to_wall(c.last),
                    window_start_ms: windowed.then(|| clocks.to_wall(c.start)),
                });
                (k, saved)
            })
            .collect()
    }

    /// Loads a stored entry; false when it has nothing left to hold (the caller deletes it).
    pub fn restore(&mut self, key: K, saved: &SavedCount, clocks: Clocks) -> bool {
        let Some(last) = clocks.to_instant(saved.last_ms.min(clocks.wall_ms)) else {
            return false;
        };
        let start = saved
            .window_start_ms
            .and_then(|ms| clocks.to_instant(ms.min(clocks.wall_ms)))
            .unwrap_or(last);
        let count = Count {
            failures: saved.failures,
            blocked_until: saved
                .blocked_until_ms
                .filter(|u| *u > clocks.wall_ms)
                .and_then(|u| clocks.to_instant(u)),
            last,
            start,
        };
        if self.forgettable(&count, clocks.now) {
            return false;
        }
        self.counts.insert(key, count);
        true
    }

    /// Forgets every entry with nothing left to hold (their records go with the next changes).
    pub fn sweep(&mut self, now: Instant) {
        let gone: Vec<K> = self
            .counts
            .iter()
            .filter(|(_, c)| self.forgettable(c, now))
            .map(|(k, _)| k.clone())
            .collect();
        for k in gone {
            self.counts.remove(&k);
            self.changed.insert(k);
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
            start: now,
        });
        self.changed.insert(key.clone());
        match self.rule {
            Rule::Doubling { free, base, cap } => {
                if now.duration_since(c.last) > self.forget_after {
                    c.failures = 0;
                    c.start = now;
                }
                c.failures = c.failures.saturating_add(1);
                c.last = now;
                if c.failures >= free {
                    let exp = (c.failures - free).min(20);
                    let wait = base.saturating_mul(1u32 << exp).min(cap);
                    c.blocked_until = Some(now + wait);
                    Some(wait.as_secs())
                } else {
                    None
                }
            }
            Rule::Window { limit, period } => {
                if now.duration_since(c.start) >= period {
                    *c = Count {
                        failures: 0,
                        blocked_until: None,
                        last: now,
                        start: now,
                    };
                }
                c.failures = c.failures.saturating_add(1);
                c.last = now;
                // Only the failure that reaches the limit begins a block: later ones (a
                // client past the CAPTCHA, say) fall inside the same block and report nothing.
                if c.failures == limit {
                    let until = c.start + period;
                    c.blocked_until = Some(until);
                    Some(until.saturating_duration_since(now).as_secs().max(1))
                } else {
                    None
                }
            }
        }
    }

    /// Forgets every key `pred` holds for (a walk of them all).
    pub fn reset_where(&mut self, pred: impl Fn(&K) -> bool) {
        let gone: Vec<K> = self.counts.keys().filter(|k| pred(k)).cloned().collect();
        for k in gone {
            self.counts.remove(&k);
            self.changed.insert(k);
        }
    }

    pub fn reset(&mut self, key: &K) {
        if self.counts.remove(key).is_some() {
            self.changed.insert(key.clone());
        }
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
        self.sweep(now);
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

/// Remembered consumed codes past which the expired ones are dropped.
pub const CONSUMED_PRUNE_AT: usize = 10_000;

/// The codes consumed recently, per challenge key (`slot | purpose`): the keyed hash of the
/// code and when it would have expired. In memory: it only has to outlive the requests racing
/// the one that consumed the code (a restart forgets it, as it forgets the throttles).
/// One entry per slot and purpose, written only by a correct code, so it holds at most the
/// codes consumed in the last code lifetime.
#[derive(Default)]
pub struct ConsumedCodes {
    map: HashMap<Vec<u8>, (String, OffsetDateTime)>,
}

impl ConsumedCodes {
    /// Remembers that the code hashed `hash` was consumed from `key`, until `expires_at`.
    pub fn remember(
        &mut self,
        key: &[u8],
        hash: &str,
        expires_at: OffsetDateTime,
        now: OffsetDateTime,
    ) {
        if self.map.len() >= CONSUMED_PRUNE_AT {
            self.map.retain(|_, (_, until)| *until > now);
        }
        self.map.insert(key.to_vec(), (hash.to_owned(), expires_at));
    }

    /// Codes remembered now.
    #[cfg(test)]
    pub(crate) fn remembered(&self) -> usize {
        self.map.len()
    }

    /// Whether `presented` (a keyed hash) is the code last consumed from `key`, and that code
    /// has not expired yet. Compared in constant time.
    pub fn is_resubmission(&self, key: &[u8], presented: &str, now: OffsetDateTime) -> bool {
        self.map.get(key).is_some_and(|(hash, until)| {
            *until > now && ct_eq(hash.as_bytes(), presented.as_bytes())
        })
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
    fn changes_are_taken_once_and_a_restored_block_still_holds() {
        let mut t = Throttle::new(2, Duration::from_secs(60), Duration::from_secs(900));
        let clocks = Clocks::now();
        t.fail(&"a".to_owned(), clocks.now);
        t.fail(&"a".to_owned(), clocks.now);
        assert!(t.has_changes());
        let changes = t.take_changes(clocks);
        assert!(!t.has_changes());
        assert_eq!(changes.len(), 1);
        let saved = changes[0].1.clone().expect("an entry");
        assert_eq!(saved.failures, 2);
        assert_eq!(saved.blocked_until_ms, Some(clocks.wall_ms + 60_000));

        // A fresh throttle (a restart) 10 s later: still blocked for the rest.
        let later = Clocks {
            now: Instant::now(),
            wall_ms: clocks.wall_ms + 10_000,
        };
        let mut fresh = Throttle::new(2, Duration::from_secs(60), Duration::from_secs(900));
        assert!(fresh.restore("a".to_owned(), &saved, later));
        assert_eq!(fresh.blocked(&"a".to_owned(), later.now), Some(50));
        // Past the block and the forgetting time, there is nothing to restore.
        let much_later = Clocks {
            now: Instant::now(),
            wall_ms: clocks.wall_ms + 2000 * 1000,
        };
        assert!(!fresh.restore("a".to_owned(), &saved, much_later));

        // A reset is a change (a deletion); resetting an unknown key is none.
        t.reset(&"a".to_owned());
        assert_eq!(t.take_changes(clocks), vec![("a".to_owned(), None)]);
        t.reset(&"b".to_owned());
        assert!(!t.has_changes());
    }

    #[test]
    fn throttle_keys_round_trip() {
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        let v4: IpAddr = "198.18.0.1".parse().unwrap();
        for ip in [v4, v6] {
            assert_eq!(IpAddr::from_key_bytes(&ip.to_key_bytes()), Some(ip));
        }
        let id = Uuid::now_v7();
        assert_eq!(Uuid::from_key_bytes(&id.to_key_bytes()), Some(id));
        let s = "ana@example.com".to_owned();
        assert_eq!(String::from_key_bytes(&s.to_key_bytes()), Some(s.clone()));
        for ip in [v4, v6] {
            let pair = (ip, s.clone());
            assert_eq!(
                <(IpAddr, String)>::from_key_bytes(&pair.to_key_bytes()),
                Some(pair)
            );
        }
        assert_eq!(<(IpAddr, String)>::from_key_bytes(&[16, 1, 2]), None);
        assert_eq!(saved_key(3, &s)[0], 3);
    }

    #[test]
    fn a_window_allows_its_limit_then_blocks_until_it_ends() {
        let mut t = Throttle::per_window(3, Duration::from_secs(900));
        let now = Instant::now();
        assert_eq!(t.fail(&"ip", now), None);
        assert_eq!(t.fail(&"ip", now + Duration::from_secs(100)), None);
        // The third failure, 200 s into the window: blocked for the 700 s left.
        assert_eq!(t.fail(&"ip", now + Duration::from_secs(200)), Some(700));
        // Failures inside the block (past a CAPTCHA) begin nothing new: one block, one report.
        assert_eq!(t.fail(&"ip", now + Duration::from_secs(300)), None);
        assert_eq!(t.blocked(&"ip", now + Duration::from_secs(300)), Some(600));
        assert_eq!(t.blocked(&"ip", now + Duration::from_secs(899)), Some(1));
        assert_eq!(t.blocked(&"ip", now + Duration::from_secs(900)), None);
        // A new window opens with the next failure.
        assert_eq!(t.fail(&"ip", now + Duration::from_secs(901)), None);
        // The window start survives a restart.
        let clocks = Clocks {
            now: now + Duration::from_secs(901),
            wall_ms: 1_000_000_000,
        };
        let saved = t.take_changes(clocks).remove(0).1.expect("an entry");
        assert_eq!(saved.window_start_ms, Some(1_000_000_000));
        let mut fresh = Throttle::per_window(3, Duration::from_secs(900));
        assert!(fresh.restore("ip", &saved, clocks));
        fresh.fail(&"ip", clocks.now);
        assert_eq!(fresh.fail(&"ip", clocks.now), Some(900));
    }

    #[test]
    fn a_clock_set_back_at_restart_lengthens_a_stored_block() {
        let wall = time::OffsetDateTime::now_utc();
        let before = Clocks::at(wall);
        let mut t = Throttle::new(1, Duration::from_secs(15), Duration::from_secs(900));
        assert_eq!(t.fail(&"a", before.now), Some(15));
        let saved = t.take_changes(before).remove(0).1.expect("an entry");
        // The same moment on a clock set back a minute: the block has 75 s to run.
        let back = Clocks::at(wall - time::Duration::seconds(60));
        let mut fresh = Throttle::new(1, Duration::from_secs(15), Duration::from_secs(900));
        assert!(fresh.restore("a", &saved, back));
        assert_eq!(fresh.blocked(&"a", back.now), Some(75));
        // And on a clock set forward past its end, nothing is left to hold.
        let ahead = Clocks::at(wall + time::Duration::seconds(20));
        let mut later = Throttle::new(1, Duration::from_secs(15), Duration::from_secs(900));
        later.restore("a", &saved, ahead);
        assert_eq!(later.blocked(&"a", ahead.now), None);
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
