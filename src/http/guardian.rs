//! Guardian consent for minors (GDPR art. 8): the child's request, the consent page and the
//! guardian portal.
//!
//! - `POST /v1/auth/parental-consent` (X-API-Key): a held child, proven by its password, has a
//!   consent link mailed to a guardian.
//! - `GET /v1/guardian/consent?token=` shows what the guardian consents to: a hosted page, or
//!   JSON with `Accept: application/json`. `POST /v1/guardian/consent` takes the answer as JSON
//!   (GuardianConsentConsume) or as the page's form. Its `csrf` is the page's value, bound to
//!   the browser's CSRF cookie and the link (`super::pages`): a JSON client sends back the
//!   cookie the `GET` set, as a browser does.
//! - `POST /v1/guardian/management-link` (X-API-Key): always 202; the portal link goes only to
//!   the guardian who consented for that child.
//! - `GET, POST /v1/guardian/portal`: the portal (spec 2.7 GuardianPortalContext), the same
//!   two ways; `withdraw`, `export` (a download link mailed, `GET /v1/guardian/export?token=`)
//!   and `delete` (its first call answers `confirm_token`, the second brings it back as
//!   `confirm_nonce`).
//!
//! A link's token names its tenant (`challenges::tenant_of_token`); no key is needed there.

use axum::{
    body::Bytes,
    extract::{Query, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::AccountsMsg;
use tessera_actors::{
    login_guard::Captcha,
    password::{HashError, Password},
    tenant::{
        audit::AuditContext,
        challenges::tenant_of_token,
        guardian::{
            ConsentView, GuardianAnswer, GuardianCmd, GuardianTenant, PortalAction, PortalView,
        },
        messages::LoginAttempt,
        records::{ChildStatus, ConsentReceipt},
    },
    CallError, TenantError, TenantHandle, TenantMsg,
};
use tessera_storage::TenantId;
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{
    error::{is_email, len_between, mailer_accepts, ApiError, ErrorBody, FieldErrors},
    extract::{is_json, parse_json, served_here, ApiJson, ApiTenant, ClientIp, RequestCtx},
    pages::{field, form_fields, ButtonView, CheckView, FormView, Problem, Reader},
};
use crate::app::AppState;
use std::net::IpAddr;
use tessera_actors::policy::normalize_email;

const CONSENT_PATH: &str = "/v1/guardian/consent";
const PORTAL_PATH: &str = "/v1/guardian/portal";
const WALLET_PATH: &str = "/v1/guardian/consent/wallet";

/// A normalised address for `name`, or its field error.
fn address(errors: &mut FieldErrors, name: &str, value: &str) -> Option<String> {
    let normalized = (value.chars().count() <= 254 && is_email(value.trim()))
        .then(|| normalize_email(value))
        .flatten()
        .filter(|n| mailer_accepts(n));
    errors.check(
        name,
        normalized.is_some(),
        "must be an e-mail address of at most 254 characters",
    );
    normalized
}

async fn guardian(
    tenant: &TenantHandle,
    (ctx, ip): (AuditContext, IpAddr),
    cmd: GuardianCmd,
) -> Result<GuardianAnswer, CallError<TenantError>> {
    tenant
        .call(|reply| TenantMsg::Guardian {
            cmd: cmd.clone(),
            ip,
            ctx: ctx.clone(),
            reply,
        })
        .await
}

/// A link's view, or why none: `Ok(None)` for a link that is unknown, used or expired; an
/// error for a refusal that is not about the link (too many calls, the service busy).
type Viewed<V> = Result<Option<(TenantHandle, V)>, CallError<TenantError>>;

/// A look at a link refused for a reason not about the link: the JSON error, or the page.
fn refused(reader: &Reader, headers: &HeaderMap, e: CallError<TenantError>) -> Response {
    if wants_json(headers) {
        ApiError::from(e).into_response()
    } else {
        reader.problem(e.into())
    }
}

/// Whether a failed look at a link is about the link (answered as an invalid one).
fn link_refusal<V>(e: CallError<TenantError>) -> Viewed<V> {
    match e {
        CallError::Failed(TenantError::RateLimited { .. }) | CallError::Unavailable => Err(e),
        _ => Ok(None),
    }
}

// ---------------------------------------------------------------- the child's request

/// Spec 2.7 ParentalConsentRequest.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ParentalConsentRequest {
    #[schema(format = "email", max_length = 254)]
    pub email: String,
    #[schema(min_length = 1, max_length = 1024)]
    pub password: String,
    #[schema(format = "email", max_length = 254)]
    pub guardian_email: String,
}

#[derive(Serialize, ToSchema)]
pub struct ParentalConsentResponse {
    /// Always `consent_requested`.
    pub status: &'static str,
    /// Until when the mailed consent link works (7 days).
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
}

/// A held minor asks a parent or guardian for consent: the child's password proves it is
/// them, and the guardian is mailed a consent link (7 days, single use; a new request
/// replaces the previous link).
#[utoipa::path(post, path = "/v1/auth/parental-consent", tag = "guardian",
    security(("api_key" = [])),
    request_body = ParentalConsentRequest,
    responses(
        (status = 202, description = "The consent link was mailed to the guardian", body = ParentalConsentResponse),
        (status = 400, description = "`validation/invalid_request` (also when `guardian_email` is the child's own address)", body = ErrorBody),
        (status = 401, description = "`auth/invalid_credentials`, `auth/missing_api_key`, `auth/invalid_api_key`", body = ErrorBody),
        (status = 403, description = "`auth/user_blocked`: blocked by the tenant's admins", body = ErrorBody),
        (status = 409, description = "`guardian/consent_not_pending`: the account does not wait for consent; `guardian/other_guardian`: a guardian consented before (and withdrew), and only that guardian can be asked again", body = ErrorBody),
        (status = 429, description = "`auth/too_many_attempts` (the login throttles); `auth/rate_limited` (three requests an hour per child)", body = ErrorBody),
    ))]
