//! The answers that several routes give: the user record, the token pair and the answers to a
//! login (tokens, the MFA challenge, the MFA enrolment token), and the 202 of a request whose
//! code or link is on its way.
//!
//! [`token_pair`] signs the access token of a session; [`login_answer`] turns a login's outcome
//! into its answer.

use axum::{
    http::{header, header::InvalidHeaderValue, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::Serialize;
use tessera_actors::{
    tenant::{
        challenges::OAuthParams,
        keys::AccessClaims,
        messages::{Grant, LoginOutcome},
    },
    TenantHandle,
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::{bearer::issuer, error::ApiError};
use crate::app::App;

/// `302 Found` to `location`, never stored (`Cache-Control: no-store`): where a browser is
/// sent on to a hosted page or back to a client; an error for a location that cannot be a
/// header value.
pub fn found(location: &str) -> Result<Response, InvalidHeaderValue> {
    let location = HeaderValue::from_str(location)?;
    let mut resp = StatusCode::FOUND.into_response();
    let h = resp.headers_mut();
    h.insert(header::LOCATION, location);
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

/// [`found`] that tells the next page (an identity provider's, the client's) nothing of where
/// the browser came from (a location that is no header value: a 302 without one): the
/// redirects of social sign-in and single sign-on.
pub fn found_quietly(location: &str) -> Response {
    let mut resp = found(location).unwrap_or_else(|_| {
        let mut resp = StatusCode::FOUND.into_response();
        resp.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        resp
    });
    resp.headers_mut().insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

/// The user record: the API's, which the actor answers as it is sent.
pub use tessera_wire::User as UserResponse;

/// The answer to every login and refresh.
#[derive(Serialize, ToSchema)]
pub struct TokenPair {
    /// An ES256 JWT (`typ` `at+jwt`), verifiable with the tenant's JWKS.
    pub access_token: String,
    /// Opaque and single-use: each refresh answers a new one.
    pub refresh_token: String,
    /// Seconds until the access token expires.
    pub expires_in: i64,
    /// Always `Bearer`.
    pub token_type: &'static str,
    pub user: UserResponse,
    /// Login only, when the tenant requires MFA and this user has not set it up: sign-ins
    /// work until this moment, then only MFA setup does.
    #[serde(
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub mfa_enrollment_required_by: Option<OffsetDateTime>,
    /// Sign-ins started with `oauth_params` only (passwordless, and the MFA step after one): the
    /// authorize request to resume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_to: Option<String>,
    /// Password sign-ins only (the login, and the MFA step after one), from a device that
    /// sent no valid `device_token`: keep it on this device (an app's secure storage) and send
    /// it as `device_token` with its next logins to this account. A device that signed in
    /// before is then not locked out by others' failed guesses. Opaque, 180 days; it signs
    /// nobody in by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^tdv_")]
    pub device_token: Option<String>,
}

/// The claims of the access token of `grant` issued at `now`: it ends `tokens.access_ttl_secs`
/// later or with its session, whichever is first.
pub fn access_claims(app: &App, tenant: &TenantHandle, grant: &Grant, now: i64) -> AccessClaims {
    let ttl = i64::try_from(app.config.tokens.access_ttl_secs).unwrap_or(i64::MAX);
    let exp = now
        .saturating_add(ttl)
        .min(grant.session_expires_at.unix_timestamp());
    let aal = grant.aal.clamp(1, 2);
    AccessClaims {
        iss: issuer(app, &tenant.slug),
        sub: grant.user.id.to_string(),
        aud: tenant.slug.clone(),
        exp,
        iat: now,
        jti: Uuid::new_v4().to_string(),
        sid: grant.session_id.to_string(),
        tid: tenant.id.to_string(),
        is_anonymous: grant.user.is_anonymous,
        aal: format!("AAL{aal}"),
        acr: grant
            .acr
            .map_or_else(|| format!("aal{aal}"), |e| e.acr().to_owned()),
        amr: grant.amr.clone(),
        app_metadata: grant
            .app_metadata
            .as_object()
            .filter(|m| !m.is_empty())
            .map(|_| grant.app_metadata.clone()),
        client_id: None,
        scope: None,
        org_id: grant.org.as_ref().map(|o| o.id.to_string()),
        org_role: grant.org.as_ref().map(|o| o.role.clone()),
        org_permissions: grant.org.as_ref().map(|o| o.permissions.clone()),
    }
}

/// Signs the access token of `grant` and pairs it with its refresh token.
pub async fn token_pair(
    app: &App,
    tenant: &TenantHandle,
    grant: Grant,
) -> Result<TokenPair, ApiError> {
    let keys = tenant.keys().await?;
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let claims = access_claims(app, tenant, &grant, now);
    let access_token = keys.sign(&claims).map_err(ApiError::internal)?;
    Ok(TokenPair {
        access_token,
        refresh_token: grant.refresh_token,
        expires_in: (claims.exp - now).max(0),
        token_type: "Bearer",
        user: grant.user,
        mfa_enrollment_required_by: None,
        redirect_to: None,
        device_token: None,
    })
}

/// A login that needs its second factor.
#[derive(Serialize, ToSchema)]
pub struct MfaChallengeResponse {
    /// Always true.
    pub mfa_required: bool,
    /// For `POST /v1/auth/mfa/verify`: single use, 5 minutes.
    pub mfa_challenge_token: String,
    /// `totp`, `recovery_code`.
    pub available_methods: Vec<String>,
    pub expires_in: i64,
}

/// A login past the tenant's MFA grace period: the token allows MFA setup only.
#[derive(Serialize, ToSchema)]
pub struct EnrollmentRequiredResponse {
    /// Always true.
    pub mfa_enrollment_required: bool,
    /// Use as `Authorization: Bearer` with `/v1/auth/mfa/setup` and `/v1/auth/mfa/verify-setup`
    /// only; it dies once MFA is set up, and the user signs in again.
    pub enrollment_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    pub expires_in: i64,
    pub user: UserResponse,
}

/// The answer to a password login.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum LoginResponse {
    Tokens(TokenPair),
    MfaRequired(MfaChallengeResponse),
    EnrollmentRequired(EnrollmentRequiredResponse),
}

/// Turns a login's outcome into its answer (signing the access token of a session).
pub async fn login_answer(
    app: &App,
    tenant: &TenantHandle,
    outcome: LoginOutcome,
) -> Result<LoginResponse, ApiError> {
    Ok(match outcome {
        LoginOutcome::Signed {
            grant,
            enrollment_required_by,
        } => {
            let mut pair = token_pair(app, tenant, grant).await?;
            pair.mfa_enrollment_required_by = enrollment_required_by;
            LoginResponse::Tokens(pair)
        }
        LoginOutcome::MfaRequired {
            challenge,
            methods,
            expires_in,
        } => LoginResponse::MfaRequired(MfaChallengeResponse {
            mfa_required: true,
            mfa_challenge_token: challenge,
            available_methods: methods,
            expires_in,
        }),
        LoginOutcome::EnrollmentRequired {
            token,
            expires_in,
            user,
        } => LoginResponse::EnrollmentRequired(EnrollmentRequiredResponse {
            mfa_enrollment_required: true,
            enrollment_token: token,
            token_type: "Bearer",
            expires_in,
            user,
        }),
    })
}

/// The answer to a passwordless request: the same for every address.
#[derive(Serialize, ToSchema)]
pub struct PasswordlessAccepted {
    /// Always true: the answer does not tell whether the address has an account.
    pub accepted: bool,
    /// With `oauth_params` only: keep it in the browser that started, and send it with the
    /// verify.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_binding: Option<String>,
}

/// 202 with [`PasswordlessAccepted`] (and the `resume_binding`, if any).
pub fn accepted(binding: Option<String>) -> Response {
    (
        StatusCode::ACCEPTED,
        Json(PasswordlessAccepted {
            accepted: true,
            resume_binding: binding,
        }),
    )
        .into_response()
}

/// Sets `redirect_to` of a sign-in's token pair when the sign-in resumes an OAuth flow.
pub fn resume(app: &App, slug: &str, pair: &mut TokenPair, oauth: Option<OAuthParams>) {
    if let Some(p) = oauth {
        pair.redirect_to = Some(authorize_url(app, slug, &p));
    }
}

/// `{base_url}/v1/tenants/{slug}/oauth/authorize?...`: the authorize request to resume.
fn authorize_url(app: &App, slug: &str, p: &OAuthParams) -> String {
    format!(
        "{}/oauth/authorize?{}",
        issuer(app, slug),
        authorize_query(p)
    )
}

/// The query of the authorize request a sign-in resumes.
pub fn authorize_query(p: &OAuthParams) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    q.append_pair("client_id", &p.client_id);
    q.append_pair("redirect_uri", &p.redirect_uri);
    let optional = [
        ("response_type", &p.response_type),
        ("code_challenge", &p.code_challenge),
        ("code_challenge_method", &p.code_challenge_method),
        ("scope", &p.scope),
        ("state", &p.state),
        ("nonce", &p.nonce),
        ("resource", &p.resource),
    ];
    for (name, v) in optional {
        if let Some(v) = v {
            q.append_pair(name, v);
        }
    }
    q.finish()
}
