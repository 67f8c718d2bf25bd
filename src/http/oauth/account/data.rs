//! The account page's data: a download of everything held about the person (GDPR art. 15
//! and 20) and the erasure of the account (art. 17), both after a step-up with the password,
//! through the API's own functions.
//!
//! Its own file: the two actions on the whole of the person's data.

use axum::{
    http::{header, StatusCode},
    response::Response,
};

use super::{super::hosted::clear_sign_in_cookie, Posted};
use crate::http::{pages::field, users_me};

/// `POST .../account/export`: the export document, as a download.
pub async fn export(p: Posted) -> Result<Response, Response> {
    let Posted { account: a, form } = p;
    let step_up = a.stepped(&form, "export").await?;
    let (state, user, _) = a.api();
    match users_me::export(state, user, step_up).await {
        Ok(mut resp) => {
            crate::http::pages::protect(resp.headers_mut());
            Ok(resp)
        }
        Err(e) => Err(a.refused(&e).await),
    }
}

/// `POST .../account/delete`: with the box ticked, steps up with the password and erases the
/// account; the page that follows says so, and the sign-in cookie goes.
pub async fn delete(p: Posted) -> Result<Response, Response> {
    let Posted { account: a, form } = p;
    if field(&form, "confirm") != "yes" {
        let unticked = a.t("account-delete-unticked");
        return Err(super::page::page_with_error(&a, StatusCode::BAD_REQUEST, unticked).await);
    }
    let step_up = a.stepped(&form, "delete").await?;
    let (state, user, ctx) = a.api();
    if let Err(e) = users_me::delete_me(state, user, step_up, ctx).await {
        return Err(a.refused(&e).await);
    }
    let mut page = a.reader.page("account-deleted-title");
    page.paragraphs.push(a.t("account-deleted"));
    let mut resp = a.reader.answer(StatusCode::OK, page, &[]);
    if let Some(c) = clear_sign_in_cookie(&a.user.tenant) {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    Ok(resp)
}
