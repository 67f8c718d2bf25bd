//! Online backup, its check, and the offline restore.
//!
//! A backup file is a fixed 4 KiB header, then the body:
//!
//! - the header: the line `TESSERA-BACKUP 1`, then one JSON object ([`BackupHeader`]), padded
//!   with spaces to 4096 bytes. It is written last, into space reserved first, and the file
//!   takes its name only once it is complete and synced, so a file under the name is whole.
//! - the body: one zstd stream of records, each `tag (u8) | tree name length (u16 BE) | name |
//!   key length (u32 BE) | key | value length (u32 BE) | value`: first the snapshot (tag 0),
//!   tree after tree in name order, keys in order; then the journal, the writes applied while
//!   the snapshot was read, in the order applied (tag 1, a put; tag 2, a removal, without the
//!   value). The header holds the SHA-256 of the body as stored and the counts.
//!
//! [`Store::backup`] starts the store's journal (an instant under the write side of its gate),
//! reads every tree while writes go on, and ends the journal. A read that saw some of a
//! batch is made whole by the journal, replayed after the snapshot: the restored database is
//! the one at the end of the backup, every batch whole, and every write acknowledged before
//! the backup began is in it. While the journal runs, batches are applied one at a time.
//! The master key is not in a backup: only its check value, so a restore can say whether the
//! key it is given matches. The file is created 0600 (its `.partial` name too) and a restore's
//! data directory made 0700 before anything is written into them, whatever the umask.

use std::{
    fs::File,
    io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write},
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{
    crypto::{ct_eq, MasterKey},
    error::StorageError,
    files,
    keys::Kind,
    migrations::{self, CURRENT_FORMAT},
    store::{db_path, Store},
};

/// The backup format this build writes (and the newest it reads).
pub const BACKUP_FORMAT: u32 = 1;
const HEADER_LEN: usize = 4096;
const MAGIC: &[u8] = b"TESSERA-BACKUP 1\n";
const PLATFORM_TREE: &[u8] = b"platform";
/// Entries restored per sled batch.
const RESTORE_CHUNK: usize = 10_000;

/// What a backup says about itself.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BackupHeader {
    pub backup_format: u32,
    /// The storage format of the data (`meta/format`).
    pub storage_format: u32,
    pub tessera_version: String,
    /// RFC 3339.
    pub created_at: String,
    pub tenant_count: u64,
    /// Snapshot entries in the body, all trees.
    pub entries: u64,
    /// Writes journaled while the snapshot was read (replayed after it).
    pub journal_ops: u64,
    /// Entries per tree.
    pub trees: Vec<TreeCount>,
    /// Bytes of the body as stored (compressed).
    pub body_bytes: u64,
    /// SHA-256 (hex) of the body as stored.
    pub body_sha256: String,
    /// Always false: the master key is never in a backup.
    pub master_key_included: bool,
    /// The check value (hex) of the master key the data was written with, if any.
    pub master_key_check: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeCount {
    pub tree: String,
    pub entries: u64,
}

/// A writer that hashes and counts what passes through.
struct Hashing<W> {
    inner: W,
    hash: Sha256,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that hashes and counts what passes through.
struct HashingReader<R> {
    inner: R,
    hash: Sha256,
    bytes: u64,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

fn corrupt(why: impl Into<String>) -> StorageError {
    StorageError::Backup(why.into())
}

fn io_at(path: &Path) -> impl Fn(std::io::Error) -> StorageError + '_ {
    move |e| StorageError::Backup(format!("{}: {e}", path.display()))
}

const SNAPSHOT: u8 = 0;
const PUT: u8 = 1;
const REMOVE: u8 = 2;

fn write_record(
    out: &mut impl Write,
    tag: u8,
    tree: &[u8],
    key: &[u8],
    value: Option<&[u8]>,
) -> std::io::Result<()> {
    let too_long = |what: &str| std::io::Error::other(format!("a {what} too long for a backup"));
    out.write_all(&[tag])?;
    let n = u16::try_from(tree.len()).map_err(|_| too_long("tree name"))?;
    out.write_all(&n.to_be_bytes())?;
    out.write_all(tree)?;
    let n = u32::try_from(key.len()).map_err(|_| too_long("key"))?;
    out.write_all(&n.to_be_bytes())?;
    out.write_all(key)?;
    if let Some(value) = value {
        let n = u32::try_from(value.len()).map_err(|_| too_long("value"))?;
        out.write_all(&n.to_be_bytes())?;
        out.write_all(value)?;
    }
    Ok(())
}

/// One record of a body: its tag, tree, key and (but for a removal) value.
type Entry = (u8, Vec<u8>, Vec<u8>, Option<Vec<u8>>);

fn read_exact_or_end(input: &mut impl Read, buf: &mut [u8]) -> Result<bool, StorageError> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err(corrupt("the body ends inside an entry")),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(corrupt(format!("the body cannot be read: {e}"))),
        }
    }
    Ok(true)
}

