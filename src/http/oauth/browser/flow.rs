//! One hosted authorize request: what every page of browser mode reads first ([`Visit`], the
//! oauth pages' own, from `super::super::hosted`), the request behind it checked as the API
//! checks it ([`Flow`]), and the answers due before any page (a fault shown, or sent back to
//! the client).
//!
//! Its own file: the floor of the browser mode's pages, which each stand on it.

use std::collections::HashMap;

use axum::{http::StatusCode, response::Response};
use tessera_actors::{tenant::messages::SignInView, TenantHandle};

use super::super::{
    hosted::{account_path, page_tenant, ACCOUNT_QUERY},
    request::{check, error_redirect, query_without_login, Checked, RawRequest, Refusal},
    Params,
};
use crate::{
    app::AppState,
    http::{
        bearer::issuer,
        error::ApiError,
        pages::{field, form_fields, see_other, Problem, Reader},
    },
};

pub use super::super::hosted::Visit;

impl Visit {
    /// The page's reader and the request behind it, checked; or the answer already due.
    pub async fn open(&self) -> Result<(Reader, Flow), Response> {
        let mut reader = Reader::new(&self.state, &self.headers, None);
        let flow = open(&self.state, &mut reader, &self.slug, self.query.clone()).await?;
        Ok((reader, flow))
    }

    /// A hosted form's POST: the request checked as [`Visit::open`] does, then the form's
    /// CSRF value for the page at `page` (refused, 403, before anything is used).
    pub async fn form(
        &self,
        body: &[u8],
        page: fn(&Flow) -> String,
    ) -> Result<(Reader, Flow, HashMap<String, String>), Response> {
        let (reader, flow) = self.open().await?;
        let form = form_fields(body);
        if !reader.csrf_ok(&page(&flow), &flow.query, field(&form, "csrf")) {
            return Err(reader.problem(Problem::Csrf));
        }
        Ok((reader, flow, form))
    }
}

/// A hosted sign-in, checked: the tenant, what its page shows, and the authorize request
/// behind it; or none, for the sign-in of the tenant's account page ([`ACCOUNT_QUERY`]).
pub struct Flow {
    pub tenant: TenantHandle,
    pub view: SignInView,
    pub query: String,
    pub params: Params,
    /// The client's request; `None` on the account page's sign-in.
    pub checked: Option<Checked>,
}

impl Flow {
    pub fn authorize_path(&self) -> String {
        format!("/oauth/{}/authorize", self.tenant.slug)
    }

    pub fn consent_path(&self) -> String {
        format!("/oauth/{}/consent", self.tenant.slug)
    }

    pub fn iss(&self, state: &AppState) -> String {
        issuer(state, &self.tenant.slug)
    }

    /// Where the page's forms may end besides this server: the client's redirect URI.
    pub fn form_targets(&self) -> Vec<&str> {
        self.checked
            .iter()
            .map(|c| c.request.redirect_uri.as_str())
            .collect()
    }

    /// Whom the sign-in is for: the client, or the tenant itself on the account page's.
    pub fn audience(&self) -> &str {
        match &self.checked {
            Some(c) => &c.client.profile.name,
            None => &self.view.tenant_name,
        }
    }

    /// Where a sign-in goes on: the authorize page again, without `prompt=login` (the user
    /// has just signed in), or the account page.
    pub fn again(&self) -> String {
        match &self.checked {
            Some(_) => format!(
                "{}?{}",
                self.authorize_path(),
                query_without_login(&self.params)
            ),
            None => account_path(&self.tenant.slug),
        }
    }

    /// The client's redirect URI with an error, `state` and `iss`.
    pub fn error_to_client(
        &self,
        state: &AppState,
        checked: &Checked,
        error: &str,
        description: &str,
    ) -> String {
        error_redirect(
            &self.iss(state),
            &checked.request.redirect_uri,
            checked.request.state.as_deref(),
            error,
            description,
        )
    }
}

/// The request behind a hosted page, checked as the API checks it; or the answer already due
/// (a page that shows a fault, or the redirect that sends one to the client).
pub async fn open(
    state: &AppState,
    reader: &mut Reader,
    slug: &str,
    query: Option<String>,
) -> Result<Flow, Response> {
    let (tenant, view) = page_tenant(state, reader, slug).await?;
    let query = query.unwrap_or_default();
    let params = Params::parse(query.as_bytes())
        .map_err(|e| shown(reader, &ApiError::new(StatusCode::BAD_REQUEST, "", e)))?;
    if query == ACCOUNT_QUERY {
        return Ok(Flow {
            tenant,
            view,
            query,
            params,
            checked: None,
        });
    }
    let checked = match check(state, &tenant, &RawRequest::of(&params)).await {
        Ok(c) => c,
        Err(Refusal::Shown(e)) => return Err(shown(reader, &e)),
        Err(Refusal::Redirect(to)) => return Err(to_client(reader, &to)),
    };
    Ok(Flow {
        tenant,
        view,
        query,
        params,
        checked: Some(checked),
    })
}

/// A fault about the client or its redirect URI: shown, never redirected.
fn shown(reader: &Reader, e: &ApiError) -> Response {
    if e.status != StatusCode::BAD_REQUEST {
        return reader.problem(Problem::Busy);
    }
    let mut page = reader.page("oauth-invalid-title");
    page.paragraphs.push(reader.t("oauth-invalid"));
    page.paragraphs.push(e.message.clone());
    reader.answer(StatusCode::BAD_REQUEST, page, &[])
}

/// `302 Found` to the client (RFC 6749 4.1.2).
pub fn to_client(reader: &Reader, location: &str) -> Response {
    see_other(reader, location, StatusCode::FOUND)
}
