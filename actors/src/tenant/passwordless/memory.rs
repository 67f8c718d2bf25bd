//! What the mailed sign-in flow keeps in memory only: the spacing of requests.

use crate::{tenant::limits::REQUEST_SPACING, throttle::RateWindow};

pub struct PasswordlessMemory {
    /// Passwordless link and code requests per flow and address (or number).
    pub requests: RateWindow<String>,
}

impl Default for PasswordlessMemory {
    fn default() -> Self {
        PasswordlessMemory {
            requests: RateWindow::new(1, REQUEST_SPACING),
        }
    }
}
