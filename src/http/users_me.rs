//! The signed-in user's own routes under `/v1/users/me/...` (API key and access token):
//! confirming a phone number (`phone/verify`, `phone/confirm`), linking a sign-in provider
//! (`link/{provider}`), and the GDPR rights: the export (`export`) and the erasure
//! (`DELETE /v1/users/me`), both behind the step-up gate. Confirming a number and linking a provider add a way in to the account,
//! so both pass the step-up gate (`reauth::require_step_up`) first.

use axum::{
    body::Bytes,
    extract::{Path, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{SmsMsg, UsersMsg};
use tessera_actors::{
    tenant::{
        credentials::Credential,
        messages::Bearer,
        social::{Provider, SocialAnswer, SocialCmd},
    },
    CallError, TenantError, TenantMsg,
};
use tessera_actors::{SocialError, UserError};
use utoipa::ToSchema;

use super::{
    bearer::UserBearer,
    error::{ApiError, ErrorBody},
    extract::{optional_json, ApiJson, ClientIp, RequestCtx},
    fields::{only_phone, phone_and_code},
    new_credential::{require_confirmed_address, signed_in},
    reauth::{require_step_up, StepUpHeader},
    responses::{accepted, PasswordlessAccepted, UserResponse},
};
use crate::app::AppState;
use crate::http::error_responses::{InvalidRequest, MissingOrInvalidToken, OtherTenantsStepUp};

/// Spec 2.4 PhoneVerifyRequest.
#[derive(Deserialize, ToSchema)]
pub struct PhoneVerifyRequest {
    #[serde(default)]
    #[schema(min_length = 5, required = true, example = "+33612345678")]
    pub phone: String,
}

/// Texts the signed-in user a 6-digit code (10 minutes) confirming this number.
#[utoipa::path(post, path = "/v1/users/me/phone/verify", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    request_body = PhoneVerifyRequest,
    responses(
        (status = 202, description = "The code is on its way", body = PasswordlessAccepted),
        (status = 400, description = "`validation/invalid_request`, `sms/country_not_allowed`", body = ErrorBody),
        MissingOrInvalidToken,
        (status = 403, description = "`auth/anonymous_not_allowed`: a guest; `auth/email_unconfirmed`: the account's address is not confirmed (no phone number until it is)", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`, `sms/monthly_cap_reached`", body = ErrorBody),
    ))]
pub async fn phone_verify(
    user: UserBearer,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<PhoneVerifyRequest>,
) -> Result<Response, ApiError> {
    let phone = only_phone(&req.phone)?;
    user.call(|bearer, reply| SmsMsg::PhoneVerifyRequest {
        bearer,
        phone: phone.clone(),
        ip,
        ctx: ctx.clone(),
        reply,
    })
    .await?;
    Ok(accepted(None))
}

/// Spec 2.4 PhoneVerifyConfirmRequest.
#[derive(Deserialize, ToSchema)]
pub struct PhoneVerifyConfirmRequest {
    #[serde(default)]
    #[schema(min_length = 5, required = true)]
    pub phone: String,
    #[serde(default)]
    #[schema(pattern = r"^\d{6}$", required = true)]
    pub code: String,
}

/// Confirms the number with its code: it becomes the user's `phone` (`phone_verified: true`)
/// and signs this user in by SMS from now on; another user who had it loses it. Step-up gated
/// (`X-Step-Up-Token`), as MFA setup is: a confirmed number is a way in, and whoever holds a
/// stolen access token must not be able to attach their own.
#[utoipa::path(post, path = "/v1/users/me/phone/confirm", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    params(StepUpHeader),
    request_body = PhoneVerifyConfirmRequest,
    responses(
        (status = 200, description = "The user record, with the number", body = UserResponse),
        InvalidRequest,
        (status = 401, description = "`account_linking/mfa_required` (no step-up token: the step-up challenge, see the step-up gate); `invalid_or_expired_token`: wrong, used or expired code, another number, or a bad step-up token; `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`auth/anonymous_not_allowed` (a guest), `auth/email_unconfirmed` (the account's address is not confirmed: no phone number until it is)", body = ErrorBody),
        (status = 404, description = "The step-up token is another tenant's", body = ErrorBody),
    ))]
pub async fn phone_confirm(
    State(state): State<AppState>,
    user: UserBearer,
    step_up: StepUpHeader,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<PhoneVerifyConfirmRequest>,
) -> Result<Json<UserResponse>, ApiError> {
    let (errors, phone) = phone_and_code(&req.phone, &req.code);
    errors.finish()?;
    // Refusals that need no step-up come first (the actor checks them again).
    let me = signed_in(&user).await?;
    if me.is_anonymous {
        return Err(tessera_actors::TenantError::GuestNotAllowed.into());
    }
    require_confirmed_address(&me, Credential::Phone)?;
    require_step_up(&state, &user, &step_up).await?;
    let e164 = phone.map(|p| p.e164).unwrap_or_default();
    let view = user
        .call(|bearer, reply| SmsMsg::PhoneConfirm {
            bearer,
            phone: e164.clone(),
            code: req.code.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(view))
}

/// One social command of the signed-in user on their tenant's actor.
/// One of the signed-in user's social commands (`cmd` makes it of the user's bearer).
async fn social(
    user: &UserBearer,
    ctx: &tessera_actors::tenant::audit::AuditContext,
    cmd: impl Fn(Bearer) -> SocialCmd,
) -> Result<SocialAnswer, CallError<TenantError>> {
    user.call(|bearer, reply| TenantMsg::Social {
        cmd: cmd(bearer),
        ctx: ctx.clone(),
        reply,
    })
    .await
}

/// Spec 4.1's gated link request's body (optional): where the browser returns.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct LinkProviderRequest {
    /// One of the tenant's URLs (`settings/urls`), exactly; default: the site URL. The
    /// browser comes back to it with `?linked=<provider>` or `?error=`.
    pub redirect_uri: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct LinkProviderResponse {
    /// Send the browser here: the provider's sign-in, then back to `redirect_uri`. Single
    /// use, 10 minutes.
    pub authorize_url: String,
}

/// Starts linking a social provider to the signed-in user: gated by step-up (spec 4.1). The
/// answer's URL runs the provider's sign-in in the browser and links that account to this
/// user: `redirect_uri?linked=<provider>`, or `?error=provider_in_use` (the account is
/// another user's), `already_linked` (the user has another account of this provider),
/// `access_denied`, `provider_error`. Audited as `auth.social.linked` (`method`
/// `explicit`) or `auth.social.link_refused`.
#[utoipa::path(post, path = "/v1/users/me/link/{provider}", tag = "step-up",
    security(("api_key" = [], "bearer" = [])),
    params(
        ("provider" = String, Path, description = "Lowercase provider name"),
        StepUpHeader,
    ),
    request_body(content = Option<LinkProviderRequest>, description = "Optional"),
    responses(
        (status = 200, description = "Where to send the browser", body = LinkProviderResponse),
        (status = 400, description = "`account_linking/provider_not_configured` (not a provider, or not enabled for this tenant; after the gate passed and consumed the token); `validation/invalid_request` (`redirect_uri` not one of the tenant's URLs)", body = ErrorBody),
        (status = 401, description = "`account_linking/mfa_required` with `WWW-Authenticate: Bearer error=\"insufficient_user_authentication\", acr_values=\"...\"` and `details` {next_action, mfa_challenge_token, available_methods}; `invalid_or_expired_token`; `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`account_linking/disabled`: the tenant does not allow explicit linking; `auth/email_unconfirmed`: the account's address is not confirmed (no linked account until it is)", body = ErrorBody),
        OtherTenantsStepUp,
    ))]
pub async fn link_provider(
    State(state): State<AppState>,
    user: UserBearer,
    headers: HeaderMap,
    Path(provider): Path<String>,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Result<Json<LinkProviderResponse>, ApiError> {
    let req: LinkProviderRequest = optional_json(&headers, &body)?;
    let overview = user
        .tenant
        .call(|reply| TenantMsg::GetOverview { reply })
        .await?;
    if !overview.settings.security.explicit_account_linking_enabled {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "account_linking/disabled",
            "this tenant does not allow linking more sign-in providers",
        ));
    }
    // Refused before the gate, so the step-up token is not used up (the actor checks again).
    require_confirmed_address(&signed_in(&user).await?, Credential::SocialLinks)?;
    require_step_up(&state, &user, &StepUpHeader::of(&headers)).await?;
    let shown: String = provider.chars().take(32).collect();
    let not_configured = || {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "account_linking/provider_not_configured",
            format!("no sign-in provider {shown:?} is configured for this tenant"),
        )
    };
    let p = Provider::parse(&provider).ok_or_else(not_configured)?;
    // None and no site URL: refused by the actor as not one of the tenant's URLs, after it
    // checked the provider.
    let redirect_uri = req
        .redirect_uri
        .or(overview.settings.urls.site_url.clone())
        .unwrap_or_default();
    let link = |bearer| SocialCmd::LinkStart {
        bearer,
        provider: p,
        redirect_uri: redirect_uri.clone(),
    };
    let answer = social(&user, &ctx, link).await;
    let ticket = match answer {
        Ok(SocialAnswer::Ticket(t)) => t,
        Ok(_) => return Err(ApiError::internal("unexpected social answer")),
        Err(CallError::Failed(TenantError::Social(SocialError::NotConfigured))) => {
            return Err(not_configured())
        }
        Err(CallError::Failed(TenantError::Social(SocialError::RedirectNotAllowed))) => {
            return Err(ApiError::invalid_field(
                "redirect_uri",
                "must be one of the tenant's URLs (settings/urls), exactly",
            ))
        }
        Err(e) => return Err(e.into()),
    };
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("tenant_id", &user.tenant.id.0.to_string())
        .append_pair("link_ticket", &ticket)
        .finish();
    Ok(Json(LinkProviderResponse {
        authorize_url: format!(
            "{}/oauth/{}/authorize?{query}",
            state.accounts_base(),
            p.as_str()
        ),
    }))
}

