//! `POST /v1/onboarding/signup`: a developer creates a tenant, its owner account and its API
//! key in one call (spec 2.1).

use axum::{
    extract::State,
    http::{HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::{
    directory::{Created, IdempotencyKey},
    Password,
};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{
    error::{is_email, len_between, ApiError, ErrorBody, FieldErrors},
    extract::{ApiJson, ClientIp},
};
use crate::{
    app::{AppState, TenantCreation},
    captcha::CaptchaOutcome,
};

/// Spec 2.1. Required fields default to empty so that every missing field is reported at once.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct OnboardingSignupRequest {
    /// The owner's e-mail; becomes the dashboard login.
    #[serde(default)]
    #[schema(format = "email", required = true)]
    pub email: String,
    /// The owner's dashboard password, 12-128 characters.
    #[serde(default)]
    #[schema(min_length = 12, max_length = 128, required = true)]
    pub password: String,
    /// 2-50 characters; the slug is derived from it.
    #[serde(default)]
    #[schema(min_length = 2, max_length = 50, required = true)]
    pub tenant_name: String,
    /// Must be true.
    #[serde(default)]
    #[schema(schema_with = crate::http::fields::must_be_true, required = true)]
    pub consent_terms: bool,
    /// Must be true.
    #[serde(default)]
    #[schema(schema_with = crate::http::fields::must_be_true, required = true)]
    pub consent_privacy: bool,
    #[serde(default)]
    pub consent_marketing: bool,
    /// At least 36 characters (a UUID v4 is recommended). A retry with the same key and body
    /// (the CAPTCHA token aside) gets the first answer again; with another body, 409.
    #[schema(min_length = 36, max_length = 255)]
    pub idempotency_key: Option<String>,
    /// Honeypot: must be left blank.
    #[schema(pattern = r"^\s*$")]
    pub website: Option<String>,
    /// CAPTCHA token, required when the server verifies CAPTCHAs.
    pub turnstile_token: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct TenantRef {
    pub id: Uuid,
    pub slug: String,
    pub name: String,
}

#[derive(Serialize, ToSchema)]
pub struct OwnerRef {
    pub id: Uuid,
    pub email: String,
}

#[derive(Serialize, ToSchema)]
pub struct SignupResponse {
    pub tenant: TenantRef,
    pub owner: Option<OwnerRef>,
    /// The tenant's API key, shown once: store it now.
    pub api_key: String,
}

impl From<Created> for SignupResponse {
    fn from(c: Created) -> Self {
        SignupResponse {
            tenant: TenantRef {
                id: c.tenant.id.0,
                slug: c.tenant.slug,
                name: c.tenant.name,
            },
            owner: c.owner.map(|o| OwnerRef {
                id: o.id,
                email: o.email,
            }),
            api_key: c.api_key,
        }
    }
}

impl OnboardingSignupRequest {
    /// What identifies "the same request" for idempotency: every field but the CAPTCHA token
    /// and the honeypot.
    fn fingerprint(&self) -> Result<Vec<u8>, ApiError> {
        serde_json::to_vec(&serde_json::json!([
            self.email,
            self.password,
            self.tenant_name,
            self.consent_terms,
            self.consent_privacy,
            self.consent_marketing,
        ]))
        .map_err(ApiError::internal)
    }

    fn validate(&self) -> Result<(), ApiError> {
        let mut e = FieldErrors::new();
        e.check("email", !self.email.is_empty(), "is required")
            .check(
                "email",
                is_email(&self.email),
                "must be a valid e-mail address",
            )
            .check("password", !self.password.is_empty(), "is required")
            .check(
                "password",
                len_between(&self.password, 12, 128),
                "must be 12-128 characters",
            )
            .check(
                "tenant_name",
                !self.tenant_name.trim().is_empty(),
                "is required",
            )
            .check(
                "tenant_name",
                len_between(self.tenant_name.trim(), 2, 50),
                "must be 2-50 characters",
            )
            .check(
                "tenant_name",
                !self.tenant_name.chars().any(char::is_control),
                "must not contain control characters",
            )
            .check("consent_terms", self.consent_terms, "must be true")
            .check("consent_privacy", self.consent_privacy, "must be true");
        if let Some(k) = &self.idempotency_key {
            e.check(
                "idempotency_key",
                (36..=255).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()),
                "must be 36-255 printable ASCII characters",
            );
        }
        e.finish()
    }
}

fn rejected() -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "onboarding/rejected",
        "the signup was rejected",
    )
}

/// Creates a tenant, its owner and its API key.
#[utoipa::path(post, path = "/v1/onboarding/signup", tag = "onboarding",
    request_body = OnboardingSignupRequest,
    responses(
        (status = 201, description = "Created (or the replay of an earlier answer with the same idempotency key)", body = SignupResponse),
        (status = 400, description = "`validation/invalid_request` naming the fields, or `onboarding/rejected` (honeypot or CAPTCHA)", body = ErrorBody),
        (status = 409, description = "`onboarding/idempotency_conflict` or `onboarding/account_exists`", body = ErrorBody),
        (status = 413, description = "`validation/payload_too_large`", body = ErrorBody),
        (status = 415, description = "`validation/unsupported_media_type`", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`: `security.onboarding_per_ip_hourly` sign-ups (5 by default) per client address (IPv6: per /64) per hour; `Retry-After` says when the next is counted", body = ErrorBody),
        (status = 503, description = "`service/unavailable`", body = ErrorBody),
    ))]
pub async fn signup(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    ApiJson(req): ApiJson<OnboardingSignupRequest>,
) -> Result<Response, ApiError> {
    req.validate()?;
    if req.website.as_deref().is_some_and(|w| !w.trim().is_empty()) {
        tracing::info!("onboarding signup rejected: honeypot filled");
        return Err(rejected());
    }
    // A retry of an answered request is replayed before the CAPTCHA: its token was spent by
    // the first attempt. The fingerprint leaves the CAPTCHA token out for the same reason.
    let idempotency = match &req.idempotency_key {
        Some(key) => Some(IdempotencyKey {
            key: key.clone(),
            fingerprint: req.fingerprint()?,
        }),
        None => None,
    };
    if let Some(key) = &idempotency {
        let probe = IdempotencyKey {
            key: key.key.clone(),
            fingerprint: key.fingerprint.clone(),
        };
        if let Some(created) = state.replay(probe).await? {
            return Ok(created_response(created, true));
        }
    }
    // Counted before the CAPTCHA and any hashing: a flood from one address costs nothing.
    state.admit_signup(ip).await?;
    match state
        .captcha
        .verify(req.turnstile_token.as_deref(), ip)
        .await
    {
        CaptchaOutcome::Passed => {}
        CaptchaOutcome::Failed => {
            tracing::info!("onboarding signup rejected: CAPTCHA failed");
            return Err(rejected());
        }
        CaptchaOutcome::Unreachable(e) => {
            tracing::warn!(error = %e, "CAPTCHA verifier unreachable");
            return Err(ApiError::unavailable());
        }
    }
    let outcome = state
        .create_tenant(TenantCreation {
            name: req.tenant_name.trim().to_owned(),
            slug: None,
            owner: Some((req.email.clone(), Password::new(req.password.clone()))),
            idempotency,
        })
        .await?;
    Ok(created_response(outcome.created, outcome.replayed))
}

fn created_response(created: Created, replayed: bool) -> Response {
    let mut resp = (StatusCode::CREATED, Json(SignupResponse::from(created))).into_response();
    if replayed {
        resp.headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    resp
}
