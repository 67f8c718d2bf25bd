//! What an end user proves: a password or a passkey at sign-in ([`password_login`],
//! [`passkey_login`], for the API's routes and the hosted sign-in page alike), and, signed in,
//! what they prove again for the routes that need it: the current password (argon2 here, off the tenant actor) and step-up tokens (spec 4.1
//! and 5).
//!
//! A step-up token is an ES256 JWT (`typ` `step-up+jwt`, audience `<slug>/step-up`) carrying
//! `aal`, `acr` and `amr`, bound to the session and single-use; [`sign_step_up`] signs one.
//! A gated route calls [`require_step_up`]: without the `X-Step-Up-Token` header it answers
//! the RFC 9470 challenge; with one it verifies the signature here and has the tenant actor
//! consume the token (atomically, once).

use axum::{
    extract::FromRequestParts,
    http::{header, request::Parts, HeaderMap, HeaderName, HeaderValue, StatusCode},
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Serialize;
use std::net::IpAddr;

use tessera_actors::tenant::{AccountsMsg, PasskeysMsg, StepUpMsg};
use tessera_actors::SocialError;
use tessera_actors::{
    login_guard::Captcha,
    password::HashError,
    tenant::{
        audit::AuditContext,
        keys::StepUpClaims,
        messages::{
            Credential, LoginAttempt, LoginOutcome, PasswordSignIn, PasswordlessLogin, StepUpGrant,
            StepUpUse,
        },
        social::{Provider, SocialAnswer, SocialCmd},
    },
    CallError, Password, TenantError, TenantHandle, TenantMsg,
};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use super::{
    bearer::{issuer, UserBearer},
    error::{invalid_token, ApiError},
};
use crate::{app::App, captcha::CaptchaOutcome};

/// A password sign-in: the actor's sign-in rules first (`LoginBegin`), argon2 here, off the
/// actor (against a dummy hash when the address has no account, so both cost the same), then
/// the verdict (`LoginFinish`), with the device token to keep. `attempt.email` is normalised.
pub async fn password_login(
    app: &App,
    tenant: &TenantHandle,
    attempt: LoginAttempt,
    password: Password,
    ctx: &AuditContext,
) -> Result<PasswordSignIn, CallError<TenantError>> {
    let credential = tenant
        .call(|reply| AccountsMsg::LoginBegin {
            attempt: attempt.clone(),
            reply,
        })
        .await?;
    let password_ok = app
        .hasher
        .verify(&password, credential.password_hash.as_deref())
        .await
        .map_err(|e| match e {
            HashError::Busy => CallError::Unavailable,
            HashError::Failed(cause) => CallError::Failed(TenantError::Internal(cause)),
        })?;
    tenant
        .call(|reply| AccountsMsg::LoginFinish {
            attempt: attempt.clone(),
            credential: credential.clone(),
            password_ok,
            ctx: ctx.clone(),
            reply,
        })
        .await
}

/// A passkey sign-in: the ceremony's assertion taken on the actor (`PasskeyAssertTake`), the
/// P-256 verification here, off the actor, then the verdict (`PasskeyAssertFinish`).
pub async fn passkey_login(
    tenant: &TenantHandle,
    response: serde_json::Value,
    ip: IpAddr,
    ctx: &AuditContext,
) -> Result<LoginOutcome, CallError<TenantError>> {
    let check = tenant
        .call(|reply| PasskeysMsg::PasskeyAssertTake {
            response: response.clone(),
            ip,
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    let verdict = check.verify();
    let passkey = check.passkey;
    tenant
        .call(|reply| PasskeysMsg::PasskeyAssertFinish {
            passkey: passkey.clone(),
            verdict,
            ip,
            ctx: ctx.clone(),
            reply,
        })
        .await
}

/// What the server knows of a sign-in's CAPTCHA: none configured, none sent, or one sent and
/// solved. A token the verifier refuses is 400 `auth/captcha_failed`; a verifier that cannot
/// be asked, 503.
pub async fn login_captcha(
    app: &App,
    token: Option<&str>,
    ip: std::net::IpAddr,
) -> Result<Captcha, ApiError> {
    if !app.captcha.required() {
        return Ok(Captcha::Off);
    }
    let Some(token) = token.filter(|t| !t.trim().is_empty()) else {
        return Ok(Captcha::Unsolved);
    };
    match app.captcha.verify(Some(token), ip).await {
        CaptchaOutcome::Passed => Ok(Captcha::Solved),
        CaptchaOutcome::Failed => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "auth/captcha_failed",
            "the CAPTCHA check failed; solve it again",
        )),
        CaptchaOutcome::Unreachable(e) => {
            tracing::warn!(error = %e, "CAPTCHA verifier unreachable");
            Err(ApiError::unavailable())
        }
    }
}

/// The signed-in user's credential, and whether `password` is theirs: the throttle is
/// checked by the actor, argon2 runs here. Commands re-check the epoch before they act.
pub async fn check_current_password(
    app: &App,
    user: &UserBearer,
    password: String,
) -> Result<(Credential, bool), ApiError> {
    let credential = user
        .call(|bearer, reply| AccountsMsg::PasswordCredential { bearer, reply })
        .await?;
    let ok = app
        .hasher
        .verify(
            &Password::new(password),
            credential.password_hash.as_deref(),
        )
        .await?;
    Ok((credential, ok))
}

/// The header a gated request carries its step-up token in.
pub const STEP_UP_HEADER: HeaderName = HeaderName::from_static("x-step-up-token");

/// A gated request's `X-Step-Up-Token`, as extracted and as documented: absent, or its value
/// trimmed (one that is not text reads as blank, which the gate refuses as a bad token).
#[derive(IntoParams)]
#[into_params(names("X-Step-Up-Token"), parameter_in = Header)]
pub struct StepUpHeader(
    /// A step-up token of this session
    Option<String>,
);

impl StepUpHeader {
    /// A step-up token obtained here (the account page's forms step up with the password
    /// they carry, then pass the gate as the API's callers do).
    pub fn token(token: String) -> Self {
        StepUpHeader(Some(token))
    }

    /// The token of `headers`.
    pub fn of(headers: &HeaderMap) -> Self {
        StepUpHeader(
            headers
                .get(&STEP_UP_HEADER)
                .map(|v| v.to_str().map(str::trim).unwrap_or("").to_owned()),
        )
    }
}

impl<S: Send + Sync> FromRequestParts<S> for StepUpHeader {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::of(&parts.headers))
    }
}