fn read_field(input: &mut impl Read, len: usize) -> Result<Vec<u8>, StorageError> {
    let mut v = vec![0u8; len];
    if !read_exact_or_end(input, &mut v)? && len > 0 {
        return Err(corrupt("the body ends inside an entry"));
    }
    Ok(v)
}

fn read_entry(input: &mut impl Read) -> Result<Option<Entry>, StorageError> {
    let mut tag = [0u8; 1];
    if !read_exact_or_end(input, &mut tag)? {
        return Ok(None);
    }
    let tag = tag[0];
    if tag > REMOVE {
        return Err(corrupt("the body holds a record of an unknown kind"));
    }
    let mut n2 = [0u8; 2];
    if !read_exact_or_end(input, &mut n2)? {
        return Err(corrupt("the body ends inside an entry"));
    }
    let tree = read_field(input, usize::from(u16::from_be_bytes(n2)))?;
    let mut n4 = [0u8; 4];
    if !read_exact_or_end(input, &mut n4)? {
        return Err(corrupt("the body ends inside an entry"));
    }
    let key = read_field(input, u32::from_be_bytes(n4) as usize)?;
    if tag == REMOVE {
        return Ok(Some((tag, tree, key, None)));
    }
    if !read_exact_or_end(input, &mut n4)? {
        return Err(corrupt("the body ends inside an entry"));
    }
    let value = read_field(input, u32::from_be_bytes(n4) as usize)?;
    Ok(Some((tag, tree, key, Some(value))))
}

