//! Tessera's storage layer: one sled database per data directory.
//!
//! This crate owns the on-disk format and nothing else: it knows records, keys, codecs,
//! durability and encryption, but nothing of HTTP or actors. A tenant actor receives a
//! [`TenantStore`] that can only build keys under its own tenant prefix, so a cross-tenant read
//! cannot be written by mistake. Platform records (tenants, dashboard accounts, the API-key
//! index) live behind [`PlatformStore`], which only the directory actor holds.

pub mod backup;
pub mod codec;
pub mod crypto;
pub mod error;
pub mod files;
pub mod flusher;
pub mod keys;
pub mod migrations;
pub mod rotation;
pub mod store;
pub mod watch;

pub use codec::{PlatformRecord, Record, TenantRecord};
pub use crypto::{ct_eq, random_token, sha256, KeyedHasher, MasterKey, Sealed, SharedKeyFile};
pub use error::StorageError;
pub use flusher::{Durability, Flusher};
pub use keys::{Kind, TenantId};
pub use rotation::{RotationReport, SealedField};
pub use store::{PlatformBatch, PlatformStore, Store, StoreOptions, TenantBatch, TenantStore};
