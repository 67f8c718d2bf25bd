//! Group commit and pacing: acknowledged writes are durable, the actors never wait for an
//! fsync, and sled never holds more than a bounded number of unflushed batches.
//!
//! An actor applies its change to sled (in memory, fast), takes a [`Ticket`] and hands the reply
//! to a task that awaits it. One flusher thread calls sled's blocking `flush()`, then
//! `fdatasync`s sled's data file (sled 0.34 flushes with `sync_file_range`, which survives a
//! process kill but not a power loss), then releases every ticket taken before that flush began.
//! Many writes share one flush, and a tenant's mailbox keeps moving while the disk works.
//!
//! Pacing: the flusher flushes whenever a batch is applied and not yet flushed, in both
//! durability modes, and a batch is admitted only while fewer than `max_unflushed` are
//! outstanding; past that, the writer waits (on its own thread) for the flush under way. With no
//! flush sled applies no backpressure at all: its I/O pool's queue grows without bound, and in
//! sled 0.34.7 a segment truncation queued behind it can deadlock a writer (ARCHITECTURE.md,
//! "The store never hangs"). With [`Durability::Relaxed`] a ticket still waits for sled's flush,
//! only not for the fdatasync.
//!
//! The flusher is an OS thread of its own, not a task on the runtime: a stuck flush must not take
//! a runtime worker with it, and the watchdog ([`crate::watch`]) names it if it sticks.
//!
//! A failed flush stops the process (exit code 74): after a failed fsync nothing can be
//! acknowledged truthfully, and sled recovers from its log at the next start.
//!
//! `flush_async` is never called: in sled 0.34.7 it can deadlock with concurrent callers.
//!
//! How long each group commit takes (sled's flush through the fdatasync) is told to a
//! [`FlushObserver`], which the binary's metrics install; this crate knows nothing of them.
//!
//! The fdatasync goes through one seam, `SyncData` (`File::sync_data` in production), so
//! the unit tests below can hold a sync open and see that no acknowledgement leaves before the
//! sync of its batch has returned. The crash tests cannot see that: they kill the process, and
//! what a killed process wrote is already in the kernel whether or not it was synced. No
//! filesystem that drops unsynced writes on demand runs where the tests run (LazyFS is not
//! packaged by Debian; the kernel offers no device-mapper for `dm-flakey`), so the order is
//! checked here instead.

use std::{
    fs::File,
    path::PathBuf,
    sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak},
    time::{Duration, Instant},
};

use tokio::sync::oneshot;

use crate::{
    error::StorageError,
    watch::{self, Op},
};

/// Whether acknowledged writes wait for the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Every acknowledged write is flushed and fdatasync'ed first (the default).
    Sync,
    /// Writes are acknowledged once sled has flushed them, without the fdatasync: a process
    /// kill loses nothing acknowledged, a power loss may. Only for benchmarks that measure
    /// what the fdatasync costs.
    Relaxed,
}

/// The default bound on batches applied and not yet flushed (`storage.max_unflushed_batches`).
pub const DEFAULT_MAX_UNFLUSHED: u64 = 64;

type Waiter = oneshot::Sender<Result<(), Arc<String>>>;

/// Makes the written data of the open data file durable: `File::sync_data` (fdatasync) in
/// production. A seam only so tests can watch, and hold, the sync every acknowledgement waits
/// for.
type SyncData = Arc<dyn Fn(&File) -> std::io::Result<()> + Send + Sync>;

/// Told the duration of every group commit, from the start of sled's flush to the end of the
/// fdatasync of its data file (the time acknowledged writers wait on the disk). Called on the
/// flusher thread once per flush, not per write; it must return quickly.
pub trait FlushObserver: Send + Sync + 'static {
    fn flushed(&self, took: Duration);
}

/// What the writers, the ticket holders and the flusher thread share.
#[derive(Default)]
struct Queue {
    state: Mutex<QueueState>,
    /// Wakes the flusher thread: a ticket, an applied batch, or the end.
    work: Condvar,
    /// Wakes writers held back by pacing: a flush completed.
    flushed: Condvar,
}

#[derive(Default)]
struct QueueState {
    waiters: Vec<Waiter>,
    /// Batches applied since the start (counted once `apply_batch` returned).
    applied: u64,
    /// `applied` as it stood when the last completed flush began: every batch counted up to
    /// here is flushed.
    flushed: u64,
    /// Writers now held back by pacing, and how many ever were.
    paced_now: u64,
    paced_total: u64,
    /// Batches admitted and being applied now.
    admitted: u64,
    /// Every handle is gone: the thread flushes what is left and ends.
    closed: bool,
}