pub async fn parental_consent(
    State(state): State<AppState>,
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<ParentalConsentRequest>,
) -> Result<(StatusCode, Json<ParentalConsentResponse>), ApiError> {
    let mut errors = FieldErrors::new();
    let email = address(&mut errors, "email", &req.email);
    errors.check(
        "password",
        len_between(&req.password, 1, 1024),
        "must be 1-1024 characters",
    );
    let guardian_email = address(&mut errors, "guardian_email", &req.guardian_email);
    if email.is_some() && email == guardian_email {
        errors.check(
            "guardian_email",
            false,
            "must be the guardian's own address, not the child's",
        );
    }
    errors.finish()?;
    let (email, guardian_email) = (
        email.unwrap_or_default(),
        guardian_email.unwrap_or_default(),
    );
    let credential = tenant
        .call(|reply| AccountsMsg::LoginBegin {
            attempt: LoginAttempt {
                email: email.clone(),
                ip,
                device_token: None,
                captcha: Captcha::Off,
            },
            reply,
        })
        .await?;
    let password_ok = state
        .hasher
        .verify(
            &Password::new(req.password),
            credential.password_hash.as_deref(),
        )
        .await
        .map_err(|e| match e {
            HashError::Busy => ApiError::unavailable(),
            HashError::Failed(cause) => ApiError::internal(cause),
        })?;
    let cmd = GuardianCmd::Request {
        email,
        credential,
        password_ok,
        guardian: guardian_email,
        ip,
    };
    match guardian(&tenant, (ctx, ip), cmd).await? {
        GuardianAnswer::Requested { expires_at } => Ok((
            StatusCode::ACCEPTED,
            Json(ParentalConsentResponse {
                status: "consent_requested",
                expires_at,
            }),
        )),
        _ => Err(ApiError::internal("unexpected guardian answer")),
    }
}

// ---------------------------------------------------------------- shared by both pages

#[derive(Deserialize)]
pub struct TokenQuery {
    token: Option<String>,
    lang: Option<String>,
}

/// Whether the reader asked for JSON rather than a page.
fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/html"))
}

/// The tenant a guardian link names, when the token is well-formed and the tenant is served
/// here (on a cluster node, another node's link is unknown here: its records are there).
fn tenant_of_link(state: &AppState, token: &str) -> Option<TenantHandle> {
    if !len_between(token, 1, 512) {
        return None;
    }
    tenant_of_token(token)
        .and_then(|id| state.directory.tenant_by_id(TenantId(id)))
        .filter(|t| served_here(state, t.id).is_ok())
}

/// JSON with the pages' headers (no caching, no referrer): the answers carry a CSRF value.
fn json_answer<T: Serialize>(reader: &Reader, status: StatusCode, body: &T) -> Response {
    let mut resp = (status, Json(body)).into_response();
    super::pages::protect(resp.headers_mut());
    reader.set_csrf_cookie(&mut resp);
    resp
}

fn status_name(s: ChildStatus) -> &'static str {
    match s {
        ChildStatus::Held => "held",
        ChildStatus::Active => "active",
        ChildStatus::Blocked => "blocked",
    }
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The form's failures as a JSON error, for the API flavour.
fn form_error(e: CallError<TenantError>) -> ApiError {
    e.into()
}

fn csrf_failed() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "guardian/csrf_failed",
        "the csrf value is not the one of this link's page (send back the page's cookie)",
    )
}

/// The tenant's name and language on a page.
fn set_tenant(reader: &mut Reader, tenant: &GuardianTenant) {
    reader.set_tenant(&tenant.name, &tenant.default_locale);
}

// ---------------------------------------------------------------- consent

/// What the consent page shows, as JSON: `{state: "invalid"}` for a link that is unknown,
/// used or expired, else `state: "valid"` with what the guardian consents to.
#[derive(Serialize, ToSchema)]
pub struct GuardianConsentContext {
    /// `valid` or `invalid`.
    #[schema(pattern = "^(valid|invalid)$")]
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_name: Option<String>,
    /// The child's address, so the guardian knows whose account this is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child_email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lawful_basis: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purposes: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_categories: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The value `POST /v1/guardian/consent` must bring back.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 512)]
    pub csrf: Option<String>,
    /// Whether the guardian may prove adulthood with the EU wallet
    /// (`POST /v1/guardian/consent/wallet`); a consent then records `consent_method`
    /// `eudi_wallet`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wallet_available: Option<bool>,
    /// Whether the guardian's wallet proved them an adult for this link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adult_proven: Option<bool>,
}

impl GuardianConsentContext {
    fn invalid() -> Self {
        GuardianConsentContext {
            state: "invalid",
            tenant_name: None,
            child_email: None,
            controller_name: None,
            lawful_basis: None,
            purposes: None,
            data_categories: None,
            retention: None,
            expires_at: None,
            csrf: None,
            wallet_available: None,
            adult_proven: None,
        }
    }
}

