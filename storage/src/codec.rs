//! Values are JSON with a two-byte big-endian schema version in front.
//!
//! JSON keeps records readable in a pinch and tolerant of added optional fields; the version
//! says which shape the bytes have, so a migration can rewrite old shapes at start-up and a
//! reader never guesses.

use serde::{de::DeserializeOwned, Serialize};

use crate::{error::StorageError, keys::Kind};

/// A value stored in sled.
pub trait Record: Serialize + DeserializeOwned {
    /// The kind byte in this record's key.
    const KIND: Kind;
    /// A name for errors and logs.
    const NAME: &'static str;
    /// The schema version this build writes and reads.
    const VERSION: u16;
}

/// A record that lives under a tenant's prefix. Only a `TenantStore` reads or writes these.
pub trait TenantRecord: Record {}

/// A record of the platform (tenants, dashboard accounts, indexes). Only the directory reads or
/// writes these.
pub trait PlatformRecord: Record {}

/// Declares what a record is to the store: the kind byte of its keys, its name in errors and
/// logs, the schema version this build writes and reads, and whose store it lives in
/// (`TenantRecord` or `PlatformRecord`):
///
/// `record!(MauRecord in TenantRecord: Kind::Usage, "monthly active users", version 1);`
#[macro_export]
macro_rules! record {
    ($ty:ident in $store:ident : $kind:path, $name:literal, version $version:literal) => {
        impl $crate::Record for $ty {
            const KIND: $crate::Kind = $kind;
            const NAME: &'static str = $name;
            const VERSION: u16 = $version;
        }
        impl $crate::$store for $ty {}
    };
}

pub fn encode<R: Record>(value: &R) -> Result<Vec<u8>, StorageError> {
    let mut out = R::VERSION.to_be_bytes().to_vec();
    serde_json::to_writer(&mut out, value).map_err(|source| StorageError::Encode {
        kind: R::NAME,
        source,
    })?;
    Ok(out)
}

pub fn decode<R: Record>(bytes: &[u8]) -> Result<R, StorageError> {
    let (version, body) = split_version(bytes).ok_or(StorageError::Format(format!(
        "a {} record is shorter than its version header",
        R::NAME
    )))?;
    if version != R::VERSION {
        return Err(StorageError::SchemaVersion {
            kind: R::NAME,
            found: version,
            expected: R::VERSION,
        });
    }
    serde_json::from_slice(body).map_err(|source| StorageError::Decode {
        kind: R::NAME,
        source,
    })
}

/// The schema version and the body of a stored value; `None` when the value is too short.
pub fn split_version(bytes: &[u8]) -> Option<(u16, &[u8])> {
    if bytes.len() < 2 {
        return None;
    }
    Some((u16::from_be_bytes([bytes[0], bytes[1]]), &bytes[2..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Thing {
        a: u32,
    }
    impl Record for Thing {
        const KIND: Kind = Kind::TenantSettings;
        const NAME: &'static str = "thing";
        const VERSION: u16 = 3;
    }

    #[test]
    fn round_trips_and_checks_the_version() {
        let bytes = encode(&Thing { a: 7 }).unwrap();
        assert_eq!(&bytes[..2], &[0, 3]);
        assert_eq!(decode::<Thing>(&bytes).unwrap(), Thing { a: 7 });
        let mut old = bytes.clone();
        old[1] = 2;
        assert!(matches!(
            decode::<Thing>(&old),
            Err(StorageError::SchemaVersion { found: 2, .. })
        ));
        assert!(decode::<Thing>(&[1]).is_err());
    }
}
