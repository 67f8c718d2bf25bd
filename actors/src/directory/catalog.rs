//! The resource scope catalog (spec 2.13, 3.3, 4.6): resources (APIs a tenant's tokens may be
//! minted for, RFC 8707) registered by the operator and owned by one tenant, and the scopes
//! the tenant's owners register on them for the consent screen. Every entry starts
//! `pending_review` and is grantable only once the operator approves it.
//!
//! The catalog lives in the platform store, beside the management keys: resources are
//! registered and scopes reviewed by the operator across tenants (`scope list --pending`
//! reads one key range instead of waking every tenant's actor), and a resource id must lead
//! to its tenant before any tenant is asked anything.

use serde::{Deserialize, Serialize};
use tessera_storage::{Kind, PlatformBatch, PlatformRecord, Record, TenantId};
use time::OffsetDateTime;
use uuid::Uuid;

use super::DirectoryState;
use crate::error::DirectoryError;

/// The platform's own resource: it has no owner tenant, and its scopes are the platform's.
/// Every write to it is refused.
pub const PLATFORM_RESOURCE_ID: Uuid = Uuid::from_u128(1);

/// An API a tenant's tokens may be minted for, by resource id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ResourceRecord {
    pub id: Uuid,
    pub tenant: TenantId,
    pub name: String,
    /// The resource indicator (RFC 8707): an absolute URI without fragment.
    pub uri: String,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl Record for ResourceRecord {
    const KIND: Kind = Kind::Resource;
    const NAME: &'static str = "resource";
    const VERSION: u16 = 1;
}
impl PlatformRecord for ResourceRecord {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeStatus {
    /// Registered, not grantable until the operator approves it.
    PendingReview,
    Approved,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sensitivity {
    /// Shown as an individually checkable item on the consent screen.
    Normal,
    /// Granted only as part of the whole request.
    Elevated,
}

/// What the consent screen shows for a scope (spec 2.13): the tenant's own words in the five
/// locales, or a key of the platform's copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DisplayMetadata {
    LocaleText { locale_text: LocaleText },
    I18nKey { i18n_key: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocaleText {
    pub en: String,
    pub pl: String,
    pub de: String,
    pub fr: String,
    pub es: String,
}

/// A catalog entry, keyed `resource id | scope id`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CatalogScopeRecord {
    pub id: Uuid,
    pub resource_id: Uuid,
    pub tenant: TenantId,
    pub scope_name: String,
    pub status: ScopeStatus,
    pub sensitivity: Sensitivity,
    pub requires_platform_enable: bool,
    pub display_metadata: DisplayMetadata,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl CatalogScopeRecord {
    pub fn key_of(resource: Uuid, scope: Uuid) -> Vec<u8> {
        let mut k = resource.as_bytes().to_vec();
        k.extend_from_slice(scope.as_bytes());
        k
    }
}

impl Record for CatalogScopeRecord {
    const KIND: Kind = Kind::CatalogScope;
    const NAME: &'static str = "catalog scope";
    const VERSION: u16 = 1;
}
impl PlatformRecord for CatalogScopeRecord {}

/// A resource and its catalog entries.
#[derive(Clone, Debug)]
pub struct TenantResource {
    pub resource: ResourceRecord,
    pub scopes: Vec<CatalogScopeRecord>,
}

/// A scope as an owner registers it, checked by the HTTP layer.
#[derive(Clone, Debug)]
pub struct NewCatalogScope {
    pub resource_id: Uuid,
    pub scope_name: String,
    pub sensitivity: Sensitivity,
    pub display_metadata: DisplayMetadata,
    /// `catalog.max_scopes_per_resource` and `catalog.max_scopes_per_tenant`.
    pub per_resource_cap: usize,
    pub per_tenant_cap: usize,
}

impl DirectoryState {
    pub(super) fn resource(&self, id: Uuid) -> Result<Option<ResourceRecord>, DirectoryError> {
        Ok(self.platform.get::<ResourceRecord>(id.as_bytes())?)
    }

    /// Builds [`DirectoryState::resources_by_tenant`] at start.
    pub(super) fn load_resources(&mut self) -> Result<(), DirectoryError> {
        for item in self.platform.scan::<ResourceRecord>() {
            let resource = item?;
            self.resources_by_tenant
                .entry(resource.tenant)
                .or_default()
                .push(resource.id);
        }
        Ok(())
    }

    /// Every resource `tenant` owns, with its entries.
    pub(super) fn tenant_catalog(
        &self,
        tenant: TenantId,
    ) -> Result<Vec<TenantResource>, DirectoryError> {
        let mut out = Vec::new();
        for id in self.resources_by_tenant.get(&tenant).into_iter().flatten() {
            if let Some(resource) = self.resource(*id)? {
                let scopes = self.scopes_of(resource.id)?;
                out.push(TenantResource { resource, scopes });
            }
        }
        Ok(out)
    }

    fn scopes_of(&self, resource: Uuid) -> Result<Vec<CatalogScopeRecord>, DirectoryError> {
        let mut out = Vec::new();
        for item in self
            .platform
            .scan_prefix::<CatalogScopeRecord>(resource.as_bytes())
        {
            out.push(item?.1);
        }
        out.sort_by_key(|s| (s.created_at, s.id));
        Ok(out)
    }

    /// The operator registers a resource for a tenant.
    pub(super) fn register_resource(
        &mut self,
        tenant: TenantId,
        name: String,
        uri: String,
    ) -> Result<ResourceRecord, DirectoryError> {
        if !self.tenants.contains_key(&tenant) {
            return Err(DirectoryError::TenantNotFound);
        }
        let record = ResourceRecord {
            id: Uuid::now_v7(),
            tenant,
            name,
            uri,
            created_at: OffsetDateTime::now_utc(),
        };
        let mut batch = PlatformBatch::default();
        batch.put(record.id.as_bytes(), &record)?;
        self.platform.apply(batch)?;
        self.resources_by_tenant
            .entry(tenant)
            .or_default()
            .push(record.id);
        Ok(record)
    }

    /// The resource's entries, oldest first, if it exists and `tenant` owns it; else none.
    pub(super) fn list_catalog_scopes(
        &self,
        tenant: TenantId,
        resource: Uuid,
    ) -> Result<Vec<CatalogScopeRecord>, DirectoryError> {
        match self.resource(resource)? {
            Some(r) if r.tenant == tenant => self.scopes_of(resource),
            _ => Ok(Vec::new()),
        }
    }

    pub(super) fn register_catalog_scope(
        &mut self,
        tenant: TenantId,
        new: NewCatalogScope,
    ) -> Result<CatalogScopeRecord, DirectoryError> {
        match self.resource(new.resource_id)? {
            Some(r) if r.tenant == tenant => {}
            _ => return Err(DirectoryError::ResourceNotFound),
        }
        let existing = self.scopes_of(new.resource_id)?;
        if existing.iter().any(|s| s.scope_name == new.scope_name) {
            return Err(DirectoryError::CatalogDuplicate);
        }
        if existing.len() >= new.per_resource_cap {
            return Err(DirectoryError::CatalogResourceCap);
        }
        let mut tenant_total = 0;
        for item in self.platform.scan::<ResourceRecord>() {
            let r = item?;
            if r.tenant == tenant {
                tenant_total += self.scopes_of(r.id)?.len();
            }
        }
        if tenant_total >= new.per_tenant_cap {
            return Err(DirectoryError::CatalogTenantCap);
        }
        let now = OffsetDateTime::now_utc();
        let record = CatalogScopeRecord {
            id: Uuid::now_v7(),
            resource_id: new.resource_id,
            tenant,
            scope_name: new.scope_name,
            status: ScopeStatus::PendingReview,
            sensitivity: new.sensitivity,
            requires_platform_enable: false,
            display_metadata: new.display_metadata,
            created_at: now,
            updated_at: now,
        };
        let mut batch = PlatformBatch::default();
        batch.put(
            &CatalogScopeRecord::key_of(record.resource_id, record.id),
            &record,
        )?;
        self.platform.apply(batch)?;
        Ok(record)
    }

    /// Removes an entry of a resource `tenant` owns: future mints stop including it.
    pub(super) fn delete_catalog_scope(
        &mut self,
        tenant: TenantId,
        resource: Uuid,
        scope: Uuid,
    ) -> Result<CatalogScopeRecord, DirectoryError> {
        match self.resource(resource)? {
            Some(r) if r.tenant == tenant => {}
            _ => return Err(DirectoryError::ResourceNotFound),
        }
        let key = CatalogScopeRecord::key_of(resource, scope);
        let record = self
            .platform
            .get::<CatalogScopeRecord>(&key)?
            .ok_or(DirectoryError::NotFound)?;
        let mut batch = PlatformBatch::default();
        batch.remove(Kind::CatalogScope, &key);
        self.platform.apply(batch)?;
        Ok(record)
    }

    /// Every entry (or every one awaiting review: the operator's queue), oldest first.
    pub(super) fn all_catalog_scopes(
        &self,
        pending_only: bool,
    ) -> Result<Vec<CatalogScopeRecord>, DirectoryError> {
        let mut out = Vec::new();
        for item in self.platform.scan::<CatalogScopeRecord>() {
            let s = item?;
            if !pending_only || s.status == ScopeStatus::PendingReview {
                out.push(s);
            }
        }
        out.sort_by_key(|s| (s.created_at, s.id));
        Ok(out)
    }

    /// The operator approves an entry; approving it again changes nothing.
    pub(super) fn approve_catalog_scope(
        &mut self,
        resource: Uuid,
        scope: Uuid,
    ) -> Result<(CatalogScopeRecord, bool), DirectoryError> {
        let key = CatalogScopeRecord::key_of(resource, scope);
        let mut record = self
            .platform
            .get::<CatalogScopeRecord>(&key)?
            .ok_or(DirectoryError::NotFound)?;
        if record.status == ScopeStatus::Approved {
            return Ok((record, false));
        }
        record.status = ScopeStatus::Approved;
        record.updated_at = OffsetDateTime::now_utc();
        let mut batch = PlatformBatch::default();
        batch.put(&key, &record)?;
        self.platform.apply(batch)?;
        Ok((record, true))
    }
}