impl QueueState {
    /// Batches applied or being applied, and not yet flushed.
    fn outstanding(&self) -> u64 {
        (self.applied + self.admitted).saturating_sub(self.flushed)
    }
}

/// A batch admitted by pacing, counted as outstanding while it lives.
pub(crate) struct Admitted<'a> {
    queue: &'a Queue,
    applied: bool,
}

impl Admitted<'_> {
    /// The batch was applied: it stays outstanding until a flush that begins after now.
    pub(crate) fn applied(mut self) {
        self.applied = true;
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        let mut st = self.queue.lock();
        st.admitted = st.admitted.saturating_sub(1);
        if self.applied {
            st.applied += 1;
            drop(st);
            self.queue.work.notify_one();
        } else {
            // Not applied (sled refused it): a writer held back may take its place.
            drop(st);
            self.queue.flushed.notify_one();
        }
    }
}

impl Queue {
    // The lock guards counters a panic cannot leave inconsistent: a poisoned one is used.
    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct Inner {
    db: sled::Db,
    data_file: Option<PathBuf>,
    /// How `data_file` is synced after each flush.
    sync_data: SyncData,
    durability: Durability,
    max_unflushed: u64,
    queue: Arc<Queue>,
    /// Who hears of each group commit's duration; set once, after the store opened.
    observer: OnceLock<Arc<dyn FlushObserver>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Lets the flusher thread see that every handle is gone, and release the database.
        self.queue.lock().closed = true;
        self.queue.work.notify_all();
        self.queue.flushed.notify_all();
    }
}

/// A cheap handle to the group-commit flusher.
#[derive(Clone)]
pub struct Flusher {
    inner: Arc<Inner>,
}

/// Resolves once every write applied before it was taken is flushed (and, in
/// [`Durability::Sync`], fdatasync'ed).
pub struct Ticket(Option<oneshot::Receiver<Result<(), Arc<String>>>>);

impl Ticket {
    pub async fn wait(self) -> Result<(), StorageError> {
        match self.0 {
            None => Ok(()),
            Some(rx) => match rx.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(StorageError::Flush(e.to_string())),
                Err(_) => Err(StorageError::FlusherGone),
            },
        }
    }
}

/// The pacing counters, for the metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pacing {
    /// Batches applied and not yet flushed.
    pub outstanding: u64,
    /// The bound on `outstanding`.
    pub max_unflushed: u64,
    /// Writers waiting now for a flush before they may apply.
    pub paced_now: u64,
    /// Writers that ever waited.
    pub paced_total: u64,
}

impl Flusher {
    /// Starts the flusher thread, with at most `max_unflushed` batches outstanding (at least 1).
    pub fn start(
        db: sled::Db,
        data_file: Option<PathBuf>,
        durability: Durability,
        max_unflushed: u64,
    ) -> Result<Self, StorageError> {
        Self::start_syncing(
            db,
            data_file,
            Arc::new(File::sync_data),
            durability,
            max_unflushed,
        )
    }

    /// [`Flusher::start`] with the data file synced by `sync_data`.
    fn start_syncing(
        db: sled::Db,
        data_file: Option<PathBuf>,
        sync_data: SyncData,
        durability: Durability,
        max_unflushed: u64,
    ) -> Result<Self, StorageError> {
        let queue = Arc::new(Queue::default());
        let inner = Arc::new(Inner {
            db,
            data_file,
            sync_data,
            durability,
            max_unflushed: max_unflushed.max(1),
            queue: queue.clone(),
            observer: OnceLock::new(),
        });
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("tessera-flusher".into())
            .spawn(move || flusher_thread(&queue, &weak))?;
        Ok(Flusher { inner })
    }

    /// A ticket covering every write already applied.
    pub fn ticket(&self) -> Ticket {
        let (tx, rx) = oneshot::channel();
        self.inner.queue.lock().waiters.push(tx);
        self.inner.queue.work.notify_one();
        Ticket(Some(rx))
    }

