//! What every HTML page of the accounts URL shares: the one template
//! (`templates/hosted/page.html`), the reader's language, the CSRF value bound to the
//! browser's random cookie, the security headers, and the page that says what went wrong.
//! Used by the mailed links' pages ([`super::hosted`]) and the authorization server's sign-in
//! and consent pages (`oauth::browser`).
//!
//! - Each form carries a per-page CSRF value: a hash of the browser's `tessera_csrf` cookie
//!   (random, `HttpOnly`, `SameSite=Lax`), the page and what it is for. A `POST` whose value
//!   does not match its cookie is refused (403) before anything is used.
//! - Every page answers with a strict `Content-Security-Policy` (no script at all but the
//!   passkey button's file and, on a sign-in that must solve one, the CAPTCHA widget's),
//!   `frame-ancestors 'none'`, `X-Frame-Options: DENY`, `Referrer-Policy: no-referrer` and
//!   `Cache-Control: no-store`.
//! - Pages speak the reader's language: `?lang=`, else `Accept-Language`, else the tenant's
//!   default, else English.

use askama::Template;
use axum::{
    extract::{FromRequestParts, Query},
    http::{header, request::Parts, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Deserialize;
use tessera_actors::{policy::is_weak_password, GuardianError};
use tessera_actors::{tenant::settings::Branding, CallError, TenantError, TenantHandle};
use tessera_storage::{ct_eq, random_token, sha256};

use super::error::len_between;
use crate::{app::AppState, i18n};

pub const CSRF_COOKIE: &str = "tessera_csrf";
/// The stylesheet of a tenant's colour (`?c=rrggbb`), served by `hosted.rs`.
pub const BRAND_CSS_PATH: &str = "/hosted/brand.css";
/// The shortest and longest passwords, as the API takes them.
pub const PASSWORD_MIN: usize = 12;
pub const PASSWORD_MAX: usize = 128;

#[derive(Template)]
#[template(path = "hosted/page.html")]
pub struct PageTemplate {
    pub lang: &'static str,
    pub tenant: Option<String>,
    /// The tenant's logo, above its name.
    pub logo: Option<String>,
    /// The stylesheet of the tenant's colour, after the pages' own.
    pub brand_css: Option<String>,
    pub title: String,
    pub skip: String,
    pub footer: Option<String>,
    pub error_summary: Option<String>,
    pub paragraphs: Vec<String>,
    /// A bulleted list after the paragraphs (what a consent grants).
    pub items: Vec<String>,
    /// Paragraphs after the list (the paragraph before it introduces it).
    pub after: Vec<String>,
    /// Text shown as written, line breaks kept (a mail message in the development viewer).
    pub text: Option<String>,
    /// A list of links after the text.
    pub links: Vec<LinkView>,
    pub forms: Vec<FormView>,
    pub link: Option<LinkView>,
    /// The passkey button: the one part of a page that runs script (`/hosted/passkey.js`).
    pub passkey: Option<PasskeyButton>,
    /// Links that sign in with a social provider.
    pub social: Option<SocialButtons>,
    /// A QR code (inline SVG made by this server from its own URL).
    pub qr: Option<String>,
    /// The CAPTCHA provider's script, on a page whose form shows the widget.
    pub captcha_script: Option<String>,
    /// Where the page sends the browser at once (an instant redirect without script, to a
    /// page of this server; `link` says the same for whoever stays).
    pub refresh: Option<String>,
}

/// The sign-in page's social providers: a heading and one link each.
pub struct SocialButtons {
    pub heading: String,
    pub links: Vec<LinkView>,
}

/// What the passkey script needs: where to get options and send the assertion, the page's
/// CSRF value, and the words.
pub struct PasskeyButton {
    pub begin: String,
    pub finish: String,
    pub csrf: String,
    pub heading: String,
    pub button: String,
    /// Shown when the browser or the server refuses.
    pub failed: String,
}

/// A form that posts back to the page (or to `action`).
pub struct FormView {
    pub action: Option<String>,
    pub csrf: String,
    /// A heading above the form, when a page has several.
    pub heading: Option<String>,
    pub hidden: Vec<(&'static str, String)>,
    pub fields: Vec<FieldView>,
    pub checks: Vec<CheckView>,
    pub buttons: Vec<ButtonView>,
    /// The CAPTCHA widget's site key, when the form must carry a solved CAPTCHA.
    pub captcha: Option<String>,
}

impl FormView {
    /// A form with one submit button.
    pub fn new(csrf: String, button: String) -> Self {
        FormView {
            action: None,
            csrf,
            heading: None,
            hidden: Vec::new(),
            fields: Vec::new(),
            checks: Vec::new(),
            buttons: vec![ButtonView {
                name: "",
                value: String::new(),
                label: button,
                secondary: false,
            }],
            captcha: None,
        }
    }
}

pub struct FieldView {
    pub name: std::borrow::Cow<'static, str>,
    /// The input's `id` (unique on the page).
    pub id: String,
    /// `password`, `email` or `text`.
    pub kind: &'static str,
    pub label: String,
    pub hint: Option<String>,
    pub error: Option<String>,
    pub autocomplete: &'static str,
    pub value: String,
    pub min: usize,
    pub max: usize,
    /// `numeric` for codes.
    pub inputmode: &'static str,
}

impl FieldView {
    /// A new password (the reset page).
    pub fn new_password(name: &'static str, label: String, hint: Option<String>) -> Self {
        FieldView {
            name: name.into(),
            id: name.to_owned(),
            kind: "password",
            label,
            hint,
            error: None,
            autocomplete: "new-password",
            value: String::new(),
            min: PASSWORD_MIN,
            max: PASSWORD_MAX,
            inputmode: "",
        }
    }

    /// The field as the reader typed it, with its error.
    pub fn filled(mut self, value: String, error: Option<String>) -> Self {
        self.value = value;
        self.error = error;
        self
    }

    /// The current password (a sign-in or a re-authentication): at least `min` characters.
    pub fn current_password(id: &str, label: String, min: usize) -> Self {
        FieldView::input(id, "password", "password", label, "current-password")
            .sized(min, PASSWORD_MAX)
    }

    /// A one-time code typed from an app or a message (`min` to `max` characters, digits on
    /// a phone's keypad).
    pub fn one_time_code(
        id: &str,
        name: &'static str,
        label: String,
        (min, max): (usize, usize),
    ) -> Self {
        let mut code = FieldView::input(id, name, "text", label, "one-time-code").sized(min, max);
        code.inputmode = "numeric";
        code
    }

    /// The field with its length between `min` and `max`.
    pub fn sized(mut self, min: usize, max: usize) -> Self {
        self.min = min;
        self.max = max;
        self
    }

    /// Any other input: `kind` is its type, `id` unique on the page.
    pub fn input(
        id: &str,
        name: &'static str,
        kind: &'static str,
        label: String,
        autocomplete: &'static str,
    ) -> Self {
        FieldView {
            name: name.into(),
            id: id.to_owned(),
            kind,
            label,
            hint: None,
            error: None,
            autocomplete,
            value: String::new(),
            min: 0,
            max: 320,
            inputmode: "",
        }
    }
}

/// A checkbox.
pub struct CheckView {
    pub name: &'static str,
    pub id: String,
    pub value: String,
    pub label: String,
    /// Ticked at first (an attestation never is: the reader must tick it).
    pub checked: bool,
}

/// A submit button; with a `name`, its `value` is sent.
pub struct ButtonView {
    pub name: &'static str,
    pub value: String,
    pub label: String,
    pub secondary: bool,
}

pub struct LinkView {
    pub href: String,
    pub label: String,
}

/// A new password twice, with the errors of each.
pub fn new_password_fields(r: &Reader, [first, second]: [Option<String>; 2]) -> Vec<FieldView> {
    let mut password = FieldView::new_password(
        "password",
        r.t("reset-password-label"),
        Some(r.t("reset-password-hint")),
    );
    password.error = first;
    let mut confirm = FieldView::new_password("password_confirm", r.t("reset-confirm-label"), None);
    confirm.error = second;
    vec![password, confirm]
}

/// A posted form that sets a new password: its CSRF value and the password twice (the reset
/// page's, the invitation page's).
#[derive(Deserialize)]
pub struct NewPasswordForm {
    #[serde(default)]
    pub csrf: String,
    #[serde(default)]
    pub password: String,
    #[serde(default)]
    pub password_confirm: String,
}

/// The errors of a new password and its repetition, in the API's order: the length, then
/// the common-password list; then the match.
pub fn new_password_errors(r: &Reader, password: &str, confirm: &str) -> [Option<String>; 2] {
    let first = if !len_between(password, PASSWORD_MIN, PASSWORD_MAX) {
        Some(r.t("reset-error-length"))
    } else if is_weak_password(password) {
        Some(r.t("reset-error-weak"))
    } else {
        None
    };
    let second = (first.is_none() && password != confirm).then(|| r.t("reset-error-mismatch"));
    [first, second]
}

/// A mailed link's query: its token, and the language the reader chose.
#[derive(Deserialize)]
pub struct LinkQuery {
    pub token: Option<String>,
    pub lang: Option<String>,
}

/// What every page of a mailed link reads first: the reader's headers and the link's query
/// (the tenants' mailed links' pages and the dashboard's).
pub struct LinkVisit {
    pub state: AppState,
    pub headers: HeaderMap,
    pub q: LinkQuery,
}

impl FromRequestParts<AppState> for LinkVisit {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let Query(q) = Query::<LinkQuery>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(LinkVisit {
            state: state.clone(),
            headers: parts.headers.clone(),
            q,
        })
    }
}

/// `?lang=`: the language the reader chose.
#[derive(Deserialize)]
struct LangQuery {
    lang: Option<String>,
}

/// One request's page context: the reader's language, the tenant, the browser's CSRF secret.
pub struct Reader {
    pub lang: &'static str,
    /// The reader's own choice (`?lang=`, `Accept-Language`), if it is one of the five.
    pub requested: Option<&'static str>,
    pub tenant: Option<String>,
    /// The tenant's branding, when it set one.
    pub brand: Branding,
    /// The browser's secret, and whether it must be set (it was absent or malformed).
    secret: (String, bool),
    pub secure_cookie: bool,
}

impl Reader {
    pub fn new(state: &AppState, headers: &HeaderMap, lang: Option<&str>) -> Self {
        let accept = headers
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok());
        let secret = cookie(headers, CSRF_COOKIE)
            .filter(|v| v.len() == 43 && URL_SAFE_NO_PAD.decode(v).is_ok())
            .map_or_else(|| (random_token(32), true), |v| (v.to_owned(), false));
        let requested = Some(i18n::negotiate(&[lang], accept, "")).filter(|l| !l.is_empty());
        Reader {
            lang: requested.unwrap_or("en"),
            requested,
            tenant: None,
            brand: Branding::default(),
            secret,
            secure_cookie: state.accounts_base().starts_with("https://"),
        }
    }

    /// The reader of a request: its `?lang=` (none when the query cannot be read), then its
    /// headers.
    pub async fn of_request(parts: &mut Parts, state: &AppState) -> Self {
        let lang = Query::<LangQuery>::from_request_parts(parts, state)
            .await
            .ok()
            .and_then(|Query(q)| q.lang);
        Reader::new(state, &parts.headers, lang.as_deref())
    }

    /// Shows the tenant's name, and speaks its default language unless the reader chose one.
    pub fn set_tenant(&mut self, name: &str, default_locale: &str) {
        self.tenant = Some(clean_name(name));
        if self.requested.is_none() {
            self.lang = i18n::supported(default_locale).unwrap_or("en");
        }
    }

    /// Shows the tenant's branding (read from its published edge policy, no actor hop);
    /// a tenant that cannot be read now keeps the pages' own look.
    pub async fn brand(&mut self, tenant: &TenantHandle) {
        if let Ok(edge) = tenant.edge().await {
            self.brand = edge.branding.clone();
        }
    }

    pub fn t(&self, id: &str) -> String {
        self.t_with(id, &[])
    }

    /// The text `id` with variables besides `$tenant` and `$min`.
    pub fn t_with(&self, id: &str, args: &[(&str, &str)]) -> String {
        let tenant = self.tenant.as_deref().unwrap_or("");
        let min = PASSWORD_MIN.to_string();
        let mut all = vec![("tenant", tenant), ("min", min.as_str())];
        all.extend_from_slice(args);
        i18n::PAGES.text(self.lang, id, &all)
    }

    /// The CSRF value of the page at `path` for `subject` (the link's token, the request).
    pub fn csrf(&self, path: &str, subject: &str) -> String {
        let mut m = self.secret.0.as_bytes().to_vec();
        m.push(0);
        m.extend_from_slice(path.as_bytes());
        m.push(0);
        m.extend_from_slice(subject.as_bytes());
        URL_SAFE_NO_PAD.encode(sha256(&m))
    }

    pub fn csrf_ok(&self, path: &str, subject: &str, sent: &str) -> bool {
        // A secret made for this request (no cookie came) matches nothing sent.
        !self.secret.1 && ct_eq(self.csrf(path, subject).as_bytes(), sent.as_bytes())
    }

    pub fn page(&self, title: &str) -> PageTemplate {
        PageTemplate {
            lang: self.lang,
            tenant: self.tenant.clone(),
            logo: self.brand.logo_url.clone(),
            brand_css: self
                .brand
                .primary_color
                .as_deref()
                .map(|c| format!("{BRAND_CSS_PATH}?c={}", c.trim_start_matches('#'))),
            title: self.t(title),
            skip: self.t("skip-to-content"),
            footer: self.tenant.as_ref().map(|_| self.t("page-footer")),
            error_summary: None,
            paragraphs: Vec::new(),
            items: Vec::new(),
            after: Vec::new(),
            text: None,
            links: Vec::new(),
            forms: Vec::new(),
            link: None,
            passkey: None,
            social: None,
            qr: None,
            captcha_script: None,
            refresh: None,
        }
    }

    /// The page as an answer with `status` and the security headers; `form_targets` are
    /// where a form on it may lead besides this server: every URL the redirects that follow
    /// its post can end at (CSP's `form-action` covers the whole chain, so a form whose
    /// answer redirects to the app, or to this server which then redirects to the app, must
    /// list the app).
    pub fn answer(
        &self,
        status: StatusCode,
        page: PageTemplate,
        form_targets: &[&str],
    ) -> Response {
        let Ok(html) = page.render() else {
            return (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response();
        };
        let mut form_action = "'self'".to_owned();
        let mut listed: Vec<String> = Vec::new();
        for source in form_targets.iter().filter_map(|t| source_of(t)) {
            if !listed.contains(&source) {
                form_action.push(' ');
                form_action.push_str(&source);
                listed.push(source);
            }
        }
        // Script only for the passkey button (this server's one file, calling this server) and
        // the CAPTCHA widget (its provider's script, which renders in a frame of its origin).
        let widget = page.captcha_script.as_deref().and_then(source_of);
        let script = match (page.passkey.is_some(), widget) {
            (false, None) => String::new(),
            (true, None) => "script-src 'self'; connect-src 'self'; ".to_owned(),
            (passkey, Some(w)) => {
                let own = if passkey { "'self' " } else { "" };
                format!("script-src {own}{w}; connect-src {own}{w}; frame-src {w}; ")
            }
        };
        // The tenant's logo is the one image from elsewhere.
        let logo = page
            .logo
            .as_deref()
            .and_then(source_of)
            .map(|o| format!(" {o}"))
            .unwrap_or_default();
        let csp = format!(
            "default-src 'none'; {script}style-src 'self'; img-src 'self'{logo}; \
             form-action {form_action}; frame-ancestors 'none'; base-uri 'none'"
        );
        self.html(status, html, &csp)
    }

    /// Rendered HTML as an answer with `status`, the policy `csp` and the other security
    /// headers every page carries (and the CSRF cookie when this request made it).
    pub fn html(&self, status: StatusCode, html: String, csp: &str) -> Response {
        let mut resp = (status, html).into_response();
        let h = resp.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        if let Ok(v) = HeaderValue::from_str(csp) {
            h.insert(header::CONTENT_SECURITY_POLICY, v);
        }
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        protect(h);
        h.insert(
            header::CONTENT_LANGUAGE,
            HeaderValue::from_static(self.lang),
        );
        self.set_csrf_cookie(&mut resp);
        resp
    }

    /// Sets the browser's CSRF secret when this request made it.
    pub fn set_csrf_cookie(&self, resp: &mut Response) {
        if self.secret.1 {
            let secure = if self.secure_cookie { "; Secure" } else { "" };
            let c = format!(
                "{CSRF_COOKIE}={}; Path=/; HttpOnly; SameSite=Lax; Max-Age=86400{secure}",
                self.secret.0
            );
            if let Ok(v) = HeaderValue::from_str(&c) {
                resp.headers_mut().append(header::SET_COOKIE, v);
            }
        }
    }

    /// A page that says what went wrong, with its status.
    pub fn problem(&self, problem: Problem) -> Response {
        let (status, title, text) = match problem {
            Problem::Invalid => (
                StatusCode::BAD_REQUEST,
                "error-invalid-title",
                "error-invalid",
            ),
            Problem::Expired => (StatusCode::GONE, "error-expired-title", "error-expired"),
            Problem::Csrf => (StatusCode::FORBIDDEN, "error-csrf-title", "error-csrf"),
            Problem::Disabled => (
                StatusCode::FORBIDDEN,
                "error-disabled-title",
                "error-disabled",
            ),
            Problem::Busy => (
                StatusCode::SERVICE_UNAVAILABLE,
                "error-busy-title",
                "error-busy",
            ),
            Problem::TooMany => (
                StatusCode::TOO_MANY_REQUESTS,
                "error-busy-title",
                "error-busy",
            ),
            Problem::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "error-internal-title",
                "error-internal",
            ),
            Problem::GuardianPending => (
                StatusCode::FORBIDDEN,
                "error-guardian-pending-title",
                "error-guardian-pending",
            ),
            Problem::GuardianDeclined => (
                StatusCode::FORBIDDEN,
                "error-guardian-declined-title",
                "error-guardian-declined",
            ),
            Problem::AgeRequired => (
                StatusCode::FORBIDDEN,
                "error-age-required-title",
                "error-age-required",
            ),
            Problem::EmailUnconfirmed => (
                StatusCode::FORBIDDEN,
                "error-email-unconfirmed-title",
                "error-email-unconfirmed",
            ),
        };
        self.problem_page(status, title, text)
    }

    /// A page of one paragraph with `status`.
    pub fn problem_page(&self, status: StatusCode, title: &str, text: &str) -> Response {
        let mut page = self.page(title);
        page.paragraphs.push(self.t(text));
        let mut resp = self.answer(status, page, &[]);
        if matches!(
            status,
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
        ) {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
        }
        resp
    }
}

/// `Referrer-Policy: no-referrer`, `Cache-Control: no-store`, `nosniff`: on every page and
/// every redirect that carries a token or a code.
pub fn protect(h: &mut HeaderMap) {
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

/// A `303 See Other` to `location` (after a form), or the internal-error page.
pub fn see_other(reader: &Reader, location: &str, status: StatusCode) -> Response {
    let Ok(v) = HeaderValue::from_str(location) else {
        return reader.problem(Problem::Internal);
    };
    let mut resp = status.into_response();
    let h = resp.headers_mut();
    h.insert(header::LOCATION, v);
    protect(h);
    reader.set_csrf_cookie(&mut resp);
    resp
}

/// The form fields of a hosted page's POST (the first of a repeated name; the consent page's
/// scope boxes are read apart).
pub fn form_fields(body: &[u8]) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    for (k, v) in form_urlencoded::parse(body) {
        out.entry(k.into_owned()).or_insert_with(|| v.into_owned());
    }
    out
}

pub fn field<'f>(form: &'f std::collections::HashMap<String, String>, name: &str) -> &'f str {
    form.get(name).map_or("", String::as_str)
}

