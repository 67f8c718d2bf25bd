//! The tenant's state and its synchronous logic.

use tessera_storage::{StorageError, TenantStore};
use time::OffsetDateTime;

use super::{
    messages::{TenantInfo, TenantOverview},
    settings::TenantSettings,
};

/// Key of the single settings record under the tenant's prefix.
const SETTINGS_KEY: &[u8] = b"";

pub struct TenantState {
    info: TenantInfo,
    store: TenantStore,
    settings: TenantSettings,
    fault_injection: bool,
}

impl TenantState {
    /// Loads the tenant from sled; a tenant seen for the first time gets the default settings,
    /// written before the actor takes any message.
    pub fn load(
        info: TenantInfo,
        store: TenantStore,
        fault_injection: bool,
    ) -> Result<Self, StorageError> {
        let settings = match store.get::<TenantSettings>(SETTINGS_KEY)? {
            Some(s) => s,
            None => {
                let s = TenantSettings::defaults(OffsetDateTime::now_utc());
                let mut batch = store.batch();
                batch.put(SETTINGS_KEY, &s)?;
                store.apply(batch)?;
                s
            }
        };
        Ok(TenantState {
            info,
            store,
            settings,
            fault_injection,
        })
    }

    pub fn info(&self) -> &TenantInfo {
        &self.info
    }

    pub fn set_info(&mut self, info: TenantInfo) {
        if info.id == self.store.tenant_id() {
            self.info = info;
        }
    }

    pub fn fault_injection(&self) -> bool {
        self.fault_injection
    }

    pub fn overview(&self) -> TenantOverview {
        TenantOverview {
            info: self.info.clone(),
            settings: self.settings.clone(),
        }
    }
}
