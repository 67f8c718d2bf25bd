//! The operator's offline commands: `tessera restore`, `tessera check-data` and
//! `tessera admin backup --verify`. They run in the CLI's own process, with the server stopped
//! where they touch a data directory (its `LOCK` file says whether one runs).

use std::{fs::File, path::Path};

use fs4::fs_std::FileExt;
use serde_json::{json, Value};
use tessera_storage::{backup, files, migrations, store::db_path, MasterKey};

/// Takes the data directory's lock (as `serve` does), or says a server holds it.
fn lock_data_dir(data_dir: &Path) -> Result<File, String> {
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(data_dir.join("LOCK"))
        .map_err(|e| format!("{}: {e}", data_dir.display()))?;
    match FileExt::try_lock_exclusive(&lock) {
        Ok(true) => Ok(lock),
        Ok(false) => Err(format!(
            "a server is running on {}: stop it first",
            data_dir.display()
        )),
        Err(e) => Err(format!("{}: {e}", data_dir.display())),
    }
}

fn header_json(h: &backup::BackupHeader) -> Result<Value, String> {
    serde_json::to_value(h).map_err(|e| e.to_string())
}

/// `tessera admin backup --verify FILE`: the whole body against the header.
pub fn verify_backup(file: &Path) -> Result<Value, String> {
    let header = backup::verify(file).map_err(|e| e.to_string())?;
    let mut out = json!({ "file": file.display().to_string(), "verified": true });
    out["header"] = header_json(&header)?;
    Ok(out)
}

/// `tessera restore --from FILE --data-dir DIR [--master-key-file F]`: into a directory that
/// holds nothing but (optionally) the master key file, made 0700; the key must be the data's,
/// in a file only its owner may read or write.
pub fn restore(from: &Path, data_dir: &Path, key_file: Option<&Path>) -> Result<Value, String> {
    let key_path = key_file.map_or_else(|| data_dir.join("master.key"), Path::to_path_buf);
    // Made 0700 when absent; an existing one is made so by the restore, once found empty.
    files::create_private_dir(data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let others: Vec<String> = std::fs::read_dir(data_dir)
        .map_err(|e| format!("{}: {e}", data_dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| *p != key_path && p.file_name().is_none_or(|n| n != "LOCK"))
        .map(|p| p.display().to_string())
        .collect();
    if !others.is_empty() {
        return Err(format!(
            "{} is not empty ({}): restore only into an empty directory (the master key file may \
             be there already)",
            data_dir.display(),
            others.join(", ")
        ));
    }
    // Refused as at the server's start, before anything is written.
    if let Some(shared) = MasterKey::shared_file(&key_path).map_err(|e| e.to_string())? {
        return Err(shared.to_string());
    }
    let key = MasterKey::load(&key_path).map_err(|e| {
        format!(
            "{e}; restore needs the master key file the data was written with (a backup never \
             holds it): put it at {} or name it with --master-key-file",
            key_path.display()
        )
    })?;
    let _lock = lock_data_dir(data_dir)?;
    let header = backup::restore(from, data_dir, &key).map_err(|e| e.to_string())?;
    let mut out = json!({
        "restored": true,
        "data_dir": data_dir.display().to_string(),
        "master_key_file": key_path.display().to_string(),
    });
    out["header"] = header_json(&header)?;
    Ok(out)
}

/// `tessera check-data --data-dir DIR`: the format, the counts and whether a migration is
/// pending; nothing is written.
pub fn check_data(data_dir: &Path) -> Result<Value, String> {
    let db_dir = db_path(data_dir);
    if !db_dir.exists() {
        return Err(format!("{} holds no database", data_dir.display()));
    }
    let _lock = lock_data_dir(data_dir)?;
    let report =
        migrations::report_at(&db_dir).map_err(|e| format!("{}: {e}", db_dir.display()))?;
    serde_json::to_value(report).map_err(|e| e.to_string())
}
