//! What the OAuth client registry keeps in memory only: dynamic registrations per client
//! address.

use std::{net::IpAddr, time::Duration};

use crate::throttle::RateWindow;

pub struct OAuthClients {
    /// Dynamic client registrations per client address (IPv6: per /64) per hour.
    pub dcr_per_ip: RateWindow<IpAddr>,
}

impl OAuthClients {
    /// `per_hour`: the platform's `agents.registrations_per_ip_hourly`.
    pub fn new(per_hour: u32) -> Self {
        OAuthClients {
            dcr_per_ip: RateWindow::new(per_hour, Duration::from_secs(3600)),
        }
    }
}
