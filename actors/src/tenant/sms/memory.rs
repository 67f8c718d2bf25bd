//! What the text-message flow keeps: its hourly windows, and this month's count (persisted,
//! for the tenant's cap).

use std::{net::IpAddr, time::Duration};

use crate::{
    tenant::{
        limits::{SMS_PER_IP_PER_HOUR, SMS_PER_NUMBER_PER_HOUR, SMS_TESTS_PER_HOUR},
        usage::MauRecord,
    },
    throttle::RateWindow,
};

pub struct Sms {
    /// Text messages per number per hour.
    pub per_number: RateWindow<String>,
    /// Text messages requested per client address per hour.
    pub per_ip: RateWindow<IpAddr>,
    /// This month's text messages (persisted), for the tenant's cap.
    pub usage: MauRecord,
    /// The dashboard's test messages.
    pub tests: RateWindow<()>,
}

impl Sms {
    /// The windows empty, and this month's count as stored.
    pub fn new(usage: MauRecord) -> Self {
        Sms {
            per_number: RateWindow::new(SMS_PER_NUMBER_PER_HOUR, Duration::from_secs(3600)),
            per_ip: RateWindow::new(SMS_PER_IP_PER_HOUR, Duration::from_secs(3600)),
            usage,
            tests: RateWindow::new(SMS_TESTS_PER_HOUR, Duration::from_secs(3600)),
        }
    }
}
