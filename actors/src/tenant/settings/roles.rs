//! The role new end users get: its own module, so the errors that name it stand below the
//! settings.

use serde::{Deserialize, Serialize};

/// The role new end users get.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DefaultRole {
    /// Read access only.
    Reader,
    Member,
    Admin,
}

impl DefaultRole {
    /// Whether this role grants more than read access.
    pub fn is_privileged(&self) -> bool {
        !matches!(self, DefaultRole::Reader)
    }
}
