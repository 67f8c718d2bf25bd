//! The master key's life beyond its first start: the hash root beside the data, and rotation.
//!
//! Rotation re-wraps the data key of every sealed value under the new key in one sled
//! transaction that also moves `meta/key_check`: the database holds either the old key's
//! values and check or the new key's, never a mix. The key files follow a fixed order around
//! that commit point, so a crash anywhere leaves a directory that starts:
//!
//! 1. the new key is written to `<key file>.new` (fsynced) before anything else changes;
//! 2. the transaction commits and is flushed: from here the data belongs to the new key;
//! 3. `<key file>.new` is renamed over the key file (and the directory fsynced).
//!
//! At start, [`settle_key_files`] finishes what a crash interrupted: a `.new` file whose key
//! matches the data is promoted (the crash fell between 2 and 3), one that does not is
//! removed (the crash fell before 2; the data still belongs to the old key).
//!
//! Which fields hold sealed values is the caller's knowledge ([`SealedField`]): format-1
//! values cannot be recognised by their key without their associated data, and a user's own
//! JSON could look like one. As a guard, every other value shaped like a sealed one is checked
//! too: one that the old key wraps means a field is missing from the table, and the rotation
//! is refused before anything is written.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use sled::{transaction::ConflictableTransactionError, Transactional};

use crate::{
    codec::split_version,
    crypto::{ct_eq, MasterKey, Sealed},
    error::StorageError,
    keys::Kind,
    store::Store,
};

const KEY_CHECK: &[u8] = b"key_check";
const HASH_ROOT: &[u8] = b"hash_root";
const HASH_ROOT_AAD: &[u8] = b"tessera/hash-root";

/// Where one kind of record keeps sealed values: JSON paths from the record's root, each a list
/// of field names; `*` stands for every member of an object (an enum's variant) or array.
#[derive(Clone, Copy, Debug)]
pub struct SealedField {
    pub kind: Kind,
    /// A name for the report.
    pub name: &'static str,
    pub paths: &'static [&'static [&'static str]],
}

/// What a rotation did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RotationReport {
    /// Records rewritten.
    pub records: u64,
    /// Sealed values re-wrapped, by the name of their field.
    pub values: BTreeMap<&'static str, u64>,
    /// Records read.
    pub scanned: u64,
}

impl RotationReport {
    pub fn total_values(&self) -> u64 {
        self.values.values().sum()
    }
}

/// The file a rotation writes the new key to before it commits.
pub fn pending_key_path(key_path: &Path) -> PathBuf {
    let mut name = key_path.file_name().unwrap_or_default().to_os_string();
    name.push(".new");
    key_path.with_file_name(name)
}

/// What [`settle_key_files`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// No rotation was interrupted.
    Nothing,
    /// A rotation committed but its key file was not yet in place: it is now.
    Promoted,
    /// A rotation did not commit: its new key file was removed.
    Discarded,
}

/// Finishes a rotation a crash interrupted (see the module documentation). Runs before the key
/// file is read.
pub fn settle_key_files(store: &Store, key_path: &Path) -> Result<Settled, StorageError> {
    let pending = pending_key_path(key_path);
    if !pending.exists() {
        return Ok(Settled::Nothing);
    }
    let meta = store.db.open_tree("meta")?;
    let matches = match (MasterKey::load(&pending), meta.get(KEY_CHECK)?) {
        (Ok(new), Some(check)) => ct_eq(&check, &new.check_value()),
        _ => false,
    };
    let dir = key_path.parent().unwrap_or(Path::new("."));
    if matches {
        std::fs::rename(&pending, key_path)?;
        std::fs::File::open(dir)?.sync_all()?;
        tracing::warn!(path = %key_path.display(), "an interrupted master-key rotation had committed: its new key is now the key file");
        Ok(Settled::Promoted)
    } else {
        std::fs::remove_file(&pending)?;
        std::fs::File::open(dir)?.sync_all()?;
        tracing::warn!(path = %pending.display(), "an interrupted master-key rotation had not committed: its new key file was removed and the data keeps the old key");
        Ok(Settled::Discarded)
    }
}