/// A linked provider account.
#[derive(Serialize, ToSchema)]
pub struct IdentityResponse {
    pub provider: String,
    /// The provider's id of the account.
    pub subject: String,
    /// The address the provider gave when it was linked.
    pub email: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub linked_at: time::OffsetDateTime,
}

#[derive(Serialize, ToSchema)]
pub struct IdentityList {
    pub data: Vec<IdentityResponse>,
}

/// The signed-in user's linked social accounts.
#[utoipa::path(get, path = "/v1/users/me/identities", tag = "social",
    security(("api_key" = [], "bearer" = [])),
    responses(
        (status = 200, description = "The linked accounts, in provider order", body = IdentityList),
    ))]
pub async fn identities(
    user: UserBearer,
    RequestCtx(ctx): RequestCtx,
) -> Result<Json<IdentityList>, ApiError> {
    let answer = social(&user, &ctx, |bearer| SocialCmd::Identities { bearer }).await?;
    let SocialAnswer::Identities(list) = answer else {
        return Err(ApiError::internal("unexpected social answer"));
    };
    Ok(Json(IdentityList {
        data: list
            .into_iter()
            .map(|i| IdentityResponse {
                provider: i.provider.as_str().to_owned(),
                subject: i.subject,
                email: i.email,
                linked_at: i.linked_at,
            })
            .collect(),
    }))
}

