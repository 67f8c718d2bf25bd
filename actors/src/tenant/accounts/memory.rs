//! What the accounts flow keeps in memory only: the registrations, and the reset links asked
//! for on the hosted sign-in page, per client address.

use std::{net::IpAddr, time::Duration};

use crate::{
    tenant::limits::{REGISTRATIONS_PER_MINUTE, RESET_REQUESTS_PER_IP_PER_HOUR},
    throttle::RateWindow,
};

pub struct Accounts {
    /// Registration attempts per client address per minute.
    pub register_ips: RateWindow<IpAddr>,
    /// Reset links asked for on the hosted sign-in page per client address per hour.
    pub reset_ips: RateWindow<IpAddr>,
}

impl Default for Accounts {
    fn default() -> Self {
        Accounts {
            register_ips: RateWindow::new(REGISTRATIONS_PER_MINUTE, Duration::from_secs(60)),
            reset_ips: RateWindow::new(RESET_REQUESTS_PER_IP_PER_HOUR, Duration::from_secs(3600)),
        }
    }
}