impl Store {
    /// Binds the data to `key`: the first start records the key's check value and a random
    /// hash root; a later start with another key is refused. Answers the key with the data's
    /// hash root, which every keyed hash derives from. Data from before hash roots existed get
    /// the key's own bytes as their root, so their stored hashes stay valid.
    pub fn bind_master_key(&self, key: &MasterKey) -> Result<MasterKey, StorageError> {
        let meta = self.db.open_tree("meta")?;
        let check = key.check_value();
        match meta.get(KEY_CHECK)? {
            Some(stored) if ct_eq(&stored, &check) => {}
            Some(_) => {
                return Err(StorageError::MasterKey(
                    "the master key does not match the one this data directory was written with"
                        .into(),
                ))
            }
            None => {
                let fresh = MasterKey::generate();
                let rooted = key.with_hash_root(fresh.key_bytes());
                let root = seal_root(&rooted, rooted.hash_root())?;
                meta.transaction(|m| {
                    m.insert(KEY_CHECK, check.as_slice())?;
                    m.insert(HASH_ROOT, root.as_slice())?;
                    Ok::<_, ConflictableTransactionError<()>>(())
                })?;
                self.db.flush()?;
                return Ok(rooted);
            }
        }
        match meta.get(HASH_ROOT)? {
            Some(sealed) => {
                let sealed: Sealed = serde_json::from_slice(&sealed)
                    .map_err(|e| StorageError::Format(format!("meta/hash_root: {e}")))?;
                let root = key.open(HASH_ROOT_AAD, &sealed)?;
                let root: [u8; 32] = root
                    .as_slice()
                    .try_into()
                    .map_err(|_| StorageError::Format("meta/hash_root is not 32 bytes".into()))?;
                Ok(key.with_hash_root(&root))
            }
            None => {
                let root = *key.key_bytes();
                meta.insert(HASH_ROOT, seal_root(key, &root)?)?;
                self.db.flush()?;
                Ok(key.with_hash_root(&root))
            }
        }
    }

    /// Re-wraps every sealed value from `old` to `new` and moves the data to `new` (see the
    /// module documentation), then puts `new` in the key file at `key_path`. Writes are held
    /// while it runs; the callers whose memory holds sealed values (the actors) must be
    /// stopped first and started with the answered key after. Refused while a backup runs.
    pub fn rotate_master_key(
        &self,
        old: &MasterKey,
        new: &MasterKey,
        key_path: &Path,
        fields: &[SealedField],
    ) -> Result<(MasterKey, RotationReport), StorageError> {
        let meta = self.db.open_tree("meta")?;
        match meta.get(KEY_CHECK)? {
            Some(check) if ct_eq(&check, &old.check_value()) => {}
            _ => {
                return Err(StorageError::MasterKey(
                    "the running key does not match the data".into(),
                ))
            }
        }
        if ct_eq(&old.check_value(), &new.check_value()) {
            return Err(StorageError::MasterKey(
                "the new key is the current key".into(),
            ));
        }
        let new = new.with_hash_root(old.hash_root());
        // Nothing is written from here to the end but by this call.
        let _closed = self.gate.close_for_rotation()?;
        new.write_file(&pending_key_path(key_path))?;
        let mut report = RotationReport::default();
        let mut platform_writes = Vec::new();
        let mut tenant_writes = Vec::new();
        for (tree, writes, kind_at) in [
            (&self.platform, &mut platform_writes, 0usize),
            (&self.tenants, &mut tenant_writes, 16usize),
        ] {
            for entry in tree.iter() {
                let (k, v) = entry?;
                report.scanned += 1;
                let Some(&kind) = k.get(kind_at) else {
                    continue;
                };
                let field = fields.iter().find(|f| f.kind as u8 == kind);
                if let Some(bytes) = rewrap_record(old, &new, kind, &v, field, &mut report)? {
                    writes.push((k, bytes));
                }
            }
        }
        report.records = (platform_writes.len() + tenant_writes.len()) as u64;
        let root = seal_root(&new, new.hash_root())?;
        let check = new.check_value();
        (&self.platform, &self.tenants, &meta).transaction(|(p, t, m)| {
            for (k, v) in &platform_writes {
                p.insert(k, v.as_slice())?;
            }
            for (k, v) in &tenant_writes {
                t.insert(k, v.as_slice())?;
            }
            m.insert(KEY_CHECK, check.as_slice())?;
            m.insert(HASH_ROOT, root.as_slice())?;
            Ok(())
        })?;
        self.db.flush()?;
        let pending = pending_key_path(key_path);
        std::fs::rename(&pending, key_path)?;
        std::fs::File::open(key_path.parent().unwrap_or(Path::new(".")))?.sync_all()?;
        Ok((new, report))
    }
}

/// The hash root sealed under `key`, as `meta/hash_root` holds it.
fn seal_root(key: &MasterKey, root: &[u8; 32]) -> Result<Vec<u8>, StorageError> {
    let sealed = key.seal(HASH_ROOT_AAD, root)?;
    serde_json::to_vec(&sealed).map_err(|source| StorageError::Encode {
        kind: "hash root",
        source,
    })
}

