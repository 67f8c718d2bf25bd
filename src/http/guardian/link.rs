//! What the guardian's link routes share: the tenant and the look at a link, the two ways of
//! answering (a hosted page, or JSON with the pages' headers and CSRF cookie), and the checks
//! a form or a JSON body passes before anything is used.
//!
//! A link is one of two kinds ([`LinkKind`]): the consent link and the portal link. Each
//! route of theirs answers `GET` with the page or the context, and `POST` from the page's
//! form or as JSON, through the same functions here.
//!
//! Its own file: the floor the consent, wallet and portal routes stand on.

use std::{collections::HashMap, net::IpAddr};
use tessera_actors::GuardianError;

use axum::{
    extract::{FromRequestParts, Query},
    http::{header, request::Parts, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use tessera_actors::{
    policy::normalize_email,
    tenant::{
        audit::AuditContext,
        guardian::{GuardianAnswer, GuardianCmd, GuardianTenant},
        records::ChildStatus,
    },
    CallError, TenantError, TenantHandle, TenantMsg,
};
use time::OffsetDateTime;

use crate::{
    app::AppState,
    http::{
        error::{is_email, len_between, mailer_accepts, ApiError, FieldErrors},
        extract::{is_json, parse_json, served_here, ClientIp},
        mailed_links,
        pages::{field, form_fields, protect, PageTemplate, Problem, Reader},
    },
};

pub const CONSENT_PATH: &str = "/v1/guardian/consent";
pub const PORTAL_PATH: &str = "/v1/guardian/portal";
pub const WALLET_PATH: &str = "/v1/guardian/consent/wallet";

#[derive(Deserialize)]
pub struct TokenQuery {
    pub token: Option<String>,
    pub lang: Option<String>,
}

/// What a guardian link's route reads first: the caller's headers and address, and the
/// link's query.
pub struct LinkCall {
    pub state: AppState,
    pub headers: HeaderMap,
    pub ip: IpAddr,
    pub q: TokenQuery,
}

impl FromRequestParts<AppState> for LinkCall {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let ClientIp(ip) = ClientIp::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Query(q) = Query::<TokenQuery>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(LinkCall {
            state: state.clone(),
            headers: parts.headers.clone(),
            ip,
            q,
        })
    }
}

impl LinkCall {
    /// The page's reader, in the language the link asked for.
    pub fn reader(&self) -> Reader {
        Reader::new(&self.state, &self.headers, self.q.lang.as_deref())
    }

    /// The link's token as sent (empty when none).
    pub fn token(&self) -> String {
        self.q.token.clone().unwrap_or_default()
    }

    /// A JSON body's reader (the language its headers ask for) and the tenant of the link it
    /// names, once its CSRF value is the one of the link's page at `path`.
    pub fn posted(
        &self,
        path: &str,
        token: &str,
        csrf: &str,
    ) -> Result<(Reader, TenantHandle), ApiError> {
        let reader = Reader::new(&self.state, &self.headers, None);
        let tenant = posted_tenant(&self.state, &reader, path, token, csrf)?;
        Ok((reader, tenant))
    }
}

/// A normalised address for `name`, or its field error.
pub fn address(errors: &mut FieldErrors, name: &str, value: &str) -> Option<String> {
    let normalized = (value.chars().count() <= 254 && is_email(value.trim()))
        .then(|| normalize_email(value))
        .flatten()
        .filter(|n| mailer_accepts(n));
    errors.check(
        name,
        normalized.is_some(),
        "must be an e-mail address of at most 254 characters",
    );
    normalized
}

pub async fn guardian(
    tenant: &TenantHandle,
    (ctx, ip): (AuditContext, IpAddr),
    cmd: GuardianCmd,
) -> Result<GuardianAnswer, CallError<TenantError>> {
    tenant
        .call(|reply| TenantMsg::Guardian {
            cmd: cmd.clone(),
            ip,
            ctx: ctx.clone(),
            reply,
        })
        .await
}

/// The tenant a guardian link names, when the token is well-formed and the tenant is served
/// here (on a cluster node, another node's link is unknown here: its records are there).
pub fn tenant_of_link(state: &AppState, token: &str) -> Option<TenantHandle> {
    mailed_links::tenant_of_link(state, token).filter(|t| served_here(state, t.id).is_ok())
}

/// A kind of guardian link: the path of its page (what its CSRF value is bound to), the
/// command that looks at it (using nothing) and the view that answers.
pub trait LinkKind {
    type View;
    const PATH: &'static str;
    fn look(token: String) -> GuardianCmd;
    fn view(answer: GuardianAnswer) -> Option<Self::View>;
    fn tenant(view: &Self::View) -> &GuardianTenant;
}

/// Declares a kind of guardian link and its [`LinkKind`]: the view the actor answers (in the
/// answer variant of the same name as the link) to the command that looks at it, and the
/// path of its page.
macro_rules! link_kind {
    ($(#[$doc:meta])* $kind:ident: $view:ident at $path:expr, looked at by $look:ident) => {
        $(#[$doc])*
        pub struct $kind;

        impl LinkKind for $kind {
            type View = $view;
            const PATH: &'static str = $path;

            fn look(token: String) -> GuardianCmd {
                GuardianCmd::$look { token }
            }

            fn view(answer: GuardianAnswer) -> Option<$view> {
                match answer {
                    GuardianAnswer::$kind(view) => Some(*view),
                    _ => None,
                }
            }

            fn tenant(view: &$view) -> &GuardianTenant {
                &view.tenant
            }
        }
    };
}
pub(super) use link_kind;

/// A link's view, or why none: `Ok(None)` for a link that is unknown, used or expired; an
/// error for a refusal that is not about the link (too many calls, the service busy).
type Viewed<V> = Result<Option<(TenantHandle, V)>, CallError<TenantError>>;

/// The live link's view.
pub async fn view_link<K: LinkKind>(
    state: &AppState,
    token: Option<&str>,
    ip: IpAddr,
) -> Viewed<K::View> {
    let Some((token, tenant)) = token.and_then(|t| Some((t, tenant_of_link(state, t)?))) else {
        return Ok(None);
    };
    match guardian(
        &tenant,
        (AuditContext::default(), ip),
        K::look(token.to_owned()),
    )
    .await
    {
        Ok(answer) => Ok(K::view(answer).map(|view| (tenant, view))),
        // Whether a failed look is about the link (answered as an invalid one).
        Err(e @ (CallError::Failed(TenantError::RateLimited { .. }) | CallError::Unavailable)) => {
            Err(e)
        }
        Err(_) => Ok(None),
    }
}

/// Whether the reader asked for JSON rather than a page.
fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json") && !a.contains("text/html"))
}

/// Whether a `POST` is the page's form (else it is JSON).
pub fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim()
                .to_ascii_lowercase()
                .starts_with("application/x-www-form-urlencoded")
        })
}

