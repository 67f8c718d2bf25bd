//! The dashboard's test message (`/v1/auth/dashboard/sms-test`): one text through the tenant's
//! provider, sent here and not by the courier, so the owner sees the provider's answer. It is
//! the one send made from a handler.

use axum::{extract::State, http::StatusCode, Json};
use serde::{Deserialize, Serialize};
use tessera_actors::outbound::SmsJob;
use tessera_actors::tenant::SmsMsg;
use utoipa::ToSchema;

use super::Dashboard;
use crate::app::AppState;
use crate::http::{
    error::{ApiError, ErrorBody, FieldErrors},
    extract::ApiJson,
    fields::{checked_phone, phone_field},
};

/// Spec 2.4 SmsTestRequest.
#[derive(Deserialize, ToSchema)]
pub struct SmsTestRequest {
    #[serde(default, rename = "tenantSlug")]
    #[schema(min_length = 1, required = true)]
    pub tenant_slug: String,
    #[serde(default)]
    #[schema(required = true, example = "+33612345678")]
    pub phone: String,
}

/// What the provider answered a test message.
#[derive(Serialize, ToSchema)]
pub struct SmsTestResponse {
    /// The provider's message id (the outbox file's id with the outbox).
    pub message_id: String,
    /// `outbox`, `platform` (the platform's account) or `byok` (the tenant's own).
    pub provider: String,
}

/// Sends a test message through the tenant's provider, once, and answers the provider's
/// message id or its error. Counts in the tenant's monthly cap; does not need SMS login on.
#[utoipa::path(post, path = "/v1/auth/dashboard/sms-test", tag = "dashboard",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    request_body = SmsTestRequest,
    responses(
        (status = 200, description = "Sent", body = SmsTestResponse),
        (status = 400, description = "`validation/invalid_request`, `sms/country_not_allowed`", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (not the owner) or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited` (per number), `sms/monthly_cap_reached`", body = ErrorBody),
        (status = 502, description = "`sms/provider_error`: the provider refused or could not be reached; the message says why", body = ErrorBody),
    ))]
pub async fn sms_test(
    State(state): State<AppState>,
    auth: Dashboard,
    ApiJson(req): ApiJson<SmsTestRequest>,
) -> Result<Json<SmsTestResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    errors.check(
        "tenantSlug",
        !req.tenant_slug.is_empty() && req.tenant_slug.len() <= 64,
        "must be 1-64 characters",
    );
    let phone = phone_field(&mut errors, "phone", &req.phone);
    errors.finish()?;
    let phone = checked_phone(phone)?;
    let (_, tenant) = auth.owner(&state, &req.tenant_slug)?;
    let ctx = auth.ctx.clone();
    let job: SmsJob = tenant
        .call(|reply| SmsMsg::SmsTest {
            phone: phone.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    let provider = state.texter.provider(&job);
    match state.texter.send(&job).await {
        Ok(message_id) => Ok(Json(SmsTestResponse {
            message_id,
            provider: provider.to_owned(),
        })),
        Err(e) => {
            tracing::warn!(job = %job.id, provider, error = %e, "test text message not sent");
            // The provider's own words only for the tenant's own account: about the platform's
            // account they are the operator's business.
            let message = match (&e.provider_message, provider) {
                (Some(m), "byok") => format!("{e}: {m}"),
                _ => e.to_string(),
            };
            Err(ApiError::new(
                StatusCode::BAD_GATEWAY,
                "sms/provider_error",
                message,
            ))
        }
    }
}