    /// Admits one batch: waits, when `max_unflushed` batches are applied or being applied and
    /// not yet flushed, until a flush brings them under it. Called before every batch is
    /// applied; the answer counts the batch until it is dropped, as applied once
    /// [`Admitted::applied`] said so. On a multi-threaded runtime the wait leaves the worker's
    /// other tasks to another thread.
    pub(crate) fn admit(&self) -> Admitted<'_> {
        let queue = &self.inner.queue;
        let max = self.inner.max_unflushed;
        let full = |st: &QueueState| st.outstanding() >= max && !st.closed;
        {
            let mut st = queue.lock();
            if !full(&st) {
                st.admitted += 1;
                return Admitted {
                    queue,
                    applied: false,
                };
            }
        }
        let wait = || {
            let _watched = watch::enter(Op::Pace);
            let mut st = queue.lock();
            st.paced_now += 1;
            st.paced_total += 1;
            queue.work.notify_one();
            while full(&st) {
                st = queue.flushed.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            st.paced_now -= 1;
            st.admitted += 1;
        };
        match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(wait),
            _ => wait(),
        }
        Admitted {
            queue,
            applied: false,
        }
    }

    /// The pacing counters now.
    pub fn pacing(&self) -> Pacing {
        let st = self.inner.queue.lock();
        Pacing {
            outstanding: st.outstanding(),
            max_unflushed: self.inner.max_unflushed,
            paced_now: st.paced_now,
            paced_total: st.paced_total,
        }
    }

    /// Flushes now, on this thread: for shutdown and for tests.
    pub fn flush_blocking(&self) -> Result<(), StorageError> {
        self.inner.flush_blocking(Durability::Sync)
    }

    /// Tells `observer` the duration of every group commit from now on. There is one
    /// observer: answers false, and changes nothing, when one was already set.
    pub fn observe(&self, observer: Arc<dyn FlushObserver>) -> bool {
        self.inner.observer.set(observer).is_ok()
    }
}

