//! The refusals of webhook endpoints and deliveries.
//!
//! `TenantError::Webhook` carries one; the HTTP layer maps each beside the flow's routes.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum WebhookError {
    #[error("the tenant has as many webhook endpoints as it may")]
    Limit,
    #[error("the webhook endpoint is disabled")]
    Disabled,
    #[error("an attempt of this delivery is under way")]
    DeliveryInFlight,
}
