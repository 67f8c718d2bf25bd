//! The sled database and the two handles cut from it.
//!
//! Two trees: `platform` (keys `kind | key`) and `tenants` (keys `tenant id | kind | key`).
//! Keeping each side in one tree makes every multi-record change of one owner a single sled
//! `Batch`, which sled applies atomically; a crash never leaves half a change. It also keeps a
//! tenant's data contiguous, so a tenant can be scanned or erased with one prefix.

use std::{
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex, RwLock, RwLockWriteGuard,
    },
};

use crate::{
    codec::{decode, encode, PlatformRecord, TenantRecord},
    error::StorageError,
    flusher::{Durability, Flusher, Ticket},
    keys::{platform_key, tenant_key, Kind, TenantId},
    migrations,
    watch::{self, Op},
};

const PLATFORM_TREE: &str = "platform";
const TENANT_TREE: &str = "tenants";

/// How to open the store.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// The directory sled writes into.
    pub path: PathBuf,
    /// sled's page cache, in bytes. Set explicitly: sled's memory can reach several times it.
    pub cache_capacity_bytes: u64,
    pub durability: Durability,
    /// The most batches applied and not yet flushed; past it a writer waits for a flush
    /// ([`crate::flusher`]).
    pub max_unflushed_batches: u64,
}

/// A batch's writes in order (`None`: a removal), kept beside sled's batch so an online
/// backup can replay what was applied while it read.
pub(crate) type Ops = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// The batches applied while a backup read, in the order applied, with their tree's name.
pub(crate) type Journal = Vec<(&'static str, Ops)>;

/// The write gate: every batch is applied under its read side. A backup holds the write side
/// only for an instant, to start and to end its journal; between the two, batches are applied
/// one at a time and recorded in the journal in the order they were applied, so the snapshot
/// read meanwhile plus the journal replayed after it is the database as it was at the end.
#[derive(Clone, Default)]
pub(crate) struct Gate {
    lock: Arc<RwLock<()>>,
    journaling: Arc<AtomicBool>,
    journal: Arc<Mutex<Option<Journal>>>,
}

impl Gate {
    // The locks guard no invariant a panic could break: a poisoned one is used as it is.
    fn close(&self) -> RwLockWriteGuard<'_, ()> {
        self.lock.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies a batch, paced by `flusher`, watched while sled holds it. The batch's writes are
    /// copied only while a journal wants them.
    fn apply(
        &self,
        name: &'static str,
        tree: &sled::Tree,
        flusher: &Flusher,
        ops: Ops,
    ) -> Result<(), StorageError> {
        fn batch_of(ops: impl IntoIterator<Item = (Vec<u8>, Option<Vec<u8>>)>) -> sled::Batch {
            let mut batch = sled::Batch::default();
            for (key, value) in ops {
                match value {
                    Some(v) => batch.insert(key, v),
                    None => batch.remove(key),
                }
            }
            batch
        }
        fn watched(tree: &sled::Tree, batch: sled::Batch) -> Result<(), StorageError> {
            let _watched = watch::enter(Op::Apply);
            watch::maybe_hang();
            Ok(tree.apply_batch(batch)?)
        }
        let admitted = flusher.admit();
        let _pass = self.lock.read().unwrap_or_else(|p| p.into_inner());
        if !self.journaling.load(Ordering::Acquire) {
            watched(tree, batch_of(ops))?;
        } else {
            let mut journal = self.journal.lock().unwrap_or_else(|p| p.into_inner());
            watched(tree, batch_of(ops.iter().cloned()))?;
            if let Some(j) = journal.as_mut() {
                j.push((name, ops));
            }
        }
        admitted.applied();
        Ok(())
    }

    /// From now on every applied batch is journaled (batches under way finish first). One
    /// journal at a time: a second backup is refused while one runs.
    pub(crate) fn start_journal(&self) -> Result<(), StorageError> {
        let _closed = self.close();
        let mut journal = self.journal.lock().unwrap_or_else(|p| p.into_inner());
        if journal.is_some() {
            return Err(StorageError::Backup("another backup is under way".into()));
        }
        *journal = Some(Vec::new());
        self.journaling.store(true, Ordering::Release);
        Ok(())
    }

    /// Closes the gate for a whole rotation; refused while a backup journals (its journal would
    /// miss the rotation's writes).
    pub(crate) fn close_for_rotation(&self) -> Result<RwLockWriteGuard<'_, ()>, StorageError> {
        let closed = self.close();
        if self.journaling.load(Ordering::Acquire) {
            return Err(StorageError::Backup(
                "a backup is under way; rotate the key after it ends".into(),
            ));
        }
        Ok(closed)
    }

    /// Ends the journal and answers it.
    pub(crate) fn end_journal(&self) -> Journal {
        let _closed = self.close();
        self.journaling.store(false, Ordering::Release);
        self.journal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .unwrap_or_default()
    }
}

