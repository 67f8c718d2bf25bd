//! The format record and start-up migrations.
//!
//! The `meta` tree holds one record, `format`, with the format version of the whole database.
//! On open: a new database gets the current version; an older one is migrated step by step
//! (each step rewrites what it must and then bumps the version, in one sled transaction where
//! it can); a newer one is refused, so an old binary never misreads a newer layout.

use serde::{Deserialize, Serialize};

use crate::error::StorageError;

/// The format this build writes.
pub const CURRENT_FORMAT: u32 = 1;

/// One step from `from` to `from + 1`.
pub struct Migration {
    pub from: u32,
    pub describe: &'static str,
    pub apply: fn(&sled::Db) -> Result<(), StorageError>,
}

/// Every migration this build knows, in order. Format 1 is the first, so none yet.
pub const MIGRATIONS: &[Migration] = &[];

const META_TREE: &str = "meta";
const FORMAT_KEY: &[u8] = b"format";

#[derive(Debug, Serialize, Deserialize)]
struct FormatRecord {
    version: u32,
}

fn write_format(meta: &sled::Tree, version: u32) -> Result<(), StorageError> {
    let bytes =
        serde_json::to_vec(&FormatRecord { version }).map_err(|source| StorageError::Encode {
            kind: "format",
            source,
        })?;
    meta.insert(FORMAT_KEY, bytes)?;
    Ok(())
}

/// The version in a `meta/format` record's bytes.
pub fn format_of(bytes: &[u8]) -> Result<u32, StorageError> {
    Ok(serde_json::from_slice::<FormatRecord>(bytes)
        .map_err(|source| StorageError::Decode {
            kind: "format",
            source,
        })?
        .version)
}

/// What a data directory holds, read without changing a record (`tessera check-data`).
#[derive(Clone, Debug, Serialize)]
pub struct DataReport {
    /// `None`: a database without a format record (new, or not Tessera's).
    pub format: Option<u32>,
    pub build_format: u32,
    /// The format is older than this build's: the next start migrates it.
    pub migration_pending: bool,
    /// The format is newer than this build's: this build refuses to start on it.
    pub newer_than_build: bool,
    pub tenants: u64,
    pub users: u64,
    pub entries: u64,
    pub master_key_bound: bool,
    pub size_on_disk_bytes: u64,
}

/// [`report`] of the database at `path` (which must exist), opened for the reading.
pub fn report_at(path: &std::path::Path) -> Result<DataReport, StorageError> {
    let db = sled::Config::new().path(path).create_new(false).open()?;
    report(&db)
}

/// Reads what `db` holds: its format against this build's, and its counts.
pub fn report(db: &sled::Db) -> Result<DataReport, StorageError> {
    let meta = db.open_tree(META_TREE)?;
    let format = meta.get(FORMAT_KEY)?.map(|b| format_of(&b)).transpose()?;
    let mut tenants = 0;
    for item in db
        .open_tree("platform")?
        .scan_prefix([crate::keys::Kind::Tenant as u8])
    {
        item?;
        tenants += 1;
    }
    let mut users = 0;
    let mut entries = 0;
    for name in db.tree_names() {
        for item in db.open_tree(&name)?.iter() {
            let (k, _) = item?;
            entries += 1;
            if name.as_ref() == b"tenants" && k.get(16) == Some(&(crate::keys::Kind::User as u8)) {
                users += 1;
            }
        }
    }
    Ok(DataReport {
        format,
        build_format: CURRENT_FORMAT,
        migration_pending: format.is_some_and(|f| f < CURRENT_FORMAT),
        newer_than_build: format.is_some_and(|f| f > CURRENT_FORMAT),
        tenants,
        users,
        entries,
        master_key_bound: meta.get(b"key_check")?.is_some(),
        size_on_disk_bytes: db.size_on_disk()?,
    })
}

/// Reads the format record, migrates up to `current`, and refuses a newer format.
pub fn check_and_migrate(
    db: &sled::Db,
    current: u32,
    migrations: &[Migration],
) -> Result<u32, StorageError> {
    let meta = db.open_tree(META_TREE)?;
    let found = match meta.get(FORMAT_KEY)? {
        Some(bytes) => {
            serde_json::from_slice::<FormatRecord>(&bytes)
                .map_err(|source| StorageError::Decode {
                    kind: "format",
                    source,
                })?
                .version
        }
        None => {
            let has_data = db
                .tree_names()
                .iter()
                .filter(|n| n.as_ref() != META_TREE.as_bytes() && n.as_ref() != b"__sled__default")
                .any(|n| db.open_tree(n).map(|t| !t.is_empty()).unwrap_or(true));
            if has_data {
                return Err(StorageError::Format(
                    "the database holds data but no format record".into(),
                ));
            }
            write_format(&meta, current)?;
            db.flush()?;
            return Ok(current);
        }
    };
    if found > current {
        return Err(StorageError::Format(format!(
            "the data directory has format {found}, newer than this build's {current}; run a newer tessera"
        )));
    }
    let mut version = found;
    while version < current {
        let step = migrations
            .iter()
            .find(|m| m.from == version)
            .ok_or_else(|| StorageError::Format(format!("no migration from format {version}")))?;
        tracing::info!(
            from = version,
            to = version + 1,
            what = step.describe,
            "migrating storage"
        );
        (step.apply)(db)?;
        version += 1;
        write_format(&meta, version)?;
        db.flush()?;
    }
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add_marker(db: &sled::Db) -> Result<(), StorageError> {
        db.open_tree("platform")?
            .insert(b"migrated", b"yes".as_slice())?;
        Ok(())
    }

    const STEPS: &[Migration] = &[Migration {
        from: 1,
        describe: "test step",
        apply: add_marker,
    }];

    #[test]
    fn new_databases_get_the_current_format_and_old_ones_migrate() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).open().unwrap();
        assert_eq!(check_and_migrate(&db, 1, STEPS).unwrap(), 1);
        db.open_tree("platform")
            .unwrap()
            .insert(b"x", b"y".as_slice())
            .unwrap();
        assert_eq!(check_and_migrate(&db, 2, STEPS).unwrap(), 2);
        assert!(db
            .open_tree("platform")
            .unwrap()
            .get(b"migrated")
            .unwrap()
            .is_some());
        // A build that only knows format 1 refuses the newer data.
        let err = check_and_migrate(&db, 1, STEPS).unwrap_err();
        assert!(err.to_string().contains("newer"), "{err}");
        // And a build with a gap in its migrations refuses too.
        assert!(check_and_migrate(&db, 3, STEPS).is_err());
    }
}
