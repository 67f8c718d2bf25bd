//! The consent link's routes. `GET /v1/guardian/consent?token=` shows what the guardian
//! consents to: a hosted page, or JSON with `Accept: application/json`. `POST
//! /v1/guardian/consent` takes the answer as JSON (GuardianConsentConsume) or as the page's
//! form. Its `csrf` is the page's value, bound to the browser's CSRF cookie and the link
//! (`crate::http::pages`): a JSON client sends back the cookie the `GET` set, as a browser
//! does.
//!
//! Its own file: the consent's step of the guardian's flow (the wallet's proof of adulthood
//! is `wallet.rs`'s).

use axum::{body::Bytes, http::StatusCode, response::Response};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    audit::AuditContext,
    guardian::{ConsentView, GuardianAnswer, GuardianCmd, GuardianTenant},
};
use utoipa::ToSchema;

use super::link::{
    guardian, guardian_problem, json_body, link_field_errors, link_get, link_kind, link_post,
    rfc3339, status_name, LinkCall, LinkKind, Posted, CONSENT_PATH, WALLET_PATH,
};
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::RequestCtx,
    pages::{field, ButtonView, CheckView, FormView, PageTemplate, Problem, Reader},
};

link_kind!(
    /// The consent link.
    Consent: ConsentView at CONSENT_PATH, looked at by ConsentView
);

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

fn consent_page(
    reader: &Reader,
    view: &ConsentView,
    token: &str,
    error: Option<String>,
) -> PageTemplate {
    let mut page = reader.page("guardian-consent-title");
    page.error_summary = error;
    page.paragraphs.push(reader.t_with(
        "guardian-consent-intro",
        &[
            ("child", &view.child_email),
            ("controller", &view.controller),
        ],
    ));
    // The tenant's text in the reader's language when it gave one. The list follows the line
    // that introduces it; the rest comes after the list.
    let (purposes, categories, retention, basis) = match view.translations.get(reader.lang) {
        Some(t) => (
            &t.purposes,
            &t.data_categories,
            &t.retention,
            &t.lawful_basis,
        ),
        None => (
            &view.purposes,
            &view.data_categories,
            &view.retention,
            &view.lawful_basis,
        ),
    };
    page.paragraphs.push(reader.t("guardian-consent-purposes"));
    page.items = purposes.clone();
    page.after.push(reader.t_with(
        "guardian-consent-details",
        &[
            ("categories", &categories.join(", ")),
            ("retention", retention),
            ("basis", basis),
        ],
    ));
    page.after.push(reader.t("guardian-consent-withdraw"));
    if view.adult_proven {
        page.after.push(reader.t("guardian-wallet-proven"));
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
pub async fn consent_get(call: LinkCall) -> Response {
    let token = call.token();
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
    link_get::<Consent, _>(&call, json, |r, v| consent_page(r, v, &token, None)).await
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
pub async fn consent_post(call: LinkCall, RequestCtx(ctx): RequestCtx, body: Bytes) -> Response {
    link_post::<Consent, _>(&call, ctx, &body, consent_form, consent_json).await
}

async fn consent_json(
    call: &LinkCall,
    ctx: AuditContext,
    body: &[u8],
) -> Result<(Reader, GuardianConsentResult), ApiError> {
    let req: GuardianConsentConsume = json_body(&call.headers, body)?;
    let mut errors = link_field_errors(&req.token, &req.csrf);
    errors.check(
        "action",
        matches!(req.action.as_str(), "accept" | "decline"),
        "must be accept or decline",
    );
    errors.check("attestation", req.attestation, "must be true");
    errors.finish()?;
    let (reader, tenant) = call.posted(CONSENT_PATH, &req.token, &req.csrf)?;
    let cmd = GuardianCmd::Consent {
        token: req.token,
        accept: req.action == "accept",
    };
    match guardian(&tenant, (ctx, call.ip), cmd).await? {
        GuardianAnswer::Answered { status, .. } => Ok((
            reader,
            GuardianConsentResult {
                child_account_status: status_name(status),
            },
        )),
        _ => Err(ApiError::internal("unexpected guardian answer")),
    }
}

async fn consent_form(call: &LinkCall, ctx: AuditContext, posted: Posted<ConsentView>) -> Response {
    let Posted {
        reader,
        form,
        token,
        tenant,
        view,
    } = posted;
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
    match guardian(&tenant, (ctx, call.ip), cmd).await {
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
