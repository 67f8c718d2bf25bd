//! The tenant console at `{accounts_url}/console`: the dashboard for people, server-rendered
//! like the hosted pages (one template, `templates/console/page.html`, no script at all).
//!
//! - A dashboard account signs in (`sign_in.rs`, with its second factor when it has one);
//!   the session is a dashboard session in its own cookie (`console_session`, `HttpOnly`,
//!   `SameSite=Strict`, `Path=/console`), so the API's cookie and the console's never mix.
//! - Every page after that acts through the same functions as the dashboard API's routes
//!   (`users.rs` through `http::users`, `audit.rs` through `dashboard::audit`): the same
//!   membership and role checks, re-authentication gates, throttles and audit events.
//! - Every form carries a CSRF value bound to the browser's `tessera_csrf` cookie, the
//!   form's target and the session ([`super::pages::Reader::csrf`]); a `POST` without it is
//!   refused (403) before anything is read.
//! - Pages speak the reader's language (`?lang=`, else `Accept-Language`, else English).
//!
//! The pages are HTML for people, not API: they are not in the OpenAPI document.

mod account;
mod agents;
mod audit;
mod clients;
mod home;
mod keys;
mod members;
mod org_sso;
mod organizations;
mod scopes;
mod settings;
mod sign_in;
mod sign_up;
mod users;
mod webhooks;

pub use settings::ApiDoc;

pub use super::sections::{
    moment, Cell, CheckGroup, CheckOption, Control, Form, Lines, Link, Section, Select,
    SelectOption, Table,
};

use askama::Template;
use axum::{
    extract::{FromRequest, FromRequestParts, Request},
    http::{header, request::Parts, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Router,
};
use serde::Deserialize;
use tessera_actors::{
    directory::dashboard::MemberOf, error::DirectoryError, CallError, DirectoryMsg,
};

use super::{
    dashboard::{Dashboard, TenantCaller},
    error::ApiError,
    extract::audit_context,
    pages::{cookie, protect, see_other, FieldView, Problem, Reader},
};
use crate::{app::AppState, i18n};

/// The console session's cookie.
pub const SESSION_COOKIE: &str = "console_session";
/// The cookie that keeps the console's known-device token (see `known_devices`).
pub const DEVICE_COOKIE: &str = "console_device";
const SIGN_IN: &str = "/console/sign-in";
/// The console's policy: its own styles and images, forms to itself, nothing else.
const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";
const STYLESHEET: &str = include_str!("../../../assets/console.css");

/// The console's routes; `doc` is the OpenAPI document the server serves (the settings
/// forms are made from it).
pub fn router(doc: ApiDoc) -> Router<AppState> {
    // A tenant's page: `path` under its own.
    let t = |path: &str| format!("{}{path}", tenant_path("{slug}"));
    Router::new()
        .route("/console", get(home::tenants))
        .route("/console/console.css", get(stylesheet))
        .route(SIGN_IN, get(sign_in::page).post(sign_in::submit))
        .route("/console/sign-in/code", post(sign_in::code))
        .route("/console/sign-up", get(sign_up::page).post(sign_up::submit))
        .route("/console/sign-out", post(sign_in::sign_out))
        .route("/console/reauth", post(sign_in::reauth))
        .route("/console/account", get(account::page))
        .route("/console/account/mfa/setup", post(account::setup))
        .route("/console/account/mfa/confirm", post(account::confirm))
        .route("/console/account/mfa/remove", post(account::remove))
        .route(&t(""), get(home::overview))
        .route(&t("/users"), get(users::list))
        .route(&t("/users/{id}"), get(users::detail))
        .route(&t("/users/{id}/{action}"), post(users::act))
        .route(&t("/audit"), get(audit::list))
        .route(&t("/audit/download"), get(audit::download))
        .route(&t("/members"), get(members::page))
        .route(&t("/members/invite"), post(members::invite))
        .route(&t("/members/{account}/role"), post(members::change_role))
        .route(&t("/members/{account}/remove"), post(members::remove))
        .route(&t("/invitations/revoke"), post(members::revoke))
        .route(&t("/keys"), get(keys::page))
        .route(&t("/keys/api-key/rotate"), post(keys::rotate))
        .route(&t("/keys/create"), post(keys::create))
        .route(&t("/keys/{id}/revoke"), post(keys::revoke))
        .route(&t("/clients"), get(clients::list))
        .route(&t("/clients/create"), post(clients::create))
        .route(&t("/clients/{id}"), get(clients::detail))
        .route(&t("/clients/{id}/{action}"), post(clients::act))
        .route(&t("/agents"), get(agents::list))
        .route(&t("/agents/create"), post(agents::create))
        .route(&t("/agents/{id}"), get(agents::detail))
        .route(&t("/agents/{id}/{action}"), post(agents::act))
        .route(&t("/webhooks"), get(webhooks::list))
        .route(&t("/webhooks/create"), post(webhooks::create))
        .route(&t("/webhooks/{id}"), get(webhooks::detail))
        .route(&t("/webhooks/{id}/{action}"), post(webhooks::act))
        .route(
            &t("/webhooks/{id}/deliveries/{delivery}/redeliver"),
            post(webhooks::redeliver),
        )
        .route(&t("/scopes"), get(scopes::page))
        .route(&t("/scopes/{resource}/register"), post(scopes::register))
        .route(&t("/scopes/{resource}/{id}/remove"), post(scopes::remove))
        .route(&t("/organizations"), get(organizations::list))
        .route(&t("/organizations/create"), post(organizations::create))
        .route(&t("/organizations/{org}"), get(organizations::detail))
        .route(
            &t("/organizations/{org}/{action}"),
            post(organizations::act),
        )
        .route(
            &t("/organizations/{org}/members/{user}/remove"),
            post(organizations::remove_member),
        )
        .route(
            &t("/organizations/{org}/domains/{domain}/{action}"),
            post(organizations::domain_act),
        )
        .route(
            &t("/organizations/{org}/connections/{id}/{action}"),
            post(organizations::connection_act),
        )
        .route(&t("/settings"), get(settings::index))
        .route(
            &t("/settings/{section}"),
            get(settings::show).post(settings::save),
        )
        .layer(axum::Extension(doc))
}

async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        STYLESHEET,
    )
        .into_response()
}

