//! Management keys: secrets a tenant's back end manages the tenant's users with. Only the
//! SHA-256 of a key is stored; the unrevoked keys are published with the index, so a handler
//! finds a key's tenant and role without a hop.

use tessera_storage::{random_token, sha256, PlatformBatch, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    messages::{CreatedManagementKey, NewManagementKey},
    DirectoryState,
};
use crate::{error::DirectoryError, published::ManagementKeyRef, records::ManagementKeyRecord};

/// Every management key starts with this.
pub const MANAGEMENT_KEY_PREFIX: &str = "tmk_";
/// Unrevoked keys a tenant may hold at once.
pub const MAX_MANAGEMENT_KEYS: usize = 20;

fn reference(rec: &ManagementKeyRecord) -> ManagementKeyRef {
    ManagementKeyRef {
        tenant: rec.tenant,
        id: rec.id,
        role: rec.role,
        expires_at: rec.expires_at,
    }
}

impl DirectoryState {
    /// Loads the unrevoked keys at start.
    pub(super) fn load_management_keys(&mut self) -> Result<(), DirectoryError> {
        for rec in self.platform.scan::<ManagementKeyRecord>() {
            let rec = rec?;
            if rec.revoked_at.is_none() {
                self.management_keys.insert(rec.hash, reference(&rec));
            }
        }
        Ok(())
    }

    fn keys_of(&self, tenant: TenantId) -> Result<Vec<ManagementKeyRecord>, DirectoryError> {
        let mut out = Vec::new();
        for item in self
            .platform
            .scan_prefix::<ManagementKeyRecord>(tenant.as_bytes())
        {
            out.push(item?.1);
        }
        Ok(out)
    }

    pub(super) fn create_management_key(
        &mut self,
        new: NewManagementKey,
    ) -> Result<CreatedManagementKey, DirectoryError> {
        if !self.tenants.contains_key(&new.tenant) {
            return Err(DirectoryError::TenantNotFound);
        }
        let live = self
            .keys_of(new.tenant)?
            .iter()
            .filter(|k| k.revoked_at.is_none())
            .count();
        if live >= MAX_MANAGEMENT_KEYS {
            return Err(DirectoryError::ManagementKeyLimit);
        }
        let key = format!("{MANAGEMENT_KEY_PREFIX}{}", random_token(32));
        let record = ManagementKeyRecord {
            id: Uuid::now_v7(),
            tenant: new.tenant,
            name: new.name,
            role: new.role,
            prefix: key.chars().take(MANAGEMENT_KEY_PREFIX.len() + 8).collect(),
            hash: sha256(key.as_bytes()),
            created_at: OffsetDateTime::now_utc(),
            created_by: new.created_by,
            expires_at: new.expires_at,
            revoked_at: None,
        };
        let mut batch = PlatformBatch::default();
        batch.put(
            &ManagementKeyRecord::key_of(record.tenant, record.id),
            &record,
        )?;
        self.platform.apply(batch)?;
        self.management_keys.insert(record.hash, reference(&record));
        self.publish_index();
        Ok(CreatedManagementKey { record, key })
    }

    /// A tenant's keys, newest first.
    pub(super) fn list_management_keys(
        &self,
        tenant: TenantId,
    ) -> Result<Vec<ManagementKeyRecord>, DirectoryError> {
        let mut keys = self.keys_of(tenant)?;
        keys.reverse();
        Ok(keys)
    }