/// The consent link's view, when it is live.
async fn consent_view(state: &AppState, token: Option<&str>, ip: IpAddr) -> Viewed<ConsentView> {
    let Some((token, tenant)) = token.and_then(|t| Some((t, tenant_of_link(state, t)?))) else {
        return Ok(None);
    };
    let cmd = GuardianCmd::ConsentView {
        token: token.to_owned(),
    };
    match guardian(&tenant, (AuditContext::default(), ip), cmd).await {
        Ok(GuardianAnswer::Consent(view)) => Ok(Some((tenant, *view))),
        Ok(_) => Ok(None),
        Err(e) => link_refusal(e),
    }
}

fn consent_page(
    reader: &Reader,
    view: &ConsentView,
    token: &str,
    error: Option<String>,
) -> super::pages::PageTemplate {
    let mut page = reader.page("guardian-consent-title");
    page.error_summary = error;
    page.paragraphs.push(reader.t_with(
        "guardian-consent-intro",
        &[
            ("child", &view.child_email),
            ("controller", &view.controller),
        ],
    ));
    page.paragraphs.push(reader.t("guardian-consent-purposes"));
    page.items = view.purposes.clone();
    page.paragraphs.push(reader.t_with(
        "guardian-consent-details",
        &[
            ("categories", &view.data_categories.join(", ")),
            ("retention", &view.retention),
            ("basis", &view.lawful_basis),
        ],
    ));
    page.paragraphs.push(reader.t("guardian-consent-withdraw"));
    if view.adult_proven {
        page.paragraphs.push(reader.t("guardian-wallet-proven"));
    }
    let mut form = FormView::new(reader.csrf(CONSENT_PATH, token), String::new());
    form.hidden.push(("token", token.to_owned()));
    form.checks.push(CheckView {
        name: "attestation",
        id: "attestation".to_owned(),
        value: "true".to_owned(),
        label: reader.t("guardian-consent-attestation"),
        checked: false,
    });
    form.buttons = vec![
        ButtonView {
            name: "action",
            value: "accept".to_owned(),
            label: reader.t("guardian-consent-accept"),
            secondary: false,
        },
        ButtonView {
            name: "action",
            value: "decline".to_owned(),
            label: reader.t("guardian-consent-decline"),
            secondary: true,
        },
    ];
    page.forms.push(form);
    if view.wallet_available && !view.adult_proven {
        let mut wallet = FormView::new(
            reader.csrf(CONSENT_PATH, token),
            reader.t("guardian-wallet-button"),
        );
        wallet.action = Some(WALLET_PATH.to_owned());
        wallet.heading = Some(reader.t("guardian-wallet-heading"));
        wallet.hidden.push(("token", token.to_owned()));
        wallet.buttons[0].secondary = true;
        page.forms.push(wallet);
    }
    page
}

/// The consent page of a guardian's link: a hosted page, or with `Accept: application/json`
/// the GuardianConsentContext. Nothing is used by looking.
#[utoipa::path(get, path = "/v1/guardian/consent", tag = "guardian",
    params(
        ("token" = Option<String>, Query, description = "The mailed link's token"),
        ("lang" = Option<String>, Query, description = "The page's language: en, pl, de, fr or es"),
    ),
    responses(
        (status = 200, description = "The context (`state` `valid` or `invalid`), or the page", content(
            (GuardianConsentContext = "application/json"),
            (String = "text/html"),
        )),
        (status = 400, description = "The page: the link is invalid", content_type = "text/html", body = String),
        (status = 410, description = "The page: the link is used or expired", content_type = "text/html", body = String),
        (status = 429, description = "`auth/rate_limited` (JSON) or the page: 120 calls of the guardian routes a minute per address", content(
            (ErrorBody = "application/json"),
            (String = "text/html"),
        )),
    ))]
pub async fn consent_get(
    State(state): State<AppState>,
    headers: HeaderMap,
    ClientIp(ip): ClientIp,
    Query(q): Query<TokenQuery>,
) -> Response {
    let reader = Reader::new(&state, &headers, q.lang.as_deref());
    let found = match consent_view(&state, q.token.as_deref(), ip).await {
        Ok(found) => found,
        Err(e) => return refused(&reader, &headers, e),
    };
    let token = q.token.unwrap_or_default();
    let json = |found: Option<ConsentView>, reader: &Reader| match found {
        Some(view) => GuardianConsentContext {
            state: "valid",
            tenant_name: Some(view.tenant.name),
            child_email: Some(view.child_email),
            controller_name: Some(view.controller),
            lawful_basis: Some(view.lawful_basis),
            purposes: Some(view.purposes),
            data_categories: Some(view.data_categories),
            retention: Some(view.retention),
            expires_at: Some(rfc3339(view.expires_at)),
            csrf: Some(reader.csrf(CONSENT_PATH, &token)),
            wallet_available: Some(view.wallet_available),
            adult_proven: Some(view.adult_proven),
        },
        None => GuardianConsentContext::invalid(),
    };
    let found = found.map(|(_, view)| view);
    link_answer(
        reader,
        &headers,
        &token,
        found,
        |v| &v.tenant,
        json,
        |r, v| consent_page(r, v, &token, None),
    )
}