/// The open database: hands out the platform store and tenant stores.
#[derive(Clone)]
pub struct Store {
    pub(crate) db: sled::Db,
    pub(crate) platform: sled::Tree,
    pub(crate) tenants: sled::Tree,
    flusher: Flusher,
    pub(crate) gate: Gate,
}

impl Store {
    /// Opens (or creates) the database, checks its format record and runs migrations, and starts
    /// the flusher thread.
    pub fn open(opts: &StoreOptions) -> Result<Self, StorageError> {
        crate::files::create_private_dir(&opts.path)?;
        let db = sled::Config::new()
            .path(&opts.path)
            .cache_capacity(opts.cache_capacity_bytes)
            .open()?;
        migrations::check_and_migrate(&db, migrations::CURRENT_FORMAT, migrations::MIGRATIONS)?;
        let platform = db.open_tree(PLATFORM_TREE)?;
        let tenants = db.open_tree(TENANT_TREE)?;
        let flusher = Flusher::start(
            db.clone(),
            Some(opts.path.join("db")),
            opts.durability,
            opts.max_unflushed_batches,
        )?;
        Ok(Store {
            db,
            platform,
            tenants,
            flusher,
            gate: Gate::default(),
        })
    }

    /// The directory's handle on platform records.
    pub fn platform(&self) -> PlatformStore {
        PlatformStore {
            tree: self.platform.clone(),
            flusher: self.flusher.clone(),
            gate: self.gate.clone(),
        }
    }

    /// A handle that can only address `tenant`'s keys.
    pub fn tenant(&self, tenant: TenantId) -> TenantStore {
        TenantStore {
            id: tenant,
            tree: self.tenants.clone(),
            flusher: self.flusher.clone(),
            gate: self.gate.clone(),
        }
    }

    /// Whether a master key was ever bound to this data (see [`Store::bind_master_key`]).
    pub fn has_master_key(&self) -> Result<bool, StorageError> {
        Ok(self.db.open_tree("meta")?.get(b"key_check")?.is_some())
    }

    pub fn flusher(&self) -> &Flusher {
        &self.flusher
    }

    /// Flushes everything now (shutdown).
    pub fn flush_blocking(&self) -> Result<(), StorageError> {
        self.flusher.flush_blocking()
    }

    /// The on-disk size reported by sled, in bytes.
    pub fn size_on_disk(&self) -> Result<u64, StorageError> {
        let _watched = watch::enter(Op::Other);
        Ok(self.db.size_on_disk()?)
    }
}

/// Platform records: tenants, dashboard accounts, indexes. Held only by the directory actor.
#[derive(Clone)]
pub struct PlatformStore {
    tree: sled::Tree,
    flusher: Flusher,
    gate: Gate,
}

impl PlatformStore {
    pub fn get<R: PlatformRecord>(&self, key: &[u8]) -> Result<Option<R>, StorageError> {
        watched_get(&self.tree, platform_key(R::KIND, key))?
            .map(|v| decode::<R>(&v))
            .transpose()
    }

    /// Every record of one kind, in key order.
    pub fn scan<R: PlatformRecord>(&self) -> impl Iterator<Item = Result<R, StorageError>> {
        Watched(self.tree.scan_prefix([R::KIND as u8])).map(|item| {
            item.map_err(StorageError::from)
                .and_then(|(_, v)| decode::<R>(&v))
        })
    }

    /// Records of one kind whose key starts with `prefix`, with their keys (prefix removed).
    pub fn scan_prefix<R: PlatformRecord>(
        &self,
        prefix: &[u8],
    ) -> impl Iterator<Item = Result<(Vec<u8>, R), StorageError>> {
        let start = platform_key(R::KIND, prefix);
        let head = start.len();
        Watched(self.tree.scan_prefix(start)).map(move |item| {
            let (k, v) = item?;
            Ok((k[head..].to_vec(), decode::<R>(&v)?))
        })
    }

