//! Group commit: acknowledged writes are durable, and the actors never wait for an fsync.
//!
//! An actor applies its change to sled (in memory, fast), takes a [`Ticket`] and hands the reply
//! to a task that awaits it. One flusher task calls sled's blocking `flush()` in
//! `spawn_blocking`, then `fdatasync`s sled's data file (sled 0.34 flushes with
//! `sync_file_range`, which survives a process kill but not a power loss), then releases every
//! ticket taken before that flush began. Many writes share one flush, and a tenant's mailbox
//! keeps moving while the disk works.
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
    sync::{Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};

use tokio::sync::{oneshot, Notify};

use crate::error::StorageError;

/// Whether acknowledged writes wait for the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Every acknowledged write is flushed and fdatasync'ed first (the default).
    Sync,
    /// Writes are acknowledged once applied in memory; sled flushes in the background.
    /// Only for benchmarks that measure what group commit costs.
    Relaxed,
}

type Waiter = oneshot::Sender<Result<(), Arc<String>>>;

/// Makes the written data of the open data file durable: `File::sync_data` (fdatasync) in
/// production. A seam only so tests can watch, and hold, the sync every acknowledgement waits
/// for.
type SyncData = Arc<dyn Fn(&File) -> std::io::Result<()> + Send + Sync>;

/// Told the duration of every group commit, from the start of sled's flush to the end of the
/// fdatasync of its data file (the time acknowledged writers wait on the disk). Called on a
/// blocking thread once per flush, not per write; it must return quickly.
pub trait FlushObserver: Send + Sync + 'static {
    fn flushed(&self, took: Duration);
}

struct Inner {
    db: sled::Db,
    data_file: Option<PathBuf>,
    /// How `data_file` is synced after each flush.
    sync_data: SyncData,
    durability: Durability,
    waiters: Mutex<Vec<Waiter>>,
    wake: Arc<Notify>,
    /// Who hears of each group commit's duration; set once, after the store opened.
    observer: OnceLock<Arc<dyn FlushObserver>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Lets the flusher task see that every handle is gone, and release the database.
        self.wake.notify_one();
    }
}

/// A cheap handle to the group-commit flusher.
#[derive(Clone)]
pub struct Flusher {
    inner: Arc<Inner>,
}

/// Resolves once every write applied before it was taken is on disk.
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

impl Flusher {
    /// Starts the flusher task on the current tokio runtime.
    pub fn start(db: sled::Db, data_file: Option<PathBuf>, durability: Durability) -> Self {
        Self::start_syncing(db, data_file, Arc::new(File::sync_data), durability)
    }

    /// [`Flusher::start`] with the data file synced by `sync_data`.
    fn start_syncing(
        db: sled::Db,
        data_file: Option<PathBuf>,
        sync_data: SyncData,
        durability: Durability,
    ) -> Self {
        let inner = Arc::new(Inner {
            db,
            data_file,
            sync_data,
            durability,
            waiters: Mutex::new(Vec::new()),
            wake: Arc::new(Notify::new()),
            observer: OnceLock::new(),
        });
        if durability == Durability::Sync {
            let weak = Arc::downgrade(&inner);
            let wake = inner.wake.clone();
            tokio::spawn(async move {
                loop {
                    wake.notified().await;
                    let Some(inner) = weak.upgrade() else { return };
                    let batch: Vec<Waiter> = match inner.waiters.lock() {
                        Ok(mut w) => std::mem::take(&mut *w),
                        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
                    };
                    if batch.is_empty() {
                        continue;
                    }
                    let worker = inner.clone();
                    let result = tokio::task::spawn_blocking(move || worker.group_commit())
                        .await
                        .unwrap_or_else(|e| Err(StorageError::Flush(e.to_string())))
                        .map_err(|e| Arc::new(e.to_string()));
                    if let Err(e) = &result {
                        // After a failed fsync the kernel may have dropped the dirty pages:
                        // nothing acknowledged later could be trusted. Stop, and let the
                        // operator fix the disk; sled recovers from its log on restart.
                        tracing::error!(error = %e, "group flush failed; stopping");
                        std::process::exit(74);
                    }
                    for w in batch {
                        let _ = w.send(result.clone());
                    }
                }
            });
        }
        Flusher { inner }
    }

    /// A ticket covering every write already applied.
    pub fn ticket(&self) -> Ticket {
        if self.inner.durability == Durability::Relaxed {
            return Ticket(None);
        }
        let (tx, rx) = oneshot::channel();
        match self.inner.waiters.lock() {
            Ok(mut w) => w.push(tx),
            Err(poisoned) => poisoned.into_inner().push(tx),
        }
        self.inner.wake.notify_one();
        Ticket(Some(rx))
    }

    /// Flushes now, on this thread: for shutdown and for tests.
    pub fn flush_blocking(&self) -> Result<(), StorageError> {
        self.inner.flush_blocking()
    }

    /// Tells `observer` the duration of every group commit from now on. There is one
    /// observer: answers false, and changes nothing, when one was already set.
    pub fn observe(&self, observer: Arc<dyn FlushObserver>) -> bool {
        self.inner.observer.set(observer).is_ok()
    }
}

impl Inner {
    /// One group commit: the flush and its fdatasync, timed for the observer.
    fn group_commit(&self) -> Result<(), StorageError> {
        let started = Instant::now();
        self.flush_blocking()?;
        if let Some(observer) = self.observer.get() {
            observer.flushed(started.elapsed());
        }
        Ok(())
    }

    fn flush_blocking(&self) -> Result<(), StorageError> {
        self.db.flush()?;
        if let Some(path) = &self.data_file {
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
        let flusher = Flusher::start(db.clone(), Some(dir.path().join("db/db")), Durability::Sync);
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
        );

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