/// The flusher thread: flushes while anything is applied and unflushed or a ticket waits;
/// releases the tickets and the paced writers after each flush; ends once every handle is gone
/// and nothing is left to flush.
fn flusher_thread(queue: &Queue, inner: &Weak<Inner>) {
    loop {
        let (batch, target) = {
            let mut st = queue.lock();
            while st.waiters.is_empty() && st.applied == st.flushed && !st.closed {
                st = queue.work.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            if st.closed && st.waiters.is_empty() && st.applied == st.flushed {
                return;
            }
            (std::mem::take(&mut st.waiters), st.applied)
        };
        // Every handle gone: the waiters' senders drop with `batch` (their tickets answer
        // "flusher gone"), and the database is released.
        let Some(inner) = inner.upgrade() else { return };
        let result = inner.group_commit().map_err(|e| Arc::new(e.to_string()));
        drop(inner);
        if let Err(e) = &result {
            // After a failed fsync the kernel may have dropped the dirty pages: nothing
            // acknowledged later could be trusted. Stop, and let the operator fix the disk;
            // sled recovers from its log on restart.
            tracing::error!(error = %e, "group flush failed; stopping");
            std::process::exit(74);
        }
        {
            let mut st = queue.lock();
            st.flushed = st.flushed.max(target);
        }
        queue.flushed.notify_all();
        for w in batch {
            let _ = w.send(result.clone());
        }
    }
}

impl Inner {
    /// One group commit: the flush and (in [`Durability::Sync`]) its fdatasync, timed for the
    /// observer.
    fn group_commit(&self) -> Result<(), StorageError> {
        let started = Instant::now();
        self.flush_blocking(self.durability)?;
        if let Some(observer) = self.observer.get() {
            observer.flushed(started.elapsed());
        }
        Ok(())
    }

    fn flush_blocking(&self, durability: Durability) -> Result<(), StorageError> {
        {
            let _watched = watch::enter(Op::Flush);
            self.db.flush()?;
        }
        if durability == Durability::Relaxed {
            return Ok(());
        }
        if let Some(path) = &self.data_file {
            let _watched = watch::enter(Op::Sync);
            match File::open(path) {
                Ok(f) => (self.sync_data)(&f)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[derive(Default)]
    struct Count {
        flushes: AtomicU64,
        nanos: AtomicU64,
    }

    impl FlushObserver for Count {
        fn flushed(&self, took: Duration) {
            self.flushes.fetch_add(1, Ordering::SeqCst);
            let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
            self.nanos.fetch_add(nanos, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn each_group_commit_is_timed_for_the_one_observer() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new()
            .path(dir.path().join("db"))
            .open()
            .unwrap();
        let flusher = Flusher::start(
            db.clone(),
            Some(dir.path().join("db/db")),
            Durability::Sync,
            DEFAULT_MAX_UNFLUSHED,
        )
        .unwrap();
        let count = Arc::new(Count::default());
        assert!(flusher.observe(count.clone()));
        assert!(!flusher.observe(Arc::new(Count::default())), "one observer");
        for n in 0u8..3 {
            db.insert([n], vec![n; 64]).unwrap();
            flusher.ticket().wait().await.unwrap();
        }
        // Each ticket waited for a flush that began after it was taken.
        assert_eq!(count.flushes.load(Ordering::SeqCst), 3);
        assert!(count.nanos.load(Ordering::SeqCst) > 0);
        // Flushes outside group commit (shutdown) are not group commits.
        flusher.flush_blocking().unwrap();
        assert_eq!(count.flushes.load(Ordering::SeqCst), 3);
    }

    /// What the watched sync and the test saw, in the order it happened.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Event {
        /// The `n`-th sync of the data file was entered (counting from 1).
        SyncStarted(usize),
        /// The `n`-th sync returned (after the real `sync_data`).
        SyncReturned(usize),
        /// A file other than sled's data file was synced.
        OtherFileSynced,
    }

    /// A sync of the data file that records when it starts and returns, and holds each call
    /// until the test releases it (or gives up: a dropped release lets every sync through).
    struct HeldSync {
        events: Mutex<Vec<Event>>,
        release: Mutex<std::sync::mpsc::Receiver<()>>,
        /// The data file sled writes, as (device, inode): the file synced must be this one.
        data_file: (u64, u64),
    }

    impl HeldSync {
        fn sync(&self, file: &File) -> std::io::Result<()> {
            use std::os::unix::fs::MetadataExt;
            let meta = file.metadata()?;
            let n = {
                let mut events = self.events.lock().unwrap();
                if (meta.dev(), meta.ino()) != self.data_file {
                    // Not a panic: the flusher would end the test process (exit code 74).
                    events.push(Event::OtherFileSynced);
                    return Ok(());
                }
                let n = 1 + events
                    .iter()
                    .filter(|e| matches!(e, Event::SyncStarted(_)))
                    .count();
                events.push(Event::SyncStarted(n));
                n
            };
            let _ = self.release.lock().unwrap().recv();
            file.sync_data()?;
            self.events.lock().unwrap().push(Event::SyncReturned(n));
            Ok(())
        }

        fn events(&self) -> Vec<Event> {
            self.events.lock().unwrap().clone()
        }
    }

    /// Whether the ticket's acknowledgement has been sent, without waiting for it.
    fn acknowledged(ticket: &mut Ticket) -> bool {
        match ticket.0.as_mut() {
            Some(rx) => !matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty)),
            None => true,
        }
    }

    /// Waits (up to 10 s) until `event` was recorded; fails at once if `ticket` is
    /// acknowledged first.
    async fn sync_entered(held: &HeldSync, event: Event, ticket: &mut Ticket) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !held.events().contains(&event) {
            assert!(
                !acknowledged(ticket),
                "acknowledged before {event:?}: {:?}",
                held.events()
            );
            assert!(
                Instant::now() < deadline,
                "no {event:?} within 10 s: {:?}",
                held.events()
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Pacing: with `max_unflushed` batches applied and unflushed, the next writer waits until
    /// a flush brings them under the bound, and goes on as soon as one has. Fails if writers are
    /// admitted without bound (sled's queue could grow until it deadlocks) or stay held after
    /// the flush.
    #[test]
    fn a_writer_waits_while_the_most_batches_allowed_are_unflushed() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new()
            .path(dir.path().join("db"))
            .open()
            .unwrap();
        let data_file = dir.path().join("db/db");
        let meta = {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(&data_file).unwrap();
            (m.dev(), m.ino())
        };
        let (release, held_back) = std::sync::mpsc::channel();
        let held = Arc::new(HeldSync {
            events: Mutex::new(Vec::new()),
            release: Mutex::new(held_back),
            data_file: meta,
        });
        let sync = held.clone();
        let flusher = Flusher::start_syncing(
            db.clone(),
            Some(data_file),
            Arc::new(move |f: &File| sync.sync(f)),
            Durability::Sync,
            2,
        )
        .unwrap();
        let wait_for = |event: Event| {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !held.events().contains(&event) {
                assert!(
                    Instant::now() < deadline,
                    "no {event:?}: {:?}",
                    held.events()
                );
                std::thread::sleep(Duration::from_millis(2));
            }
        };

        // One batch: the flusher flushes it without being asked, and its sync is held.
        let admitted = flusher.admit();
        db.insert(b"one", vec![1; 64]).unwrap();
        admitted.applied();
        wait_for(Event::SyncStarted(1));
        // A second is admitted (one outstanding, two allowed).
        let admitted = flusher.admit();
        db.insert(b"two", vec![2; 64]).unwrap();
        admitted.applied();
        assert_eq!(flusher.pacing().outstanding, 2);

        // A third waits for the flush under way.
        let (admitted, seen) = std::sync::mpsc::channel();
        let writer = flusher.clone();
        let third = std::thread::spawn(move || {
            drop(writer.admit());
            admitted.send(()).unwrap();
        });
        assert!(
            seen.recv_timeout(Duration::from_millis(300)).is_err(),
            "admitted past the bound"
        );
        assert_eq!(flusher.pacing().paced_now, 1);

        // The first flush's sync returns: one batch is left outstanding, the writer goes on.
        release.send(()).unwrap();
        seen.recv_timeout(Duration::from_secs(10))
            .expect("the writer goes on once a flush brought the count under the bound");
        third.join().unwrap();
        let pacing = flusher.pacing();
        assert_eq!((pacing.paced_now, pacing.paced_total), (0, 1));
        // The flusher goes on to the second batch without a ticket asking.
        wait_for(Event::SyncStarted(2));
        drop(release);
        let deadline = Instant::now() + Duration::from_secs(10);
        while flusher.pacing().outstanding != 0 {
            assert!(
                Instant::now() < deadline,
                "the second batch was never flushed"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The guarantee behind every 2xx answer to a write, below what a SIGKILL can show: an
    /// acknowledgement is released only after the fdatasync of the data file, in a flush that
    /// began after its ticket was taken, has returned. Fails if the sync is skipped, or if
    /// tickets are released before it returns or with a flush that began before them.
    #[tokio::test]
    async fn no_acknowledgement_leaves_before_the_sync_of_its_batch_returns() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new()
            .path(dir.path().join("db"))
            .open()
            .unwrap();
        let data_file = dir.path().join("db/db");
        let meta = {
            use std::os::unix::fs::MetadataExt;
            let m = std::fs::metadata(&data_file).unwrap();
            (m.dev(), m.ino())
        };
        let (release, held_back) = std::sync::mpsc::channel();
        let held = Arc::new(HeldSync {
            events: Mutex::new(Vec::new()),
            release: Mutex::new(held_back),
            data_file: meta,
        });
        let sync = held.clone();
        let flusher = Flusher::start_syncing(
            db.clone(),
            Some(data_file),
            Arc::new(move |f: &File| sync.sync(f)),
            Durability::Sync,
            DEFAULT_MAX_UNFLUSHED,
        )
        .unwrap();

        // A write and its ticket: the flush starts and its sync is held.
        db.insert(b"first", vec![1; 64]).unwrap();
        let mut first = flusher.ticket();
        sync_entered(&held, Event::SyncStarted(1), &mut first).await;
        assert!(!acknowledged(&mut first), "acknowledged during the sync");

        // A write applied while that flush is on disk is not covered by it: its ticket waits
        // for the next flush.
        db.insert(b"second", vec![2; 64]).unwrap();
        let mut second = flusher.ticket();
        assert!(!acknowledged(&mut first), "acknowledged during the sync");

        // The sync returns: the first ticket resolves, after it.
        release.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), first.wait())
            .await
            .expect("the first ticket resolves once its sync returned")
            .unwrap();
        assert!(
            held.events()
                .starts_with(&[Event::SyncStarted(1), Event::SyncReturned(1)]),
            "the acknowledgement came before its sync returned: {:?}",
            held.events()
        );

        // The second ticket is held by the second flush's sync, not released with the first.
        sync_entered(&held, Event::SyncStarted(2), &mut second).await;
        assert!(!acknowledged(&mut second), "released with an earlier flush");
        release.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), second.wait())
            .await
            .expect("the second ticket resolves once its sync returned")
            .unwrap();
        assert_eq!(
            held.events(),
            [
                Event::SyncStarted(1),
                Event::SyncReturned(1),
                Event::SyncStarted(2),
                Event::SyncReturned(2),
            ]
        );
        drop(release);
    }
}
