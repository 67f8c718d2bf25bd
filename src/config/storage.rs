//! `[storage]`: where the data lives, sled's cache, and how writes are made durable and
//! watched.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::error::{positive, ConfigError};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// Where sled, the admin socket and (by default) the master key live.
    pub data_dir: PathBuf,
    /// sled's page cache, in MiB.
    pub cache_capacity_mb: u64,
    /// Whether an acknowledged write waits for the fdatasync of its flush (group commit). Off,
    /// it still waits for sled's flush: a process kill loses nothing acknowledged, a power loss
    /// may. Only benchmarks turn this off.
    pub sync_writes: bool,
    /// The most batches applied and not yet flushed; past it a writer waits for the flush
    /// under way (pacing: sled 0.34 applies no backpressure of its own).
    pub max_unflushed_batches: u64,
    /// A storage call (read, scan step, apply, flush, fdatasync, paced wait) running longer
    /// than this marks the server not ready and stops the process with exit code 75, for its
    /// supervisor to restart it. 0 turns the watchdog off.
    pub watchdog_secs: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            data_dir: PathBuf::from("data"),
            cache_capacity_mb: 256,
            sync_writes: true,
            max_unflushed_batches: tessera_storage::flusher::DEFAULT_MAX_UNFLUSHED,
            watchdog_secs: 30,
        }
    }
}

impl StorageConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        positive("storage.cache_capacity_mb", self.cache_capacity_mb)?;
        if self.cache_capacity_mb.checked_mul(1024 * 1024).is_none() {
            return Err(ConfigError::Key {
                key: "storage.cache_capacity_mb",
                reason: "is too large".into(),
            });
        }
        positive("storage.max_unflushed_batches", self.max_unflushed_batches)?;
        if self.max_unflushed_batches > 100_000 {
            return Err(ConfigError::Key {
                key: "storage.max_unflushed_batches",
                reason: "must be at most 100000".into(),
            });
        }
        if self.watchdog_secs > 86_400 {
            return Err(ConfigError::Key {
                key: "storage.watchdog_secs",
                reason: "must be at most 86400 (0 turns the watchdog off)".into(),
            });
        }
        if self.data_dir.as_os_str().is_empty() {
            return Err(ConfigError::Key {
                key: "storage.data_dir",
                reason: "must not be empty".into(),
            });
        }
        Ok(())
    }
}