impl Store {
    /// Writes a consistent snapshot of the whole database to `out` (a new file, mode 0600; an
    /// existing one is refused). Answers its header.
    pub fn backup(
        &self,
        out: &Path,
        tessera_version: &str,
        created_at: &str,
    ) -> Result<BackupHeader, StorageError> {
        if out.exists() {
            return Err(corrupt(format!("{} exists already", out.display())));
        }
        let partial = partial_path(out);
        let _ = std::fs::remove_file(&partial);
        // It holds every user, password hash and audit event: 0600 from its creation.
        let file = files::create_private_file(&partial).map_err(io_at(&partial))?;
        let written = self.write_body(file, tessera_version, created_at);
        match written {
            Ok((mut file, header)) => {
                write_header(&mut file, &header).map_err(io_at(&partial))?;
                file.sync_all().map_err(io_at(&partial))?;
                std::fs::rename(&partial, out).map_err(io_at(out))?;
                if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                    File::open(dir)
                        .and_then(|d| d.sync_all())
                        .map_err(io_at(dir))?;
                }
                Ok(header)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                Err(e)
            }
        }
    }

    fn write_body(
        &self,
        mut file: File,
        tessera_version: &str,
        created_at: &str,
    ) -> Result<(File, BackupHeader), StorageError> {
        file.write_all(&[0u8; HEADER_LEN])?;
        let hashing = Hashing {
            inner: BufWriter::new(file),
            hash: Sha256::new(),
            bytes: 0,
        };
        let mut z = zstd::Encoder::new(hashing, 3)?;
        let mut trees = Vec::new();
        let mut entries = 0u64;
        let mut tenant_count = 0u64;
        let mut storage_format = CURRENT_FORMAT;
        let mut key_check = None;
        // From here every applied batch is journaled as well, so the read needs no pause.
        self.gate.start_journal()?;
        let read = (|| {
            let mut names: Vec<sled::IVec> = self.db.tree_names();
            names.sort();
            for name in names {
                let tree = self.db.open_tree(&name)?;
                let mut n = 0u64;
                for item in tree.iter() {
                    let (k, v) = item?;
                    write_record(&mut z, SNAPSHOT, &name, &k, Some(&v))?;
                    n += 1;
                    if name.as_ref() == PLATFORM_TREE && k.first() == Some(&(Kind::Tenant as u8)) {
                        tenant_count += 1;
                    }
                    if name.as_ref() == b"meta" {
                        match k.as_ref() {
                            b"format" => storage_format = migrations::format_of(&v)?,
                            b"key_check" => key_check = Some(hex_of(&v)),
                            _ => {}
                        }
                    }
                }
                entries += n;
                trees.push(TreeCount {
                    tree: String::from_utf8_lossy(&name).into_owned(),
                    entries: n,
                });
            }
            Ok::<(), StorageError>(())
        })();
        let journal = self.gate.end_journal();
        read?;
        let mut journal_ops = 0u64;
        for (tree, ops) in journal {
            for (key, value) in ops {
                let tag = if value.is_some() { PUT } else { REMOVE };
                write_record(&mut z, tag, tree.as_bytes(), &key, value.as_deref())?;
                journal_ops += 1;
            }
        }
        let hashing = z.finish()?;
        let digest = hashing.hash.finalize();
        let body_bytes = hashing.bytes;
        let file = hashing
            .inner
            .into_inner()
            .map_err(|e| StorageError::Io(e.into_error()))?;
        Ok((
            file,
            BackupHeader {
                backup_format: BACKUP_FORMAT,
                storage_format,
                tessera_version: tessera_version.to_owned(),
                created_at: created_at.to_owned(),
                tenant_count,
                entries,
                journal_ops,
                trees,
                body_bytes,
                body_sha256: hex_of(&digest),
                master_key_included: false,
                master_key_check: key_check,
            },
        ))
    }
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn partial_path(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    out.with_file_name(name)
}

fn write_header(file: &mut File, header: &BackupHeader) -> std::io::Result<()> {
    let mut bytes = MAGIC.to_vec();
    bytes.extend(serde_json::to_vec(header).map_err(std::io::Error::other)?);
    if bytes.len() + 1 > HEADER_LEN {
        return Err(std::io::Error::other("the backup header is too long"));
    }
    bytes.resize(HEADER_LEN - 1, b' ');
    bytes.push(b'\n');
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&bytes)
}

/// Reads a backup's header; refuses anything that is not one, or a newer format.
pub fn read_header(path: &Path) -> Result<(BufReader<File>, BackupHeader), StorageError> {
    let file = File::open(path).map_err(io_at(path))?;
    let mut input = BufReader::new(file);
    let mut raw = vec![0u8; HEADER_LEN];
    input
        .read_exact(&mut raw)
        .map_err(|_| corrupt(format!("{} is not a Tessera backup", path.display())))?;
    let Some(rest) = raw.strip_prefix(MAGIC) else {
        return Err(corrupt(format!(
            "{} is not a Tessera backup",
            path.display()
        )));
    };
    let text = std::str::from_utf8(rest)
        .map_err(|_| corrupt("the backup header is not text"))?
        .trim_end();
    let header: BackupHeader =
        serde_json::from_str(text).map_err(|e| corrupt(format!("the backup header: {e}")))?;
    if header.backup_format > BACKUP_FORMAT {
        return Err(corrupt(format!(
            "the backup has format {}, newer than this build's {BACKUP_FORMAT}; use a newer tessera",
            header.backup_format
        )));
    }
    Ok((input, header))
}

