//! What the passkey flow keeps in memory only: pending ceremonies and its per-minute windows.

use std::{net::IpAddr, time::Duration};

use uuid::Uuid;

use crate::{
    tenant::{
        ceremonies::Ceremonies,
        limits::{PASSKEY_BEGINS_PER_MINUTE, PASSKEY_STEP_UP_OPTIONS_PER_MINUTE},
    },
    throttle::RateWindow,
};

pub struct PasskeysMemory {
    /// Pending passkey ceremonies, by challenge.
    pub ceremonies: Ceremonies,
    /// Passkey sign-in options requested per client address per minute.
    pub begins: RateWindow<IpAddr>,
    /// Passkey step-up options per session per minute.
    pub step_ups: RateWindow<Uuid>,
}

impl Default for PasskeysMemory {
    fn default() -> Self {
        PasskeysMemory {
            ceremonies: Ceremonies::default(),
            begins: RateWindow::new(PASSKEY_BEGINS_PER_MINUTE, Duration::from_secs(60)),
            step_ups: RateWindow::new(PASSKEY_STEP_UP_OPTIONS_PER_MINUTE, Duration::from_secs(60)),
        }
    }
}