    /// Applies a batch atomically (not yet durable: take a ticket).
    pub fn apply(&self, batch: PlatformBatch) -> Result<(), StorageError> {
        self.gate
            .apply(PLATFORM_TREE, &self.tree, &self.flusher, batch.ops)
    }

    /// Resolves once every write applied so far is on disk.
    pub fn ticket(&self) -> Ticket {
        self.flusher.ticket()
    }
}

/// An atomic set of platform writes.
#[derive(Default)]
pub struct PlatformBatch {
    ops: Ops,
}

impl PlatformBatch {
    pub fn put<R: PlatformRecord>(&mut self, key: &[u8], value: &R) -> Result<(), StorageError> {
        self.ops
            .push((platform_key(R::KIND, key), Some(encode(value)?)));
        Ok(())
    }

    pub fn remove(&mut self, kind: Kind, key: &[u8]) {
        self.ops.push((platform_key(kind, key), None));
    }
}

/// One tenant's records. Every key it builds starts with its own tenant id.
#[derive(Clone)]
pub struct TenantStore {
    id: TenantId,
    tree: sled::Tree,
    flusher: Flusher,
    gate: Gate,
}

impl TenantStore {
    pub fn tenant_id(&self) -> TenantId {
        self.id
    }

    pub fn get<R: TenantRecord>(&self, key: &[u8]) -> Result<Option<R>, StorageError> {
        watched_get(&self.tree, tenant_key(&self.id, R::KIND, key))?
            .map(|v| decode::<R>(&v))
            .transpose()
    }

    /// Every record of one kind under this tenant whose key starts with `prefix`.
    pub fn scan<R: TenantRecord>(
        &self,
        prefix: &[u8],
    ) -> impl Iterator<Item = Result<(Vec<u8>, R), StorageError>> {
        let head = tenant_key(&self.id, R::KIND, &[]).len();
        Watched(self.tree.scan_prefix(tenant_key(&self.id, R::KIND, prefix))).map(move |item| {
            let (k, v) = item?;
            Ok((k[head..].to_vec(), decode::<R>(&v)?))
        })
    }

    /// Every entry under this tenant, of every kind, undecoded: `(kind byte, key, value)`.
    /// Only for operators' checks of what is stored (e.g. that an erasure left nothing).
    pub fn raw_entries(
        &self,
    ) -> impl Iterator<Item = Result<(u8, Vec<u8>, Vec<u8>), StorageError>> {
        let head = self.id.as_bytes().len();
        Watched(self.tree.scan_prefix(self.id.as_bytes())).map(move |item| {
            let (k, v) = item?;
            let kind = k.get(head).copied().unwrap_or(0);
            let key = k.get(head + 1..).unwrap_or_default().to_vec();
            Ok((kind, key, v.to_vec()))
        })
    }

    /// Records of one kind under this tenant, newest key first, strictly before `before` when
    /// given (a cursor), at most `limit`.
    pub fn scan_rev<R: TenantRecord>(
        &self,
        before: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, R)>, StorageError> {
        let start = tenant_key(&self.id, R::KIND, &[]);
        let head = start.len();
        let range = match before {
            Some(b) => self
                .tree
                .range(start.clone()..tenant_key(&self.id, R::KIND, b)),
            None => self.tree.scan_prefix(start.clone()),
        };
        let mut out = Vec::new();
        for item in Watched(range.rev()) {
            let (k, v) = item?;
            if !k.starts_with(&start) {
                continue;
            }
            out.push((k[head..].to_vec(), decode::<R>(&v)?));
            if out.len() >= limit {
                break;
            }
        }
        Ok(out)
    }

    /// A batch bound to this tenant.
    pub fn batch(&self) -> TenantBatch {
        TenantBatch {
            id: self.id,
            ops: Ops::new(),
        }
    }

    /// Applies a batch atomically. A batch built for another tenant is refused.
    pub fn apply(&self, batch: TenantBatch) -> Result<(), StorageError> {
        if batch.id != self.id {
            return Err(StorageError::Format(
                "a batch of another tenant was applied".into(),
            ));
        }
        self.gate
            .apply(TENANT_TREE, &self.tree, &self.flusher, batch.ops)
    }

    /// Resolves once every write applied so far is on disk.
    pub fn ticket(&self) -> Ticket {
        self.flusher.ticket()
    }
}