/// JSON with the pages' headers (no caching, no referrer): the answers carry a CSRF value.
pub fn json_answer<T: Serialize>(reader: &Reader, status: StatusCode, body: &T) -> Response {
    let mut resp = (status, Json(body)).into_response();
    protect(resp.headers_mut());
    reader.set_csrf_cookie(&mut resp);
    resp
}

/// A JSON `POST`'s answer: the result with the pages' headers, or the error.
fn json_result<T: Serialize>(result: Result<(Reader, T), ApiError>) -> Response {
    match result {
        Ok((reader, body)) => json_answer(&reader, StatusCode::OK, &body),
        Err(e) => e.into_response(),
    }
}

pub fn status_name(s: ChildStatus) -> &'static str {
    match s {
        ChildStatus::Held => "held",
        ChildStatus::Active => "active",
        ChildStatus::Blocked => "blocked",
    }
}

pub fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A refusal of the link as the JSON flavour answers it.
pub fn invalid_link() -> ApiError {
    CallError::Failed(TenantError::Guardian(GuardianError::Invalid)).into()
}

/// A refusal of the link as a page says it: a used or expired link.
pub fn guardian_problem(e: CallError<TenantError>) -> Problem {
    match e {
        CallError::Failed(TenantError::Guardian(GuardianError::Invalid)) => Problem::Expired,
        other => other.into(),
    }
}