#[derive(Template)]
#[template(path = "console/page.html")]
pub struct ConsolePage {
    pub lang: &'static str,
    pub product: String,
    pub title: String,
    pub skip: String,
    pub tenant: Option<String>,
    pub nav: Option<Nav>,
    pub sign_out: Option<SignOut>,
    pub notice: Option<String>,
    pub error_summary: Option<String>,
    pub paragraphs: Vec<String>,
    pub sections: Vec<Section>,
    /// The CAPTCHA provider's script, on the page whose form shows its widget (the one
    /// script a console page may run, from the provider's origin).
    pub captcha_script: Option<String>,
}

/// The tenant's sections.
pub struct Nav {
    pub label: String,
    pub links: Vec<NavLink>,
}

pub struct NavLink {
    pub href: String,
    pub label: String,
    pub current: bool,
}

/// The bar's sign-out button and who is signed in.
pub struct SignOut {
    pub csrf: String,
    pub who: String,
    pub label: String,
    /// The link to the account's own page.
    pub account: String,
}

/// Which tenant section a page is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Area {
    Overview,
    Users,
    Members,
    Organizations,
    Keys,
    Clients,
    Agents,
    Webhooks,
    Settings,
    Audit,
}

/// What every console request reads first: the reader (language, CSRF secret), the client,
/// and the session its cookie names, if it is live.
pub struct Visit {
    pub state: AppState,
    pub reader: Reader,
    pub headers: HeaderMap,
    pub auth: Option<Dashboard>,
    /// Where the request came from (`None` when a trusted proxy named no address).
    pub ip: Option<std::net::IpAddr>,
}

impl FromRequestParts<AppState> for Visit {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let reader = Reader::of_request(parts, state).await;
        let ip = parts
            .extensions
            .get::<super::extract::ClientIp>()
            .map(|c| c.0);
        let token = cookie(&parts.headers, SESSION_COOKIE)
            .filter(|t| t.len() <= 256)
            .map(str::to_owned);
        let mut auth = None;
        if let Some(token) = token {
            let answer = state
                .directory
                .request(|reply| DirectoryMsg::Authenticate {
                    token: token.clone(),
                    reply,
                })
                .await;
            match answer {
                Ok(session) => {
                    let ctx = audit_context(state, parts, Some(session.account_id));
                    auth = Some(Dashboard {
                        session,
                        token,
                        ctx,
                    });
                }
                Err(CallError::Failed(DirectoryError::SessionInvalid)) => {}
                Err(_) => return Err(reader.problem(Problem::Busy)),
            }
        }
        Ok(Visit {
            state: state.clone(),
            reader,
            headers: parts.headers.clone(),
            auth,
            ip,
        })
    }
}