/// A guardian link's `GET`: with `Accept: application/json` the context `json` makes (of
/// the live link's view, or of none), else the page; a dead link's page says why.
fn link_answer<V, J: Serialize>(
    mut reader: Reader,
    headers: &HeaderMap,
    token: &str,
    found: Option<V>,
    tenant: impl Fn(&V) -> &GuardianTenant,
    json: impl FnOnce(Option<V>, &Reader) -> J,
    page: impl FnOnce(&Reader, &V) -> super::pages::PageTemplate,
) -> Response {
    if wants_json(headers) {
        let body = json(found, &reader);
        return json_answer(&reader, StatusCode::OK, &body);
    }
    let Some(view) = found else {
        return reader.problem(if token.is_empty() {
            Problem::Invalid
        } else {
            Problem::Expired
        });
    };
    set_tenant(&mut reader, tenant(&view));
    let page = page(&reader, &view);
    reader.answer(StatusCode::OK, page, &[])
}

/// Spec 2.7 GuardianConsentConsume.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardianConsentConsume {
    #[schema(min_length = 1, max_length = 512)]
    pub token: String,
    #[schema(pattern = "^(accept|decline)$")]
    pub action: String,
    #[schema(min_length = 1, max_length = 512)]
    pub csrf: String,
    /// The guardian attests to holding parental responsibility: must be true.
    pub attestation: bool,
}

#[derive(Serialize, ToSchema)]
pub struct GuardianConsentResult {
    /// The child's account now: `active` (accepted) or `blocked` (declined).
    #[schema(pattern = "^(active|blocked)$")]
    pub child_account_status: &'static str,
}

/// The guardian's answer: `accept` makes the child's account active with a consent receipt,
/// `decline` blocks it (its data is erased 30 days later). The link is used either way.
#[utoipa::path(post, path = "/v1/guardian/consent", tag = "guardian",
    request_body = GuardianConsentConsume,
    responses(
        (status = 200, description = "Recorded", body = GuardianConsentResult),
        (status = 400, description = "`validation/invalid_request`; `guardian/invalid_token`: unknown, used or expired", body = ErrorBody),
        (status = 403, description = "`guardian/csrf_failed`", body = ErrorBody),
        (status = 415, description = "Not JSON (the page's form posts `application/x-www-form-urlencoded` and gets a page)", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`: 120 calls of the guardian routes a minute per address", body = ErrorBody),
    ))]
pub async fn consent_post(
    State(state): State<AppState>,
    headers: HeaderMap,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    Query(q): Query<TokenQuery>,
    body: Bytes,
) -> Response {
    if is_form(&headers) {
        return consent_form(&state, &headers, (ctx, ip), q.lang.as_deref(), &body).await;
    }
    match consent_json(&state, &headers, (ctx, ip), &body).await {
        Ok((reader, status)) => json_answer(
            &reader,
            StatusCode::OK,
            &GuardianConsentResult {
                child_account_status: status_name(status),
            },
        ),
        Err(e) => e.into_response(),
    }
}

fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim()
                .to_ascii_lowercase()
                .starts_with("application/x-www-form-urlencoded")
        })
}

async fn consent_json(
    state: &AppState,
    headers: &HeaderMap,
    who: (AuditContext, IpAddr),
    body: &Bytes,
) -> Result<(Reader, ChildStatus), ApiError> {
    if !is_json(headers) {
        return Err(ApiError::for_status(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
    let req: GuardianConsentConsume = parse_json(body)?;
    let mut errors = FieldErrors::new();
    errors.check(
        "token",
        len_between(&req.token, 1, 512),
        "must be 1-512 characters",
    );
    errors.check(
        "action",
        matches!(req.action.as_str(), "accept" | "decline"),
        "must be accept or decline",
    );
    errors.check(
        "csrf",
        len_between(&req.csrf, 1, 512),
        "must be 1-512 characters",
    );
    errors.check("attestation", req.attestation, "must be true");
    errors.finish()?;
    let reader = Reader::new(state, headers, None);
    if !reader.csrf_ok(CONSENT_PATH, &req.token, &req.csrf) {
        return Err(csrf_failed());
    }
    let tenant = tenant_of_link(state, &req.token)
        .ok_or_else(|| form_error(CallError::Failed(TenantError::GuardianInvalid)))?;
    let cmd = GuardianCmd::Consent {
        token: req.token,
        accept: req.action == "accept",
    };
    match guardian(&tenant, who, cmd).await.map_err(form_error)? {
        GuardianAnswer::Answered { status, .. } => Ok((reader, status)),
        _ => Err(ApiError::internal("unexpected guardian answer")),
    }
}

async fn consent_form(
    state: &AppState,
    headers: &HeaderMap,
    who: (AuditContext, IpAddr),
    lang: Option<&str>,
    body: &Bytes,
) -> Response {
    let mut reader = Reader::new(state, headers, lang);
    let form = form_fields(body);
    let token = field(&form, "token").to_owned();
    let (tenant, view) = match consent_view(state, Some(&token), who.1).await {
        Ok(Some(found)) => found,
        Ok(None) => return reader.problem(Problem::Expired),
        Err(e) => return reader.problem(e.into()),
    };
    set_tenant(&mut reader, &view.tenant);
    if !reader.csrf_ok(CONSENT_PATH, &token, field(&form, "csrf")) {
        return reader.problem(Problem::Csrf);
    }
    let accept = match field(&form, "action") {
        "accept" => true,
        "decline" => false,
        _ => return reader.problem(Problem::Invalid),
    };
    if field(&form, "attestation") != "true" {
        let page = consent_page(
            &reader,
            &view,
            &token,
            Some(reader.t("guardian-consent-attestation-missing")),
        );
        return reader.answer(StatusCode::BAD_REQUEST, page, &[]);
    }
    let cmd = GuardianCmd::Consent { token, accept };
    match guardian(&tenant, who, cmd).await {
        Ok(_) => {
            let (title, text) = if accept {
                ("guardian-accepted-title", "guardian-accepted")
            } else {
                ("guardian-declined-title", "guardian-declined")
            };
            let mut page = reader.page(title);
            page.paragraphs
                .push(reader.t_with(text, &[("child", &view.child_email)]));
            reader.answer(StatusCode::OK, page, &[])
        }
        Err(e) => reader.problem(guardian_problem(e)),
    }
}

fn guardian_problem(e: CallError<TenantError>) -> Problem {
    match e {
        CallError::Failed(TenantError::GuardianInvalid) => Problem::Expired,
        other => other.into(),
    }
}

// ---------------------------------------------------------------- the guardian's wallet

/// A consent link and its page's CSRF value.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardianWalletRequest {
    #[schema(min_length = 1, max_length = 512)]
    pub token: String,
    #[schema(min_length = 1, max_length = 512)]
    pub csrf: String,
}

/// The guardian proves adulthood with the EU wallet: an age check (the tenant's wallet age
/// verification) tied to the consent link. Once the wallet proves 18 or over, the consent
/// context says `adult_proven` and a consent records `consent_method` `eudi_wallet`. As JSON
/// the answer is the transaction (its `page_url` shows the QR code); the page's form is
/// redirected to that page.
#[utoipa::path(post, path = "/v1/guardian/consent/wallet", tag = "guardian",
    request_body = GuardianWalletRequest,
    responses(
        (status = 200, description = "The age check (5 minutes)", body = crate::http::eudi::EudiInitiateResponse),
        (status = 303, description = "The page's form: to the QR page"),
        (status = 400, description = "`validation/invalid_request`; `guardian/invalid_token`", body = ErrorBody),
        (status = 403, description = "`guardian/csrf_failed`; `eudi/disabled`: the tenant's wallet age verification is off", body = ErrorBody),
        (status = 409, description = "`eudi/verifier_not_configured`, `eudi/verifier_expired`", body = ErrorBody),
        (status = 415, description = "Neither JSON nor the page's form", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited` (30 age checks a minute per address; 120 calls of the guardian routes)", body = ErrorBody),
    ))]
