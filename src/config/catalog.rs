//! `[catalog]`: the resource scope catalog's caps.

use serde::{Deserialize, Serialize};

use super::error::{positive, ConfigError};

/// The resource scope catalog's caps (spec 2.13).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CatalogConfig {
    /// Scopes one resource may hold; past it, 400 `resource_scope_catalog/resource_cap_exceeded`.
    pub max_scopes_per_resource: usize,
    /// Scopes all of a tenant's resources may hold together; past it, 400
    /// `resource_scope_catalog/tenant_aggregate_cap_exceeded`.
    pub max_scopes_per_tenant: usize,
}

impl Default for CatalogConfig {
    fn default() -> Self {
        CatalogConfig {
            max_scopes_per_resource: 50,
            max_scopes_per_tenant: 500,
        }
    }
}

impl CatalogConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        positive(
            "catalog.max_scopes_per_resource",
            self.max_scopes_per_resource as u64,
        )?;
        positive(
            "catalog.max_scopes_per_tenant",
            self.max_scopes_per_tenant as u64,
        )
    }
}
