//! Storage errors. They never reach a client as text: the HTTP layer logs them and answers a
//! generic 500 or 503.

use thiserror::Error;

/// Everything that can go wrong below the actors.
#[derive(Debug, Error)]
pub enum StorageError {
    #[error("sled: {0}")]
    Sled(#[from] sled::Error),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot decode a {kind} record: {source}")]
    Decode {
        kind: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot encode a {kind} record: {source}")]
    Encode {
        kind: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("a {kind} record has schema version {found}, this build reads {expected}")]
    SchemaVersion {
        kind: &'static str,
        found: u16,
        expected: u16,
    },
    #[error("storage format: {0}")]
    Format(String),
    #[error("a sealed value could not be opened (wrong master key or tampered data)")]
    Crypto,
    #[error("the master key: {0}")]
    MasterKey(String),
    #[error("the durable-write flusher is gone")]
    FlusherGone,
    #[error("a flush failed: {0}")]
    Flush(String),
    #[error("backup: {0}")]
    Backup(String),
}

impl From<sled::transaction::TransactionError<()>> for StorageError {
    fn from(e: sled::transaction::TransactionError<()>) -> Self {
        match e {
            sled::transaction::TransactionError::Storage(e) => StorageError::Sled(e),
            sled::transaction::TransactionError::Abort(()) => {
                StorageError::Format("a transaction was aborted".into())
            }
        }
    }
}