/// A guardian link's `GET`: with `Accept: application/json` the context `json` makes (of
/// the live link's view, or of none), else the page; a dead link's page says why, and a look
/// refused for a reason not about the link is the JSON error or the page.
pub async fn link_get<K: LinkKind, J: Serialize>(
    call: &LinkCall,
    json: impl FnOnce(Option<K::View>, &Reader) -> J,
    page: impl FnOnce(&Reader, &K::View) -> PageTemplate,
) -> Response {
    let mut reader = call.reader();
    let found = match view_link::<K>(&call.state, call.q.token.as_deref(), call.ip).await {
        Ok(Some((tenant, view))) => {
            reader.brand(&tenant).await;
            Some(view)
        }
        Ok(None) => None,
        Err(e) if wants_json(&call.headers) => return ApiError::from(e).into_response(),
        Err(e) => return reader.problem(e.into()),
    };
    if wants_json(&call.headers) {
        let body = json(found, &reader);
        return json_answer(&reader, StatusCode::OK, &body);
    }
    let Some(view) = found else {
        return reader.problem(if call.token().is_empty() {
            Problem::Invalid
        } else {
            Problem::Expired
        });
    };
    set_tenant(&mut reader, K::tenant(&view));
    let page = page(&reader, &view);
    reader.answer(StatusCode::OK, page, &[])
}

/// The tenant's name and language on a page.
fn set_tenant(reader: &mut Reader, tenant: &GuardianTenant) {
    reader.set_tenant(&tenant.name, &tenant.default_locale);
}

/// What a form's `POST` to a link's page carries, once checked: the page's reader, the form,
/// the link's token, its tenant and its view.
pub struct Posted<V> {
    pub reader: Reader,
    pub form: HashMap<String, String>,
    pub token: String,
    pub tenant: TenantHandle,
    pub view: V,
}

/// A form's `POST` to a link's page: the link live, then the form's CSRF value (refused
/// before anything is used).
async fn open_form<K: LinkKind>(call: &LinkCall, body: &[u8]) -> Result<Posted<K::View>, Response> {
    let mut reader = call.reader();
    let form = form_fields(body);
    let token = field(&form, "token").to_owned();
    let (tenant, view) = match view_link::<K>(&call.state, Some(&token), call.ip).await {
        Ok(Some(found)) => found,
        Ok(None) => return Err(reader.problem(Problem::Expired)),
        Err(e) => return Err(reader.problem(e.into())),
    };
    set_tenant(&mut reader, K::tenant(&view));
    reader.brand(&tenant).await;
    if !reader.csrf_ok(K::PATH, &token, field(&form, "csrf")) {
        return Err(reader.problem(Problem::Csrf));
    }
    Ok(Posted {
        reader,
        form,
        token,
        tenant,
        view,
    })
}

/// A `POST` to a link's route: from the page's form (the link live and the form's CSRF value
/// checked by `open_form`, then `form`, answered with a page), or as JSON (`json`, its result
/// answered by `json_result`).
pub async fn link_post<K: LinkKind, T: Serialize>(
    call: &LinkCall,
    ctx: AuditContext,
    body: &[u8],
    form: impl AsyncFnOnce(&LinkCall, AuditContext, Posted<K::View>) -> Response,
    json: impl AsyncFnOnce(&LinkCall, AuditContext, &[u8]) -> Result<(Reader, T), ApiError>,
) -> Response {
    if !is_form(&call.headers) {
        return json_result(json(call, ctx, body).await);
    }
    match open_form::<K>(call, body).await {
        Ok(posted) => form(call, ctx, posted).await,
        Err(page) => page,
    }
}

/// A JSON `POST`'s body: JSON (415 otherwise), parsed.
pub fn json_body<T: DeserializeOwned>(headers: &HeaderMap, body: &[u8]) -> Result<T, ApiError> {
    if !is_json(headers) {
        return Err(ApiError::for_status(StatusCode::UNSUPPORTED_MEDIA_TYPE));
    }
    parse_json(body)
}

/// The field errors of a link's token and CSRF value as a body sends them: the first checks
/// of a posted body, to which the caller adds its own.
pub fn link_field_errors(token: &str, csrf: &str) -> FieldErrors {
    let mut errors = FieldErrors::new();
    for (name, value) in [("token", token), ("csrf", csrf)] {
        errors.check(name, len_between(value, 1, 512), "must be 1-512 characters");
    }
    errors
}

/// The tenant of a link a body names, once its CSRF value is the one of the link's page at
/// `path`.
pub fn posted_tenant(
    state: &AppState,
    reader: &Reader,
    path: &str,
    token: &str,
    csrf: &str,
) -> Result<TenantHandle, ApiError> {
    if !reader.csrf_ok(path, token, csrf) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "guardian/csrf_failed",
            "the csrf value is not the one of this link's page (send back the page's cookie)",
        ));
    }
    tenant_of_link(state, token).ok_or_else(invalid_link)
}