/// Reads a whole backup through `each` (every entry in order), then checks the body's hash
/// and counts against the header. Answers the header.
fn read_backup(
    path: &Path,
    mut each: impl FnMut(Entry) -> Result<(), StorageError>,
) -> Result<BackupHeader, StorageError> {
    let (input, header) = read_header(path)?;
    let mut hashing = HashingReader {
        inner: input,
        hash: Sha256::new(),
        bytes: 0,
    };
    let mut counts: Vec<TreeCount> = Vec::new();
    let mut journal_ops = 0u64;
    {
        let mut z = zstd::Decoder::new(&mut hashing)
            .map_err(|e| corrupt(format!("the body cannot be read: {e}")))?;
        while let Some(entry) = read_entry(&mut z)? {
            if entry.0 == SNAPSHOT {
                if journal_ops > 0 {
                    return Err(corrupt("a snapshot entry after the journal"));
                }
                let name = String::from_utf8_lossy(&entry.1).into_owned();
                match counts.last_mut() {
                    Some(c) if c.tree == name => c.entries += 1,
                    _ => counts.push(TreeCount {
                        tree: name,
                        entries: 1,
                    }),
                }
            } else {
                journal_ops += 1;
            }
            each(entry)?;
        }
    }
    // Anything after the zstd stream counts too.
    std::io::copy(&mut hashing, &mut std::io::sink())
        .map_err(|e| corrupt(format!("the body cannot be read: {e}")))?;
    let digest = hex_of(&hashing.hash.finalize());
    if hashing.bytes != header.body_bytes
        || !ct_eq(digest.as_bytes(), header.body_sha256.as_bytes())
    {
        return Err(corrupt(
            "the body does not match the header's SHA-256: the file is damaged or incomplete",
        ));
    }
    let listed: Vec<&TreeCount> = header.trees.iter().filter(|t| t.entries > 0).collect();
    let total: u64 = counts.iter().map(|c| c.entries).sum();
    if total != header.entries
        || journal_ops != header.journal_ops
        || counts.iter().collect::<Vec<_>>() != listed
    {
        return Err(corrupt(
            "the body's entries do not match the header's counts",
        ));
    }
    Ok(header)
}

/// Checks a backup without restoring it: the header, the whole body against its SHA-256, and
/// the entry counts.
pub fn verify(path: &Path) -> Result<BackupHeader, StorageError> {
    read_backup(path, |_| Ok(()))
}

