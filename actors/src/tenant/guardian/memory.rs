//! What guardian consent keeps in memory only: its windows per child and per client address.

use std::{net::IpAddr, time::Duration};

use uuid::Uuid;

use crate::{
    tenant::limits::{GUARDIAN_ASKS_PER_HOUR, GUARDIAN_CALLS_PER_MINUTE},
    throttle::RateWindow,
};

pub struct Guardian {
    /// Consent requests per child: each mails a guardian.
    pub asks: RateWindow<Uuid>,
    /// Calls of the guardian routes per client address.
    pub calls: RateWindow<IpAddr>,
}

impl Default for Guardian {
    fn default() -> Self {
        Guardian {
            asks: RateWindow::new(GUARDIAN_ASKS_PER_HOUR, Duration::from_secs(3600)),
            calls: RateWindow::new(GUARDIAN_CALLS_PER_MINUTE, Duration::from_secs(60)),
        }
    }
}
