//! The refusals of text messages (countries, the monthly cap).
//!
//! `TenantError::Sms` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum SmsError {
    #[error("text messages to this country are not allowed")]
    CountryNotAllowed,
    #[error("the tenant's monthly text message cap is reached")]
    CapReached { retry_after: u64 },
    #[error("the SMS monthly cap is above the tier's ceiling on the platform's account")]
    CapAboveTier {
        max: u32,
        tier: crate::records::Tier,
    },
}
