//! What the guests flow keeps in memory only: its sign-in windows.

use std::{net::IpAddr, time::Duration};

use crate::{
    tenant::limits::{GUESTS_PER_IP_PER_MINUTE, GUESTS_PER_KEY_PER_HOUR},
    throttle::RateWindow,
};

pub struct Guests {
    /// Guest sign-ins per client address per minute.
    pub per_ip: RateWindow<IpAddr>,
    /// Per API key: a tenant has one key, so this is per tenant.
    pub per_key: RateWindow<()>,
}

impl Default for Guests {
    fn default() -> Self {
        Guests {
            per_ip: RateWindow::new(GUESTS_PER_IP_PER_MINUTE, Duration::from_secs(60)),
            per_key: RateWindow::new(GUESTS_PER_KEY_PER_HOUR, Duration::from_secs(3600)),
        }
    }
}