pub async fn consent_wallet(
    State(state): State<AppState>,
    headers: HeaderMap,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Response {
    let form = is_form(&headers);
    let (token, csrf) = if form {
        let f = form_fields(&body);
        (field(&f, "token").to_owned(), field(&f, "csrf").to_owned())
    } else {
        if !is_json(&headers) {
            return ApiError::for_status(StatusCode::UNSUPPORTED_MEDIA_TYPE).into_response();
        }
        match parse_json::<GuardianWalletRequest>(&body) {
            Ok(r) => (r.token, r.csrf),
            Err(e) => return e.into_response(),
        }
    };
    let reader = Reader::new(&state, &headers, None);
    let began = async {
        let mut errors = FieldErrors::new();
        errors.check(
            "token",
            len_between(&token, 1, 512),
            "must be 1-512 characters",
        );
        errors.check(
            "csrf",
            len_between(&csrf, 1, 512),
            "must be 1-512 characters",
        );
        errors.finish()?;
        if !reader.csrf_ok(CONSENT_PATH, &token, &csrf) {
            return Err(csrf_failed());
        }
        let tenant = tenant_of_link(&state, &token)
            .ok_or_else(|| form_error(CallError::Failed(TenantError::GuardianInvalid)))?;
        let cmd = GuardianCmd::WalletBegin {
            token: token.clone(),
            ip,
        };
        match guardian(&tenant, (ctx, ip), cmd)
            .await
            .map_err(form_error)?
        {
            GuardianAnswer::WalletBegun(answer) => {
                crate::http::eudi::begun_response(&state, *answer)
            }
            _ => Err(ApiError::internal("unexpected guardian answer")),
        }
    }
    .await;
    match (began, form) {
        (Ok(tx), false) => json_answer(&reader, StatusCode::OK, &tx),
        (Ok(tx), true) => super::pages::see_other(&reader, &tx.page_url, StatusCode::SEE_OTHER),
        (Err(e), false) => e.into_response(),
        (Err(_), true) => reader.problem(Problem::Invalid),
    }
}

// ---------------------------------------------------------------- management link

/// Spec 2.7 GuardianManagementLinkRequest.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardianManagementLinkRequest {
    #[schema(format = "email", max_length = 254)]
    pub child_email: String,
    #[schema(format = "email", max_length = 254)]
    pub guardian_email: String,
}