impl Visit {
    /// The console's text `id` in the reader's language.
    pub fn t(&self, id: &str) -> String {
        i18n::CONSOLE.text(self.reader.lang, id, &[])
    }

    pub fn t_with(&self, id: &str, args: &[(&str, &str)]) -> String {
        i18n::CONSOLE.text(self.reader.lang, id, args)
    }

    /// The signed-in session, or the sign-in page to go to.
    #[allow(
        clippy::result_large_err,
        reason = "a page's refusal is the page itself, the handler's own answer"
    )]
    pub fn signed_in(&self) -> Result<&Dashboard, Response> {
        self.auth
            .as_ref()
            .ok_or_else(|| see_other(&self.reader, SIGN_IN, StatusCode::SEE_OTHER))
    }

    /// What a form's CSRF value is bound to besides the browser and the target: the session.
    fn subject(&self) -> &str {
        self.auth.as_ref().map_or("", |a| a.token.as_str())
    }

    /// The CSRF value of a form that posts to `action`.
    pub fn csrf(&self, action: &str) -> String {
        self.reader.csrf(action, self.subject())
    }

    /// A `POST` to `action` whose CSRF value is not its form's is refused before anything
    /// is used.
    #[allow(
        clippy::result_large_err,
        reason = "a page's refusal is the page itself, the handler's own answer"
    )]
    pub fn check(&self, action: &str, sent: &str) -> Result<(), Response> {
        if self.reader.csrf_ok(action, self.subject(), sent) {
            Ok(())
        } else {
            Err(self.reader.problem(Problem::Csrf))
        }
    }

    /// A page titled `title` (a console text id), with the bar of the signed-in account.
    pub fn page(&self, title: &str) -> ConsolePage {
        ConsolePage {
            lang: self.reader.lang,
            product: self.t("console-name"),
            title: self.t(title),
            skip: self.reader.t("skip-to-content"),
            tenant: None,
            nav: None,
            sign_out: self.auth.as_ref().map(|a| SignOut {
                csrf: self.csrf("/console/sign-out"),
                who: self.t_with("console-signed-in-as", &[("email", &a.session.email)]),
                label: self.t("console-sign-out"),
                account: self.t("console-account"),
            }),
            notice: None,
            error_summary: None,
            paragraphs: Vec::new(),
            sections: Vec::new(),
            captcha_script: None,
        }
    }

    /// A page of tenant `m`'s section `area`, with the sections' links.
    pub fn tenant_page(&self, m: &MemberOf, area: Area, title: &str) -> ConsolePage {
        let mut page = self.page(title);
        page.tenant = Some(m.name.clone());
        let base = tenant_path(&m.slug);
        let link = |href: String, label: &str, here: Area| NavLink {
            href,
            label: self.t(label),
            current: area == here,
        };
        page.nav = Some(Nav {
            label: self.t("console-nav"),
            links: vec![
                link(base.clone(), "console-overview", Area::Overview),
                link(format!("{base}/users"), "console-users", Area::Users),
                link(format!("{base}/members"), "console-members", Area::Members),
                link(
                    format!("{base}/organizations"),
                    "console-organizations",
                    Area::Organizations,
                ),
                link(format!("{base}/keys"), "console-keys", Area::Keys),
                link(format!("{base}/clients"), "console-clients", Area::Clients),
                link(format!("{base}/agents"), "console-agents", Area::Agents),
                link(
                    format!("{base}/webhooks"),
                    "console-webhooks",
                    Area::Webhooks,
                ),
                link(
                    format!("{base}/settings"),
                    "console-settings",
                    Area::Settings,
                ),
                link(format!("{base}/audit"), "console-audit", Area::Audit),
            ],
        });
        page
    }

    /// The page as an answer with `status` and the console's headers.
    pub fn answer(&self, status: StatusCode, page: ConsolePage) -> Response {
        // The CAPTCHA widget's script renders in a frame of its own origin.
        let csp = match page
            .captcha_script
            .as_deref()
            .and_then(super::pages::source_of)
        {
            Some(w) => format!(
                "default-src 'none'; script-src {w}; connect-src {w}; frame-src {w}; \
                 style-src 'self'; img-src 'self'; form-action 'self'; \
                 frame-ancestors 'none'; base-uri 'none'"
            ),
            None => CSP.to_owned(),
        };
        match page.render() {
            Ok(html) => self.reader.html(status, html, &csp),
            Err(_) => self.reader.problem(Problem::Internal),
        }
    }

    /// The page that answers a refusal of the dashboard's functions.
    pub fn refused(&self, e: &ApiError) -> Response {
        let r = &self.reader;
        match (e.status, e.code.as_str()) {
            (StatusCode::UNAUTHORIZED, "dashboard/unauthenticated") => {
                see_other(r, SIGN_IN, StatusCode::SEE_OTHER)
            }
            (StatusCode::FORBIDDEN, "dashboard/forbidden") => self.message(
                StatusCode::FORBIDDEN,
                "console-forbidden-title",
                "console-forbidden",
            ),
            (StatusCode::NOT_FOUND, _) => self.message(
                StatusCode::NOT_FOUND,
                "console-not-found-title",
                "console-not-found",
            ),
            (StatusCode::CONFLICT, _) => self.message(
                StatusCode::CONFLICT,
                "console-conflict-title",
                "console-conflict",
            ),
            (StatusCode::BAD_REQUEST, _) => r.problem(Problem::Invalid),
            (StatusCode::TOO_MANY_REQUESTS, _) => r.problem(Problem::TooMany),
            (StatusCode::SERVICE_UNAVAILABLE, _) => r.problem(Problem::Busy),
            _ => r.problem(Problem::Internal),
        }
    }

    /// A page of one paragraph (console texts) with `status`.
    pub fn message(&self, status: StatusCode, title: &str, text: &str) -> Response {
        let mut page = self.page(title);
        page.paragraphs.push(self.t(text));
        page.sections.push(Section {
            links: vec![Link {
                href: "/console".to_owned(),
                label: self.t("console-back-home"),
            }],
            ..Section::default()
        });
        self.answer(status, page)
    }

    /// A console cookie (`Path=/console`, out of scripts' reach, never sent cross-site).
    pub fn cookie(&self, name: &str, value: &str, max_age: i64) -> Option<HeaderValue> {
        let secure = if self.reader.secure_cookie {
            "; Secure"
        } else {
            ""
        };
        HeaderValue::from_str(&format!(
            "{name}={value}; HttpOnly; SameSite=Strict; Path=/console; Max-Age={max_age}{secure}"
        ))
        .ok()
    }
}

