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
use tessera_storage::{Kind, PlatformBatch, TenantId};
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

tessera_storage::record!(ResourceRecord in PlatformRecord: Kind::Resource, "resource", version 1);

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

tessera_storage::record!(
    CatalogScopeRecord in PlatformRecord: Kind::CatalogScope, "catalog scope", version 1
);

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

#[cfg(test)]
mod tests {
    use tessera_storage::{
        codec::{decode, encode},
        StorageError,
    };

    use super::*;
    use crate::directory::state::tests::{directory, reopen, tenant};

    fn locale_text(word: &str) -> DisplayMetadata {
        DisplayMetadata::LocaleText {
            locale_text: LocaleText {
                en: word.into(),
                pl: format!("{word} (pl)"),
                de: format!("{word} (de)"),
                fr: format!("{word} (fr)"),
                es: format!("{word} (es)"),
            },
        }
    }

    fn scope(resource: Uuid, name: &str) -> NewCatalogScope {
        NewCatalogScope {
            resource_id: resource,
            scope_name: name.into(),
            sensitivity: Sensitivity::Normal,
            display_metadata: locale_text(name),
            per_resource_cap: 3,
            per_tenant_cap: 4,
        }
    }

    /// A resource of Acme's named `name`, at `https://<name lowercased>.acme.example`.
    fn acme_resource(d: &mut DirectoryState, acme: TenantId, name: &str) -> ResourceRecord {
        let uri = format!("https://{}.acme.example", name.to_lowercase());
        d.register_resource(acme, name.into(), uri).unwrap()
    }

    fn names(scopes: &[CatalogScopeRecord]) -> Vec<&str> {
        scopes.iter().map(|s| s.scope_name.as_str()).collect()
    }