/// What can go wrong on a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// No token, or one that names no tenant.
    Invalid,
    /// Used, expired or unknown.
    Expired,
    Csrf,
    Disabled,
    /// The service is busy (503).
    Busy,
    /// Too many attempts or requests from this address or for this account (429).
    TooMany,
    Internal,
    /// The account waits for a guardian's consent (minor protection).
    GuardianPending,
    /// A guardian declined consent for the account.
    GuardianDeclined,
    /// Minor protection: this way of signing up brings no age.
    AgeRequired,
    /// The account's address is not confirmed: it adds no consent or other lasting way in.
    EmailUnconfirmed,
}

impl From<CallError<TenantError>> for Problem {
    fn from(e: CallError<TenantError>) -> Self {
        match e {
            CallError::Failed(
                TenantError::InvalidLinkToken
                | TenantError::InvalidChallenge
                | TenantError::NotFound,
            ) => Problem::Expired,
            CallError::Failed(TenantError::PasswordlessDisabled) => Problem::Disabled,
            CallError::Failed(
                TenantError::RateLimited { .. } | TenantError::TooManyAttempts { .. },
            ) => Problem::TooMany,
            CallError::Unavailable => Problem::Busy,
            CallError::Failed(TenantError::Guardian(GuardianError::ConsentPending)) => {
                Problem::GuardianPending
            }
            CallError::Failed(TenantError::Guardian(GuardianError::ConsentDeclined)) => {
                Problem::GuardianDeclined
            }
            CallError::Failed(TenantError::Guardian(GuardianError::AgeRequired)) => {
                Problem::AgeRequired
            }
            CallError::Failed(TenantError::EmailUnconfirmed { .. }) => Problem::EmailUnconfirmed,
            CallError::Failed(other) => {
                tracing::error!(error = %other, "a hosted page failed");
                Problem::Internal
            }
        }
    }
}

