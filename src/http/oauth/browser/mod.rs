//! Browser mode of the authorization endpoint: the hosted sign-in and consent pages at the
//! accounts URL, for relying parties that send the user's browser to
//! `/v1/tenants/{slug}/oauth/authorize` with no Tessera code of their own.
//!
//! The API's authorize answers a plain navigation (no bearer, `Accept` naming `text/html`)
//! with a `302` to `{accounts_url}/oauth/{slug}/authorize` with the same query, where the same
//! [`check`](super::request::check) and the same actor command decide, with the user of the tenant's hosted sign-in
//! cookie instead of a bearer token:
//!
//! - no cookie (or `prompt=login`, or a sign-in older than `max_age`): the sign-in page
//!   (password, then the TOTP step for a user with MFA; or a code by e-mail, which is the
//!   passwordless flow with the request as its `oauth_params`, resumed here with its binding);
//!   a sign-in sets the cookie and sends the browser back to the authorize page;
//! - consent on file (or a first-party client): `302` to the client with the code;
//! - otherwise the consent page, whose decision `303`s to the client with a code or
//!   `error=access_denied`.
//!
//! The hosted sign-in cookie (see [`super::hosted`]) names a first-party session opened by the
//! sign-in, with a keyed hash of the tenant, the session and the user: nothing is stored for
//! it, and whatever ends the session (RP-initiated logout on the hosted logout page of
//! [`super::logout`] or through an ID token's `sid`, a password change, the user revoking it,
//! a block) ends it. Its refresh token is never handed out.
//!
//! Every form carries the CSRF value of [`crate::http::pages`], bound to the page and the
//! whole authorize request; the pages run no script.
//!
//! The modules: [`flow`] (the request behind every page), [`pages`] (the sign-in pages and
//! what follows a sign-in), [`sign_in`] (the sign-in forms), [`returns`] (the login link's
//! and the social sign-in's way back), [`passkeys`] (the passkey button's calls),
//! [`consent`]; this one routes them and answers the authorize page itself.

pub mod consent;
pub mod flow;
pub mod pages;
pub mod passkeys;
pub mod returns;
pub mod sign_in;
pub mod sign_up;

use axum::{
    http::StatusCode,
    response::Response,
    routing::{get, post},
    Router,
};
use tessera_actors::{
    tenant::{
        audit::AuditContext,
        messages::Bearer,
        oauth::{AuthorizeOutcome, OAuthAnswer, OAuthCmd, OAuthFailure},
        SessionsMsg,
    },
    CallError, TenantError,
};

use self::{
    consent::consent_page,
    flow::{to_client, Flow, Visit},
    pages::{sign_in_page, Shown},
};
use super::{failure_text, hosted::signed_in, oauth, request::code_redirect};
use crate::{
    app::AppState,
    http::{
        extract::RequestCtx,
        pages::{see_other, Problem, Reader},
    },
};

/// The hosted pages of the authorization server.
pub fn router() -> Router<AppState> {
    Router::new()
        // GET is `http::hosted_authorize`, which shares the path with social sign-in.
        .route("/oauth/{slug}/authorize", post(sign_in::sign_in_submit))
        .route("/oauth/{slug}/consent", post(consent::consent_submit))
        .route("/oauth/{slug}/link", get(returns::link_return))
        .route("/oauth/{slug}/passkey/begin", post(passkeys::passkey_begin))
        .route(
            "/oauth/{slug}/passkey/finish",
            post(passkeys::passkey_finish),
        )
        .route("/oauth/{slug}/social-return", get(returns::social_return))
        .route("/oauth/{slug}/sso-return", get(returns::sso_return))
}

pub async fn authorize_page(
    visit: Visit,
    RequestCtx(ctx): RequestCtx,
) -> Result<Response, Response> {
    let (reader, flow) = visit.open().await?;
    let bearer = if flow.checked.as_ref().is_some_and(|c| c.prompt.login) {
        None
    } else {
        signed_in(&visit.state, &flow.tenant, &visit.headers)
    };
    Ok(decide_for(&visit.state, &reader, &flow, bearer, ctx).await)
}

/// What authorize answers for the user of the cookie: the sign-in page, a code for the
/// client, or the consent page.
async fn decide_for(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    bearer: Option<Bearer>,
    ctx: AuditContext,
) -> Response {
    let Some(checked) = &flow.checked else {
        return account_sign_in(state, reader, flow, bearer).await;
    };
    let login_required = || {
        if checked.prompt.none {
            let to = flow.error_to_client(
                state,
                checked,
                "login_required",
                "the user is not signed in",
            );
            return to_client(reader, &to);
        }
        sign_in_page(state, reader, flow, Shown::default(), StatusCode::OK)
    };
    let Some(bearer) = bearer else {
        return login_required();
    };
    let cmd = OAuthCmd::Authorize {
        bearer,
        request: checked.request.clone(),
        max_age: checked.max_age,
        force_consent: checked.prompt.consent,
        no_prompt: checked.prompt.none,
    };
    match oauth(&flow.tenant, ctx, cmd).await {
        Ok(OAuthAnswer::Authorize(AuthorizeOutcome::LoginRequired)) => login_required(),
        Ok(OAuthAnswer::Authorize(AuthorizeOutcome::Code(code))) => {
            let to = code_redirect(
                &flow.iss(state),
                &checked.request.redirect_uri,
                checked.request.state.as_deref(),
                &code,
            );
            to_client(reader, &to)
        }
        Ok(OAuthAnswer::Authorize(AuthorizeOutcome::Consent(needed))) => {
            consent_page(reader, flow, checked, &needed)
        }
        Ok(_) => reader.problem(Problem::Internal),
        Err(CallError::Failed(TenantError::OAuth(
            f @ (OAuthFailure::ConsentRequired | OAuthFailure::AccessDenied),
        ))) => {
            let to = flow.error_to_client(state, checked, f.code(), failure_text(f));
            to_client(reader, &to)
        }
        Err(e) => reader.problem(e.into()),
    }
}

/// The account page's sign-in: on to the account page for a live session, else the sign-in
/// page.
async fn account_sign_in(
    state: &AppState,
    reader: &Reader,
    flow: &Flow,
    bearer: Option<Bearer>,
) -> Response {
    if let Some(bearer) = bearer {
        let alive = flow
            .tenant
            .call(|reply| SessionsMsg::Authenticate { bearer, reply })
            .await;
        match alive {
            Ok(_) => return see_other(reader, &flow.again(), StatusCode::SEE_OTHER),
            Err(CallError::Failed(_)) => {}
            Err(e) => return reader.problem(e.into()),
        }
    }
    sign_in_page(state, reader, flow, Shown::default(), StatusCode::OK)
}