/// Restores a backup into `data_dir`, which must hold nothing but (optionally) the master key
/// file, and is made 0700 (created so when absent). `key` is the master key the restored
/// server will use: it must be the one the data was written with. Answers the header. On any
/// failure the database directory it began is removed.
pub fn restore(
    from: &Path,
    data_dir: &Path,
    key: &MasterKey,
) -> Result<BackupHeader, StorageError> {
    let (_, header) = read_header(from)?;
    if header.storage_format > CURRENT_FORMAT {
        return Err(corrupt(format!(
            "the backup holds storage format {}, newer than this build's {CURRENT_FORMAT}; use a newer tessera",
            header.storage_format
        )));
    }
    match &header.master_key_check {
        Some(check) if !ct_eq(check.as_bytes(), hex_of(&key.check_value()).as_bytes()) => {
            return Err(StorageError::MasterKey(
                "the master key file does not match the key this backup's data was written with; \
                 restore needs that key file"
                    .into(),
            ))
        }
        _ => {}
    }
    let db_dir = db_path(data_dir);
    if db_dir.exists() {
        return Err(corrupt(format!("{} exists already", db_dir.display())));
    }
    // The server's own directory, as `serve` keeps it: the owner's alone before any record is
    // written into it.
    files::private_dir(data_dir).map_err(io_at(data_dir))?;
    let result = (|| {
        files::create_private_dir(&db_dir)?;
        let db = sled::Config::new().path(&db_dir).open()?;
        let mut batch: Option<(Vec<u8>, sled::Batch, usize)> = None;
        let apply = |db: &sled::Db, b: Option<(Vec<u8>, sled::Batch, usize)>| {
            if let Some((tree, batch, _)) = b {
                db.open_tree(tree)?.apply_batch(batch)?;
            }
            Ok::<(), StorageError>(())
        };
        // In order: a batch holds one tree's consecutive records, and a later record of a key
        // in it wins, as it did when the journal's writes were applied.
        let header = read_backup(from, |(_, tree, key, value)| {
            let full = batch
                .as_ref()
                .is_some_and(|(t, _, n)| *t != tree || *n >= RESTORE_CHUNK);
            if full {
                apply(&db, batch.take())?;
            }
            let (_, b, n) = batch.get_or_insert_with(|| (tree.clone(), sled::Batch::default(), 0));
            match value {
                Some(value) => b.insert(key, value),
                None => b.remove(key),
            }
            *n += 1;
            Ok(())
        })?;
        apply(&db, batch.take())?;
        db.flush()?;
        Ok::<BackupHeader, StorageError>(header)
    })();
    match result {
        Ok(h) => Ok(h),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&db_dir);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    };

    use super::*;
    use crate::{
        codec::{PlatformRecord, Record},
        flusher::Durability,
        store::StoreOptions,
        PlatformBatch,
    };

    #[derive(Serialize, Deserialize)]
    struct Pair {
        n: u64,
    }

    impl Record for Pair {
        const KIND: Kind = Kind::Tenant;
        const NAME: &'static str = "pair";
        const VERSION: u16 = 1;
    }
    impl PlatformRecord for Pair {}

    use crate::store::open_for_tests as open;

    /// Records each batch writes (the wider, the likelier a read without the gate cuts one).
    const WIDTH: u64 = 500;

    /// Writers keep applying batches that write many records with the same number; a backup
    /// taken meanwhile must hold every batch whole or not at all.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_backup_sees_each_batch_whole_and_restores_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("data"));
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..3u64)
            .map(|w| {
                let (p, stop) = (store.platform(), stop.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let mut b = PlatformBatch::default();
                        let v = Pair { n };
                        for k in 0..WIDTH {
                            b.put(format!("{w}-{k:04}").as_bytes(), &v).unwrap();
                        }
                        p.apply(b).unwrap();
                        n += 1;
                    }
                })
            })
            .collect();
        // Every writer has applied a batch (so every key exists) before the backup starts.
        let p = store.platform();
        while (0..3u64).any(|w| {
            p.get::<Pair>(format!("{w}-{:04}", WIDTH - 1).as_bytes())
                .unwrap()
                .is_none()
        }) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // A fast machine may read the whole snapshot between two batches: backups are taken
        // until one saw writes go on while it read (each is checked whole below).
        let (file, header) = (0..100)
            .map(|attempt| {
                let file = dir.path().join(format!("one-{attempt}.backup"));
                let header = store.backup(&file, "test", "2026-11-26T00:00:00Z").unwrap();
                (file, header)
            })
            .find(|(_, h)| h.journal_ops > 0)
            .expect("writes went on while a snapshot was read");
        stop.store(true, Ordering::Relaxed);
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "a backup is its owner's alone");
        }
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(
            header.tenant_count,
            3 * WIDTH,
            "the batches write Tenant records"
        );
        assert!(!header.master_key_included);
        assert_eq!(verify(&file).unwrap().entries, header.entries);
        // The same name again is refused; so is a second backup while one runs.
        assert!(store.backup(&file, "test", "now").is_err());
        store.gate.start_journal().unwrap();
        let second = store.backup(&dir.path().join("two.backup"), "test", "now");
        assert!(second.unwrap_err().to_string().contains("under way"));
        store.gate.end_journal();
        assert!(!dir.path().join("two.backup").exists());

        let key = MasterKey::generate();
        let restored = dir.path().join("restored");
        restore(&file, &restored, &key).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            for dir in [restored.clone(), db_path(&restored)] {
                let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
                assert_eq!(mode, 0o700, "{}", dir.display());
            }
        }
        // sled lets go of the restored database's file lock a moment after the handle drops.
        let mut back = None;
        for _ in 0..200 {
            if let Ok(s) = Store::open(&StoreOptions {
                path: db_path(&restored),
                cache_capacity_bytes: 8 << 20,
                durability: Durability::Relaxed,
                max_unflushed_batches: crate::flusher::DEFAULT_MAX_UNFLUSHED,
            }) {
                back = Some(s);
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let back = back.expect("the restored database opens");
        let p = back.platform();
        for w in 0..3u64 {
            let first: Pair = p.get(format!("{w}-0000").as_bytes()).unwrap().unwrap();
            for k in 1..WIDTH {
                let other: Pair = p.get(format!("{w}-{k:04}").as_bytes()).unwrap().unwrap();
                assert_eq!(first.n, other.n, "writer {w}: a batch was cut at key {k}");
            }
        }
    }
}