    #[test]
    fn a_resource_belongs_to_one_tenant_and_its_catalog_to_it_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let (acme, _) = tenant(&mut d, "Acme");
        let (globex, _) = tenant(&mut d, "Globex");
        assert!(matches!(
            d.register_resource(TenantId::new(), "API".into(), "https://x.example".into()),
            Err(DirectoryError::TenantNotFound)
        ));
        let api = acme_resource(&mut d, acme, "API");
        let billing = acme_resource(&mut d, acme, "Billing");
        assert_eq!(d.resource(api.id).unwrap().unwrap().tenant, acme);
        d.register_catalog_scope(acme, scope(api.id, "read"))
            .unwrap();
        d.register_catalog_scope(acme, scope(api.id, "write"))
            .unwrap();
        let catalog = d.tenant_catalog(acme).unwrap();
        let ids: Vec<Uuid> = catalog.iter().map(|r| r.resource.id).collect();
        assert_eq!(ids, [api.id, billing.id]);
        assert_eq!(names(&catalog[0].scopes), ["read", "write"]);
        assert!(catalog[1].scopes.is_empty());
        assert!(d.tenant_catalog(globex).unwrap().is_empty());
        assert_eq!(
            names(&d.list_catalog_scopes(acme, api.id).unwrap()),
            ["read", "write"]
        );
        // Another tenant's resource answers nothing, as an unknown one does.
        assert!(d.list_catalog_scopes(globex, api.id).unwrap().is_empty());
        assert!(d
            .list_catalog_scopes(acme, Uuid::now_v7())
            .unwrap()
            .is_empty());
        for (who, resource) in [
            (globex, api.id),
            (acme, Uuid::now_v7()),
            (acme, PLATFORM_RESOURCE_ID),
        ] {
            assert!(matches!(
                d.register_catalog_scope(who, scope(resource, "admin")),
                Err(DirectoryError::ResourceNotFound)
            ));
        }
        // The lookup by tenant is rebuilt at start.
        let d = reopen(d);
        let ids: Vec<Uuid> = d
            .tenant_catalog(acme)
            .unwrap()
            .iter()
            .map(|r| r.resource.id)
            .collect();
        assert_eq!(ids, [api.id, billing.id]);
    }

    #[test]
    fn scope_names_are_unique_per_resource_and_counted_against_both_caps() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let (acme, _) = tenant(&mut d, "Acme");
        let (globex, _) = tenant(&mut d, "Globex");
        let api = acme_resource(&mut d, acme, "API");
        let billing = acme_resource(&mut d, acme, "Billing");
        let other = d
            .register_resource(globex, "API".into(), "https://api.globex.example".into())
            .unwrap();
        d.register_catalog_scope(acme, scope(api.id, "read"))
            .unwrap();
        assert!(matches!(
            d.register_catalog_scope(acme, scope(api.id, "read")),
            Err(DirectoryError::CatalogDuplicate)
        ));
        // The same name on another resource is another scope.
        d.register_catalog_scope(acme, scope(billing.id, "read"))
            .unwrap();
        d.register_catalog_scope(acme, scope(api.id, "write"))
            .unwrap();
        d.register_catalog_scope(acme, scope(api.id, "delete"))
            .unwrap();
        assert!(matches!(
            d.register_catalog_scope(acme, scope(api.id, "admin")),
            Err(DirectoryError::CatalogResourceCap)
        ));
        // Four over the tenant's resources: the fifth is refused on a resource with room.
        assert!(matches!(
            d.register_catalog_scope(acme, scope(billing.id, "pay")),
            Err(DirectoryError::CatalogTenantCap)
        ));
        // Another tenant's entries are not counted against this one.
        for name in ["a", "b", "c"] {
            d.register_catalog_scope(globex, scope(other.id, name))
                .unwrap();
        }
        let removed = d
            .delete_catalog_scope(
                acme,
                api.id,
                d.list_catalog_scopes(acme, api.id).unwrap()[0].id,
            )
            .unwrap();
        assert_eq!(removed.scope_name, "read");
        d.register_catalog_scope(acme, scope(billing.id, "pay"))
            .unwrap();
    }

    #[test]
    fn an_entry_is_pending_until_approved_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let (acme, _) = tenant(&mut d, "Acme");
        let api = acme_resource(&mut d, acme, "API");
        let read = d
            .register_catalog_scope(acme, scope(api.id, "read"))
            .unwrap();
        d.register_catalog_scope(acme, scope(api.id, "write"))
            .unwrap();
        assert_eq!(read.status, ScopeStatus::PendingReview);
        assert!(!read.requires_platform_enable);
        assert_eq!(
            names(&d.all_catalog_scopes(true).unwrap()),
            ["read", "write"]
        );
        let (approved, changed) = d.approve_catalog_scope(api.id, read.id).unwrap();
        assert!(changed);
        assert_eq!(approved.status, ScopeStatus::Approved);
        assert!(approved.updated_at >= read.updated_at);
        let (again, changed) = d.approve_catalog_scope(api.id, read.id).unwrap();
        assert!(!changed);
        assert_eq!(again.updated_at, approved.updated_at);
        assert_eq!(names(&d.all_catalog_scopes(true).unwrap()), ["write"]);
        assert_eq!(
            names(&d.all_catalog_scopes(false).unwrap()),
            ["read", "write"]
        );
        assert_eq!(
            d.list_catalog_scopes(acme, api.id).unwrap()[0].status,
            ScopeStatus::Approved
        );
        assert!(matches!(
            d.approve_catalog_scope(api.id, Uuid::now_v7()),
            Err(DirectoryError::NotFound)
        ));
    }

    #[test]
    fn only_the_owner_deletes_an_entry() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = directory(dir.path());
        let (acme, _) = tenant(&mut d, "Acme");
        let (globex, _) = tenant(&mut d, "Globex");
        let api = acme_resource(&mut d, acme, "API");
        let read = d
            .register_catalog_scope(acme, scope(api.id, "read"))
            .unwrap();
        assert!(matches!(
            d.delete_catalog_scope(globex, api.id, read.id),
            Err(DirectoryError::ResourceNotFound)
        ));
        assert_eq!(d.list_catalog_scopes(acme, api.id).unwrap().len(), 1);
        assert_eq!(
            d.delete_catalog_scope(acme, api.id, read.id).unwrap().id,
            read.id
        );
        assert!(d.list_catalog_scopes(acme, api.id).unwrap().is_empty());
        assert!(matches!(
            d.delete_catalog_scope(acme, api.id, read.id),
            Err(DirectoryError::NotFound)
        ));
    }

    #[test]
    fn entry_keys_start_with_their_resource() {
        let (resource, scope) = (Uuid::now_v7(), Uuid::now_v7());
        let key = CatalogScopeRecord::key_of(resource, scope);
        assert_eq!(&key[..16], resource.as_bytes());
        assert_eq!(&key[16..], scope.as_bytes());
    }

    #[test]
    fn records_round_trip_and_malformed_bytes_are_refused() {
        let now = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        let entry = CatalogScopeRecord {
            id: Uuid::now_v7(),
            resource_id: Uuid::now_v7(),
            tenant: TenantId::new(),
            scope_name: "read".into(),
            status: ScopeStatus::PendingReview,
            sensitivity: Sensitivity::Elevated,
            requires_platform_enable: true,
            display_metadata: locale_text("Read"),
            created_at: now,
            updated_at: now,
        };
        let bytes = encode(&entry).unwrap();
        let back: CatalogScopeRecord = decode(&bytes).unwrap();
        assert_eq!(back.id, entry.id);
        assert_eq!(back.resource_id, entry.resource_id);
        assert_eq!(back.tenant, entry.tenant);
        assert_eq!(
            (back.status, back.sensitivity, back.requires_platform_enable),
            (ScopeStatus::PendingReview, Sensitivity::Elevated, true)
        );
        assert_eq!(back.display_metadata, entry.display_metadata);
        assert_eq!(back.created_at, now);
        let keyed = CatalogScopeRecord {
            display_metadata: DisplayMetadata::I18nKey {
                i18n_key: "scope.read".into(),
            },
            ..entry.clone()
        };
        let back: CatalogScopeRecord = decode(&encode(&keyed).unwrap()).unwrap();
        assert_eq!(back.display_metadata, keyed.display_metadata);
        // The stored words the operator's tools read.
        let json = serde_json::to_value(&entry).unwrap();
        assert_eq!(json["status"], "pending_review");
        assert_eq!(json["sensitivity"], "elevated");
        assert_eq!(json["display_metadata"]["kind"], "locale_text");
        assert_eq!(json["display_metadata"]["locale_text"]["pl"], "Read (pl)");

        let resource = ResourceRecord {
            id: Uuid::now_v7(),
            tenant: TenantId::new(),
            name: "API".into(),
            uri: "https://api.example/".into(),
            created_at: now,
        };
        let back: ResourceRecord = decode(&encode(&resource).unwrap()).unwrap();
        assert_eq!(
            (back.id, back.tenant, back.name.as_str(), back.uri.as_str()),
            (resource.id, resource.tenant, "API", "https://api.example/")
        );

        assert!(matches!(
            decode::<ResourceRecord>(&[0]),
            Err(StorageError::Format(_))
        ));
        let mut other_version = encode(&resource).unwrap();
        other_version[..2].copy_from_slice(&2u16.to_be_bytes());
        assert!(matches!(
            decode::<ResourceRecord>(&other_version),
            Err(StorageError::SchemaVersion {
                found: 2,
                expected: 1,
                ..
            })
        ));
        let mut truncated = encode(&entry).unwrap();
        truncated.truncate(truncated.len() - 1);
        assert!(matches!(
            decode::<CatalogScopeRecord>(&truncated),
            Err(StorageError::Decode { .. })
        ));
        let mut unknown_status = json.clone();
        unknown_status["status"] = "live".into();
        let mut bytes = 1u16.to_be_bytes().to_vec();
        bytes.extend_from_slice(&serde_json::to_vec(&unknown_status).unwrap());
        assert!(decode::<CatalogScopeRecord>(&bytes).is_err());
        let mut untagged = json;
        untagged["display_metadata"] = serde_json::json!({"i18n_key": "scope.read"});
        let mut bytes = 1u16.to_be_bytes().to_vec();
        bytes.extend_from_slice(&serde_json::to_vec(&untagged).unwrap());
        assert!(decode::<CatalogScopeRecord>(&bytes).is_err());
    }
}