/// An atomic set of writes under one tenant's prefix.
pub struct TenantBatch {
    id: TenantId,
    ops: Ops,
}

impl TenantBatch {
    pub fn put<R: TenantRecord>(&mut self, key: &[u8], value: &R) -> Result<(), StorageError> {
        self.ops
            .push((tenant_key(&self.id, R::KIND, key), Some(encode(value)?)));
        Ok(())
    }

    pub fn remove(&mut self, kind: Kind, key: &[u8]) {
        self.ops.push((tenant_key(&self.id, kind, key), None));
    }
}

/// A point read, watched while sled holds it.
fn watched_get(tree: &sled::Tree, key: Vec<u8>) -> Result<Option<sled::IVec>, StorageError> {
    let _watched = watch::enter(Op::Get);
    Ok(tree.get(key)?)
}

/// A sled iterator whose every step is watched.
struct Watched<I>(I);

impl<I: Iterator> Iterator for Watched<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let _watched = watch::enter(Op::Scan);
        self.0.next()
    }
}

/// Where sled keeps its files inside a data directory.
pub fn db_path(data_dir: &Path) -> PathBuf {
    data_dir.join("db")
}

/// A store on the database in `data_dir`, durability relaxed: for the unit tests.
#[cfg(test)]
pub(crate) fn open_for_tests(data_dir: &Path) -> Store {
    let opened = Store::open(&StoreOptions {
        path: db_path(data_dir),
        cache_capacity_bytes: 8 << 20,
        durability: Durability::Relaxed,
        max_unflushed_batches: crate::flusher::DEFAULT_MAX_UNFLUSHED,
    });
    opened.unwrap_or_else(|e| panic!("cannot open a test store: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Record;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Setting {
        v: String,
    }
    impl Record for Setting {
        const KIND: Kind = Kind::TenantSettings;
        const NAME: &'static str = "setting";
        const VERSION: u16 = 1;
    }
    impl TenantRecord for Setting {}

    fn open(dir: &Path) -> Store {
        Store::open(&StoreOptions {
            path: dir.to_path_buf(),
            cache_capacity_bytes: 8 << 20,
            durability: Durability::Sync,
            max_unflushed_batches: crate::flusher::DEFAULT_MAX_UNFLUSHED,
        })
        .unwrap()
    }

    #[tokio::test]
    async fn tenant_stores_cannot_see_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path());
        let (a, b) = (store.tenant(TenantId::new()), store.tenant(TenantId::new()));
        let mut batch = a.batch();
        batch.put(b"k", &Setting { v: "a".into() }).unwrap();
        a.apply(batch).unwrap();
        a.ticket().wait().await.unwrap();
        assert_eq!(
            a.get::<Setting>(b"k").unwrap(),
            Some(Setting { v: "a".into() })
        );
        assert_eq!(b.get::<Setting>(b"k").unwrap(), None);
        assert_eq!(b.scan::<Setting>(b"").count(), 0);
        // A batch built by one tenant's store is refused by another's.
        let mut foreign = a.batch();
        foreign.put(b"k", &Setting { v: "x".into() }).unwrap();
        assert!(b.apply(foreign).is_err());
    }

    #[tokio::test]
    async fn acknowledged_writes_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let t = TenantId::new();
        {
            let store = open(dir.path());
            let ts = store.tenant(t);
            let mut batch = ts.batch();
            batch.put(b"k", &Setting { v: "kept".into() }).unwrap();
            ts.apply(batch).unwrap();
            // Many tickets share flushes and all resolve.
            let tickets: Vec<_> = (0..50).map(|_| ts.ticket()).collect();
            for t in tickets {
                t.wait().await.unwrap();
            }
        }
        // The flush task holds the last handle (and sled's lock) until it ends on this
        // runtime: open again once it has.
        let mut reopened = None;
        for _ in 0..250 {
            if let Ok(s) = Store::open(&StoreOptions {
                path: dir.path().to_path_buf(),
                cache_capacity_bytes: 8 << 20,
                durability: Durability::Sync,
                max_unflushed_batches: crate::flusher::DEFAULT_MAX_UNFLUSHED,
            }) {
                reopened = Some(s);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let store = reopened.unwrap_or_else(|| open(dir.path()));
        let got: Vec<_> = store
            .tenant(t)
            .scan::<Setting>(b"")
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, vec![(b"k".to_vec(), Setting { v: "kept".into() })]);
    }
}