/// A submitted form's fields, in order (a name may repeat: ticked boxes).
pub struct FormFields(Vec<(String, String)>);

impl FormFields {
    pub fn read(body: &[u8]) -> Self {
        FormFields(form_urlencoded::parse(body).into_owned().collect())
    }

    /// The first value of `name`, or empty.
    pub fn one(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map_or(String::new(), |(_, v)| v.clone())
    }

    /// Every value of `name`.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The lines of `name`'s value (a list, one a line), trimmed, the empty ones left out.
    pub fn lines(&self, name: &str) -> Vec<String> {
        self.one(name)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }

    pub fn pairs(&self) -> &[(String, String)] {
        &self.0
    }
}

/// A console form's `POST`: the visit, its fields, its CSRF value checked against the path
/// it was posted to (every form's value is bound to its own target) before anything else.
pub struct Posted {
    pub visit: Visit,
    pub form: FormFields,
}

impl FromRequest<AppState> for Posted {
    type Rejection = Response;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let visit = Visit::from_request_parts(&mut parts, state).await?;
        let Ok(bytes) = axum::body::to_bytes(body, state.config.server.max_body_bytes).await else {
            return Err(visit.reader.problem(Problem::Invalid));
        };
        let form = FormFields::read(&bytes);
        visit.check(parts.uri.path(), &form.one("csrf"))?;
        Ok(Posted { visit, form })
    }
}

/// A [`Posted`] form by a signed-in session (the sign-in page otherwise).
pub struct SignedInPost {
    pub visit: Visit,
    pub form: FormFields,
    pub auth: Dashboard,
}

