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
