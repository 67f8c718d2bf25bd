//! The account page's data: a download of everything held about the person (GDPR art. 15
//! and 20) and the erasure of the account (art. 17), both after a step-up with the password,
//! through the API's own functions.
//!
//! Its own file: the two actions on the whole of the person's data.

use axum::{
    extract::State,
    http::{header, StatusCode},
    response::Response,
};

use super::{super::hosted::clear_sign_in_cookie, Posted};
use crate::http::{extract::RequestCtx, pages::field, users_me};

/// `POST .../account/export`: the export document, as a download.
pub async fn export(p: Posted) -> Response {
    let Posted { account: a, form } = p;
    let step_up = match a.step_up(&form).await {
        Ok(s) => s,
        Err(e) => return a.refused(&e).await,
    };
    match users_me::export(State(a.state.clone()), a.user.clone(), step_up).await {
        Ok(mut resp) => {
            crate::http::pages::protect(resp.headers_mut());
            resp
        }
        Err(e) => a.refused(&e).await,
    }
}

/// `POST .../account/delete`: with the box ticked, steps up with the password and erases the
/// account; the page that follows says so, and the sign-in cookie goes.
pub async fn delete(p: Posted) -> Response {
    let Posted { account: a, form } = p;
    if field(&form, "confirm") != "yes" {
        return super::page::page_with_error(
            &a,
            StatusCode::BAD_REQUEST,
            a.t("account-delete-unticked"),
        )
        .await;
    }
    let step_up = match a.step_up(&form).await {
        Ok(s) => s,
        Err(e) => return a.refused(&e).await,
    };
    let erased = users_me::delete_me(
        State(a.state.clone()),
        a.user.clone(),
        step_up,
        RequestCtx(a.ctx.clone()),
    )
    .await;
    if let Err(e) = erased {
        return a.refused(&e).await;
    }
    let mut page = a.reader.page("account-deleted-title");
    page.paragraphs.push(a.t("account-deleted"));
    let mut resp = a.reader.answer(StatusCode::OK, page, &[]);
    if let Some(c) = clear_sign_in_cookie(&a.user.tenant) {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    resp
}