impl FromRequest<AppState> for SignedInPost {
    type Rejection = Response;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Response> {
        let Posted { visit, form } = Posted::from_request(req, state).await?;
        let auth = visit.signed_in()?.clone();
        Ok(SignedInPost { visit, form, auth })
    }
}

/// A [`SignedInPost`] of a tenant's page (`/console/t/{slug}/...`), with the caller the
/// dashboard's handlers take (they check the membership and the role, as the API's).
pub struct TenantPost {
    pub visit: Visit,
    pub form: FormFields,
    pub caller: TenantCaller,
}

impl TenantPost {
    /// The visit, the form's fields and the caller, apart.
    pub fn into_parts(self) -> (Visit, FormFields, TenantCaller) {
        (self.visit, self.form, self.caller)
    }
}

impl FromRequest<AppState> for TenantPost {
    type Rejection = Response;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Response> {
        let slug = req
            .uri()
            .path()
            .strip_prefix("/console/t/")
            .and_then(|rest| rest.split('/').next())
            .unwrap_or("")
            .to_owned();
        let SignedInPost { visit, form, auth } = SignedInPost::from_request(req, state).await?;
        Ok(TenantPost {
            caller: TenantCaller { auth, slug },
            visit,
            form,
        })
    }
}

/// `?done=`: what the page after a form says was done.
#[derive(Deserialize)]
pub struct DoneQuery {
    pub done: Option<String>,
}

impl DoneQuery {
    /// What the page says when the form before it did `done`: `text` (a console text id).
    pub fn notice(self, visit: &Visit, done: &str, text: &str) -> Option<String> {
        self.done.filter(|d| d == done).map(|_| visit.t(text))
    }
}

/// What a page shows for a value that is not there.
pub fn dash() -> String {
    "—".to_owned()
}

/// Values on one line, or a dash when there are none.
pub fn joined(values: &[String]) -> String {
    if values.is_empty() {
        dash()
    } else {
        values.join(", ")
    }
}

/// A refusal's `details.fields`: each refused field with its rule.
fn refused_fields(e: &ApiError) -> Option<&serde_json::Map<String, serde_json::Value>> {
    e.details
        .as_ref()
        .and_then(|d| d.get("fields"))
        .and_then(serde_json::Value::as_object)
}

/// The field errors of a refusal (`details.fields`), by the field a form shows
/// (`items[2]`, `trust_anchors[0].name`: the list or object the error is in).
pub fn field_errors(e: &ApiError) -> std::collections::HashMap<String, String> {
    refused_fields(e)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let field = k.split(['[', '.']).next().unwrap_or(k).to_owned();
                    (field, v.as_str().unwrap_or("").to_owned())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The reasons of a refusal in one line: each refused field with its rule, else the message.
pub fn reasons(e: &ApiError) -> String {
    refused_fields(e)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k} {}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_else(|| e.message.clone())
}

#[allow(
    clippy::result_large_err,
    reason = "a page's refusal is the page itself, the handler's own answer"
)]
impl Visit {
    /// The signed-in session acting in tenant `slug`, and its membership (the console's
    /// not-found page when it is not one of the session's tenants).
    pub fn tenant(&self, slug: &str) -> Result<(TenantCaller, MemberOf), Response> {
        let (auth, m) = self.member(slug)?;
        let caller = TenantCaller {
            auth: auth.clone(),
            slug: slug.to_owned(),
        };
        Ok((caller, m))
    }

    /// The signed-in session and its membership of tenant `slug` (the console's not-found
    /// page when it is not one of the session's tenants).
    pub fn member(&self, slug: &str) -> Result<(&Dashboard, MemberOf), Response> {
        let auth = self.signed_in()?;
        let (m, _) = auth
            .member(&self.state, slug)
            .map_err(|e| self.refused(&e))?;
        Ok((auth, m))
    }

    /// What a form's refusal says: `reason`, in the reader's language.
    pub fn not_accepted(&self, reason: &str) -> String {
        self.t_with("console-not-accepted", &[("reason", reason)])
    }

    /// The name of a new or edited item (1 to 64 characters), with its `value`.
    pub fn name_input(&self, id: &str, value: String) -> FieldView {
        FieldView::input(id, "name", "text", self.t("console-col-name"), "off")
            .sized(1, 64)
            .filled(value, None)
    }

