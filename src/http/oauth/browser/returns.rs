//! Where a sign-in begun on the sign-in page comes back to it: the login link's return page
//! (`/oauth/{slug}/link`, its code exchanged with the verifier this browser kept) and the
//! social sign-in's (`/oauth/{slug}/social-return`, its exchange token traded as the API's
//! session route does). Then on as after any sign-in.
//!
//! Its own file: the two routes that finish a sign-in another page began.

use axum::{
    extract::{Path, Query, State},
    http::{header, HeaderMap, StatusCode},
    response::Response,
};
use tessera_actors::{
    tenant::{
        sso::msg::{SsoAnswer, SsoCmd},
        HostedMsg,
    },
    CallError,
};

use super::{
    super::hosted::{cookie_path, link_cookie_name, set_cookie, ACCOUNT_QUERY},
    flow::{open, Visit},
    pages::{sign_in_page, signed, Shown},
};
use crate::{
    app::AppState,
    http::{
        extract::RequestCtx,
        pages::{cookie, Problem, Reader},
        reauth::{exchange_sign_in, SOCIAL_DONE_COOKIE},
        responses::authorize_query,
        sso::{sso_return_path, SSO_DONE_COOKIE},
    },
};

#[derive(serde::Deserialize)]
pub struct LinkReturn {
    code: Option<String>,
}

/// Where a login link asked for on the sign-in page returns: its code exchanged with the
/// verifier this browser kept, then on as any sign-in.
pub async fn link_return(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(q): Query<LinkReturn>,
    headers: HeaderMap,
    RequestCtx(ctx): RequestCtx,
) -> Result<Response, Response> {
    let mut reader = Reader::new(&state, &headers, None);
    let Some(tenant) = state.directory.tenant_for_slug(&slug) else {
        return Err(reader.problem(Problem::Invalid));
    };
    let Some(code) = q.code.filter(|c| !c.is_empty() && c.len() <= 512) else {
        return Err(reader.problem(Problem::Invalid));
    };
    let Some(verifier) = cookie(&headers, &link_cookie_name(&tenant)).map(str::to_owned) else {
        if let Ok(view) = tenant.call(|reply| HostedMsg::SignInView { reply }).await {
            reader.set_tenant(&view.tenant_name, &view.default_locale);
        }
        return Err(reader.problem_page(
            StatusCode::BAD_REQUEST,
            "link-elsewhere-title",
            "link-elsewhere",
        ));
    };
    let login = tenant
        .call(|reply| HostedMsg::ExchangeCode {
            code: code.clone(),
            code_verifier: verifier.clone(),
            ctx: ctx.clone(),
            reply,
        })
        .await
        .map_err(|e| reader.problem(e.into()))?;
    // A link asked for on the account page's sign-in carries no authorize request.
    let query = match &login.oauth {
        Some(params) => authorize_query(params),
        None => ACCOUNT_QUERY.to_owned(),
    };
    let flow = open(&state, &mut reader, &slug, Some(query)).await?;
    let mut resp = signed(&state, &reader, &flow, login);
    if let Some(v) = set_cookie(
        &link_cookie_name(&tenant),
        "",
        &cookie_path(&slug),
        0,
        false,
    ) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(resp)
}

/// Where a single sign-on begun on the sign-in page comes back: its outcome is in the
/// [`SSO_DONE_COOKIE`] (an exchange code, traded here as the API's session route does, or
/// the error), the authorize request in the query. Then as after any sign-in.
pub async fn sso_return(visit: Visit, RequestCtx(ctx): RequestCtx) -> Result<Response, Response> {
    let state = &visit.state;
    let (reader, flow) = visit.open().await?;
    let failed = |key: &str| {
        let shown = Shown::error(&reader, key, String::new());
        sign_in_page(state, &reader, &flow, shown, StatusCode::UNAUTHORIZED)
    };
    let done = cookie(&visit.headers, SSO_DONE_COOKIE);
    let mut resp = match done.and_then(|v| v.split_once('.')) {
        Some(("c", code)) => {
            let cmd = SsoCmd::Session {
                code: code.to_owned(),
            };
            let login = flow.tenant.sso(&ctx, cmd).await;
            match login {
                Ok(SsoAnswer::Login(login)) => signed(state, &reader, &flow, *login),
                Ok(_) => reader.problem(Problem::Internal),
                Err(CallError::Unavailable) => reader.problem(Problem::Busy),
                Err(_) => failed("login-sso-failed"),
            }
        }
        Some(("e", "email_exists")) => failed("login-social-email-exists"),
        _ => failed("login-sso-failed"),
    };
    if let Some(v) = set_cookie(SSO_DONE_COOKIE, "", &sso_return_path(&visit.slug), 0, false) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(resp)
}

/// Where a social sign-in begun on the sign-in page comes back: its outcome is in the
/// [`SOCIAL_DONE_COOKIE`] (an exchange token, traded here as the API's session route does,
/// or the error), the authorize request in the query. Then as after any sign-in.
pub async fn social_return(
    visit: Visit,
    RequestCtx(ctx): RequestCtx,
) -> Result<Response, Response> {
    let state = &visit.state;
    let (reader, flow) = visit.open().await?;
    let failed = |key: &str| {
        let shown = Shown::error(&reader, key, String::new());
        sign_in_page(state, &reader, &flow, shown, StatusCode::UNAUTHORIZED)
    };
    let done = cookie(&visit.headers, SOCIAL_DONE_COOKIE);
    let mut resp = match done.and_then(|v| v.split_once('.')) {
        Some(("t", token)) => {
            match exchange_sign_in(state, &flow.tenant, token, None, &ctx).await {
                Ok(login) => signed(state, &reader, &flow, login),
                Err(e) if e.status == StatusCode::SERVICE_UNAVAILABLE => {
                    reader.problem(Problem::Busy)
                }
                Err(_) => failed("login-social-failed"),
            }
        }
        Some(("e", "email_exists")) => failed("login-social-email-exists"),
        _ => failed("login-social-failed"),
    };
    let path = format!("/oauth/{}/social-return", visit.slug);
    if let Some(v) = set_cookie(SOCIAL_DONE_COOKIE, "", &path, 0, false) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(resp)
}
