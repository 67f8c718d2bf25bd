//! What the accounts flow keeps in memory only: the registrations per client address.

use std::{net::IpAddr, time::Duration};

use crate::{tenant::limits::REGISTRATIONS_PER_MINUTE, throttle::RateWindow};

pub struct Accounts {
    /// Registration attempts per client address per minute.
    pub register_ips: RateWindow<IpAddr>,
}

impl Default for Accounts {
    fn default() -> Self {
        Accounts {
            register_ips: RateWindow::new(REGISTRATIONS_PER_MINUTE, Duration::from_secs(60)),
        }
    }
}
