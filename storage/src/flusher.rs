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

use std::{
    fs::File,
    path::PathBuf,
    sync::{Arc, Mutex},
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

struct Inner {
    db: sled::Db,
    data_file: Option<PathBuf>,
    durability: Durability,
    waiters: Mutex<Vec<Waiter>>,
    wake: Arc<Notify>,
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
        let inner = Arc::new(Inner {
            db,
            data_file,
            durability,
            waiters: Mutex::new(Vec::new()),
            wake: Arc::new(Notify::new()),
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
                    let result = tokio::task::spawn_blocking(move || worker.flush_blocking())
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
}

impl Inner {
    fn flush_blocking(&self) -> Result<(), StorageError> {
        self.db.flush()?;
        if let Some(path) = &self.data_file {
            match File::open(path) {
                Ok(f) => f.sync_data()?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