    pub(super) fn revoke_management_key(
        &mut self,
        tenant: TenantId,
        id: Uuid,
    ) -> Result<(ManagementKeyRecord, bool), DirectoryError> {
        let key = ManagementKeyRecord::key_of(tenant, id);
        let mut rec = self
            .platform
            .get::<ManagementKeyRecord>(&key)?
            .ok_or(DirectoryError::NotFound)?;
        if rec.revoked_at.is_some() {
            return Ok((rec, false));
        }
        rec.revoked_at = Some(OffsetDateTime::now_utc());
        let mut batch = PlatformBatch::default();
        batch.put(&key, &rec)?;
        self.platform.apply(batch)?;
        self.management_keys.remove(&rec.hash);
        self.publish_index();
        Ok((rec, true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        directory::state::tests::{directory, reopen, tenant},
        error::DirectoryError,
        records::Role,
    };

    fn new_key(tenant: TenantId, name: &str, role: Role) -> NewManagementKey {
        NewManagementKey {
            tenant,
            name: name.into(),
            role,
            expires_at: None,
            created_by: Uuid::now_v7(),
        }
    }

    #[test]
    fn a_new_key_is_shown_once_and_stored_only_as_its_hash() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let (acme, _) = tenant(&mut d, "Acme");
        let expires_at = Some(OffsetDateTime::now_utc() + time::Duration::days(30));
        let created = d
            .create_management_key(NewManagementKey {
                expires_at,
                ..new_key(acme, "ci", Role::Viewer)
            })
            .unwrap();
        let key = &created.key;
        assert!(key.starts_with(MANAGEMENT_KEY_PREFIX));
        assert!(key.len() > MANAGEMENT_KEY_PREFIX.len() + 32);
        let rec = &created.record;
        assert_eq!(rec.hash, sha256(key.as_bytes()));
        assert_eq!(rec.prefix, key[..MANAGEMENT_KEY_PREFIX.len() + 8]);
        assert_eq!((rec.tenant, rec.role), (acme, Role::Viewer));
        assert_eq!(rec.revoked_at, None);
        let stored = d
            .platform
            .get::<ManagementKeyRecord>(&ManagementKeyRecord::key_of(acme, rec.id))
            .unwrap()
            .unwrap();
        assert_eq!(stored.hash, rec.hash);
        let encoded =
            String::from_utf8_lossy(&tessera_storage::codec::encode(&stored).unwrap()).into_owned();
        assert!(!encoded.contains(&key[MANAGEMENT_KEY_PREFIX.len()..]));
        // Handlers find the key's tenant, role and expiry by its hash alone.
        let index = d.published.index.load();
        let grant = index
            .by_management_key
            .get(&sha256(key.as_bytes()))
            .unwrap();
        assert_eq!(
            (grant.tenant, grant.id, grant.role, grant.expires_at),
            (acme, rec.id, Role::Viewer, expires_at)
        );
        let other = d
            .create_management_key(new_key(acme, "ci", Role::Viewer))
            .unwrap();
        assert_ne!(other.key, created.key);
        assert!(matches!(
            d.create_management_key(new_key(TenantId::new(), "ci", Role::Admin)),
            Err(DirectoryError::TenantNotFound)
        ));
    }

    #[test]
    fn a_tenant_holds_a_bounded_number_of_unrevoked_keys() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let (acme, _) = tenant(&mut d, "Acme");
        let (globex, _) = tenant(&mut d, "Globex");
        let keys: Vec<CreatedManagementKey> = (0..MAX_MANAGEMENT_KEYS)
            .map(|i| {
                d.create_management_key(new_key(acme, &format!("k{i}"), Role::Admin))
                    .unwrap()
            })
            .collect();
        assert!(matches!(
            d.create_management_key(new_key(acme, "one more", Role::Admin)),
            Err(DirectoryError::ManagementKeyLimit)
        ));
        // Another tenant's count is its own.
        d.create_management_key(new_key(globex, "k", Role::Admin))
            .unwrap();
        d.revoke_management_key(acme, keys[3].record.id).unwrap();
        d.create_management_key(new_key(acme, "replacement", Role::Admin))
            .unwrap();
        assert!(matches!(
            d.create_management_key(new_key(acme, "one more", Role::Admin)),
            Err(DirectoryError::ManagementKeyLimit)
        ));
    }

    #[test]
    fn a_revoked_key_leaves_the_index_once_and_stays_listed() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let (acme, _) = tenant(&mut d, "Acme");
        let (globex, _) = tenant(&mut d, "Globex");
        let first = d
            .create_management_key(new_key(acme, "first", Role::Admin))
            .unwrap();
        let second = d
            .create_management_key(new_key(acme, "second", Role::Viewer))
            .unwrap();
        assert!(matches!(
            d.revoke_management_key(globex, first.record.id),
            Err(DirectoryError::NotFound)
        ));
        let (revoked, changed) = d.revoke_management_key(acme, first.record.id).unwrap();
        assert!(changed);
        let revoked_at = revoked.revoked_at.unwrap();
        let index = d.published.index.load();
        assert!(!index
            .by_management_key
            .contains_key(&sha256(first.key.as_bytes())));
        assert!(index
            .by_management_key
            .contains_key(&sha256(second.key.as_bytes())));
        let (again, changed) = d.revoke_management_key(acme, first.record.id).unwrap();
        assert!(!changed);
        assert_eq!(again.revoked_at, Some(revoked_at));
        let names: Vec<(String, bool)> = d
            .list_management_keys(acme)
            .unwrap()
            .into_iter()
            .map(|k| (k.name, k.revoked_at.is_some()))
            .collect();
        assert_eq!(
            names,
            [("second".to_owned(), false), ("first".to_owned(), true)]
        );
        assert!(d.list_management_keys(globex).unwrap().is_empty());
        // Nor does a restart bring it back.
        let d = reopen(d);
        let index = d.published.index.load();
        assert!(!index
            .by_management_key
            .contains_key(&sha256(first.key.as_bytes())));
        assert_eq!(index.by_management_key.len(), 1);
    }
}