/// The audience of a tenant's step-up tokens: never the access tokens' audience.
fn step_up_audience(slug: &str) -> String {
    format!("{slug}/step-up")
}

/// Spec 2.6: the step-up token answer.
#[derive(Serialize, ToSchema)]
pub struct StepUpTokenResponse {
    /// A JWT: `aal` (1 or 2), `acr` (`aal1`/`aal2`), `amr`, `sid`; single-use, for this
    /// session only. Send it as `X-Step-Up-Token` on the gated request.
    pub step_up_token: String,
    /// Always `StepUp`.
    pub token_type: &'static str,
    pub expires_in: i64,
}

/// Signs the step-up token of `grant`.
pub async fn sign_step_up(
    app: &App,
    tenant: &TenantHandle,
    grant: &StepUpGrant,
) -> Result<StepUpTokenResponse, ApiError> {
    let keys = tenant.keys().await?;
    let aal = grant.aal.clamp(1, 2);
    let claims = StepUpClaims {
        iss: issuer(app, &tenant.slug),
        sub: grant.user_id.to_string(),
        aud: step_up_audience(&tenant.slug),
        exp: grant.expires_at.unix_timestamp(),
        iat: grant.issued_at.unix_timestamp(),
        jti: grant.jti.to_string(),
        sid: grant.session_id.to_string(),
        tid: tenant.id.to_string(),
        aal,
        acr: format!("aal{aal}"),
        amr: grant.amr.clone(),
    };
    let token = keys.sign_step_up(&claims).map_err(ApiError::internal)?;
    Ok(StepUpTokenResponse {
        step_up_token: token,
        token_type: "StepUp",
        // The token's own lifetime, `exp - iat`: it was issued an instant ago.
        expires_in: (claims.exp - claims.iat).max(0),
    })
}

/// 401 `invalid_or_expired_token` (spec 7).
fn invalid_step_up() -> ApiError {
    tessera_actors::TenantError::InvalidChallenge.into()
}

/// The `tid` claim of a token whose signature did not verify here: only to tell another
/// tenant's token (404, spec 5 rule 2) from a bad one (401). It decides nothing else.
fn unverified_tenant(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v.get("tid")?.as_str().map(str::to_owned)
}

