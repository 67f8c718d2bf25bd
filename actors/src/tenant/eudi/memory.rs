//! What the wallet flow keeps in memory: its per-address windows. (The verifier identity is
//! the kernel's, beside the signing keys: `TenantCtx::verifier`.)

use std::{net::IpAddr, time::Duration};

use crate::{
    tenant::eudi::{BEGINS_PER_MINUTE, WALLET_CALLS_PER_MINUTE},
    throttle::RateWindow,
};

pub struct Eudi {
    /// Wallet transactions begun per client address.
    pub begins: RateWindow<IpAddr>,
    /// Calls of the wallet-facing routes per client address.
    pub wallet_calls: RateWindow<IpAddr>,
}

impl Default for Eudi {
    fn default() -> Self {
        Eudi {
            begins: RateWindow::new(BEGINS_PER_MINUTE, Duration::from_secs(60)),
            wallet_calls: RateWindow::new(WALLET_CALLS_PER_MINUTE, Duration::from_secs(60)),
        }
    }
}
