//! Secrets read from the configuration (SMTP password, SMS auth token, CAPTCHA secret): a
//! string whose `Debug` never shows it. Shared by several sections, so its own file.

use serde::{Deserialize, Serialize};

/// A secret from the config: shown as `<redacted>` in `Debug`.
#[derive(Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct SecretString(pub String);

impl std::fmt::Debug for SecretString {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            f.write_str("\"\"")
        } else {
            f.write_str("<redacted>")
        }
    }
}
