//! What the step-up flow keeps in memory: the mails per session. (Its wrong e-mailed codes are
//! a persisted throttle the kernel keeps with the sign-in rules: `TenantCtx::code_fails`.)

use uuid::Uuid;

use crate::{
    tenant::limits::{STEP_UP_MAILS, STEP_UP_MAIL_WINDOW},
    throttle::RateWindow,
};

pub struct StepUp {
    /// Step-up mails (codes and links) per session.
    pub mails: RateWindow<Uuid>,
}

impl Default for StepUp {
    fn default() -> Self {
        StepUp {
            mails: RateWindow::new(STEP_UP_MAILS, STEP_UP_MAIL_WINDOW),
        }
    }
}
