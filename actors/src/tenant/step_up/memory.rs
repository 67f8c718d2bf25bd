//! What the step-up flow keeps in memory: the mails per session, and the wrong e-mailed codes
//! per user (persisted with the commands' batches, see `TenantState::throttle_changes_into`).

use uuid::Uuid;

use crate::{
    tenant::limits::{
        FIRST_LOGIN_BLOCK, FREE_LOGIN_FAILURES, MAX_LOGIN_BLOCK, STEP_UP_MAILS, STEP_UP_MAIL_WINDOW,
    },
    throttle::{RateWindow, Throttle},
};

pub struct StepUpMemory {
    /// Step-up mails (codes and links) per session.
    pub mails: RateWindow<Uuid>,
    /// Wrong e-mailed step-up codes per user.
    pub fails: Throttle<Uuid>,
}

impl Default for StepUpMemory {
    fn default() -> Self {
        StepUpMemory {
            mails: RateWindow::new(STEP_UP_MAILS, STEP_UP_MAIL_WINDOW),
            fails: Throttle::new(FREE_LOGIN_FAILURES, FIRST_LOGIN_BLOCK, MAX_LOGIN_BLOCK),
        }
    }
}
