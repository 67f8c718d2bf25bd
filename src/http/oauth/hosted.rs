//! What the authorization server's hosted pages share (the sign-in and consent pages of
//! `browser/`, the logout page, the agents' pages): the tenant's hosted sign-in cookie, the
//! other cookies these pages keep under the tenant's `/oauth/{slug}/`, the tenant a page at
//! that path serves, and the words for a protocol scope.
//!
//! The sign-in cookie (`tessera_signin_<tenant id>`, `Path=/oauth/<slug>/`, `HttpOnly`,
//! `SameSite=Lax`, `Secure` when the accounts URL is https) is `session id | user id | HMAC`
//! (the key `App::sign_in_hasher`): nothing is stored for it, and it names a first-party
//! session, so whatever ends the session ends the cookie.
//!
//! Its own file: a floor the pages stand on, so that none borrows from another.

use axum::{
    extract::{FromRequestParts, Path},
    http::{request::Parts, HeaderMap, HeaderValue},
    response::{IntoResponse, Response},
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use tessera_actors::tenant::HostedMsg;
use tessera_actors::{
    tenant::messages::{Bearer, Grant, SignInView},
    TenantHandle,
};
use tessera_storage::ct_eq;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    app::AppState,
    http::pages::{cookie, Problem, Reader},
};

/// The tenant of a page under `/oauth/{slug}/`, with what its pages show of it; its name and
/// language set on the page. An unknown slug is the invalid-request page.
pub async fn page_tenant(
    state: &AppState,
    reader: &mut Reader,
    slug: &str,
) -> Result<(TenantHandle, SignInView), Response> {
    let tenant = state
        .directory
        .tenant_for_slug(slug)
        .ok_or_else(|| reader.problem(Problem::Invalid))?;
    let view = dress(reader, &tenant).await?;
    Ok((tenant, view))
}

/// What `tenant`'s sign-in pages offer, with its name, language and branding set on the
/// page; or the page that says why not.
pub async fn dress(reader: &mut Reader, tenant: &TenantHandle) -> Result<SignInView, Response> {
    let view = tenant
        .call(|reply| HostedMsg::SignInView { reply })
        .await
        .map_err(|e| reader.problem(e.into()))?;
    reader.set_tenant(&view.tenant_name, &view.default_locale);
    reader.brand(tenant).await;
    Ok(view)
}

/// The words for a protocol scope.
pub fn scope_text(reader: &Reader, scope: &str) -> String {
    match scope {
        "openid" | "profile" | "email" | "phone" | "address" | "offline_access"
        | "organization" => reader.t(&format!("scope-{scope}")),
        other => reader.t_with("scope-other", &[("scope", other)]),
    }
}

// ---------------------------------------------------------------- the account page

/// The query of the sign-in that leads to the tenant's account page instead of a client
/// (`/oauth/{slug}/authorize?for=account`).
pub const ACCOUNT_QUERY: &str = "for=account";

/// The tenant's account page.
pub fn account_path(slug: &str) -> String {
    format!("/oauth/{slug}/account")
}

/// The sign-in that leads to the tenant's account page.
pub fn account_sign_in_path(slug: &str) -> String {
    format!("/oauth/{slug}/authorize?{ACCOUNT_QUERY}")
}

// ---------------------------------------------------------------- cookies

/// The path every cookie of the tenant's hosted pages is kept under.
pub fn cookie_path(slug: &str) -> String {
    format!("/oauth/{slug}/")
}

/// A `Set-Cookie` of these pages: `HttpOnly`, `SameSite=Lax`, for `max_age` seconds (0
/// removes it), `Secure` when `secure`.
pub fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    max_age: i64,
    secure: bool,
) -> Option<HeaderValue> {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path={path}; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}"
    ))
    .ok()
}

/// A cookie name of these pages: `prefix` and the tenant's id.
fn tenant_cookie(prefix: &str, tenant: &TenantHandle) -> String {
    format!("{prefix}{}", tenant.id.0.simple())
}

/// The cookie that keeps this browser's device token for the tenant: it lets the browser
/// past the account's lockout (see `login_guard`), and signs nobody in by itself.
pub fn device_cookie_name(tenant: &TenantHandle) -> String {
    tenant_cookie("tessera_device_", tenant)
}

/// The cookie that keeps the PKCE verifier of a login link asked for on the sign-in page.
pub fn link_cookie_name(tenant: &TenantHandle) -> String {
    tenant_cookie("tessera_oauth_link_", tenant)
}

fn sign_in_cookie_name(tenant: &TenantHandle) -> String {
    tenant_cookie("tessera_signin_", tenant)
}

fn cookie_tag(state: &AppState, tenant: &TenantHandle, bearer: Bearer) -> [u8; 32] {
    let mut m = tenant.id.0.as_bytes().to_vec();
    m.extend_from_slice(bearer.session_id.as_bytes());
    m.extend_from_slice(bearer.user_id.as_bytes());
    state.sign_in_hasher.hash(&m)
}

/// The user and session of the tenant's sign-in cookie, when its tag is right (whether the
/// session is still alive is the actor's check).
pub fn signed_in(state: &AppState, tenant: &TenantHandle, headers: &HeaderMap) -> Option<Bearer> {
    let raw = URL_SAFE_NO_PAD
        .decode(cookie(headers, &sign_in_cookie_name(tenant))?)
        .ok()?;
    if raw.len() != 64 {
        return None;
    }
    let bearer = Bearer {
        session_id: Uuid::from_slice(&raw[..16]).ok()?,
        user_id: Uuid::from_slice(&raw[16..32]).ok()?,
    };
    ct_eq(&cookie_tag(state, tenant, bearer), &raw[32..]).then_some(bearer)
}

/// The `Set-Cookie` of a sign-in that opened `grant`.
pub fn sign_in_cookie(
    state: &AppState,
    tenant: &TenantHandle,
    grant: &Grant,
) -> Option<HeaderValue> {
    let bearer = Bearer {
        session_id: grant.session_id,
        user_id: grant.user.id,
    };
    let mut raw = bearer.session_id.as_bytes().to_vec();
    raw.extend_from_slice(bearer.user_id.as_bytes());
    raw.extend_from_slice(&cookie_tag(state, tenant, bearer));
    let max_age = (grant.session_expires_at - OffsetDateTime::now_utc())
        .whole_seconds()
        .max(0);
    set_cookie(
        &sign_in_cookie_name(tenant),
        &URL_SAFE_NO_PAD.encode(raw),
        &cookie_path(&tenant.slug),
        max_age,
        state.accounts_base().starts_with("https://"),
    )
}

/// The `Set-Cookie` that removes the tenant's sign-in cookie (RP-initiated logout).
pub fn clear_sign_in_cookie(tenant: &TenantHandle) -> Option<HeaderValue> {
    let name = sign_in_cookie_name(tenant);
    set_cookie(&name, "", &cookie_path(&tenant.slug), 0, false)
}

/// What a hosted page of the authorization server reads first (the sign-in pages of
/// `browser/`, and the authorize and logout routes): the tenant's slug, the request's query
/// and the browser's headers.
pub struct Visit {
    pub state: AppState,
    pub slug: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
}

impl Visit {
    /// Its fields, in order: the state, the tenant's slug, the query and the headers.
    pub fn into_parts(self) -> (AppState, String, Option<String>, HeaderMap) {
        (self.state, self.slug, self.query, self.headers)
    }
}

impl FromRequestParts<AppState> for Visit {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let Path(slug) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Visit {
            state: state.clone(),
            slug,
            query: parts.uri.query().map(str::to_owned),
            headers: parts.headers.clone(),
        })
    }
}