/// The provider of an `identities/{provider}` route, once the step-up gate has passed; a name
/// that is no provider is 404, as one not linked is.
async fn gated_identity(
    state: &AppState,
    user: &UserBearer,
    step_up: &StepUpHeader,
    provider: &str,
) -> Result<Provider, ApiError> {
    require_step_up(state, user, step_up).await?;
    Provider::parse(provider).ok_or_else(|| ApiError::not_found("identity"))
}

/// A linked account's provider tokens, as the provider answered them at the last sign-in.
#[derive(Serialize, ToSchema)]
pub struct ProviderTokensResponse {
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// When the provider said `access_token` expires.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<time::OffsetDateTime>,
    pub scope: Option<String>,
}

/// The provider tokens kept for the signed-in user's account of `provider` (step-up gated):
/// kept, sealed, only while the tenant's configuration of that provider has
/// `store_provider_tokens`, from the last sign-in or link with it.
#[utoipa::path(get, path = "/v1/users/me/identities/{provider}/tokens", tag = "social",
    security(("api_key" = [], "bearer" = [])),
    params(
        ("provider" = String, Path, description = "Lowercase provider name"),
        StepUpHeader,
    ),
    responses(
        (status = 200, description = "The tokens (`Cache-Control: no-store`)", body = ProviderTokensResponse),
        (status = 401, description = "`account_linking/mfa_required` (the step-up gate); `invalid_or_expired_token`; `auth/invalid_token`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no account of that provider linked, or no tokens kept for it (or another tenant's step-up token)", body = ErrorBody),
    ))]
pub async fn provider_tokens(
    State(state): State<AppState>,
    user: UserBearer,
    step_up: StepUpHeader,
    Path(provider): Path<String>,
    RequestCtx(ctx): RequestCtx,
) -> Result<Response, ApiError> {
    let provider = gated_identity(&state, &user, &step_up, &provider).await?;
    let answer = social(&user, &ctx, |bearer| SocialCmd::Tokens { bearer, provider }).await;
    let tokens = match answer {
        Ok(SocialAnswer::Tokens(t)) => *t,
        Ok(_) => return Err(ApiError::internal("unexpected social answer")),
        Err(CallError::Failed(TenantError::NotFound)) => {
            return Err(ApiError::not_found("provider tokens"))
        }
        Err(e) => return Err(e.into()),
    };
    let body = Json(ProviderTokensResponse {
        access_token: tokens.access_token,
        refresh_token: tokens.refresh_token,
        expires_at: tokens.expires_at,
        scope: tokens.scope,
    });
    Ok(([(header::CACHE_CONTROL, "no-store")], body).into_response())
}