    /// "Yes" or "No" in the reader's language.
    pub fn yes_no(&self, b: bool) -> String {
        self.t(if b { "console-yes" } else { "console-no" })
    }

    /// A text input `name` labelled with the console text `label`, `min` to `max`
    /// characters long.
    pub fn text_input(
        &self,
        id: &str,
        name: &'static str,
        label: &str,
        (min, max): (usize, usize),
    ) -> FieldView {
        FieldView::input(id, name, "text", self.t(label), "off").sized(min, max)
    }

    /// A list page's section: its intro (a text id), then its table.
    pub fn listing(&self, intro: &str, table: Table) -> Section {
        Section {
            paragraphs: vec![self.t(intro)],
            table: Some(table),
            ..Section::default()
        }
    }

    /// An owner's form for a new item, under `heading` (a text id); when `reason` is not
    /// empty, the page says first why the last one was refused.
    pub fn new_item(&self, page: &mut ConsolePage, heading: &str, form: Form, reason: &str) {
        if !reason.is_empty() {
            page.error_summary = Some(self.not_accepted(reason));
        }
        page.sections.push(Section {
            heading: Some(self.t(heading)),
            forms: vec![form],
            ..Section::default()
        });
    }

    /// A form posting to `action`, its fields one under another, its button `label`.
    pub fn form(&self, action: String, label: String) -> Form {
        let csrf = self.csrf(&action);
        Form::post(action, csrf, label, false)
    }