/// Mails a guardian portal link (an hour) to `guardian_email` when that guardian consented
/// for the account at `child_email`. Always 202: the answer tells nothing about either.
#[utoipa::path(post, path = "/v1/guardian/management-link", tag = "guardian",
    security(("api_key" = [])),
    request_body = GuardianManagementLinkRequest,
    responses(
        (status = 202, description = "Accepted, whatever the addresses"),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 401, description = "`auth/missing_api_key`, `auth/invalid_api_key`", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`: 120 calls of the guardian routes a minute per address", body = ErrorBody),
    ))]
pub async fn management_link(
    ApiTenant(tenant): ApiTenant,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    ApiJson(req): ApiJson<GuardianManagementLinkRequest>,
) -> Result<StatusCode, ApiError> {
    let mut errors = FieldErrors::new();
    let child = address(&mut errors, "child_email", &req.child_email);
    let guardian = address(&mut errors, "guardian_email", &req.guardian_email);
    errors.finish()?;
    tenant
        .call(|reply| TenantMsg::GuardianManagementLink {
            child_email: child.clone().unwrap_or_default(),
            guardian_email: guardian.clone().unwrap_or_default(),
            ip,
            ctx: ctx.clone(),
            reply,
        })
        .await?;
    Ok(StatusCode::ACCEPTED)
}

// ---------------------------------------------------------------- the portal

/// `{state: "invalid"}`.
#[derive(Serialize, ToSchema)]
pub struct PortalInvalid {
    #[schema(pattern = "^invalid$")]
    pub state: &'static str,
}

/// Spec 2.7 consent_receipt.
#[derive(Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsentReceiptBody {
    #[serde(with = "time::serde::rfc3339")]
    pub consented_at: OffsetDateTime,
    pub lawful_basis: String,
    pub purposes: Vec<String>,
    pub data_categories: Vec<String>,
    pub retention: String,
    pub controller: String,
    /// Always true.
    pub withdrawal_available: bool,
    #[schema(pattern = "^(email|eudi_wallet)$")]
    pub consent_method: String,
}

impl From<ConsentReceipt> for ConsentReceiptBody {
    fn from(r: ConsentReceipt) -> Self {
        ConsentReceiptBody {
            consented_at: r.consented_at,
            lawful_basis: r.lawful_basis,
            purposes: r.purposes,
            data_categories: r.data_categories,
            retention: r.retention,
            controller: r.controller,
            withdrawal_available: r.withdrawal_available,
            consent_method: r.consent_method,
        }
    }
}

/// The valid shape of GuardianPortalContext.
#[derive(Serialize, ToSchema)]
pub struct PortalValid {
    #[schema(pattern = "^valid$")]
    pub state: &'static str,
    #[schema(pattern = "^(active|held|blocked)$")]
    pub child_account_status: &'static str,
    #[serde(with = "time::serde::rfc3339")]
    pub registered_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_login_at: Option<OffsetDateTime>,
    pub data_categories: Vec<String>,
    pub consent_receipt: ConsentReceiptBody,
    pub controller_name: String,
    #[schema(min_length = 1, max_length = 512)]
    pub csrf: String,
    /// `withdraw`, `export`, `delete`.
    pub available_actions: Vec<&'static str>,
    /// After a deletion's first call: send it back as `confirm_nonce` (10 minutes).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(min_length = 1, max_length = 512)]
    pub confirm_token: Option<String>,
}

/// Spec 2.7 GuardianPortalContext.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum GuardianPortalContext {
    Invalid(PortalInvalid),
    Valid(Box<PortalValid>),
}

impl GuardianPortalContext {
    fn invalid() -> Self {
        GuardianPortalContext::Invalid(PortalInvalid { state: "invalid" })
    }

    /// The context of `view` (only a guardian who consented opens a portal, so there is a
    /// receipt; without one the link is as good as invalid).
    fn of(view: PortalView, csrf: String) -> Self {
        let Some(receipt) = view.receipt else {
            return Self::invalid();
        };
        GuardianPortalContext::Valid(Box::new(PortalValid {
            state: "valid",
            child_account_status: status_name(view.status),
            registered_at: view.registered_at,
            last_login_at: view.last_login_at,
            data_categories: view.data_categories,
            consent_receipt: receipt.into(),
            controller_name: view.controller,
            csrf,
            available_actions: view.actions.iter().map(|a| a.as_str()).collect(),
            confirm_token: view.confirm_token,
        }))
    }
}

async fn portal_view(state: &AppState, token: Option<&str>, ip: IpAddr) -> Viewed<PortalView> {
    let Some((token, tenant)) = token.and_then(|t| Some((t, tenant_of_link(state, t)?))) else {
        return Ok(None);
    };
    let cmd = GuardianCmd::PortalView {
        token: token.to_owned(),
    };
    match guardian(&tenant, (AuditContext::default(), ip), cmd).await {
        Ok(GuardianAnswer::Portal(view)) => Ok(Some((tenant, *view))),
        Ok(_) => Ok(None),
        Err(e) => link_refusal(e),
    }
}

fn portal_page(reader: &Reader, view: &PortalView, token: &str) -> super::pages::PageTemplate {
    let mut page = reader.page("guardian-portal-title");
    let status = reader.t(&format!("guardian-status-{}", status_name(view.status)));
    page.paragraphs.push(reader.t_with(
        "guardian-portal-intro",
        &[("child", &view.child_email), ("status", &status)],
    ));
    if let Some(r) = &view.receipt {
        page.paragraphs.push(reader.t_with(
            "guardian-portal-receipt",
            &[
                ("date", &r.consented_at.date().to_string()),
                ("controller", &r.controller),
            ],
        ));
        page.items = r.purposes.clone();
    }
    let csrf = reader.csrf(PORTAL_PATH, token);
    for action in &view.actions {
        let mut form = FormView::new(
            csrf.clone(),
            reader.t(&format!("guardian-action-{}", action.as_str())),
        );
        form.heading = None;
        form.hidden.push(("token", token.to_owned()));
        form.buttons[0].name = "action";
        form.buttons[0].value = action.as_str().to_owned();
        form.buttons[0].secondary = *action == PortalAction::Delete;
        if let (PortalAction::Delete, Some(nonce)) = (action, &view.confirm_token) {
            form.hidden.push(("confirm_nonce", nonce.clone()));
            form.heading = Some(reader.t("guardian-delete-confirm"));
            form.buttons[0].label = reader.t("guardian-action-delete-confirm");
        }
        page.forms.push(form);
    }
    page
}

/// The guardian portal: a hosted page, or with `Accept: application/json` the
/// GuardianPortalContext (`{state: "invalid"}` for anything wrong with the link).
#[utoipa::path(get, path = "/v1/guardian/portal", tag = "guardian",
    params(
        ("token" = Option<String>, Query, description = "The mailed portal link's token"),
        ("lang" = Option<String>, Query, description = "The page's language: en, pl, de, fr or es"),
    ),
    responses(
        (status = 200, description = "The context, or the page", content(
            (GuardianPortalContext = "application/json"),
            (String = "text/html"),
        )),
        (status = 400, description = "The page: the link is invalid", content_type = "text/html", body = String),
        (status = 410, description = "The page: the link is used or expired", content_type = "text/html", body = String),
        (status = 429, description = "`auth/rate_limited` (JSON) or the page: 120 calls of the guardian routes a minute per address", content(
            (ErrorBody = "application/json"),
            (String = "text/html"),
        )),
    ))]
pub async fn portal_get(
    State(state): State<AppState>,
    headers: HeaderMap,
    ClientIp(ip): ClientIp,
    Query(q): Query<TokenQuery>,
) -> Response {
    let reader = Reader::new(&state, &headers, q.lang.as_deref());
    let found = match portal_view(&state, q.token.as_deref(), ip).await {
        Ok(found) => found,
        Err(e) => return refused(&reader, &headers, e),
    };
    let token = q.token.unwrap_or_default();
    let json = |found: Option<PortalView>, reader: &Reader| match found {
        Some(view) => GuardianPortalContext::of(view, reader.csrf(PORTAL_PATH, &token)),
        None => GuardianPortalContext::invalid(),
    };
    let found = found.map(|(_, view)| view);
    link_answer(
        reader,
        &headers,
        &token,
        found,
        |v| &v.tenant,
        json,
        |r, v| portal_page(r, v, &token),
    )
}

/// Spec 2.7 GuardianManagementMutate.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardianManagementMutate {
    #[schema(min_length = 1, max_length = 512)]
    pub token: String,
    #[schema(pattern = "^(withdraw|export|delete)$")]
    pub action: String,
    #[schema(min_length = 1, max_length = 512)]
    pub csrf: String,
    #[schema(min_length = 1, max_length = 512)]
    pub confirm_nonce: Option<String>,
}

/// What a portal action did, and the portal after it.
#[derive(Serialize, ToSchema)]
pub struct GuardianPortalResult {
    /// `withdrawn`, `export_sent`, `confirm_required` (send `confirm_token` back as
    /// `confirm_nonce`) or `deleted`.
    #[schema(pattern = "^(withdrawn|export_sent|confirm_required|deleted)$")]
    pub result: &'static str,
    pub portal: GuardianPortalContext,
}

/// A portal action: `withdraw` (the account is held again and its sessions end), `export`
/// (the child's data, mailed to the guardian as a download link for 24 hours) or `delete`
/// (the first call answers `confirm_token`; the second, with it as `confirm_nonce`, erases
/// the account for good).
#[utoipa::path(post, path = "/v1/guardian/portal", tag = "guardian",
    request_body = GuardianManagementMutate,
    responses(
        (status = 200, description = "Done", body = GuardianPortalResult),
        (status = 400, description = "`validation/invalid_request`; `guardian/invalid_token`: the link (or the confirm nonce) is unknown, used or expired", body = ErrorBody),
        (status = 403, description = "`guardian/csrf_failed`", body = ErrorBody),
        (status = 409, description = "`guardian/consent_not_pending`: the action is not available now (withdrawing a consent already withdrawn)", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`: a portal link asks for at most three exports; 120 calls of the guardian routes a minute per address", body = ErrorBody),
        (status = 415, description = "Not JSON (the page's forms post `application/x-www-form-urlencoded` and get a page)", body = ErrorBody),
    ))]
