//! The account page's sessions, connected apps and agents: ending another session or all of
//! them, withdrawing an app's access, revoking an agent, and signing out of this one.
//!
//! Its own file: the actions that end access someone or something already has.

use axum::{
    extract::Path,
    http::{header, StatusCode},
    response::Response,
};

use super::{super::hosted::clear_sign_in_cookie, Posted};
use crate::http::{accounts, extract::RequestCtx, my_agents, oauth::consents, pages::field};

/// `POST .../account/sessions/end`: one of the person's other sessions ends.
pub async fn end_session(p: Posted) -> Response {
    let Posted { account: a, form } = p;
    let id = field(&form, "session").to_owned();
    if id == a.user.bearer.session_id.to_string() {
        // This one ends by signing out.
        return a.done("session");
    }
    let (_, user, ctx) = a.api();
    let ended = accounts::revoke_session(user, ctx, Path(id)).await;
    a.finish(ended, "session").await
}

/// `POST .../account/sessions/others`: every session but this one ends.
pub async fn end_others(p: Posted) -> Response {
    let Posted { account: a, .. } = p;
    let list = match accounts::sessions(a.user.clone()).await {
        Ok(axum::Json(l)) => l.data,
        Err(e) => return a.refused(&e).await,
    };
    for s in list.into_iter().filter(|s| !s.current) {
        let id = Path(s.id.to_string());
        match accounts::revoke_session(a.user.clone(), RequestCtx(a.ctx.clone()), id).await {
            // Gone in between (expired, ended elsewhere): nothing left to end.
            Ok(_) => {}
            Err(e) if e.status == StatusCode::NOT_FOUND => {}
            Err(e) => return a.refused(&e).await,
        }
    }
    a.done("others")
}

/// `POST .../account/apps/withdraw`: the consent given to an app is withdrawn and its refresh
/// tokens revoked.
pub async fn withdraw(p: Posted) -> Response {
    let Posted { account: a, form } = p;
    let client = Path(field(&form, "client_id").to_owned());
    let (_, user, ctx) = a.api();
    let withdrawn = consents::withdraw(user, ctx, client).await;
    a.finish(withdrawn, "app").await
}

/// `POST .../account/agents/revoke`: the agent may no longer act for the person.
pub async fn revoke_agent(p: Posted) -> Response {
    let Posted { account: a, form } = p;
    let agent = Path(field(&form, "agent").to_owned());
    let (_, user, ctx) = a.api();
    let revoked = my_agents::revoke(user, ctx, agent).await;
    a.finish(revoked, "agent").await
}

/// `POST .../account/sign-out`: this session ends and its cookie goes; the page that says
/// so links to the sign-in again.
pub async fn sign_out(p: Posted) -> Response {
    let Posted { account: a, .. } = p;
    let ended = accounts::logout(
        a.user.clone(),
        RequestCtx(a.ctx.clone()),
        axum::http::HeaderMap::new(),
        axum::body::Bytes::new(),
    )
    .await;
    if let Err(e) = ended {
        return a.refused(&e).await;
    }
    let mut page = a.reader.page("account-signed-out-title");
    page.paragraphs.push(a.t("account-signed-out"));
    page.links.push(crate::http::pages::LinkView {
        href: super::super::hosted::account_sign_in_path(&a.slug),
        label: a.t("account-sign-in-again"),
    });
    let mut resp = a.reader.answer(StatusCode::OK, page, &[]);
    if let Some(c) = clear_sign_in_cookie(&a.user.tenant) {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    resp
}