    /// A table: its caption's id and text id, its columns' text ids, its rows, and what it
    /// says when it has none (text ids of the console's words).
    pub fn table(
        &self,
        (id, caption): (&'static str, &str),
        head: &[&str],
        rows: Vec<Vec<Cell>>,
        empty: &str,
    ) -> Table {
        Table {
            id,
            caption: self.t(caption),
            head: head.iter().map(|h| self.t(h)).collect(),
            rows,
            empty: if empty.is_empty() {
                String::new()
            } else {
                self.t(empty)
            },
        }
    }

    /// A one-button form to `action`, on a line with others.
    pub fn button(&self, action: String, label: String, secondary: bool) -> Form {
        let csrf = self.csrf(&action);
        let mut f = Form::post(action, csrf, label, secondary);
        f.inline = true;
        f
    }

    /// A `303` to `location` (after a form).
    pub fn go(&self, location: &str) -> Response {
        see_other(&self.reader, location, StatusCode::SEE_OTHER)
    }

    /// What an action answers: its page; the password asked again (then back to `back`)
    /// when it needs a recent re-authentication; else the refusal's page.
    pub fn acted(&self, answer: Result<Response, ApiError>, back: &str) -> Response {
        match answer {
            Ok(r) => r,
            Err(e) if e.code == "dashboard/reauth_required" => {
                sign_in::reauth_page(self, back, None)
            }
            Err(e) => self.refused(&e),
        }
    }

    /// What an edit form's update answers: back to `here` saying it was saved; the form's
    /// page again (`again`, given the reasons) when a value was refused; else as
    /// [`Visit::acted`].
    pub async fn saved<T, F>(
        &self,
        answer: Result<T, ApiError>,
        here: &str,
        again: impl FnOnce(String) -> F,
    ) -> Response
    where
        F: std::future::Future<Output = Response>,
    {
        match answer {
            Ok(_) => self.go(&format!("{here}?done=saved")),
            Err(e) if e.status == StatusCode::BAD_REQUEST => again(reasons(&e)).await,
            Err(e) => self.acted(Err(e), here),
        }
    }

    /// An owner's actions: one button each (`action`, its label's text id, secondary).
    pub fn actions(&self, buttons: Vec<(String, &str, bool)>) -> Section {
        Section {
            heading: Some(self.t("console-actions")),
            forms: buttons
                .into_iter()
                .map(|(action, label, secondary)| self.button(action, self.t(label), secondary))
                .collect(),
            ..Section::default()
        }
    }

    /// The page, 400 when it says something was refused, else 200.
    pub fn answer_page(&self, page: ConsolePage) -> Response {
        let status = if page.error_summary.is_some() {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::OK
        };
        self.answer(status, page)
    }

    /// A page titled `title` showing `secret` once (a new key, secret or token), after
    /// `intro` and `facts`, with the way `back`.
    pub fn shown_once(
        &self,
        title: &str,
        (intro, facts): (Vec<String>, Vec<(String, String)>),
        secret: Option<String>,
        back: String,
    ) -> Response {
        let mut page = self.page(title);
        let mut paragraphs = intro;
        if secret.is_some() {
            paragraphs.push(self.t("console-key-once"));
        }
        page.sections.push(Section {
            facts,
            paragraphs,
            codes: secret.into_iter().collect(),
            links: vec![Link {
                href: back,
                label: self.t("console-key-saved"),
            }],
            ..Section::default()
        });
        self.answer(StatusCode::OK, page)
    }
}

/// The console's path of tenant `slug`.
pub fn tenant_path(slug: &str) -> String {
    format!("/console/t/{slug}")
}

/// A `303` to `location` with `cookies` set.
pub fn redirect_with(visit: &Visit, location: &str, cookies: Vec<HeaderValue>) -> Response {
    let mut resp = see_other(&visit.reader, location, StatusCode::SEE_OTHER);
    for c in cookies {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    protect(resp.headers_mut());
    resp
}

/// The JSON body of a route's answer (the routes that answer a `Response`: a creation's
/// 201 with what is shown once).
pub async fn json_body(resp: Response) -> Option<serde_json::Value> {
    let bytes = axum::body::to_bytes(resp.into_body(), 256 * 1024)
        .await
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// What users are shown of a client or an agent besides its name: its description (at most
/// 500 characters) and its logo's https URL; both may be left empty for none. `prefix` keeps
/// the inputs' ids unique on the page.
pub fn profile_inputs(
    visit: &Visit,
    prefix: &str,
    description: &str,
    logo_url: &str,
) -> Vec<Control> {
    let mut about = FieldView::input(
        &format!("{prefix}-description"),
        "description",
        "text",
        visit.t("console-field-description"),
        "off",
    )
    .sized(0, 500)
    .filled(description.to_owned(), None);
    about.hint = Some(visit.t("console-hint-empty-none"));
    let mut logo = FieldView::input(
        &format!("{prefix}-logo"),
        "logo_url",
        "url",
        visit.t("console-field-logo_url"),
        "off",
    )
    .sized(0, 2048)
    .filled(logo_url.to_owned(), None);
    logo.hint = Some(visit.t("console-hint-logo"));
    vec![Control::Input(about), Control::Input(logo)]
}

/// A form of a page that was refused: which (a name the page gives its forms), why, what
/// was typed in it, and the status the page answers with.
pub struct Refused {
    pub form: String,
    pub reason: String,
    pub fields: FormFields,
    pub status: StatusCode,
}

impl Refused {
    /// What was typed in `field` of `form` when that form was refused, else empty.
    pub fn typed(refused: Option<&Refused>, form: &str, field: &str) -> String {
        refused
            .filter(|r| r.form == form)
            .map(|r| r.fields.one(field))
            .unwrap_or_default()
    }

    /// Why `form` was refused, in the reader's language, else nothing.
    pub fn error_of(refused: Option<&Refused>, visit: &Visit, form: &str) -> Option<String> {
        refused
            .filter(|r| r.form == form)
            .map(|r| visit.not_accepted(&r.reason))
    }
}

/// A list, one entry a line, with its `hint` and `value`.
pub fn lines(
    (id, name, label): (&str, &str, String),
    hint: Option<String>,
    value: String,
    error: Option<String>,
) -> Control {
    Control::Lines(Lines {
        id: id.to_owned(),
        name: name.to_owned(),
        label,
        hint,
        error,
        value,
    })
}

/// A choice of `options` (value, label), `chosen` selected (else the first).
pub fn choice(
    (id, name, label): (&str, &str, String),
    options: Vec<(String, String)>,
    chosen: &str,
) -> Control {
    let known = options.iter().any(|(v, _)| v == chosen);
    Control::Select(Select {
        id: id.to_owned(),
        name: name.to_owned(),
        label,
        options: options
            .into_iter()
            .enumerate()
            .map(|(i, (value, label))| SelectOption {
                selected: if known { value == chosen } else { i == 0 },
                value,
                label,
            })
            .collect(),
        error: None,
    })
}

/// A text that may be left empty for none.
pub fn optional(v: &str) -> Option<String> {
    Some(v.trim().to_owned()).filter(|v| !v.is_empty())
}