/// The record's bytes with every sealed value at `field`'s paths re-wrapped, or `None` when it
/// holds none. The record is changed as bytes, not re-serialised: each value's wrapped key (a
/// random nonce makes it unique) is replaced in place, so nothing else in the record can move.
fn rewrap_record(
    old: &MasterKey,
    new: &MasterKey,
    kind: u8,
    value: &[u8],
    field: Option<&SealedField>,
    report: &mut RotationReport,
) -> Result<Option<Vec<u8>>, StorageError> {
    let Some((_, body)) = split_version(value) else {
        return Ok(None);
    };
    // Index entries and counters are not JSON objects; only objects can hold sealed values.
    if body.first() != Some(&b'{') {
        return Ok(None);
    }
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Ok(None);
    };
    let mut found = Vec::new();
    if let Some(field) = field {
        for path in field.paths {
            collect(&json, path, &mut found);
        }
    }
    // The guard: a value the old key wraps that no path reached.
    let mut shaped = Vec::new();
    collect_shaped(&json, &mut shaped);
    for s in &shaped {
        if old.wraps(s) && !found.iter().any(|f| f.wrapped_key == s.wrapped_key) {
            return Err(StorageError::MasterKey(format!(
                                "a record of kind {kind:#04x} holds a sealed value at a path the rotation does not know; nothing was changed"
            )));
        }
    }
    if found.is_empty() {
        return Ok(None);
    }
    let mut out = value.to_vec();
    for sealed in &found {
        let moved = old.rewrap(new, sealed)?;
        let from = fragment(sealed)?;
        let to = fragment(&moved)?;
        let at = find_once(&out, &from).ok_or_else(|| {
            StorageError::Format(format!(
                "a sealed value in a record of kind {kind:#04x} is not serialised as expected"
            ))
        })?;
        out.splice(at..at + from.len(), to);
        if let Some(f) = field {
            *report.values.entry(f.name).or_default() += 1;
        }
    }
    Ok(Some(out))
}

/// The serialised start of a sealed value: its format and wrapped key (what a rewrap changes).
fn fragment(s: &Sealed) -> Result<Vec<u8>, StorageError> {
    let json =
        serde_json::to_vec(s).map_err(|e| StorageError::Format(format!("a sealed value: {e}")))?;
    // `{"v":N,"wrapped_key":"…","data":"…"}`: everything up to the data.
    let cut = find_once(&json, b",\"data\":").ok_or(StorageError::Crypto)?;
    Ok(json[1..cut].to_vec())
}

/// The one position of `needle` in `haystack`; `None` when absent or present more than once.
fn find_once(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let mut hits = haystack
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i);
    let first = hits.next()?;
    hits.next().is_none().then_some(first)
}

fn collect(json: &serde_json::Value, path: &[&str], out: &mut Vec<Sealed>) {
    let Some((head, rest)) = path.split_first() else {
        if let Ok(s) = serde_json::from_value::<Sealed>(json.clone()) {
            out.push(s);
        }
        return;
    };
    match (json, *head) {
        (serde_json::Value::Object(m), "*") => m.values().for_each(|v| collect(v, rest, out)),
        (serde_json::Value::Array(a), "*") => a.iter().for_each(|v| collect(v, rest, out)),
        (serde_json::Value::Object(m), name) => {
            if let Some(v) = m.get(name) {
                collect(v, rest, out);
            }
        }
        _ => {}
    }
}