/// What a CSP source list names to allow `url`: its origin (`scheme://host[:port]`), or for a
/// native app's private-use scheme (RFC 8252) the scheme alone.
pub fn source_of(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    if matches!(u.scheme(), "http" | "https") {
        return Some(u.origin().ascii_serialization()).filter(|o| o != "null");
    }
    Some(format!("{}:", u.scheme()))
}

/// The value of cookie `name` in the request.
pub fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// `url` with `name=value` added to its query.
pub fn with_query(url: &str, name: &str, value: &str) -> Option<String> {
    let mut u = url::Url::parse(url).ok()?;
    u.query_pairs_mut().append_pair(name, value);
    Some(u.into())
}

/// A name as shown: control characters become spaces.
pub fn clean_name(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_owned()
}

/// The QR code of `data` as an inline SVG (black modules on white, with the quiet zone): the
/// wallet hand-off's and the console's authenticator set-up.
pub fn qr_svg(data: &str) -> Option<String> {
    let code = qrcode::QrCode::with_error_correction_level(data, qrcode::EcLevel::M).ok()?;
    let svg = code
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(240, 240)
        .dark_color(qrcode::render::svg::Color("#000000"))
        .light_color(qrcode::render::svg::Color("#ffffff"))
        .build();
    // The renderer starts with an XML declaration, which has no place inside HTML.
    let start = svg.find("<svg")?;
    Some(svg[start..].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_found_by_exact_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; tessera_csrf_x=2; tessera_csrf=three"),
        );
        assert_eq!(cookie(&h, CSRF_COOKIE), Some("three"));
        assert_eq!(cookie(&h, "b"), None);
    }

    #[test]
    fn a_query_pair_is_added_and_form_targets_are_named_by_origin_or_scheme() {
        assert_eq!(
            with_query("https://app.test/cb?x=1", "code", "a b").as_deref(),
            Some("https://app.test/cb?x=1&code=a+b")
        );
        assert_eq!(
            source_of("http://127.0.0.1:9/cb?x").as_deref(),
            Some("http://127.0.0.1:9")
        );
        assert_eq!(
            source_of("com.example.app:/oauth/cb").as_deref(),
            Some("com.example.app:")
        );
    }
}
