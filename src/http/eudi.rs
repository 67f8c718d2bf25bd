//! Wallet sign-in and age verification (OpenID4VP 1.0, `direct_post.jwt`).
//!
//! 1. The app's back end calls `POST /v1/auth/eudi/initiate` (or `.../age/initiate`) with its
//!    API key and keeps the answer's `state` secret. It shows the user `page_url` (a QR code
//!    for a phone, and a button for a wallet on the same device) or opens `wallet_url`.
//! 2. The wallet fetches the signed request object at `request_uri` (`GET`, or `POST` with a
//!    `wallet_nonce`), asks the holder, and posts the encrypted answer to `response_uri`.
//! 3. The app polls `GET /v1/auth/eudi/result?state=` (or `.../age/result`): `pending` until
//!    the wallet answered, then the sign-in (once) or the age verification token (once).
//!    Same-device flows, started with a `redirect_uri`, also pass the `response_code` the
//!    wallet's redirect brought the browser.
//!
//! The request object and the answer never carry the poll `state`: whoever sees the QR code
//! can read the request object, and could otherwise poll the sign-in out from under the user.

use tessera_actors::tenant::eudi::EudiRefusal;

use axum::{
    body::Bytes,
    extract::{Path, Query, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::{
    handle::TenantHandle,
    tenant::{
        audit::AuditContext,
        eudi::{tenant_of_request, EudiAnswer, EudiCmd, EudiPurpose, PollAnswer, TxView},
        mailbox::TenantMsg,
    },
    CallError, TenantError,
};
use tessera_storage::TenantId;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::{
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::{served_here, ApiJson, ApiTenant, ClientIp, RequestCtx},
    pages::{field, form_fields, protect, LinkView, Reader},
    responses::{login_answer, LoginResponse},
};
use crate::{
    app::AppState,
    eudi::{request_object, TxUrls},
};

/// Starts a wallet sign-in or age verification.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EudiInitiateRequest {
    /// Same-device flows: where the wallet sends the browser back when it has answered (one
    /// of the tenant's URLs), with `#response_code=...`, which the result poll then needs.
    #[schema(max_length = 2048)]
    pub redirect_uri: Option<String>,
}

/// Spec 2.10 EudiInitiateResponse (and EudiAgeVerificationInitiateResponse).
#[derive(Serialize, ToSchema)]
pub struct EudiInitiateResponse {
    /// The correlation handle for the result poll: a secret of the caller's. It is in neither
    /// the request object nor the wallet URL.
    pub state: String,
    /// The signed request object (compact JWS, `typ oauth-authz-req+jwt`), as the wallet
    /// fetches it from `request_uri`.
    pub request_object: String,
    /// Where the wallet posts its encrypted answer.
    pub response_uri: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// Where the wallet fetches the request object (`GET`, or `POST` with `wallet_nonce`).
    pub request_uri: String,
    /// `openid4vp://?client_id=...&request_uri=...&request_uri_method=post`: open it on the
    /// wallet's device, or show it as a QR code.
    pub wallet_url: String,
    /// The hosted page showing `wallet_url` as a QR code and a same-device button.
    pub page_url: String,
    /// The verifier's client id (`x509_hash:...`).
    pub client_id: String,
}

/// The result poll's query.
#[derive(Deserialize, IntoParams)]
pub struct ResultQuery {
    /// The `state` the initiate call answered.
    pub state: Option<String>,
    /// Same-device flows: the `response_code` from the wallet's redirect.
    pub response_code: Option<String>,
}

/// Spec 2.10 EudiResultResponse.
#[derive(Serialize, ToSchema)]
pub struct EudiResultResponse {
    /// `pending`, `consumed`, `expired` or `not_found`.
    pub status: &'static str,
    /// The first `consumed` answer only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<i64>,
    /// `Bearer`, with the tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_type: Option<&'static str>,
    /// A wallet sign-in at eIDAS low of a user with MFA: the second step's challenge
    /// (`POST /v1/auth/mfa/verify`), instead of the tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mfa_challenge_token: Option<String>,
    /// An eIDAS-low sign-in past the tenant's MFA grace period: the enrolment-only token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enrollment_token: Option<String>,
}

/// Spec 2.10 EudiAgeVerificationResultResponse.
#[derive(Serialize, ToSchema)]
pub struct EudiAgeVerificationResultResponse {
    /// `pending` (awaiting the wallet), `determined` (use `age_verification_token`),
    /// `fallback` (ask for `date_of_birth`), `expired` or `not_found` (initiate again).
    pub status: &'static str,
    /// For `RegisterRequest.age_verification_token`: single use, 30 minutes; on the first
    /// `determined` answer only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_verification_token: Option<String>,
}

/// The request object's POST form (OpenID4VP 1.0 §5.10).
#[derive(Serialize, ToSchema)]
pub struct RequestObjectForm {
    /// Echoed in the request object.
    #[schema(max_length = 256)]
    pub wallet_nonce: Option<String>,
    /// The wallet's capabilities (JSON); read, not used.
    pub wallet_metadata: Option<String>,
}

/// The wallet's `direct_post.jwt` form: `response` (the JWE), or an error answer.
#[derive(Serialize, ToSchema)]
pub struct WalletAnswerForm {
    /// The encrypted answer (compact JWE).
    pub response: Option<String>,
    /// An error answer (`access_denied`, ...), with the request's `state`.
    pub error: Option<String>,
    pub error_description: Option<String>,
    pub state: Option<String>,
}

/// What the wallet gets back for its answer.
#[derive(Serialize, ToSchema)]
pub struct WalletAck {
    /// Same-device flows: where the wallet sends the browser.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

async fn eudi(
    tenant: &TenantHandle,
    ctx: &AuditContext,
    cmd: EudiCmd,
) -> Result<EudiAnswer, CallError<TenantError>> {
    tenant
        .call(|reply| TenantMsg::Eudi {
            cmd: cmd.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await
}

fn unexpected() -> ApiError {
    ApiError::internal("an unexpected wallet answer")
}

/// The tenant whose transaction `request_id` names.
fn tenant_of(state: &AppState, request_id: &str) -> Option<TenantHandle> {
    let id = Uuid::try_parse(tenant_of_request(request_id)?).ok()?;
    state.directory.tenant_by_id(TenantId(id))
}

fn request_not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "eudi/request_not_found",
        "no pending wallet request has this id (unknown, answered or expired)",
    )
}

async fn initiate(
    state: &AppState,
    tenant: &TenantHandle,
    ctx: &AuditContext,
    ip: std::net::IpAddr,
    purpose: EudiPurpose,
    req: EudiInitiateRequest,
) -> Result<EudiInitiateResponse, ApiError> {
    let mut errors = FieldErrors::new();
    if let Some(uri) = &req.redirect_uri {
        errors.check(
            "redirect_uri",
            len_between(uri, 1, 2048) && url::Url::parse(uri).is_ok(),
            "must be an absolute URL of at most 2048 characters",
        );
    }
    errors.finish()?;
    let cmd = EudiCmd::Begin {
        purpose,
        redirect_uri: req.redirect_uri,
        ip,
    };
    begun_response(state, eudi(tenant, ctx, cmd).await?)
}

/// The initiate answer of a transaction just begun (`EudiAnswer::Begun`).
pub fn begun_response(
    state: &AppState,
    answer: EudiAnswer,
) -> Result<EudiInitiateResponse, ApiError> {
    let EudiAnswer::Begun { tx, state: secret } = answer else {
        return Err(unexpected());
    };
    let urls = TxUrls::of(&tx, &state.base_url, &state.accounts_base());
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let request_object =
        request_object(&tx, &urls.response_uri, None, now).map_err(ApiError::internal)?;
    Ok(EudiInitiateResponse {
        state: secret,
        request_object,
        response_uri: urls.response_uri,
        expires_at: tx.expires_at,
        request_uri: urls.request_uri,
        wallet_url: urls.wallet_url,
        page_url: urls.page_url,
        client_id: tx.verifier.client_id.clone(),
    })
}

/// Begins a wallet sign-in: the request object for the wallet and the secret poll handle.
#[utoipa::path(post, path = "/v1/auth/eudi/initiate", tag = "wallet",
    security(("api_key" = [])),
    request_body = EudiInitiateRequest,
    responses(
        (status = 200, description = "The transaction (5 minutes)", body = EudiInitiateResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`eudi/disabled`: wallet sign-in is off", body = ErrorBody),
        (status = 409, description = "`eudi/verifier_not_configured`: no verifier certificate (`tessera admin eudi set-verifier-cert`)", body = ErrorBody),
        (status = 422, description = "`eudi/redirect_not_allowed`", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited` (30 a minute per address)", body = ErrorBody),
    ))]
pub async fn initiate_login(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<EudiInitiateRequest>,
) -> Result<Json<EudiInitiateResponse>, ApiError> {
    let answer = initiate(&state, &tenant, &ctx, ip, EudiPurpose::Login, req).await?;
    Ok(Json(answer))
}

/// Begins an age verification (at least 18).
#[utoipa::path(post, path = "/v1/auth/eudi/age/initiate", tag = "wallet",
    security(("api_key" = [])),
    request_body = EudiInitiateRequest,
    responses(
        (status = 200, description = "The transaction (5 minutes)", body = EudiInitiateResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`eudi/disabled`: age verification is off", body = ErrorBody),
        (status = 409, description = "`eudi/verifier_not_configured`", body = ErrorBody),
        (status = 422, description = "`eudi/redirect_not_allowed`", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`", body = ErrorBody),
    ))]
pub async fn initiate_age(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<EudiInitiateRequest>,
) -> Result<Json<EudiInitiateResponse>, ApiError> {
    let answer = initiate(&state, &tenant, &ctx, ip, EudiPurpose::Age, req).await?;
    Ok(Json(answer))
}

async fn live_tx(
    state: &AppState,
    request_id: &str,
    ip: std::net::IpAddr,
) -> Result<(TenantHandle, TxView), ApiError> {
    let tenant = tenant_of(state, request_id).ok_or_else(request_not_found)?;
    served_here(state, tenant.id)?;
    let cmd = EudiCmd::Request {
        request_id: request_id.to_owned(),
        ip,
    };
    match eudi(&tenant, &AuditContext::default(), cmd).await {
        Ok(EudiAnswer::Tx(tx)) => Ok((tenant, tx)),
        Ok(_) => Err(unexpected()),
        Err(CallError::Failed(TenantError::Eudi(_))) => Err(request_not_found()),
        Err(e) => Err(e.into()),
    }
}

async fn serve_request(
    state: &AppState,
    ip: std::net::IpAddr,
    request_id: &str,
    wallet_nonce: Option<&str>,
) -> Result<Response, ApiError> {
    let (_, tx) = live_tx(state, request_id, ip).await?;
    let urls = TxUrls::of(&tx, &state.base_url, &state.accounts_base());
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let jar =
        request_object(&tx, &urls.response_uri, wallet_nonce, now).map_err(ApiError::internal)?;
    let mut resp = jar.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/oauth-authz-req+jwt"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

/// The signed request object of a pending transaction (RFC 9101 `request_uri`).
#[utoipa::path(get, path = "/v1/auth/eudi/request/{request_id}", tag = "wallet",
    params(("request_id" = String, Path, description = "The transaction's request id")),
    responses(
        (status = 200, description = "`application/oauth-authz-req+jwt`", content_type = "application/oauth-authz-req+jwt", body = String),
        (status = 404, description = "`eudi/request_not_found`: unknown, answered or expired", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited` (120 calls of the wallet routes a minute per address)", body = ErrorBody),
    ))]
pub async fn request_get(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Path(request_id): Path<String>,
) -> Result<Response, ApiError> {
    serve_request(&state, ip, &request_id, None).await
}

/// The request object for `request_uri_method=post` (OpenID4VP 1.0 §5.10): the wallet may
/// send `wallet_nonce` (echoed in the object) and `wallet_metadata` (form fields).
#[utoipa::path(post, path = "/v1/auth/eudi/request/{request_id}", tag = "wallet",
    params(("request_id" = String, Path, description = "The transaction's request id")),
    request_body(content_type = "application/x-www-form-urlencoded", content = RequestObjectForm),
    responses(
        (status = 200, description = "`application/oauth-authz-req+jwt`", content_type = "application/oauth-authz-req+jwt", body = String),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 404, description = "`eudi/request_not_found`", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`", body = ErrorBody),
    ))]
pub async fn request_post(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Path(request_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let form = form_fields(&body);
    let nonce = field(&form, "wallet_nonce");
    if nonce.len() > 256 {
        return Err(ApiError::invalid_field(
            "wallet_nonce",
            "must be at most 256 characters",
        ));
    }
    let nonce = (!nonce.is_empty()).then_some(nonce);
    serve_request(&state, ip, &request_id, nonce).await
}

/// The wallet's answer (`response_mode=direct_post.jwt`): `response` is a JWE (ECDH-ES on
/// P-256 to the transaction's key, A128GCM or A256GCM) of `{vp_token, state}`.
#[utoipa::path(post, path = "/v1/auth/eudi/response", tag = "wallet",
    request_body(content_type = "application/x-www-form-urlencoded", content = WalletAnswerForm),
    responses(
        (status = 200, description = "Taken; same-device flows get `redirect_uri`", body = WalletAck),
        (status = 400, description = "`eudi/invalid_response` (not decryptable, wrong `state`), `eudi/invalid_presentation`, `eudi/binding_mismatch` (nonce, audience, session transcript), `eudi/credential_expired`", body = ErrorBody),
        (status = 403, description = "`eudi/untrusted_issuer`, `eudi/credential_revoked`, `eudi/status_unavailable` (policy `reject`), `eudi/assurance_below_floor`, `eudi/email_exists`, `eudi/account_blocked`", body = ErrorBody),
        (status = 404, description = "`eudi/request_not_found`: unknown or expired", body = ErrorBody),
        (status = 409, description = "`eudi/response_replayed`: the transaction was already answered", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited` (120 calls of the wallet routes a minute per address)", body = ErrorBody),
    ))]
pub async fn response(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Result<Json<WalletAck>, ApiError> {
    let app = state;
    let form = form_fields(&body);
    let jwe = field(&form, "response");
    if jwe.is_empty() {
        // An error answer (`error`, `error_description`, `state`) is not encrypted: an age
        // verification ends in `fallback`, a sign-in stays open for another try. Whatever it
        // names, the wallet gets the same answer.
        if !field(&form, "error").is_empty() {
            let error: String = field(&form, "error").chars().take(64).collect();
            tracing::info!(%error, "a wallet declined");
            let state = field(&form, "state");
            let request_id = state.rsplit_once('.').map_or("", |(r, _)| r);
            if let Some(tenant) = tenant_of(&app, request_id)
                .filter(|t| state.len() <= 256 && served_here(&app, t.id).is_ok())
            {
                let cmd = EudiCmd::Declined {
                    state: state.to_owned(),
                    ip,
                };
                let _ = eudi(&tenant, &ctx, cmd).await;
            }
            return Ok(Json(WalletAck { redirect_uri: None }));
        }
        return Err(ApiError::invalid_field("response", "is required"));
    }
    // The JWE's `kid` is the request id its key was made for (the header is read before
    // anything is trusted, only to find the transaction).
    let request_id = jwe_kid(jwe).ok_or_else(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "eudi/invalid_response",
            "the response is not a JWE to one of this server's transaction keys",
        )
    })?;
    let tenant = tenant_of(&app, &request_id).ok_or_else(request_not_found)?;
    served_here(&app, tenant.id)?;
    let cmd = EudiCmd::Open {
        request_id: request_id.clone(),
        ip,
    };
    let open = match eudi(&tenant, &ctx, cmd).await? {
        EudiAnswer::Opened(o) => o,
        _ => return Err(unexpected()),
    };
    let response_uri = format!("{}/v1/auth/eudi/response", app.base_url);
    let now = OffsetDateTime::now_utc().unix_timestamp();
    let outcome = app
        .wallet
        .check_response(&open, jwe, &response_uri, now)
        .await
        .map_err(|r| {
            tracing::info!(code = r.code, reason = %r.detail, "a wallet answer was refused");
            refusal_error(r.code)
        })?;
    let cmd = EudiCmd::Complete {
        request_id,
        outcome,
    };
    match eudi(&tenant, &ctx, cmd).await? {
        EudiAnswer::Completed { redirect_uri } => Ok(Json(WalletAck { redirect_uri })),
        _ => Err(unexpected()),
    }
}

/// The `kid` of a compact JWE's protected header, if it is a request id.
fn jwe_kid(jwe: &str) -> Option<String> {
    let header = jwe.split('.').next()?;
    if header.len() > 4096 {
        return None;
    }
    let bytes = tessera_eudi::b64d(header).ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let kid = v.get("kid")?.as_str()?;
    (kid.len() <= 128 && kid.contains('.')).then(|| kid.to_owned())
}

fn refusal_error(code: &'static str) -> ApiError {
    let (status, message) = match code {
        "eudi/untrusted_issuer" => (
            StatusCode::FORBIDDEN,
            "the credential's issuer is not one of the tenant's trust anchors",
        ),
        "eudi/credential_revoked" => (
            StatusCode::FORBIDDEN,
            "the credential is revoked or suspended",
        ),
        "eudi/status_unavailable" => (
            StatusCode::FORBIDDEN,
            "the credential's status could not be checked",
        ),
        "eudi/binding_mismatch" => (
            StatusCode::BAD_REQUEST,
            "the presentation is not bound to this request (nonce, audience or transcript)",
        ),
        "eudi/credential_expired" => (
            StatusCode::BAD_REQUEST,
            "the credential or its presentation is outside its validity",
        ),
        "eudi/invalid_presentation" => {
            (StatusCode::BAD_REQUEST, "a presentation failed its checks")
        }
        _ => (
            StatusCode::BAD_REQUEST,
            "the response could not be read for this request",
        ),
    };
    ApiError::new(status, code, message)
}

fn poll_state(q: &ResultQuery) -> Result<String, ApiError> {
    let s = q.state.as_deref().unwrap_or("");
    if s.is_empty() || s.len() > 128 {
        return Err(ApiError::invalid_field(
            "state",
            "is required (1-128 characters)",
        ));
    }
    Ok(s.to_owned())
}

async fn poll(
    tenant: &TenantHandle,
    ctx: &AuditContext,
    purpose: EudiPurpose,
    q: ResultQuery,
) -> Result<PollAnswer, ApiError> {
    let cmd = EudiCmd::Result {
        purpose,
        state: poll_state(&q)?,
        response_code: q.response_code.filter(|c| c.len() <= 128),
    };
    match eudi(tenant, ctx, cmd).await? {
        EudiAnswer::Poll(p) => Ok(p),
        _ => Err(unexpected()),
    }
}

/// The wallet sign-in's result: `pending` until the wallet answered, then `consumed` with the
/// token pair (once; later polls answer `consumed` alone).
#[utoipa::path(get, path = "/v1/auth/eudi/result", tag = "wallet",
    security(("api_key" = [])),
    params(ResultQuery),
    responses(
        (status = 200, description = "The status (and, once, the tokens)", body = EudiResultResponse),
        (status = 400, description = "`validation/invalid_request`; `eudi/response_code_mismatch` (same-device flows)", body = ErrorBody),
        (status = 403, description = "`auth/user_blocked`", body = ErrorBody),
    ))]
pub async fn result_login(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    Query(q): Query<ResultQuery>,
) -> Result<Json<EudiResultResponse>, ApiError> {
    let mut out = EudiResultResponse {
        status: "pending",
        access_token: None,
        refresh_token: None,
        expires_in: None,
        token_type: None,
        mfa_challenge_token: None,
        enrollment_token: None,
    };
    out.status = match poll(&tenant, &ctx, EudiPurpose::Login, q).await? {
        PollAnswer::Pending => "pending",
        PollAnswer::Expired => "expired",
        PollAnswer::NotFound | PollAnswer::Determined(_) | PollAnswer::Fallback => "not_found",
        PollAnswer::Consumed(None) => "consumed",
        PollAnswer::Consumed(Some(login)) => {
            match login_answer(&state, &tenant, *login).await? {
                LoginResponse::Tokens(pair) => {
                    out.access_token = Some(pair.access_token);
                    out.refresh_token = Some(pair.refresh_token);
                    out.expires_in = Some(pair.expires_in);
                    out.token_type = Some("Bearer");
                }
                LoginResponse::MfaRequired(m) => {
                    out.mfa_challenge_token = Some(m.mfa_challenge_token)
                }
                LoginResponse::EnrollmentRequired(e) => {
                    out.enrollment_token = Some(e.enrollment_token)
                }
            }
            "consumed"
        }
    };
    Ok(Json(out))
}

/// The age verification's result: `pending`, then `determined` with the token (once) or
/// `fallback`.
#[utoipa::path(get, path = "/v1/auth/eudi/age/result", tag = "wallet",
    security(("api_key" = [])),
    params(ResultQuery),
    responses(
        (status = 200, description = "The status (and, once, the token)", body = EudiAgeVerificationResultResponse),
        (status = 400, description = "`validation/invalid_request`; `eudi/response_code_mismatch`", body = ErrorBody),
    ))]
pub async fn result_age(
    ApiTenant(tenant): ApiTenant,
    RequestCtx(ctx): RequestCtx,
    Query(q): Query<ResultQuery>,
) -> Result<Json<EudiAgeVerificationResultResponse>, ApiError> {
    let (status, token) = match poll(&tenant, &ctx, EudiPurpose::Age, q).await? {
        PollAnswer::Pending => ("pending", None),
        PollAnswer::Expired => ("expired", None),
        PollAnswer::Determined(token) => ("determined", token),
        PollAnswer::Fallback => ("fallback", None),
        PollAnswer::NotFound | PollAnswer::Consumed(_) => ("not_found", None),
    };
    Ok(Json(EudiAgeVerificationResultResponse {
        status,
        age_verification_token: token,
    }))
}

/// `GET {accounts_url}/eudi/{request_id}`: the wallet URL as a QR code, and a button that
/// opens a wallet on this device.
pub async fn page(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Path(request_id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let mut reader = Reader::new(&state, &headers, None);
    let Ok((_, tx)) = live_tx(&state, &request_id, ip).await else {
        return reader.problem(super::pages::Problem::Expired);
    };
    reader.set_tenant(&tx.tenant_name, &tx.default_locale);
    let urls = TxUrls::of(&tx, &state.base_url, &state.accounts_base());
    let title = match tx.purpose {
        EudiPurpose::Login => "eudi-title",
        EudiPurpose::Age => "eudi-age-title",
    };
    let mut page = reader.page(title);
    page.paragraphs.push(reader.t("eudi-scan"));
    page.qr = super::pages::qr_svg(&urls.wallet_url);
    page.link = Some(LinkView {
        href: urls.wallet_url,
        label: reader.t("eudi-same-device"),
    });
    let minutes = ((tx.expires_at - OffsetDateTime::now_utc()).whole_minutes() + 1).to_string();
    page.paragraphs
        .push(reader.t_with("eudi-expires", &[("minutes", minutes.as_str())]));
    let mut resp = reader.answer(StatusCode::OK, page, &[]);
    protect(resp.headers_mut());
    resp
}

/// How the wallet flow's refusals answer.
impl From<EudiRefusal> for ApiError {
    fn from(r: EudiRefusal) -> Self {
        use EudiRefusal as R;
        let (status, message) = match r {
        R::Disabled => (
            StatusCode::FORBIDDEN,
            "wallet sign-in (or age verification) is not enabled for this tenant",
        ),
        R::VerifierMissing => (
            StatusCode::CONFLICT,
            "the tenant has no wallet verifier certificate yet (tessera admin eudi set-verifier-cert)",
        ),
        R::VerifierExpired => (
            StatusCode::CONFLICT,
            "the tenant's wallet verifier certificate has expired; set a new one",
        ),
        R::RedirectNotAllowed => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "redirect_uri is not one of the tenant's URLs",
        ),
        R::RequestUnknown => (
            StatusCode::NOT_FOUND,
            "no pending wallet request has this id (unknown, answered or expired)",
        ),
        R::Replayed => (
            StatusCode::CONFLICT,
            "this wallet request was already answered",
        ),
        R::AccountBlocked => (StatusCode::FORBIDDEN, "the account is blocked"),
        R::EmailExists => (
            StatusCode::FORBIDDEN,
            "the wallet's e-mail address belongs to another account of this tenant",
        ),
        R::BelowFloor => (
            StatusCode::FORBIDDEN,
            "the credential's assurance level is below the tenant's floor",
        ),
        R::ResponseCodeMismatch => (
            StatusCode::BAD_REQUEST,
            "a same-device result needs the response_code from the wallet's redirect",
        ),
        R::AgeRequired => (
            StatusCode::FORBIDDEN,
            "this app protects minors and the wallet's birth date is below the consent age: \
             register with POST /v1/auth/register, where a guardian's consent is asked",
        ),
    };
        ApiError::new(status, format!("eudi/{}", r.as_str()), message)
    }
}
