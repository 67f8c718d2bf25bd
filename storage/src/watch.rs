//! The storage watchdog: every call into sled registers while it runs, and a thread of its own
//! notices one that never returns.
//!
//! sled 0.34.7 can deadlock inside `apply_batch` (a writer waits, under the segment accountant's
//! mutex, for a file truncation queued on sled's I/O pool while every pool thread waits for that
//! mutex; see ARCHITECTURE.md). Pacing ([`crate::flusher`]) keeps Tessera away from it; this is
//! the second line: a call that hangs is seen, named, and the process is stopped so that its
//! supervisor restarts it and sled recovers from its log.
//!
//! Each call takes a [`Watched`] guard from [`enter`] for as long as it runs: one slot of a fixed,
//! process-wide table, holding the call's kind and start in a single atomic word, so registering
//! costs two atomic operations and no lock (a lock here could itself be caught in the hang). The
//! watchdog is an OS thread, not a task: a hung sled call blocks the runtime's worker threads
//! too. It reads the table every tenth of its limit and hands the oldest call past the limit to
//! its `on_stall` callback (the binary logs it and exits with code 75).
//!
//! [`hang_next_apply`] is a fault drill for the tests (`tessera admin fault hang-storage`, only
//! with `[testing] fault_injection`): the next batch applied blocks forever inside its watched
//! call, as the sled deadlock does.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
        LazyLock,
    },
    time::{Duration, Instant},
};

/// What kind of storage call a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// A point read (`get`).
    Get = 1,
    /// One step of a scan (each `next` of a range or prefix iterator).
    Scan = 2,
    /// A batch applied to a tree.
    Apply = 3,
    /// sled's flush, the start of a group commit.
    Flush = 4,
    /// The fdatasync of sled's data file after a flush.
    Sync = 5,
    /// A writer waiting for a flush because too many batches are unflushed (pacing).
    Pace = 6,
    /// Any other call (the size on disk, opening a tree, a backup's or a rotation's step).
    Other = 7,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Scan => "scan",
            Op::Apply => "apply",
            Op::Flush => "flush",
            Op::Sync => "sync",
            Op::Pace => "pace",
            Op::Other => "other",
        }
    }

    fn from_u8(v: u8) -> Op {
        match v {
            1 => Op::Get,
            2 => Op::Scan,
            3 => Op::Apply,
            4 => Op::Flush,
            5 => Op::Sync,
            6 => Op::Pace,
            _ => Op::Other,
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Calls watched at once; more than this run unwatched (and are counted in [`unwatched`]).
/// Far above what the runtime's worker and blocking threads can have in flight together.
const SLOTS: usize = 1024;

/// A slot's word: 0 when free, else `(milliseconds since EPOCH + 1) << 8 | op`.
static TABLE: LazyLock<Box<[AtomicU64]>> =
    LazyLock::new(|| (0..SLOTS).map(|_| AtomicU64::new(0)).collect());
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);
/// Where the next claim starts looking, so concurrent callers spread over the table.
static NEXT: AtomicUsize = AtomicUsize::new(0);
static UNWATCHED: AtomicU64 = AtomicU64::new(0);
static STALLED: AtomicBool = AtomicBool::new(false);
static HANG_NEXT_APPLY: AtomicBool = AtomicBool::new(false);

fn now_ms() -> u64 {
    u64::try_from(EPOCH.elapsed().as_millis()).unwrap_or(u64::MAX >> 9)
}

/// A storage call in flight; the slot is freed when it drops.
#[must_use = "the call is watched only while the guard lives"]
pub struct Watched {
    slot: Option<usize>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            if let Some(word) = TABLE.get(i) {
                word.store(0, Ordering::Release);
            }
        }
    }
}

/// Registers a storage call of kind `op` until the guard drops.
pub fn enter(op: Op) -> Watched {
    let word = ((now_ms() + 1) << 8) | u64::from(op as u8);
    let start = NEXT.fetch_add(1, Ordering::Relaxed);
    for k in 0..SLOTS {
        let i = (start + k) % SLOTS;
        if let Some(slot) = TABLE.get(i) {
            if slot
                .compare_exchange(0, word, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Watched { slot: Some(i) };
            }
        }
    }
    UNWATCHED.fetch_add(1, Ordering::Relaxed);
    Watched { slot: None }
}

/// A call that has run for a while: its kind and how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Running {
    pub op: Op,
    pub age: Duration,
}

/// The longest-running storage call now in flight, if any.
pub fn oldest() -> Option<Running> {
    let now = now_ms() + 1;
    TABLE
        .iter()
        .filter_map(|slot| {
            let word = slot.load(Ordering::Acquire);
            (word != 0).then(|| Running {
                op: Op::from_u8((word & 0xff) as u8),
                age: Duration::from_millis(now.saturating_sub(word >> 8)),
            })
        })
        .max_by_key(|r| r.age)
}

/// Storage calls in flight now.
pub fn in_flight() -> usize {
    TABLE
        .iter()
        .filter(|s| s.load(Ordering::Relaxed) != 0)
        .count()
}

/// Calls that found the table full and ran unwatched, since the start.
pub fn unwatched() -> u64 {
    UNWATCHED.load(Ordering::Relaxed)
}

/// Whether the watchdog has seen a call past its limit (readiness answers 503 from then on).
pub fn stalled() -> bool {
    STALLED.load(Ordering::Acquire)
}

/// Starts the watchdog thread: every `limit / 10` (at least 10 ms, at most 1 s) it looks at the
/// oldest call in flight, and when that one has run for `limit` or longer it marks the store
/// stalled and calls `on_stall` with it, once. `on_stall` is expected not to return (the binary
/// exits); if it does, the thread ends.
pub fn start_watchdog(
    limit: Duration,
    on_stall: impl FnOnce(Running) + Send + 'static,
) -> std::io::Result<()> {
    let every = (limit / 10).clamp(Duration::from_millis(10), Duration::from_secs(1));
    std::thread::Builder::new()
        .name("tessera-storage-watchdog".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            if let Some(running) = oldest().filter(|r| r.age >= limit) {
                STALLED.store(true, Ordering::Release);
                on_stall(running);
                return;
            }
        })
        .map(|_| ())
}

/// Fault drill: the next batch applied hangs forever inside its watched call.
pub fn hang_next_apply() {
    HANG_NEXT_APPLY.store(true, Ordering::Release);
}

/// Called by every apply inside its watched call: hangs when a drill asked for it.
pub(crate) fn maybe_hang() {
    if HANG_NEXT_APPLY.swap(false, Ordering::AcqRel) {
        tracing::warn!("fault drill: this storage apply hangs for good");
        loop {
            std::thread::park();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_call_is_watched_while_its_guard_lives_and_the_oldest_is_named() {
        let first = enter(Op::Flush);
        std::thread::sleep(Duration::from_millis(30));
        let second = enter(Op::Get);
        let oldest_now = oldest().unwrap();
        // Other tests in this process may hold older calls; ours is at least this old.
        assert!(
            oldest_now.age >= Duration::from_millis(30),
            "{oldest_now:?}"
        );
        assert!(in_flight() >= 2);
        drop(first);
        drop(second);
    }

    #[test]
    fn the_watchdog_names_a_call_past_its_limit() {
        let (tx, rx) = std::sync::mpsc::channel();
        let held = enter(Op::Pace);
        start_watchdog(Duration::from_millis(100), move |r| {
            let _ = tx.send(r);
        })
        .unwrap();
        let seen = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(seen.age >= Duration::from_millis(100));
        assert!(stalled());
        drop(held);
    }
}
