//! What the passkey flow keeps in memory only: its per-minute windows (the ceremonies under
//! way are the kernel's: the credential inventory ends them).

use std::{net::IpAddr, time::Duration};

use uuid::Uuid;

use crate::{
    tenant::limits::{PASSKEY_BEGINS_PER_MINUTE, PASSKEY_STEP_UP_OPTIONS_PER_MINUTE},
    throttle::RateWindow,
};

pub struct Passkeys {
    /// Passkey sign-in options requested per client address per minute.
    pub begins: RateWindow<IpAddr>,
    /// Passkey step-up options per session per minute.
    pub step_ups: RateWindow<Uuid>,
}

impl Default for Passkeys {
    fn default() -> Self {
        Passkeys {
            begins: RateWindow::new(PASSKEY_BEGINS_PER_MINUTE, Duration::from_secs(60)),
            step_ups: RateWindow::new(PASSKEY_STEP_UP_OPTIONS_PER_MINUTE, Duration::from_secs(60)),
        }
    }
}
