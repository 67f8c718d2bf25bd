//! The guardian portal (spec 2.7 GuardianPortalContext), opened by the mailed portal link:
//! `GET /v1/guardian/portal` (a hosted page, or JSON with `Accept: application/json`) and its
//! actions, `POST` as JSON or from the page's forms: `withdraw`, `export` (a download link
//! mailed, `export.rs`) and `delete` (its first call answers `confirm_token`, the second
//! brings it back as `confirm_nonce`).
//!
//! Its own file: the portal's step of the guardian's flow.

use axum::{body::Bytes, http::StatusCode, response::Response};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    audit::AuditContext,
    guardian::{GuardianAnswer, GuardianCmd, GuardianTenant, PortalAction, PortalView},
    records::ConsentReceipt,
};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::link::{
    guardian, guardian_problem, json_body, link_field_errors, link_get, link_kind, link_post,
    status_name, LinkCall, LinkKind, Posted, PORTAL_PATH,
};
use crate::http::{
    error::{len_between, ApiError, ErrorBody},
    extract::RequestCtx,
    pages::{field, FormView, PageTemplate, Problem, Reader},
};

link_kind!(
    /// The portal link.
    Portal: PortalView at PORTAL_PATH, looked at by PortalView
);

/// `{state: "invalid"}`.
#[derive(Serialize, ToSchema)]
pub struct PortalInvalid {
    #[schema(pattern = "^invalid$")]
    pub state: &'static str,
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
    pub consent_receipt: ConsentReceipt,
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
            consent_receipt: receipt,
            controller_name: view.controller,
            csrf,
            available_actions: view.actions.iter().map(|a| a.as_str()).collect(),
            confirm_token: view.confirm_token,
        }))
    }
}

fn portal_page(reader: &Reader, view: &PortalView, token: &str) -> PageTemplate {
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
pub async fn portal_get(call: LinkCall) -> Response {
    let token = call.token();
    let json = |found: Option<PortalView>, reader: &Reader| match found {
        Some(view) => GuardianPortalContext::of(view, reader.csrf(PORTAL_PATH, &token)),
        None => GuardianPortalContext::invalid(),
    };
    link_get::<Portal, _>(&call, json, |r, v| portal_page(r, v, &token)).await
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
pub async fn portal_post(call: LinkCall, RequestCtx(ctx): RequestCtx, body: Bytes) -> Response {
    link_post::<Portal, _>(&call, ctx, &body, portal_form, portal_json).await
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
    call: &LinkCall,
    ctx: AuditContext,
    body: &[u8],
) -> Result<(Reader, GuardianPortalResult), ApiError> {
    let req: GuardianManagementMutate = json_body(&call.headers, body)?;
    let mut errors = link_field_errors(&req.token, &req.csrf);
    let action = action_of(&req.action);
    errors.check(
        "action",
        action.is_some(),
        "must be withdraw, export or delete",
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
    let (reader, tenant) = call.posted(PORTAL_PATH, &req.token, &req.csrf)?;
    let csrf = reader.csrf(PORTAL_PATH, &req.token);
    let cmd = GuardianCmd::Portal {
        token: req.token,
        action,
        confirm_nonce: req.confirm_nonce,
    };
    let answer = guardian(&tenant, (ctx, call.ip), cmd).await?;
    let result = result_of(action, &answer);
    let portal = match answer {
        GuardianAnswer::Portal(view) => GuardianPortalContext::of(*view, csrf),
        _ => GuardianPortalContext::invalid(),
    };
    Ok((reader, GuardianPortalResult { result, portal }))
}

async fn portal_form(call: &LinkCall, ctx: AuditContext, posted: Posted<PortalView>) -> Response {
    let Posted {
        reader,
        form,
        token,
        tenant,
        view,
    } = posted;
    let Some(action) = action_of(field(&form, "action")) else {
        return reader.problem(Problem::Invalid);
    };
    let confirm_nonce = Some(field(&form, "confirm_nonce").to_owned()).filter(|n| !n.is_empty());
    let cmd = GuardianCmd::Portal {
        token: token.clone(),
        action,
        confirm_nonce,
    };
    match guardian(&tenant, (ctx, call.ip), cmd).await {
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
