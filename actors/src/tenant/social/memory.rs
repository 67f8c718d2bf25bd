//! What social sign-in keeps in memory only: the sign-ins begun per client address.

use std::{net::IpAddr, time::Duration};

use crate::{tenant::limits::SOCIAL_BEGINS_PER_MINUTE, throttle::RateWindow};

pub struct Social {
    /// Social sign-ins begun per client address per minute.
    pub begins: RateWindow<IpAddr>,
}

impl Default for Social {
    fn default() -> Self {
        Social {
            begins: RateWindow::new(SOCIAL_BEGINS_PER_MINUTE, Duration::from_secs(60)),
        }
    }
}