/// The step-up gate: passes (consuming the token) when the request carries a valid step-up
/// token of the caller's session; otherwise answers 401 with the RFC 9470 challenge and the
/// methods the user can step up with. Every gated route calls this first.
pub async fn require_step_up(
    app: &App,
    user: &UserBearer,
    step_up: &StepUpHeader,
) -> Result<StepUpUse, ApiError> {
    let tenant = &user.tenant;
    let bearer = user.bearer;
    // A header that is there but unreadable or blank is a bad token, not a missing one.
    let presented = step_up.0.as_deref();
    if presented == Some("") {
        return Err(invalid_step_up());
    }
    let Some(token) = presented else {
        let challenge = tenant
            .call(|reply| StepUpMsg::StepUpGate { bearer, reply })
            .await?;
        let p = &app.config.tokens.acr_urn_prefix;
        let www = format!(
            "Bearer error=\"insufficient_user_authentication\", acr_values=\"{p}:aal1 {p}:aal2\""
        );
        let www = HeaderValue::from_str(&www).map_err(ApiError::internal)?;
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "account_linking/mfa_required",
            "this action needs a fresh re-authentication: step up with one of the available methods and send the step-up token in X-Step-Up-Token",
        )
        .with_details(serde_json::json!({
            "next_action": "verify_mfa",
            "mfa_challenge_token": challenge.mfa_challenge_token,
            "available_methods": challenge.available_methods,
        }))
        .with_header(header::WWW_AUTHENTICATE, www));
    };
    let keys = tenant.keys().await?;
    // Step-up tokens are issued on the tenant actors' clock, which the fault drills' offset
    // moves (zero in production); their lifetime is checked on the same clock.
    let now = (OffsetDateTime::now_utc()
        + time::Duration::seconds(app.config.testing.clock_offset_secs))
    .unix_timestamp();
    let claims = match keys.verify_step_up(
        token,
        &issuer(app, &tenant.slug),
        &step_up_audience(&tenant.slug),
        now,
    ) {
        Ok(c) => c,
        Err(_) => {
            return Err(match unverified_tenant(token) {
                Some(tid) if tid != tenant.id.to_string() => ApiError::not_found("step-up token"),
                _ => invalid_step_up(),
            });
        }
    };
    let bound = claims.tid == tenant.id.to_string()
        && claims.sid == bearer.session_id.to_string()
        && claims.sub == bearer.user_id.to_string();
    let Some(jti) = claims.jti.parse().ok().filter(|_| bound) else {
        return Err(invalid_step_up());
    };
    Ok(tenant
        .call(|reply| StepUpMsg::ConsumeStepUp { bearer, jti, reply })
        .await?)
}

/// The cookie that carries a social sign-in's outcome back to the hosted sign-in page:
/// `t.<exchange token>` or `e.<error>` (60 seconds, `Path=/oauth/<slug>/social-return`).
pub const SOCIAL_DONE_COOKIE: &str = "tessera_social_done";

/// The audience of a tenant's social exchange tokens: never an access token's.
pub fn exchange_audience(slug: &str) -> String {
    format!("{slug}/social")
}

/// Trades a social sign-in's exchange token for its sign-in (the API's session route and the
/// hosted sign-in page): the signature by the tenant's keys, `typ` exchange+jwt, the audience
/// `<slug>/social`, the provider when one is named; then the tenant's actor consumes its
/// `jti` once. A token that names another tenant is 404, any other refusal 401
/// `auth/invalid_token`.
pub async fn exchange_sign_in(
    app: &App,
    tenant: &TenantHandle,
    token: &str,
    provider: Option<Provider>,
    ctx: &AuditContext,
) -> Result<PasswordlessLogin, ApiError> {
    let keys = tenant.keys().await?;
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let Ok(claims) = keys.verify_exchange(
        token,
        &issuer(app, &tenant.slug),
        &exchange_audience(&tenant.slug),
        now,
    ) else {
        return Err(if names_another_tenant(token, tenant) {
            ApiError::not_found("tenant")
        } else {
            invalid_token()
        });
    };
    let named = Provider::parse(&claims.provider).ok_or_else(invalid_token)?;
    let Ok(jti) = uuid::Uuid::try_parse(&claims.jti) else {
        return Err(invalid_token());
    };
    if provider.is_some_and(|p| p != named) || claims.tid != tenant.id.0.to_string() {
        return Err(invalid_token());
    }
    let answer = tenant
        .call(|reply| TenantMsg::Social {
            cmd: SocialCmd::Session {
                provider: named,
                jti,
            },
            ctx: ctx.clone(),
            reply,
        })
        .await;
    match answer {
        Ok(SocialAnswer::Login(l)) => Ok(*l),
        Ok(_) => Err(ApiError::internal("unexpected social answer")),
        Err(CallError::Failed(TenantError::Social(SocialError::ExchangeInvalid))) => {
            Err(invalid_token())
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether `token` (unverified) says it is another tenant's: its `tid` names a tenant other
/// than `tenant`.
fn names_another_tenant(token: &str, tenant: &TenantHandle) -> bool {
    let Some(payload) = token.split('.').nth(1) else {
        return false;
    };
    let Ok(raw) = URL_SAFE_NO_PAD.decode(payload) else {
        return false;
    };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&raw) else {
        return false;
    };
    v.get("tid")
        .and_then(serde_json::Value::as_str)
        .and_then(|t| uuid::Uuid::try_parse(t).ok())
        .is_some_and(|t| t != tenant.id.0)
}