/// Unlinks the signed-in user's account of `provider` (step-up gated). Refused while it is
/// the user's only way in: no password, passkey, other provider, or confirmed address or
/// number the tenant signs in with codes. Audited as `auth.social.unlinked`.
#[utoipa::path(delete, path = "/v1/users/me/identities/{provider}", tag = "social",
    security(("api_key" = [], "bearer" = [])),
    params(
        ("provider" = String, Path, description = "Lowercase provider name"),
        StepUpHeader,
    ),
    responses(
        (status = 204, description = "Unlinked"),
        (status = 401, description = "`account_linking/mfa_required` (the step-up gate); `invalid_or_expired_token`; `auth/invalid_token`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no account of that provider is linked (or another tenant's step-up token)", body = ErrorBody),
        (status = 409, description = "`account_linking/last_method`: it is the user's only way in", body = ErrorBody),
    ))]
pub async fn unlink(
    State(state): State<AppState>,
    user: UserBearer,
    step_up: StepUpHeader,
    Path(provider): Path<String>,
    RequestCtx(ctx): RequestCtx,
) -> Result<StatusCode, ApiError> {
    let provider = gated_identity(&state, &user, &step_up, &provider).await?;
    let answer = social(&user, &ctx, |bearer| SocialCmd::Unlink { bearer, provider }).await;
    match answer {
        Ok(_) => Ok(StatusCode::NO_CONTENT),
        Err(CallError::Failed(TenantError::NotFound)) => Err(ApiError::not_found("identity")),
        Err(CallError::Failed(TenantError::Social(SocialError::LastMethod))) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "account_linking/last_method",
            "this is the account's only way to sign in: add a password or a passkey first",
        )),
        Err(e) => Err(e.into()),
    }
}

/// Everything held about the signed-in user (GDPR art. 15 and 20), as a JSON document to
/// download: the profile, identities, factors (never a secret), sessions, consents and the
/// audit events about them. Gated by step-up (`X-Step-Up-Token`).
#[utoipa::path(get, path = "/v1/users/me/export", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    params(StepUpHeader),
    responses(
        (status = 200, description = "The export, `Content-Disposition: attachment`", body = Object),
        (status = 401, description = "`account_linking/mfa_required` (the step-up gate) with `WWW-Authenticate: Bearer error=\"insufficient_user_authentication\"` and the methods in `details`; `invalid_or_expired_token`; `auth/invalid_token`", body = ErrorBody),
        OtherTenantsStepUp,
    ))]
pub async fn export(
    State(state): State<AppState>,
    user: UserBearer,
    step_up: StepUpHeader,
) -> Result<Response, ApiError> {
    require_step_up(&state, &user, &step_up).await?;
    let document = user
        .call(|bearer, reply| UsersMsg::ExportMe { bearer, reply })
        .await?;
    let filename = format!("{}-user-export.json", user.tenant.slug);
    Ok((
        [(
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{filename}\""),
        )],
        Json(document),
    )
        .into_response())
}

/// Erases the signed-in user and everything keyed to them (GDPR art. 17): sessions end, the
/// address and number are free to register again, and the audit log keeps `user.deleted`
/// with the id only. Gated by step-up; refused when the tenant turned
/// `self_service_deletion_enabled` off.
#[utoipa::path(delete, path = "/v1/users/me", tag = "accounts",
    security(("api_key" = [], "bearer" = [])),
    params(StepUpHeader),
    responses(
        (status = 204, description = "Erased"),
        (status = 401, description = "`account_linking/mfa_required` (the step-up gate) with `WWW-Authenticate: Bearer error=\"insufficient_user_authentication\"` and the methods in `details`; `invalid_or_expired_token`; `auth/invalid_token`", body = ErrorBody),
        (status = 403, description = "`user/self_deletion_disabled`", body = ErrorBody),
        OtherTenantsStepUp,
    ))]
pub async fn delete_me(
    State(state): State<AppState>,
    user: UserBearer,
    step_up: StepUpHeader,
    RequestCtx(ctx): RequestCtx,
) -> Result<StatusCode, ApiError> {
    // Refused before the gate, so no step-up token is spent on a request that cannot pass.
    let overview = user
        .tenant
        .call(|reply| TenantMsg::GetOverview { reply })
        .await?;
    if !overview.settings.users.self_service_deletion_enabled {
        return Err(tessera_actors::TenantError::User(UserError::SelfDeletionDisabled).into());
    }
    require_step_up(&state, &user, &step_up).await?;
    user.call(|bearer, reply| UsersMsg::DeleteMe {
        bearer,
        ctx: ctx.clone(),
        reply,
    })
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
