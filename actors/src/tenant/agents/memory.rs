//! What the agents flow keeps in memory: its counters and live tokens, the device page's
//! lookups, and the sequence that orders actions of one nanosecond.

use std::time::Duration;

use uuid::Uuid;

use crate::{
    tenant::agents::{AgentCounters, USER_CODE_TRIES_PER_MINUTE},
    throttle::RateWindow,
};

pub struct Agents {
    /// Agents' per-minute windows and live tokens.
    pub counters: AgentCounters,
    /// Breaks ties between agent actions of the same nanosecond.
    pub seq: u32,
    /// Device-page user code lookups per user per minute.
    pub user_code_tries: RateWindow<Uuid>,
}

impl Default for Agents {
    fn default() -> Self {
        Agents {
            counters: AgentCounters::default(),
            seq: 0,
            user_code_tries: RateWindow::new(USER_CODE_TRIES_PER_MINUTE, Duration::from_secs(60)),
        }
    }
}