pub async fn portal_post(
    State(state): State<AppState>,
    headers: HeaderMap,
    ClientIp(ip): ClientIp,
    RequestCtx(ctx): RequestCtx,
    Query(q): Query<TokenQuery>,
    body: Bytes,
) -> Response {
    if is_form(&headers) {
        return portal_form(&state, &headers, (ctx, ip), q.lang.as_deref(), &body).await;
    }
    match portal_json(&state, &headers, (ctx, ip), &body).await {
        Ok((reader, result)) => json_answer(&reader, StatusCode::OK, &result),
        Err(e) => e.into_response(),
    }
}

fn action_of(s: &str) -> Option<PortalAction> {
    match s {
        "withdraw" => Some(PortalAction::Withdraw),
        "export" => Some(PortalAction::Export),
        "delete" => Some(PortalAction::Delete),
        _ => None,
    }
}

/// What the command did, by its answer.
fn result_of(action: PortalAction, answer: &GuardianAnswer) -> &'static str {
    match (action, answer) {
        (_, GuardianAnswer::Deleted { .. }) => "deleted",
        (PortalAction::Withdraw, _) => "withdrawn",
        (PortalAction::Export, _) => "export_sent",
        (PortalAction::Delete, _) => "confirm_required",
    }
}

async fn portal_json(
    state: &AppState,
    headers: &HeaderMap,
    who: (AuditContext, IpAddr),
    body: &Bytes,
) -> Result<(Reader, GuardianPortalResult), ApiError> {
    if !is_json(headers) {
        return Err(ApiError::for_status(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
    let req: GuardianManagementMutate = parse_json(body)?;
    let mut errors = FieldErrors::new();
    errors.check(
        "token",
        len_between(&req.token, 1, 512),
        "must be 1-512 characters",
    );
    let action = action_of(&req.action);
    errors.check(
        "action",
        action.is_some(),
        "must be withdraw, export or delete",
    );
    errors.check(
        "csrf",
        len_between(&req.csrf, 1, 512),
        "must be 1-512 characters",
    );
    if let Some(n) = &req.confirm_nonce {
        errors.check(
            "confirm_nonce",
            len_between(n, 1, 512),
            "must be 1-512 characters",
        );
    }
    errors.finish()?;
    let action = action.ok_or_else(|| ApiError::invalid_field("action", "unknown"))?;
    let reader = Reader::new(state, headers, None);
    if !reader.csrf_ok(PORTAL_PATH, &req.token, &req.csrf) {
        return Err(csrf_failed());
    }
    let tenant = tenant_of_link(state, &req.token)
        .ok_or_else(|| form_error(CallError::Failed(TenantError::GuardianInvalid)))?;
    let csrf = reader.csrf(PORTAL_PATH, &req.token);
    let cmd = GuardianCmd::Portal {
        token: req.token,
        action,
        confirm_nonce: req.confirm_nonce,
    };
    let answer = guardian(&tenant, who, cmd).await.map_err(form_error)?;
    let result = result_of(action, &answer);
    let portal = match answer {
        GuardianAnswer::Portal(view) => GuardianPortalContext::of(*view, csrf),
        _ => GuardianPortalContext::invalid(),
    };
    Ok((reader, GuardianPortalResult { result, portal }))
}

async fn portal_form(
    state: &AppState,
    headers: &HeaderMap,
    who: (AuditContext, IpAddr),
    lang: Option<&str>,
    body: &Bytes,
) -> Response {
    let mut reader = Reader::new(state, headers, lang);
    let form = form_fields(body);
    let token = field(&form, "token").to_owned();
    let (tenant, view) = match portal_view(state, Some(&token), who.1).await {
        Ok(Some(found)) => found,
        Ok(None) => return reader.problem(Problem::Expired),
        Err(e) => return reader.problem(e.into()),
    };
    set_tenant(&mut reader, &view.tenant);
    if !reader.csrf_ok(PORTAL_PATH, &token, field(&form, "csrf")) {
        return reader.problem(Problem::Csrf);
    }
    let Some(action) = action_of(field(&form, "action")) else {
        return reader.problem(Problem::Invalid);
    };
    let confirm_nonce = Some(field(&form, "confirm_nonce").to_owned()).filter(|n| !n.is_empty());
    let cmd = GuardianCmd::Portal {
        token: token.clone(),
        action,
        confirm_nonce,
    };
    match guardian(&tenant, who, cmd).await {
        Ok(GuardianAnswer::Deleted { .. }) => {
            let mut page = reader.page("guardian-deleted-title");
            page.paragraphs
                .push(reader.t_with("guardian-deleted", &[("child", &view.child_email)]));
            reader.answer(StatusCode::OK, page, &[])
        }
        Ok(GuardianAnswer::Portal(after)) => {
            let mut page = portal_page(&reader, &after, &token);
            let done = match action {
                PortalAction::Withdraw => Some("guardian-withdrawn"),
                PortalAction::Export => Some("guardian-export-sent"),
                PortalAction::Delete => None,
            };
            if let Some(done) = done {
                page.paragraphs.insert(0, reader.t(done));
            }
            reader.answer(StatusCode::OK, page, &[])
        }
        Ok(_) => reader.problem(Problem::Internal),
        Err(e) => reader.problem(guardian_problem(e)),
    }
}

// ---------------------------------------------------------------- the export's download

/// Downloads the child's data a guardian asked for from the portal (the mailed link, 24
/// hours): one JSON document.
#[utoipa::path(get, path = "/v1/guardian/export", tag = "guardian",
    params(("token" = Option<String>, Query, description = "The mailed download link's token")),
    responses(
        (status = 200, description = "The archive, as an attachment", body = Object),
        (status = 404, description = "`guardian/export_not_found`: unknown or expired", body = ErrorBody),
        (status = 429, description = "`auth/rate_limited`: 120 calls of the guardian routes a minute per address", body = ErrorBody),
    ))]
pub async fn export_download(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    Query(q): Query<TokenQuery>,
) -> Result<Response, ApiError> {
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "guardian/export_not_found",
            "the download link is unknown or expired: ask for a new export from the portal",
        )
    };
    let token = q.token.unwrap_or_default();
    let tenant = tenant_of_link(&state, &token).ok_or_else(not_found)?;
    let cmd = GuardianCmd::Download { token };
    let archive = match guardian(&tenant, (AuditContext::default(), ip), cmd).await {
        Ok(GuardianAnswer::Archive(a)) => a,
        Err(e @ (CallError::Unavailable | CallError::Failed(TenantError::RateLimited { .. }))) => {
            return Err(e.into())
        }
        _ => return Err(not_found()),
    };
    let mut resp = Json(archive).into_response();
    let h = resp.headers_mut();
    super::pages::protect(h);
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"account-data.json\""),
    );
    Ok(resp)
}
