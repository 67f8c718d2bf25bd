//! `POST /v1/auth/anonymous`: guest sign-in (spec 2.5, 4.2, 8).

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::GuestsMsg;
use tessera_actors::GuestError;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    error::{ApiError, ErrorBody, FieldErrors},
    extract::{optional_json, ApiTenant, ClientIp, RequestCtx},
    fields::metadata_field,
    responses::token_pair,
};
use crate::app::AppState;

/// Spec 2.2 AnonymousSigninRequest.
#[derive(Deserialize, ToSchema, Default)]
pub struct AnonymousSigninRequest {
    /// A free-form object, at most 16 KiB serialised; readable later at `GET /v1/auth/me`.
    #[schema(value_type = Option<Object>)]
    pub public_metadata: Option<serde_json::Value>,
}

/// Spec 2.5 `user`.
#[derive(Serialize, ToSchema)]
pub struct AnonymousUser {
    pub id: Uuid,
    /// Always true.
    pub is_anonymous: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// Spec 2.5 AnonymousSigninResponse.
#[derive(Serialize, ToSchema)]
pub struct AnonymousSigninResponse {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: i64,
    /// Always `Bearer`.
    pub token_type: &'static str,
    pub user: AnonymousUser,
}

/// Signs in a new guest. The access token carries `is_anonymous: true` and `aal: "AAL1"`.
#[utoipa::path(post, path = "/v1/auth/anonymous", tag = "accounts",
    security(("api_key" = [])),
    request_body(content = Option<AnonymousSigninRequest>, description = "optional"),
    responses(
        (status = 201, description = "A guest and its session", body = AnonymousSigninResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`anonymous/disabled`; `anonymous/mau_exhausted`: the tenant's monthly active user cap is reached", body = ErrorBody),
        (status = 429, description = "`anonymous/rate_limited`: 5 a minute per client address, 1000 an hour per API key; with `Retry-After` and `X-Service-Docs`", body = ErrorBody),
    ))]
pub async fn anonymous_signin(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: AnonymousSigninRequest = optional_json(&headers, &body)?;
    let mut errors = FieldErrors::new();
    let public_metadata = metadata_field(
        &mut errors,
        "public_metadata",
        req.public_metadata.unwrap_or_default(),
    );
    errors.finish()?;
    let public_metadata = public_metadata.unwrap_or_default();
    let grant = tenant
        .call(|reply| GuestsMsg::AnonymousSignin {
            ip,
            public_metadata: public_metadata.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    let user = AnonymousUser {
        id: grant.user.id,
        is_anonymous: true,
        created_at: grant.user.created_at,
    };
    let pair = token_pair(&state, &tenant, grant).await?;
    Ok((
        StatusCode::CREATED,
        Json(AnonymousSigninResponse {
            access_token: pair.access_token,
            refresh_token: pair.refresh_token,
            expires_in: pair.expires_in,
            token_type: "Bearer",
            user,
        }),
    )
        .into_response())
}

/// How guest sign-ins' refusals answer.
impl From<GuestError> for ApiError {
    fn from(e: GuestError) -> Self {
        match e {
            GuestError::Disabled => ApiError::new(
                StatusCode::FORBIDDEN,
                "anonymous/disabled",
                "guest sign-ins are disabled for this tenant",
            ),
            GuestError::RateLimited { retry_after } => {
                ApiError::rate_limited("anonymous/rate_limited", retry_after)
            }
            GuestError::MauExhausted => ApiError::new(
                StatusCode::FORBIDDEN,
                "anonymous/mau_exhausted",
                "this tenant has reached its monthly active user cap; no new guests this month",
            ),
            GuestError::AlreadyClaimed => ApiError::new(
                StatusCode::CONFLICT,
                "anonymous/already_claimed",
                "this user is not a guest (any more): it was already claimed",
            ),
        }
    }
}
