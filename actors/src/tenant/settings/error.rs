//! The refusals of settings changes.
//!
//! `TenantError::Settings` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum SettingsError {
    /// A settings change that breaks a rule of `tenant::settings::rules`: each field with its
    /// reason.
    #[error("the settings change breaks a rule")]
    Invalid {
        fields: std::collections::BTreeMap<String, String>,
    },
    #[error("enabling guest sign-ins with a privileged default role needs confirmation")]
    PrivilegedDefaultRoleUnconfirmed {
        default_role: crate::tenant::settings::roles::DefaultRole,
    },
}