/// Every object shaped like a sealed value, anywhere in `json`.
fn collect_shaped(json: &serde_json::Value, out: &mut Vec<Sealed>) {
    match json {
        serde_json::Value::Object(m) => {
            if m.len() == 3 && m.contains_key("wrapped_key") {
                if let Ok(s) = serde_json::from_value::<Sealed>(json.clone()) {
                    out.push(s);
                    return;
                }
            }
            m.values().for_each(|v| collect_shaped(v, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| collect_shaped(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use zeroize::Zeroizing;

    use super::*;
    use crate::{
        codec::{Record, TenantRecord},
        keys::TenantId,
    };

    /// A record with a sealed field, a sealed field inside an enum, and the user's own JSON.
    #[derive(Serialize, Deserialize)]
    struct Holder {
        secret: Sealed,
        state: Outcome,
        metadata: serde_json::Value,
    }

    #[derive(Serialize, Deserialize)]
    enum Outcome {
        Done { token: Option<Sealed> },
    }

    impl Record for Holder {
        const KIND: Kind = Kind::User;
        const NAME: &'static str = "holder";
        const VERSION: u16 = 1;
    }
    impl TenantRecord for Holder {}

    /// Another kind, with a sealed value no table entry names.
    #[derive(Serialize, Deserialize)]
    struct Stray {
        hidden: Sealed,
    }

    impl Record for Stray {
        const KIND: Kind = Kind::WebhookEndpoint;
        const NAME: &'static str = "stray";
        const VERSION: u16 = 1;
    }
    impl TenantRecord for Stray {}

    const FIELDS: &[SealedField] = &[SealedField {
        kind: Kind::User,
        name: "holder",
        paths: &[&["secret"], &["state", "*", "token"]],
    }];

    /// A key file with a new key, and an open store in a temporary directory (not bound yet).
    fn fixture() -> (tempfile::TempDir, PathBuf, MasterKey, Store) {
        let dir = tempfile::tempdir().unwrap();
        let key_path = dir.path().join("master.key");
        let key = MasterKey::generate();
        key.write_file(&key_path).unwrap();
        let store = crate::store::open_for_tests(&dir.path().join("data"));
        (dir, key_path, key, store)
    }

    #[tokio::test]
    async fn a_rotation_moves_every_sealed_value_and_the_key_file_and_keeps_hashes() {
        let (_dir, key_path, old, store) = fixture();
        let old = store.bind_master_key(&old).unwrap();
        let hash = old.hasher("refresh-token").hash(b"token");
        let tenant = store.tenant(TenantId::new());
        // The user's JSON imitates a sealed value (with a wrap no key of ours made).
        let forged = serde_json::to_value(MasterKey::generate().seal(b"x", b"y").unwrap()).unwrap();
        let mut b = tenant.batch();
        for i in 0..20u8 {
            let h = Holder {
                secret: old.seal(&[b'a', i], b"seed").unwrap(),
                state: Outcome::Done {
                    token: Some(old.seal(&[b'b', i], b"token").unwrap()),
                },
                metadata: serde_json::json!({ "mine": forged }),
            };
            b.put(&[i], &h).unwrap();
        }
        tenant.apply(b).unwrap();
        let before_meta: Holder = tenant.get(&[0]).unwrap().unwrap();

        let new = MasterKey::generate();
        let (new, report) = store
            .rotate_master_key(&old, &new, &key_path, FIELDS)
            .unwrap();
        assert_eq!(report.records, 20);
        assert_eq!(report.values.get("holder"), Some(&40));
        assert_eq!(
            MasterKey::load(&key_path).unwrap().check_value(),
            new.check_value()
        );
        assert!(!pending_key_path(&key_path).exists());
        assert_eq!(
            new.hasher("refresh-token").hash(b"token"),
            hash,
            "hashes outlive the key"
        );
        for i in 0..20u8 {
            let h: Holder = tenant.get(&[i]).unwrap().unwrap();
            assert_eq!(new.open(&[b'a', i], &h.secret).unwrap().as_slice(), b"seed");
            assert!(old.open(&[b'a', i], &h.secret).is_err());
            let Outcome::Done { token: Some(t) } = h.state else {
                panic!("the enum kept its shape")
            };
            assert_eq!(new.open(&[b'b', i], &t).unwrap().as_slice(), b"token");
            assert_eq!(
                h.metadata, before_meta.metadata,
                "the user's JSON is untouched"
            );
        }
        // The data now refuses the old key and binds the new one with the same hash root.
        assert!(store.bind_master_key(&old).is_err());
        let fresh = MasterKey::load(&key_path).unwrap();
        let bound = store.bind_master_key(&fresh).unwrap();
        assert_eq!(bound.hasher("refresh-token").hash(b"token"), hash);
        // The same key again is refused.
        assert!(store
            .rotate_master_key(&new, &bound, &key_path, FIELDS)
            .is_err());
    }

    /// Data as a build from before the hash root wrote it: `meta/key_check` only, keyed hashes
    /// made under the key's own bytes, values sealed in format 1 (wrap bound to the AAD).
    #[tokio::test]
    async fn data_from_before_the_hash_root_keeps_its_hashes_and_rotates() {
        let (_dir, key_path, old, store) = fixture();
        let meta = store.db.open_tree("meta").unwrap();
        meta.insert(KEY_CHECK, old.check_value().as_slice())
            .unwrap();
        let legacy_hash = {
            let k = Zeroizing::new(crate::crypto::tests_support::legacy_hmac(
                old.key_bytes(),
                b"refresh-token",
            ));
            crate::crypto::tests_support::legacy_hmac(k.as_slice(), b"token")
        };
        let tenant = store.tenant(TenantId::new());
        let mut b = tenant.batch();
        b.put(
            &[1],
            &Holder {
                secret: crate::crypto::tests_support::seal_v1(&old, b"a", b"seed"),
                state: Outcome::Done {
                    token: Some(crate::crypto::tests_support::seal_v1(&old, b"b", b"tok")),
                },
                metadata: serde_json::Value::Null,
            },
        )
        .unwrap();
        tenant.apply(b).unwrap();

        let bound = store.bind_master_key(&old).unwrap();
        assert_eq!(bound.hasher("refresh-token").hash(b"token"), legacy_hash);
        assert!(
            meta.get(HASH_ROOT).unwrap().is_some(),
            "the root is kept from now on"
        );
        let h: Holder = tenant.get(&[1]).unwrap().unwrap();
        assert_eq!(bound.open(b"a", &h.secret).unwrap().as_slice(), b"seed");

        let (new, report) = store
            .rotate_master_key(&bound, &MasterKey::generate(), &key_path, FIELDS)
            .unwrap();
        assert_eq!(report.values.get("holder"), Some(&2));
        let h: Holder = tenant.get(&[1]).unwrap().unwrap();
        assert_eq!(h.secret.v, 2, "moved to format 2");
        assert_eq!(new.open(b"a", &h.secret).unwrap().as_slice(), b"seed");
        let Outcome::Done { token: Some(t) } = h.state else {
            panic!("the enum kept its shape")
        };
        assert_eq!(new.open(b"b", &t).unwrap().as_slice(), b"tok");
        let rebound = store
            .bind_master_key(&MasterKey::load(&key_path).unwrap())
            .unwrap();
        assert_eq!(rebound.hasher("refresh-token").hash(b"token"), legacy_hash);
    }

    #[tokio::test]
    async fn a_sealed_value_the_table_misses_refuses_the_rotation_and_changes_nothing() {
        let (_dir, key_path, old, store) = fixture();
        let old = store.bind_master_key(&old).unwrap();
        let tenant = store.tenant(TenantId::new());
        let mut b = tenant.batch();
        b.put(
            &[1],
            &Holder {
                secret: old.seal(b"a", b"seed").unwrap(),
                state: Outcome::Done { token: None },
                metadata: serde_json::Value::Null,
            },
        )
        .unwrap();
        b.put(
            &[2],
            &Stray {
                hidden: old.seal(b"s", b"x").unwrap(),
            },
        )
        .unwrap();
        tenant.apply(b).unwrap();
        let err = store
            .rotate_master_key(&old, &MasterKey::generate(), &key_path, FIELDS)
            .unwrap_err();
        assert!(err.to_string().contains("does not know"), "{err}");
        let h: Holder = tenant.get(&[1]).unwrap().unwrap();
        assert_eq!(old.open(b"a", &h.secret).unwrap().as_slice(), b"seed");
        assert_eq!(
            MasterKey::load(&key_path).unwrap().check_value(),
            old.check_value()
        );
        assert!(store
            .bind_master_key(&MasterKey::load(&key_path).unwrap())
            .is_ok());
    }

    #[tokio::test]
    async fn an_interrupted_rotation_settles_to_whichever_key_the_data_has() {
        let (_dir, key_path, old, store) = fixture();
        store.bind_master_key(&old).unwrap();
        // Before the commit: the new file is discarded.
        MasterKey::generate()
            .write_file(&pending_key_path(&key_path))
            .unwrap();
        assert_eq!(
            settle_key_files(&store, &key_path).unwrap(),
            Settled::Discarded
        );
        assert!(!pending_key_path(&key_path).exists());
        assert_eq!(
            MasterKey::load(&key_path).unwrap().check_value(),
            old.check_value()
        );
        // After the commit: the new file is promoted.
        let new = MasterKey::generate();
        new.write_file(&pending_key_path(&key_path)).unwrap();
        store
            .db
            .open_tree("meta")
            .unwrap()
            .insert(KEY_CHECK, new.check_value().as_slice())
            .unwrap();
        assert_eq!(
            settle_key_files(&store, &key_path).unwrap(),
            Settled::Promoted
        );
        assert_eq!(
            MasterKey::load(&key_path).unwrap().check_value(),
            new.check_value()
        );
        assert_eq!(
            settle_key_files(&store, &key_path).unwrap(),
            Settled::Nothing
        );
    }
}
