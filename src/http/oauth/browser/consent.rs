//! The hosted consent page: the client, what it asks for (the resource scopes the user may
//! leave out as boxes), and its decision (`POST /oauth/{slug}/consent`), which `303`s to the
//! client with a code or `error=access_denied`.
//!
//! Its own file: the page and the route of the consent, apart from the sign-in's.

use axum::{body::Bytes, http::StatusCode, response::Response};
use tessera_actors::{
    tenant::oauth::{ConsentNeeded, OAuthAnswer, OAuthCmd, OAuthFailure},
    CallError, TenantError,
};

use super::{
    super::{
        hosted::{scope_text, signed_in},
        oauth,
        request::{code_redirect, custom_scopes, decide, Checked},
    },
    flow::{Flow, Visit},
};
use crate::http::{
    extract::RequestCtx,
    pages::{field, see_other, ButtonView, CheckView, FormView, Problem, Reader},
};

pub fn consent_page(
    reader: &Reader,
    flow: &Flow,
    checked: &Checked,
    needed: &ConsentNeeded,
) -> Response {
    let client = needed.client.profile.name.as_str();
    let req = &checked.request;
    let mut page = reader.page("consent-title");
    page.title = reader.t_with("consent-title", &[("client", client)]);
    if needed.client.verification() == "unverified" {
        page.paragraphs
            .push(reader.t_with("consent-unverified", &[("client", client)]));
    }
    let intro = if needed.is_re_consent {
        "consent-reconsent"
    } else {
        "consent-intro"
    };
    page.paragraphs
        .push(reader.t_with(intro, &[("client", client)]));
    let checkable = custom_scopes(checked, reader.lang);
    for s in req
        .scopes
        .iter()
        .filter(|s| !checkable.iter().any(|c| &c.scope == *s))
    {
        let text = scope_text(reader, s);
        page.items.push(if needed.unchanged_scopes.contains(s) {
            reader.t_with("consent-unchanged", &[("scope", &text)])
        } else {
            text
        });
    }
    if let Some(r) = &req.resource {
        page.paragraphs
            .push(reader.t_with("consent-resource", &[("resource", r)]));
    }
    let mut form = FormView::new(
        reader.csrf(&flow.consent_path(), &flow.query),
        reader.t("consent-allow"),
    );
    form.action = Some(format!("{}?{}", flow.consent_path(), flow.query));
    form.hidden.push(("commitment", needed.commitment.clone()));
    form.checks = checkable
        .iter()
        .enumerate()
        .map(|(i, c)| CheckView {
            name: "scope",
            id: format!("scope-{i}"),
            value: c.scope.clone(),
            label: c.display_name.clone(),
            checked: true,
        })
        .collect();
    if !form.checks.is_empty() {
        form.heading = Some(reader.t("consent-optional"));
    }
    form.buttons = vec![
        ButtonView {
            name: "decision",
            value: "approve".to_owned(),
            label: reader.t("consent-allow"),
            secondary: false,
        },
        ButtonView {
            name: "decision",
            value: "deny".to_owned(),
            label: reader.t("consent-deny"),
            secondary: true,
        },
    ];
    page.forms.push(form);
    reader.answer(StatusCode::OK, page, &[&req.redirect_uri])
}

pub async fn consent_submit(
    visit: Visit,
    RequestCtx(ctx): RequestCtx,
    body: Bytes,
) -> Result<Response, Response> {
    let state = &visit.state;
    let (reader, flow, form) = visit.form(&body, Flow::consent_path).await?;
    let Some(checked) = &flow.checked else {
        return Err(reader.problem(Problem::Invalid));
    };
    let to_page = |location: &str| see_other(&reader, location, StatusCode::SEE_OTHER);
    let Some(bearer) = signed_in(state, &flow.tenant, &visit.headers) else {
        return Ok(to_page(&flow.again()));
    };
    let approve = match field(&form, "decision") {
        "approve" => true,
        "deny" => false,
        _ => return Err(reader.problem(Problem::Invalid)),
    };
    // The boxes left checked, and every scope that has no box.
    let req = &checked.request;
    let checked_boxes: Vec<String> = form_urlencoded::parse(&body)
        .filter(|(k, _)| k == "scope")
        .map(|(_, v)| v.into_owned())
        .collect();
    let checkable = custom_scopes(checked, "en");
    let granted: Vec<String> = req
        .scopes
        .iter()
        .filter(|s| !checkable.iter().any(|c| &c.scope == *s) || checked_boxes.contains(s))
        .cloned()
        .collect();
    let decision =
        decide(checked, approve, Some(granted)).map_err(|_| reader.problem(Problem::Invalid))?;
    let cmd = OAuthCmd::Consent {
        bearer,
        request: req.clone(),
        commitment: field(&form, "commitment").to_owned(),
        decision,
    };
    match oauth(&flow.tenant, ctx, cmd).await {
        Ok(OAuthAnswer::Decided(Some(code))) => Ok(to_page(&code_redirect(
            &flow.iss(state),
            &req.redirect_uri,
            req.state.as_deref(),
            &code,
        ))),
        Ok(OAuthAnswer::Decided(None)) => {
            let to = flow.error_to_client(
                state,
                checked,
                "access_denied",
                "the user denied the request",
            );
            Ok(to_page(&to))
        }
        Ok(_) => Err(reader.problem(Problem::Internal)),
        Err(CallError::Failed(TenantError::OAuth(OAuthFailure::AccessDenied))) => {
            let to = flow.error_to_client(
                state,
                checked,
                "access_denied",
                crate::http::oauth::failure_text(OAuthFailure::AccessDenied),
            );
            Ok(to_page(&to))
        }
        // Not the request or the user the page was shown for.
        Err(CallError::Failed(TenantError::OAuth(OAuthFailure::InvalidRequest))) => {
            Err(reader.problem(Problem::Csrf))
        }
        Err(CallError::Failed(TenantError::InvalidSession)) => Ok(to_page(&flow.again())),
        Err(e) => Err(reader.problem(e.into())),
    }
}
