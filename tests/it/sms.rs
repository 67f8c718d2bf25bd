//! SMS one-time codes: sign-in by phone (`/v1/auth/sms-otp`), the outbox and HTTP providers (the
//! platform account and a tenant's own, BYOK), retries, the country allowlist, the monthly cap,
//! per-number spacing and the login throttle, numbers that cannot receive texts, phone
//! verification of a signed-in user (confirmed addresses only) and its notices by mail, the
//! dashboard's `sms-test` (its hourly limit, and the provider's words only for a tenant's own
//! account), and secrets kept out of the log.
//!
//! Requests for a code are spaced 60 s per number: a sub-case that needs another code for the
//! same number restarts the server first (rate windows live in memory and a restart forgives
//! them, while codes and accounts are on disk). The provider is a local stub speaking the
//! Messages REST API (`POST /2010-04-01/Accounts/{sid}/Messages.json`).

use std::{
    collections::{BTreeMap, VecDeque},
    sync::{
        atomic::{AtomicU32, AtomicU64, Ordering},
        Arc, Barrier, Mutex,
    },
    time::Duration,
};

use serde_json::{json, Value};

use crate::stub::{Route, StubRequest, StubResponse, StubServer};
use crate::support::{
    assert_accepted, assert_error, assert_sign_in_tokens, enable_guests, env_refs, eventually, fr,
    fresh_client_ip, json_keys as keys, name_set as set, new_guest, other_code, patch_security,
    six_digit_code, totp_step_now, user_id, user_setup, wait_for_idle_delivery, AuthAnswer,
    Session, SmtpStub, TestServer, UserApi, UserTokens, PASSWORD, STEP_UP_HEADER, USER_PASSWORD,
};

const EXPIRED: &str = "invalid_or_expired_token";
const INVALID: &str = "validation/invalid_request";
const DISABLED: &str = "passwordless/disabled";
const RATE_LIMITED: &str = "auth/rate_limited";
const TOO_MANY: &str = "auth/too_many_attempts";
const COUNTRY: &str = "sms/country_not_allowed";
const CAP: &str = "sms/monthly_cap_reached";
const PROVIDER_ERROR: &str = "sms/provider_error";
const ANON_NOT_ALLOWED: &str = "auth/anonymous_not_allowed";
const NOT_VERIFIED: &str = "auth/email_unconfirmed";

const SMS_OTP: &str = "/v1/auth/sms-otp";
const SMS_VERIFY: &str = "/v1/auth/sms-otp/verify";
const PHONE_VERIFY: &str = "/v1/users/me/phone/verify";
const PHONE_CONFIRM: &str = "/v1/users/me/phone/confirm";
const SMS_TEST: &str = "/v1/auth/dashboard/sms-test";

pub(crate) const LOGIN_KIND: &str = "login_code";
pub(crate) const PHONE_KIND: &str = "phone_verify";
const TEST_KIND: &str = "test";

/// The mail notices of a phone number's arrival on an account and its departure.
const PHONE_ADDED: &str = "phone_added";
const PHONE_REMOVED: &str = "phone_removed";

/// The platform's provider account (the server's `[sms]` configuration).
const PLATFORM_SID: &str = "AC0123456789abcdef0123456789abcdef";
const PLATFORM_TOKEN: &str = "platform-token-7f3e9a1c5b2d4e6f8a0b";
const PLATFORM_MG: &str = "MG00112233445566778899aabbccddeeff";
const PLATFORM_FROM: &str = "+15005550006";

/// A tenant's own provider account (BYOK).
const BYOK_SID: &str = "ACfedcba9876543210fedcba9876543210";
const BYOK_TOKEN: &str = "byok-token-Q9wE8rT7yU6iO5pA4sD3fG2hJ1kL0z";
const BYOK_MG: &str = "MGffeeddccbbaa99887766554433221100";

/// Valid numbers outside the platform's default allowlist, and a few inside it.
const US: &str = "+12015550123";
const BR: &str = "+5511912345678";
const NL: &str = "+31612345678";
/// (Not the contract's +447700900123: a drama number, which the phone library holds invalid.)
const GB: &str = "+447400123456";

// ---------------------------------------------------------------------------------------------
// The provider stub
// ---------------------------------------------------------------------------------------------

/// One request the provider stub received.
#[derive(Clone, Debug)]
struct ProviderRequest {
    method: String,
    path: String,
    content_type: Option<String>,
    /// The decoded HTTP Basic user and password.
    user: Option<String>,
    password: Option<String>,
    form: BTreeMap<String, String>,
    /// What the stub answered: the status, and the sid of a 201.
    status: u16,
    sid: Option<String>,
}

impl ProviderRequest {
    fn field(&self, name: &str) -> Option<&str> {
        self.form.get(name).map(String::as_str)
    }

    /// The six-digit code in `Body`.
    #[track_caller]
    fn code(&self) -> String {
        let body = self.field("Body").unwrap_or_default();
        six_digit_code(body).unwrap_or_else(|| panic!("no six-digit code in Body {body:?}"))
    }

    /// Asserts a send through the account `sid`/`token` with messaging service `mg` to `to`.
    #[track_caller]
    fn assert_sent_with(&self, sid: &str, token: &str, mg: &str, to: &str) {
        assert_eq!(self.method, "POST", "{self:?}");
        assert_eq!(
            self.path,
            format!("/2010-04-01/Accounts/{sid}/Messages.json"),
            "{self:?}"
        );
        assert!(
            self.content_type
                .as_deref()
                .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded")),
            "{self:?}"
        );
        assert_eq!(self.user.as_deref(), Some(sid), "Basic user: {self:?}");
        assert_eq!(self.password.as_deref(), Some(token), "Basic password");
        assert_eq!(self.field("To"), Some(to), "{:?}", self.form);
        assert_eq!(
            self.field("MessagingServiceSid"),
            Some(mg),
            "{:?}",
            self.form
        );
        assert_eq!(self.field("From"), None, "From with a messaging service");
    }
}

type Reply = (u16, Value);

#[derive(Default)]
struct Script {
    /// Answers used once each, first in first out.
    queue: VecDeque<Reply>,
    /// The answer when the queue is empty (none: 201 with a fresh sid).
    always: Option<Reply>,
}

/// A local stand-in for the SMS provider's Messages REST API. Records every request and answers
/// from its script; by default `201 {"sid": "SM<32 hex>", "status": "queued"}`.
struct ProviderStub {
    url: String,
    seen: Arc<Mutex<Vec<ProviderRequest>>>,
    script: Arc<Mutex<Script>>,
    _server: StubServer,
}

static NEXT_SID: AtomicU64 = AtomicU64::new(1);

fn fresh_sid() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    format!(
        "SM{nanos:016x}{:016x}",
        NEXT_SID.fetch_add(1, Ordering::SeqCst)
    )
}

/// A provider error body.
fn provider_error(status: u16, code: u32, message: &str) -> Value {
    json!({
        "code": code,
        "message": message,
        "more_info": format!("https://www.twilio.com/docs/errors/{code}"),
        "status": status,
    })
}

impl ProviderStub {
    fn start() -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(Script::default()));
        let (seen2, script2) = (seen.clone(), script.clone());
        let server = StubServer::start(vec![Route::any(move |req| {
            answer_request(req, &seen2, &script2)
        })]);
        ProviderStub {
            url: server.url().to_owned(),
            seen,
            script,
            _server: server,
        }
    }

    /// The next request is answered `status` with `body` (once).
    fn then_answer(&self, status: u16, body: Value) {
        self.script.lock().unwrap().queue.push_back((status, body));
    }

    /// Every request (after the queued ones) is answered `reply`; `None`: the default 201.
    fn always_answer(&self, reply: Option<Reply>) {
        self.script.lock().unwrap().always = reply;
    }

    fn requests(&self) -> Vec<ProviderRequest> {
        self.seen.lock().unwrap().clone()
    }

    /// The requests whose `To` is `to`, in arrival order.
    fn to(&self, to: &str) -> Vec<ProviderRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.field("To") == Some(to))
            .collect()
    }

    /// Waits (up to 15 s) for the `n`-th (1-based) request to `to`.
    #[track_caller]
    fn wait_to(&self, to: &str, n: usize) -> ProviderRequest {
        if !eventually(Duration::from_secs(15), || self.to(to).len() >= n) {
            let seen: Vec<String> = self
                .requests()
                .iter()
                .map(|r| format!("{} {:?}", r.path, r.field("To")))
                .collect();
            panic!("no request #{n} to {to} reached the provider; it saw {seen:?}");
        }
        self.to(to).swap_remove(n - 1)
    }

    /// Asserts the requests answered so far sent nothing to `to` through this provider
    /// (checked once a code asked for later from `courier` has arrived: see
    /// `courier_caught_up`).
    #[track_caller]
    fn assert_none_to(&self, srv: &TestServer, courier: &UserApi, to: &str) {
        courier_caught_up(srv, courier);
        let got = self.to(to);
        assert!(got.is_empty(), "the provider got messages to {to}: {got:?}");
    }
}

/// Records one request and answers it from the script.
fn answer_request(
    req: &StubRequest,
    seen: &Mutex<Vec<ProviderRequest>>,
    script: &Mutex<Script>,
) -> StubResponse {
    let (user, password) = match req.basic_auth() {
        Some((u, p)) => (Some(u), Some(p)),
        None => (None, None),
    };
    let form = req.form();
    let reply = {
        let mut s = script.lock().unwrap();
        s.queue.pop_front().or_else(|| s.always.clone())
    };
    let (status, answer, sid) = match reply {
        Some((status, answer)) => (status, answer, None),
        None => {
            let sid = fresh_sid();
            let answer = json!({
                "sid": sid,
                "status": "queued",
                "to": form.get("To"),
                "messaging_service_sid": form.get("MessagingServiceSid"),
            });
            (201, answer, Some(sid))
        }
    };
    seen.lock().unwrap().push(ProviderRequest {
        method: req.method.clone(),
        path: req.path.clone(),
        content_type: req.header("content-type").map(str::to_owned),
        user,
        password,
        form,
        status,
        sid,
    });
    StubResponse::json(status, &answer)
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A German mobile number (E.164), distinct for each `n` below a hundred.
fn de(n: u32) -> String {
    format!("+49151{:08}", 23_456_700 + n)
}

/// Environment for a server whose `[sms]` sends through `stub` with the platform account.
fn http_env(stub: &ProviderStub) -> Vec<(String, String)> {
    [
        ("TESSERA__SMS__TRANSPORT", "http"),
        ("TESSERA__SMS__BASE_URL", stub.url.as_str()),
        ("TESSERA__SMS__ACCOUNT_SID", PLATFORM_SID),
        ("TESSERA__SMS__AUTH_TOKEN", PLATFORM_TOKEN),
        ("TESSERA__SMS__MESSAGING_SERVICE_SID", PLATFORM_MG),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    // Quoted: the environment's `+15005550006` would be read as a number.
    .chain([(
        "TESSERA__SMS__FROM".to_owned(),
        format!("\"{PLATFORM_FROM}\""),
    )])
    .collect()
}

/// A server (mail through a stub, `X-Forwarded-For` believed) with `extra` environment, one
/// tenant with SMS OTP turned on, and its owner's dashboard session.
fn sms_setup(tenant: &str, extra: &[(String, String)]) -> (SmtpStub, TestServer, UserApi, Session) {
    let (smtp, srv, api, s) = user_setup(tenant, &env_refs(extra));
    enable_sms(&srv, &s, &api.slug);
    (smtp, srv, api, s)
}

#[track_caller]
pub(crate) fn enable_sms(srv: &TestServer, s: &Session, slug: &str) {
    let out = patch_security(srv, s, slug, json!({ "sms_otp_enabled": true }));
    assert_eq!(out["sms_otp_enabled"], true, "{out}");
}

/// Stores the tenant's own provider account (BYOK changes need a fresh re-authentication).
#[track_caller]
fn set_byok(srv: &TestServer, s: &Session, slug: &str) {
    srv.reauth(s, PASSWORD);
    let out = patch_security(
        srv,
        s,
        slug,
        json!({
            "byok_provider_account_sid": BYOK_SID,
            "byok_provider_auth_token": BYOK_TOKEN,
            "byok_provider_messaging_service_sid": BYOK_MG,
        }),
    );
    assert_eq!(out["byok_provider_account_sid"], BYOK_SID, "{out}");
    assert_eq!(out["byok_provider_messaging_service_sid"], BYOK_MG, "{out}");
    assert_eq!(out["byok_provider_auth_token_set"], true, "{out}");
    assert!(!out.to_string().contains(BYOK_TOKEN), "token echoed: {out}");
}

/// Starts the server again (forgetting its in-memory rate windows; failure throttles are on
/// disk) and points `apis` at its new address.
fn restart(srv: &mut TestServer, apis: &mut [&mut UserApi]) {
    srv.restart();
    for api in apis.iter_mut() {
        api.rebase(srv);
    }
}

/// Restarts with `overrides` to the environment and points `api` at the new address.
fn restart_with(srv: &mut TestServer, api: &mut UserApi, overrides: &[(&str, &str)]) {
    srv.restart_with(overrides);
    api.rebase(srv);
}

/// A fresh token pair for the session of `t` (after a restart: of the new issuer).
#[track_caller]
fn renew(api: &UserApi, t: &UserTokens) -> UserTokens {
    UserTokens::from_answer(&api.refresh(&t.refresh))
}

/// `POST path` with the tenant's API key, from an address of its own.
fn post(api: &UserApi, path: &str, body: &Value) -> AuthAnswer {
    api.post_as(path, None, body)
}

pub(crate) fn request_sms(api: &UserApi, phone: &str, mode: &str) -> AuthAnswer {
    post(api, SMS_OTP, &json!({ "phone": phone, "mode": mode }))
}

/// A POST from client address `ip`.
fn post_from(api: &UserApi, path: &str, body: &Value, ip: &str) -> AuthAnswer {
    api.send_as(Some(&api.api_key), "POST", path, None, Some(body), Some(ip))
}

fn request_from(api: &UserApi, phone: &str, mode: &str, ip: &str) -> AuthAnswer {
    post_from(api, SMS_OTP, &json!({ "phone": phone, "mode": mode }), ip)
}

pub(crate) fn verify_sms(api: &UserApi, phone: &str, code: &str) -> AuthAnswer {
    post(api, SMS_VERIFY, &json!({ "phone": phone, "code": code }))
}

fn verify_from(api: &UserApi, phone: &str, code: &str, ip: &str) -> AuthAnswer {
    post_from(
        api,
        SMS_VERIFY,
        &json!({ "phone": phone, "code": code }),
        ip,
    )
}

pub(crate) fn phone_verify(api: &UserApi, bearer: &str, phone: &str) -> AuthAnswer {
    api.post_as(PHONE_VERIFY, Some(bearer), &json!({ "phone": phone }))
}

/// `POST /v1/users/me/phone/confirm`, step-up gated: first steps up with `USER_PASSWORD` and
/// sends the step-up token; when that step-up is refused (a guest, no password) it sends none.
pub(crate) fn phone_confirm(api: &UserApi, bearer: &str, phone: &str, code: &str) -> AuthAnswer {
    let r = api.post_as(
        "/v1/auth/step-up/password",
        Some(bearer),
        &json!({ "password": USER_PASSWORD }),
    );
    let step_up = r.body["step_up_token"].as_str().map(str::to_owned);
    phone_confirm_with(api, bearer, phone, code, step_up.as_deref())
}

/// `POST /v1/users/me/phone/confirm` with the step-up token, if any.
fn phone_confirm_with(
    api: &UserApi,
    bearer: &str,
    phone: &str,
    code: &str,
    step_up: Option<&str>,
) -> AuthAnswer {
    let headers: Vec<(&str, &str)> = step_up.map(|t| (STEP_UP_HEADER, t)).into_iter().collect();
    api.send_with(
        "POST",
        PHONE_CONFIRM,
        Some(bearer),
        Some(&json!({ "phone": phone, "code": code })),
        &headers,
    )
}

fn sms_test(srv: &TestServer, s: &Session, slug: &str, phone: &str) -> AuthAnswer {
    AuthAnswer::read(srv.dash(
        "POST",
        SMS_TEST,
        s,
        Some(&json!({ "tenantSlug": slug, "phone": phone })),
    ))
}

/// Asserts a 429 of `code` with a `Retry-After` in seconds within `range`; answers it.
#[track_caller]
fn assert_retry_after(
    a: &AuthAnswer,
    code: &str,
    range: std::ops::RangeInclusive<u64>,
    what: &str,
) -> u64 {
    assert_error(a, 429, code, what);
    let retry: u64 = a
        .header("retry-after")
        .unwrap_or_else(|| panic!("{what}: no Retry-After"))
        .parse()
        .unwrap_or_else(|e| panic!("{what}: Retry-After is not seconds: {e}"));
    assert!(range.contains(&retry), "{what}: Retry-After {retry}");
    retry
}

/// Asserts `429 auth/rate_limited` of the 60-second spacing per number.
#[track_caller]
fn assert_spaced(a: &AuthAnswer, what: &str) {
    assert_retry_after(a, RATE_LIMITED, 1..=60, what);
}

/// Asserts `429 sms/monthly_cap_reached` with a `Retry-After` (at most a month and a day).
#[track_caller]
fn assert_capped(a: &AuthAnswer, what: &str) {
    assert_retry_after(a, CAP, 1..=32 * 86_400, what);
}

/// Every SMS in the outbox, newest first.
#[track_caller]
fn sms_outbox(srv: &TestServer) -> Vec<Value> {
    let listed = srv.admin(&["outbox", "list", "--kind", "sms"], "").json();
    listed
        .as_array()
        .unwrap_or_else(|| panic!("outbox list is no array: {listed}"))
        .clone()
}

/// The outbox's messages of `kind` to `to`, newest first.
fn outbox_to(srv: &TestServer, kind: &str, to: &str) -> Vec<Value> {
    sms_outbox(srv)
        .into_iter()
        .filter(|m| m["kind"] == kind && m["to"] == to)
        .collect()
}

/// Waits (up to 15 s) until the outbox holds `n` messages of `kind` to `to` from tenant `slug`;
/// answers the newest.
#[track_caller]
pub(crate) fn wait_sms(srv: &TestServer, slug: &str, kind: &str, to: &str, n: usize) -> Value {
    let mut found = Vec::new();
    let arrived = eventually(Duration::from_secs(15), || {
        found = outbox_to(srv, kind, to);
        found.len() >= n
    });
    if !arrived {
        let seen: Vec<String> = sms_outbox(srv)
            .iter()
            .map(|m| format!("{}/{}/{}", m["tenant"], m["kind"], m["to"]))
            .collect();
        panic!("no {kind} SMS #{n} to {to} from {slug}; the outbox holds {seen:?}");
    }
    let m = found.swap_remove(0);
    assert_eq!(m["tenant"], slug, "{m}");
    assert!(m["id"].as_str().is_some_and(|s| !s.is_empty()), "{m}");
    m
}

/// The six-digit code of an outbox message.
#[track_caller]
pub(crate) fn code_of(m: &Value) -> String {
    let body = m["body"].as_str().unwrap_or_default();
    six_digit_code(body).unwrap_or_else(|| panic!("no six-digit code in {m}"))
}

/// Numbers the numbers `courier_caught_up` texts.
static LATER_SMS: AtomicU32 = AtomicU32::new(0);

/// Returns once every message asked for by a request answered before the call was sent: a
/// sign-in code that `courier` (a tenant whose codes go to the outbox, with SMS sign-in on,
/// France allowed and its cap not reached) asks for now reaches the outbox (a later message
/// through the same courier, whose writes are made durable after theirs), then the courier
/// holds nothing, so no message handed to it earlier, whatever its provider, is still on its
/// way or waiting for a retry.
#[track_caller]
fn courier_caught_up(srv: &TestServer, courier: &UserApi) {
    let later = fr(990_000 + LATER_SMS.fetch_add(1, Ordering::Relaxed));
    let r = request_sms(courier, &later, "login_or_create");
    assert_accepted(&r, "a later sign-in code");
    wait_sms(srv, &courier.slug, LOGIN_KIND, &later, 1);
    wait_for_idle_delivery(srv, "sms");
}

/// Asserts the outbox holds exactly `n` messages to `to` once the requests answered so far
/// are all sent (see `courier_caught_up`).
#[track_caller]
fn assert_sms_count(srv: &TestServer, courier: &UserApi, to: &str, n: usize) {
    courier_caught_up(srv, courier);
    let got: Vec<Value> = sms_outbox(srv)
        .into_iter()
        .filter(|m| m["to"] == to)
        .collect();
    assert_eq!(got.len(), n, "SMS to {to}: {got:?}");
}

/// Asserts the requests answered so far texted nothing to any of `numbers` (checked once a
/// code asked for later from `courier` has arrived: see `courier_caught_up`).
#[track_caller]
fn assert_no_sms(srv: &TestServer, courier: &UserApi, numbers: &[&str]) {
    courier_caught_up(srv, courier);
    let outbox = sms_outbox(srv);
    for to in numbers {
        let got: Vec<&Value> = outbox.iter().filter(|m| m["to"] == *to).collect();
        assert!(got.is_empty(), "SMS to {to}: {got:?}");
    }
}

/// Repeats `f` (up to 15 s) while it answers 429 `auth/too_many_attempts`; answers the first
/// other answer (or the last 429).
fn past_throttle(mut f: impl FnMut() -> AuthAnswer) -> AuthAnswer {
    let mut last = None;
    eventually(Duration::from_secs(15), || {
        let a = f();
        let blocked = (a.status, a.code()) == (429, TOO_MANY);
        last = Some(a);
        if blocked {
            std::thread::sleep(Duration::from_millis(250));
        }
        !blocked
    });
    last.expect("at least one try")
}

/// Asserts an SMS token pair (see [`assert_sign_in_tokens`]) with `amr: ["sms"]`.
#[track_caller]
fn sms_tokens(
    api: &UserApi,
    a: &AuthAnswer,
    user_id: Option<&str>,
    redirect_to: Option<&str>,
) -> UserTokens {
    assert_sign_in_tokens(api, a, user_id, json!(["sms"]), redirect_to)
}

/// Whether `word` occurs in `text` with no letter or digit right before or after it.
fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

// ---------------------------------------------------------------------------------------------
// SMS OTP through the outbox
// ---------------------------------------------------------------------------------------------

#[test]
fn login_or_create_by_sms_makes_a_phone_account_and_the_code_works_once() {
    let (_smtp, srv, api, _s) = sms_setup("Sms Co", &[]);
    let phone = "+33612345678";

    let r = post(
        &api,
        SMS_OTP,
        &json!({ "phone": "+33 6 12 34 56 78", "mode": "login_or_create", "channel": "sms" }),
    );
    assert_accepted(&r, "login_or_create");
    let m = wait_sms(&srv, &api.slug, LOGIN_KIND, phone, 1);
    assert_eq!(m["kind"], LOGIN_KIND, "{m}");
    assert_eq!(m["to"], phone, "the number in E.164: {m}");
    let file = m["file"].as_str().expect("file");
    assert!(file.ends_with(".json"), "{file}");
    assert!(
        srv.data_dir.join("sms_outbox").join(file).is_file(),
        "{file} is not in the SMS outbox"
    );
    let date = m["date"].as_str().expect("date");
    assert!(date.contains('T'), "RFC 3339: {date}");
    let code = code_of(&m);

    // The tenant filter, and the mail listing, which has no SMS in it.
    let mine = srv.admin(
        &["outbox", "list", "--kind", "sms", "--tenant", &api.slug],
        "",
    );
    assert_eq!(
        mine.json().as_array().map(Vec::len),
        Some(1),
        "{}",
        mine.stdout
    );
    let other = srv.admin(
        &["outbox", "list", "--kind", "sms", "--tenant", "other"],
        "",
    );
    assert_eq!(other.json(), json!([]));
    let mail = srv.admin(&["outbox", "list"], "").json();
    assert_eq!(
        srv.admin(&["outbox", "list", "--kind", "mail"], "").json(),
        mail
    );
    assert!(
        !mail.to_string().contains(LOGIN_KIND),
        "SMS among the mail: {mail}"
    );

    // No account before the code is verified; a wrong code is refused.
    assert_error(
        &verify_sms(&api, phone, &other_code(&code)),
        401,
        EXPIRED,
        "a wrong code",
    );
    let t = sms_tokens(&api, &verify_sms(&api, phone, &code), None, None);
    let me = api.me(&t.access);
    let me = me.expect(200);
    assert_eq!(me["id"], user_id(&t).as_str(), "{me}");
    assert_eq!(me["email"], Value::Null, "{me}");
    assert_eq!(me["phone"], phone, "{me}");
    assert_eq!(me["phone_verified"], true, "{me}");
    assert_eq!(me["is_anonymous"], false, "{me}");

    // Single use.
    assert_error(&verify_sms(&api, phone, &code), 401, EXPIRED, "used code");
    // The refresh token works like any other.
    UserTokens::from_answer(&api.refresh(&t.refresh));
}

#[test]
fn sms_requests_look_alike_whether_or_not_the_number_has_an_account() {
    let (_smtp, mut srv, mut api, _s) = sms_setup("Alike Co", &[]);
    let known = fr(201);
    let unknown = fr(202);
    // An account with `known` as its verified phone.
    assert_accepted(&request_sms(&api, &known, "login_or_create"), "sign-up");
    let code = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &known, 1));
    let uid = user_id(&sms_tokens(
        &api,
        &verify_sms(&api, &known, &code),
        None,
        None,
    ));

    // A new 60-second window for `known`.
    restart(&mut srv, &mut [&mut api]);

    let a_known = request_sms(&api, &known, "login");
    let a_unknown = request_sms(&api, &unknown, "login");
    assert_accepted(&a_known, "login, a number with an account");
    assert_accepted(&a_unknown, "login, a number without one");
    assert_eq!(a_known.headers.get("retry-after"), None);
    assert_eq!(a_unknown.headers.get("retry-after"), None);
    let m = wait_sms(&srv, &api.slug, LOGIN_KIND, &known, 2);
    assert_no_sms(&srv, &api, &[&unknown]);

    // Again within 60 s: the same refusal for both.
    let r_known = request_sms(&api, &known, "login");
    let r_unknown = request_sms(&api, &unknown, "login");
    assert_spaced(&r_known, "known again");
    assert_spaced(&r_unknown, "unknown again");
    assert_eq!(r_known.code(), r_unknown.code());
    assert_eq!(
        r_known.body["error"]["message"], r_unknown.body["error"]["message"],
        "{} vs {}",
        r_known.body, r_unknown.body
    );

    // The code logs the account in; nothing verifies for the number without one.
    sms_tokens(
        &api,
        &verify_sms(&api, &known, &code_of(&m)),
        Some(&uid),
        None,
    );
    assert_error(
        &verify_sms(&api, &unknown, "123456"),
        401,
        EXPIRED,
        "a number without an account",
    );
    assert_eq!(outbox_to(&srv, LOGIN_KIND, &known).len(), 2);
    assert!(outbox_to(&srv, LOGIN_KIND, &unknown).is_empty());
}

#[test]
fn sms_codes_die_after_five_wrong_tries_are_replaced_and_are_spaced_per_number() {
    let (_smtp, mut srv, mut api, _s) = sms_setup("Wrong Co", &[]);
    let p1 = fr(301);
    let p2 = fr(302);

    assert_accepted(&request_sms(&api, &p1, "login_or_create"), "p1");
    let c1 = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &p1, 1));

    // Spacing: the same number again, however written, within 60 s.
    assert_spaced(&request_sms(&api, &p1, "login_or_create"), "p1 again");
    assert_spaced(&request_sms(&api, &p1, "login"), "p1 again, login");
    assert_spaced(
        &request_sms(&api, "+33 6 12 00 03 01", "login_or_create"),
        "p1 again, spaced out",
    );
    assert_sms_count(&srv, &api, &p1, 1);

    // Five wrong codes from one client: each refused, then the number is throttled from
    // there, right code or not.
    let wrong = other_code(&c1);
    let ip = fresh_client_ip();
    for i in 1..=5 {
        assert_error(
            &verify_from(&api, &p1, &wrong, &ip),
            401,
            EXPIRED,
            &format!("wrong code #{i}"),
        );
    }
    assert_retry_after(
        &verify_from(&api, &p1, &c1, &ip),
        TOO_MANY,
        1..=900,
        "the right code after five wrong ones",
    );

    // A code for p2, then (after a restart forgets the spacing) a second one replaces it.
    assert_accepted(&request_sms(&api, &p2, "login_or_create"), "p2");
    let c2_old = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &p2, 1));
    restart(&mut srv, &mut [&mut api]);

    // Once no throttle is in the way, p1's code is dead.
    let r = past_throttle(|| verify_sms(&api, &p1, &c1));
    assert_error(&r, 401, EXPIRED, "the right code after five wrong ones");

    let r = request_sms(&api, &p2, "login_or_create");
    assert_accepted(&r, "p2 again after a restart");
    let c2_new = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &p2, 2));
    if c2_new != c2_old {
        assert_error(
            &verify_sms(&api, &p2, &c2_old),
            401,
            EXPIRED,
            "the replaced code",
        );
    }
    sms_tokens(&api, &verify_sms(&api, &p2, &c2_new), None, None);
}

#[test]
fn per_client_address_limits_cover_sms_requests_and_verifies() {
    // Five failed sign-ins per client address, so the address's count is reached quickly.
    let (_smtp, srv, api, _s) = sms_setup(
        "Client Co",
        &[(
            "TESSERA__SECURITY__LOGIN_FAILURES_PER_ADDRESS".to_owned(),
            "5".to_owned(),
        )],
    );

    // Ten requests an hour from one address, whatever the numbers.
    let ip = fresh_client_ip();
    for n in 0..10 {
        let r = request_from(&api, &fr(400 + n), "login_or_create", &ip);
        assert_accepted(&r, &format!("request #{} from one address", n + 1));
    }
    let r = request_from(&api, &fr(410), "login_or_create", &ip);
    assert_retry_after(&r, RATE_LIMITED, 1..=3600, "the eleventh from one address");
    // Another address is not limited.
    assert_accepted(
        &request_sms(&api, &fr(411), "login_or_create"),
        "another address",
    );
    assert_no_sms(&srv, &api, &[&fr(410)]);

    // Five wrong codes from one address, one per number: that address is blocked...
    let codes: Vec<String> = (0..6)
        .map(|n| code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &fr(400 + n), 1)))
        .collect();
    let ip = fresh_client_ip();
    for n in 0..5 {
        let r = verify_from(&api, &fr(400 + n), &other_code(&codes[n as usize]), &ip);
        assert_error(
            &r,
            401,
            EXPIRED,
            &format!("wrong code #{} from one address", n + 1),
        );
    }
    let r = verify_from(&api, &fr(405), &codes[5], &ip);
    assert_retry_after(&r, TOO_MANY, 1..=900, "a sixth try from that address");
    // ...but not the number, whose code works from elsewhere.
    sms_tokens(&api, &verify_sms(&api, &fr(405), &codes[5]), None, None);
}

#[test]
fn sms_otp_is_off_by_default_and_requests_are_checked_in_order() {
    let (_smtp, srv, api, s) = user_setup("Order Co", &[]);
    let settings = srv.dash(
        "GET",
        &format!("/v1/auth/dashboard/tenants/{}/settings/security", api.slug),
        &s,
        None,
    );
    assert_eq!(settings.json::<Value>().unwrap()["sms_otp_enabled"], false);

    // Off: validation first, then 403 (before the country check).
    assert_error(
        &request_sms(&api, "12345", "login"),
        400,
        INVALID,
        "a bad number while off",
    );
    assert_error(
        &post(
            &api,
            SMS_OTP,
            &json!({ "phone": fr(501), "channel": "voice" }),
        ),
        400,
        INVALID,
        "channel voice while off",
    );
    for (phone, mode) in [
        (fr(501), "login"),
        (fr(502), "login_or_create"),
        (US.to_owned(), "login"),
    ] {
        assert_error(
            &request_sms(&api, &phone, mode),
            403,
            DISABLED,
            &format!("{phone} {mode} while off"),
        );
    }
    assert_error(
        &verify_sms(&api, &fr(501), "123456"),
        403,
        DISABLED,
        "verify while off",
    );

    enable_sms(&srv, &s, &api.slug);
    for (i, bad) in [
        json!({}),
        json!({ "phone": "" }),
        json!({ "phone": "+336" }),
        json!({ "phone": "12345" }),
        json!({ "phone": "+1 555" }),
        json!({ "phone": "hello world" }),
        json!({ "phone": "+999 1234567" }),
        json!({ "phone": 33_612_345_678_u64 }),
        json!({ "phone": null }),
        json!({ "phone": fr(503), "mode": "signup" }),
        json!({ "phone": fr(504), "mode": "LOGIN" }),
        json!({ "phone": fr(505), "channel": "voice" }),
        json!({ "phone": fr(506), "channel": "" }),
        json!({ "phone": fr(507), "channel": 1 }),
    ]
    .iter()
    .enumerate()
    {
        assert_error(
            &post(&api, SMS_OTP, bad),
            400,
            INVALID,
            &format!("#{i} {bad}"),
        );
    }
    for (i, bad) in [
        json!({ "phone": fr(508), "code": "12345" }),
        json!({ "phone": fr(508), "code": "1234567" }),
        json!({ "phone": fr(508), "code": "abcdef" }),
        json!({ "phone": fr(508), "code": "" }),
        json!({ "phone": fr(508), "code": 123_456 }),
        json!({ "phone": fr(508) }),
        json!({ "code": "123456" }),
        json!({ "phone": "hello world", "code": "123456" }),
        json!({ "phone": "12345", "code": "123456" }),
    ]
    .iter()
    .enumerate()
    {
        assert_error(
            &post(&api, SMS_VERIFY, bad),
            400,
            INVALID,
            &format!("verify #{i} {bad}"),
        );
    }
    // None of these sent anything, nor did the requests while SMS sign-in was off.
    assert_no_sms(&srv, &api, &[&fr(502), &fr(503)]);

    // Numbers are read in international format with spaces, dashes and parentheses, and are
    // one and the same number however written.
    let r = request_sms(&api, "+33 6 12 34 56 78", "login_or_create");
    assert_accepted(&r, "spaced");
    wait_sms(&srv, &api.slug, LOGIN_KIND, "+33612345678", 1);
    assert_spaced(
        &request_sms(&api, "+33612345678", "login_or_create"),
        "E.164",
    );
    assert_spaced(
        &request_sms(&api, "+33-6-12-34-56-78", "login_or_create"),
        "dashes",
    );
    let r = request_sms(&api, "+49 (151) 2345-6789", "login_or_create");
    assert_accepted(&r, "parentheses");
    let code = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, "+4915123456789", 1));
    // The verify reads the number the same way.
    let t = sms_tokens(
        &api,
        &verify_sms(&api, "+49 151 23456789", &code),
        None,
        None,
    );
    assert_eq!(api.me(&t.access).expect(200)["phone"], "+4915123456789");
}

#[test]
fn the_country_allowlist_decides_which_numbers_get_codes() {
    let (_smtp, srv, api, s) = sms_setup("Country Co", &[]);
    let path = format!("/v1/auth/dashboard/tenants/{}/settings/security", api.slug);
    for bad in [json!(["fr"]), json!(["FRA"]), json!(["F"]), json!("FR")] {
        let r = AuthAnswer::read(srv.dash(
            "PATCH",
            &path,
            &s,
            Some(&json!({ "sms_allowed_countries": bad })),
        ));
        assert_error(&r, 400, INVALID, &format!("sms_allowed_countries {bad}"));
    }
    let out = patch_security(
        &srv,
        &s,
        &api.slug,
        json!({ "sms_allowed_countries": ["FR"] }),
    );
    assert_eq!(out["sms_allowed_countries"], json!(["FR"]), "{out}");

    // Refused before any spacing: a second try is refused alike, not rate limited.
    for what in ["DE", "DE again"] {
        assert_error(
            &request_sms(&api, &de(1), "login_or_create"),
            400,
            COUNTRY,
            what,
        );
    }
    assert_error(&request_sms(&api, NL, "login"), 400, COUNTRY, "NL, login");
    assert_accepted(&request_sms(&api, &fr(601), "login_or_create"), "FR");
    wait_sms(&srv, &api.slug, LOGIN_KIND, &fr(601), 1);
    assert_no_sms(&srv, &api, &[&de(1)]);

    // null: the platform's allowlist (the EEA, CH and GB).
    let out = patch_security(
        &srv,
        &s,
        &api.slug,
        json!({ "sms_allowed_countries": null }),
    );
    assert_eq!(out["sms_allowed_countries"], Value::Null, "{out}");
    for (phone, what) in [(US, "US"), (BR, "BR")] {
        assert_error(
            &request_sms(&api, phone, "login_or_create"),
            400,
            COUNTRY,
            what,
        );
    }
    assert_error(&request_sms(&api, US, "login"), 400, COUNTRY, "US, login");
    assert_accepted(
        &request_sms(&api, &de(2), "login_or_create"),
        "DE by default",
    );
    assert_accepted(&request_sms(&api, GB, "login_or_create"), "GB by default");
    wait_sms(&srv, &api.slug, LOGIN_KIND, &de(2), 1);
    wait_sms(&srv, &api.slug, LOGIN_KIND, GB, 1);

    // [] is the platform's allowlist too.
    patch_security(
        &srv,
        &s,
        &api.slug,
        json!({ "sms_allowed_countries": ["FR"] }),
    );
    assert_error(
        &request_sms(&api, NL, "login_or_create"),
        400,
        COUNTRY,
        "NL with FR only",
    );
    patch_security(&srv, &s, &api.slug, json!({ "sms_allowed_countries": [] }));
    assert_error(
        &request_sms(&api, US, "login_or_create"),
        400,
        COUNTRY,
        "US with []",
    );
    assert_accepted(&request_sms(&api, NL, "login_or_create"), "NL with []");
    wait_sms(&srv, &api.slug, LOGIN_KIND, NL, 1);
    assert_no_sms(&srv, &api, &[US, BR]);
}

#[test]
fn on_the_platform_account_a_tenant_allowlist_only_narrows_the_platforms() {
    // The outbox for the platform account; a tenant's own account still sends to the stub.
    let stub = ProviderStub::start();
    let env = [
        ("TESSERA__SMS__TRANSPORT".to_owned(), "outbox".to_owned()),
        ("TESSERA__SMS__BASE_URL".to_owned(), stub.url.clone()),
    ];
    let (_smtp, srv, api, s) = sms_setup("Narrow Co", &env);
    let out = patch_security(
        &srv,
        &s,
        &api.slug,
        json!({ "sms_allowed_countries": ["US", "FR"] }),
    );
    assert_eq!(out["sms_allowed_countries"], json!(["US", "FR"]), "{out}");

    // US is on the tenant's list but not on the platform's (the EEA, CH and GB): refused, for
    // sign-in, phone verification and the dashboard's test alike; a second try is refused the
    // same way (no spacing started).
    for what in ["US", "US again"] {
        assert_error(
            &request_sms(&api, US, "login_or_create"),
            400,
            COUNTRY,
            what,
        );
    }
    assert_error(&sms_test(&srv, &s, &api.slug, US), 400, COUNTRY, "US test");
    // FR is on both; DE only on the platform's.
    assert_accepted(&request_sms(&api, &fr(1901), "login_or_create"), "FR");
    wait_sms(&srv, &api.slug, LOGIN_KIND, &fr(1901), 1);
    assert_error(
        &request_sms(&api, &de(19), "login_or_create"),
        400,
        COUNTRY,
        "DE, not on the tenant's list",
    );
    assert_no_sms(&srv, &api, &[US]);
    assert!(stub.to(US).is_empty(), "{:?}", stub.to(US));

    // A tenant with its own account decides for itself.
    let own = UserApi::signup(&srv, "Far Co", "owner@far.example.com");
    let s2 = srv.login(&own.owner, PASSWORD);
    enable_sms(&srv, &s2, &own.slug);
    set_byok(&srv, &s2, &own.slug);
    let out = patch_security(
        &srv,
        &s2,
        &own.slug,
        json!({ "sms_allowed_countries": ["US"] }),
    );
    assert_eq!(out["sms_allowed_countries"], json!(["US"]), "{out}");
    assert_accepted(
        &request_sms(&own, US, "login_or_create"),
        "US, the tenant's own account",
    );
    let sent = stub.wait_to(US, 1);
    sent.assert_sent_with(BYOK_SID, BYOK_TOKEN, BYOK_MG, US);
    let t = sms_tokens(&own, &verify_sms(&own, US, &sent.code()), None, None);
    assert_eq!(own.me(&t.access).expect(200)["phone"], US);
    assert_error(
        &request_sms(&own, &fr(1902), "login_or_create"),
        400,
        COUNTRY,
        "FR, not on its own list",
    );
    // Without a list of its own, the platform's applies to it too.
    patch_security(
        &srv,
        &s2,
        &own.slug,
        json!({ "sms_allowed_countries": null }),
    );
    assert_error(
        &request_sms(&own, US, "login"),
        400,
        COUNTRY,
        "US, own account, no list",
    );
    stub.assert_none_to(&srv, &api, &fr(1902));
    assert_eq!(stub.to(US).len(), 1, "{:?}", stub.to(US));
    assert!(sms_outbox(&srv)
        .iter()
        .all(|m| m["tenant"] != own.slug.as_str()));
}

#[test]
fn premium_rate_toll_free_and_landline_numbers_get_no_code() {
    let (smtp, srv, api, s) = sms_setup("Pump Co", &[]);
    // Valid French numbers, in France (on the platform's list), that cannot receive a text.
    let refused = [
        ("+33891123456", phonenumber::Type::PremiumRate),
        ("+33142685300", phonenumber::Type::FixedLine),
        ("+33800123456", phonenumber::Type::TollFree),
    ];
    for (number, kind) in refused {
        let parsed = phonenumber::parse(None, number).expect("parses");
        assert!(
            parsed.is_valid(),
            "{number} is no valid number: a useless case"
        );
        assert_eq!(
            parsed.number_type(&phonenumber::metadata::DATABASE),
            kind,
            "{number}"
        );
    }
    let t = api.verified_user(&smtp, "pia@example.com", USER_PASSWORD);
    for (number, kind) in refused {
        for mode in ["login_or_create", "login"] {
            assert_error(
                &request_sms(&api, number, mode),
                400,
                INVALID,
                &format!("{kind:?} {number}, {mode}"),
            );
        }
        assert_error(
            &phone_verify(&api, &t.access, number),
            400,
            INVALID,
            &format!("{kind:?} {number}, phone verification"),
        );
        assert_error(
            &sms_test(&srv, &s, &api.slug, number),
            400,
            INVALID,
            &format!("{kind:?} {number}, dashboard test"),
        );
    }
    // A mobile number of the same country is texted.
    assert_accepted(&request_sms(&api, &fr(2001), "login_or_create"), "mobile");
    wait_sms(&srv, &api.slug, LOGIN_KIND, &fr(2001), 1);
    let numbers: Vec<&str> = refused.iter().map(|(number, _)| *number).collect();
    assert_no_sms(&srv, &api, &numbers);
}

#[test]
fn the_monthly_cap_counts_messages_sent() {
    let (smtp, srv, api, s) = sms_setup("Cap Co", &[]);
    let out = patch_security(&srv, &s, &api.slug, json!({ "sms_otp_monthly_cap": 2 }));
    assert_eq!(out["sms_otp_monthly_cap"], 2, "{out}");

    // Requests that send nothing use none of the cap.
    for n in 0..3 {
        assert_accepted(
            &request_sms(&api, &fr(700 + n), "login"),
            "login, no account",
        );
    }
    for n in [710, 711] {
        assert_accepted(
            &request_sms(&api, &fr(n), "login_or_create"),
            "within the cap",
        );
        wait_sms(&srv, &api.slug, LOGIN_KIND, &fr(n), 1);
    }
    // Give the count a moment to catch up with the sends.
    std::thread::sleep(Duration::from_millis(300));
    assert_capped(&request_sms(&api, &fr(712), "login_or_create"), "the third");
    assert_capped(&request_sms(&api, &fr(713), "login"), "login, once capped");
    // Phone verification draws on the same cap.
    let t = api.verified_user(&smtp, "cap@example.com", USER_PASSWORD);
    assert_capped(
        &phone_verify(&api, &t.access, &fr(714)),
        "phone verification",
    );
    // (Another tenant's codes show when the courier has caught up: this one's cap is reached.)
    let courier = UserApi::signup(&srv, "Courier Co", "owner@courier.example.com");
    enable_sms(&srv, &srv.login(&courier.owner, PASSWORD), &courier.slug);
    assert_no_sms(&srv, &courier, &[&fr(712), &fr(714)]);
    let sent: Vec<Value> = sms_outbox(&srv)
        .into_iter()
        .filter(|m| m["tenant"] == api.slug.as_str())
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");

    // The cap is read as it is now.
    patch_security(&srv, &s, &api.slug, json!({ "sms_otp_monthly_cap": 3 }));
    assert_accepted(
        &request_sms(&api, &fr(715), "login_or_create"),
        "cap raised",
    );
    wait_sms(&srv, &api.slug, LOGIN_KIND, &fr(715), 1);

    // Another tenant has a count of its own; a cap of 0 refuses at once.
    let other = UserApi::signup(&srv, "Zero Co", "owner@zero.example.com");
    let s2 = srv.login(&other.owner, PASSWORD);
    enable_sms(&srv, &s2, &other.slug);
    patch_security(&srv, &s2, &other.slug, json!({ "sms_otp_monthly_cap": 0 }));
    assert_capped(&request_sms(&other, &fr(720), "login_or_create"), "cap 0");
    assert_no_sms(&srv, &courier, &[&fr(720)]);
    patch_security(&srv, &s2, &other.slug, json!({ "sms_otp_monthly_cap": 1 }));
    assert_accepted(
        &request_sms(&other, &fr(721), "login_or_create"),
        "cap 1, nothing sent yet by this tenant",
    );
    wait_sms(&srv, &other.slug, LOGIN_KIND, &fr(721), 1);
}

/// A free tenant cannot make the operator pay for 100,000 texts a month: on the platform's
/// account its cap is at most its tier's ceiling (`[sms.platform_monthly_cap_max]`), refused at
/// the settings PATCH and bounded again when sending (a larger stored value counts only up to
/// the ceiling); its own provider account allows the full 0-100,000.
#[test]
fn the_platform_accounts_monthly_cap_is_bounded_by_the_tier() {
    let env = [(
        "TESSERA__SMS__PLATFORM_MONTHLY_CAP_MAX__FREE".to_owned(),
        "2".to_owned(),
    )];
    let (_smtp, srv, api, s) = sms_setup("Ceiling Co", &env);
    let path = format!("/v1/auth/dashboard/tenants/{}/settings/security", api.slug);
    for cap in [100_000, 3] {
        let r = srv.dash(
            "PATCH",
            &path,
            &s,
            Some(&json!({ "sms_otp_enabled": false, "sms_otp_monthly_cap": cap })),
        );
        assert_eq!(r.status(), 400, "cap {cap}");
        let body: Value = r.json().expect("error body");
        assert_eq!(body["error"]["code"], INVALID, "{body}");
        let reason = body["error"]["details"]["fields"]["sms_otp_monthly_cap"]
            .as_str()
            .unwrap_or_else(|| panic!("the field is named: {body}"));
        assert!(reason.contains("0-2"), "the ceiling is named: {reason}");
    }
    // Nothing of a refused patch is applied.
    let now: Value = srv.dash("GET", &path, &s, None).json().expect("settings");
    assert_eq!(now["sms_otp_enabled"], true, "{now}");
    let out = patch_security(&srv, &s, &api.slug, json!({ "sms_otp_monthly_cap": 2 }));
    assert_eq!(out["sms_otp_monthly_cap"], 2, "{out}");

    // With its own account the full range is the tenant's; it keeps the value when it goes
    // back to the platform's account...
    set_byok(&srv, &s, &api.slug);
    let out = patch_security(
        &srv,
        &s,
        &api.slug,
        json!({ "sms_otp_monthly_cap": 100_000 }),
    );
    assert_eq!(out["sms_otp_monthly_cap"], 100_000, "{out}");
    let out = patch_security(
        &srv,
        &s,
        &api.slug,
        json!({
            "byok_provider_account_sid": null,
            "byok_provider_auth_token": null,
            "byok_provider_messaging_service_sid": null,
        }),
    );
    assert_eq!(out["byok_provider_auth_token_set"], false, "{out}");
    assert_eq!(out["sms_otp_monthly_cap"], 100_000, "{out}");

    // ... but the platform pays for two messages a month, not 100,000.
    for n in [1951, 1952] {
        assert_accepted(
            &request_sms(&api, &fr(n), "login_or_create"),
            "within the ceiling",
        );
        wait_sms(&srv, &api.slug, LOGIN_KIND, &fr(n), 1);
    }
    assert_capped(
        &request_sms(&api, &fr(1953), "login_or_create"),
        "past the tier's ceiling",
    );

    // An enterprise tenant's ceiling (100,000 by default) allows it on the platform's account.
    srv.admin(&["tenant", "set-tier", &api.slug, "enterprise"], "")
        .json();
    let out = patch_security(
        &srv,
        &s,
        &api.slug,
        json!({ "sms_otp_monthly_cap": 100_000 }),
    );
    assert_eq!(out["sms_otp_monthly_cap"], 100_000, "{out}");
    assert_accepted(
        &request_sms(&api, &fr(1954), "login_or_create"),
        "enterprise, under its ceiling",
    );
    wait_sms(&srv, &api.slug, LOGIN_KIND, &fr(1954), 1);
    // Nothing went to the number refused past the ceiling (the tenant's cap is large now).
    assert_no_sms(&srv, &api, &[&fr(1953)]);
}

// ---------------------------------------------------------------------------------------------
// The HTTP provider
// ---------------------------------------------------------------------------------------------

#[test]
fn the_http_provider_sends_with_the_platform_account() {
    let stub = ProviderStub::start();
    let (_smtp, mut srv, mut api, _s) = sms_setup("Http Co", &http_env(&stub));
    let phone = fr(801);

    let r = post(
        &api,
        SMS_OTP,
        &json!({ "phone": "+33 6 12 00 08 01", "mode": "login_or_create" }),
    );
    assert_accepted(&r, "login_or_create");
    let sent = stub.wait_to(&phone, 1);
    sent.assert_sent_with(PLATFORM_SID, PLATFORM_TOKEN, PLATFORM_MG, &phone);
    assert_eq!(sent.status, 201);
    let code = sent.code();
    // Nothing in the outbox with the HTTP transport.
    assert!(sms_outbox(&srv).is_empty(), "{:?}", sms_outbox(&srv));

    let t = sms_tokens(&api, &verify_sms(&api, &phone, &code), None, None);
    assert_eq!(api.me(&t.access).expect(200)["phone"], phone.as_str());
    assert_eq!(stub.to(&phone).len(), 1, "one message, sent once");

    // Without a messaging service, the sender number goes in `From`.
    restart_with(
        &mut srv,
        &mut api,
        &[("TESSERA__SMS__MESSAGING_SERVICE_SID", "")],
    );
    let phone = fr(802);
    assert_accepted(&request_sms(&api, &phone, "login_or_create"), "From");
    let sent = stub.wait_to(&phone, 1);
    assert_eq!(
        sent.path,
        format!("/2010-04-01/Accounts/{PLATFORM_SID}/Messages.json")
    );
    assert_eq!(sent.field("From"), Some(PLATFORM_FROM), "{:?}", sent.form);
    assert_eq!(sent.field("MessagingServiceSid"), None, "{:?}", sent.form);
    sms_tokens(&api, &verify_sms(&api, &phone, &sent.code()), None, None);
}

#[test]
fn a_tenant_with_its_own_provider_account_sends_with_it() {
    let stub = ProviderStub::start();
    let (_smtp, mut srv, mut byok, s) = sms_setup("Byok Co", &http_env(&stub));
    set_byok(&srv, &s, &byok.slug);
    let mut plain = UserApi::signup(&srv, "Plain Co", "owner@plain.example.com");
    let s2 = srv.login(&plain.owner, PASSWORD);
    enable_sms(&srv, &s2, &plain.slug);

    assert_accepted(&request_sms(&byok, &fr(901), "login_or_create"), "BYOK");
    let sent = stub.wait_to(&fr(901), 1);
    sent.assert_sent_with(BYOK_SID, BYOK_TOKEN, BYOK_MG, &fr(901));
    sms_tokens(
        &byok,
        &verify_sms(&byok, &fr(901), &sent.code()),
        None,
        None,
    );

    assert_accepted(
        &request_sms(&plain, &fr(902), "login_or_create"),
        "platform",
    );
    let sent = stub.wait_to(&fr(902), 1);
    sent.assert_sent_with(PLATFORM_SID, PLATFORM_TOKEN, PLATFORM_MG, &fr(902));
    sms_tokens(
        &plain,
        &verify_sms(&plain, &fr(902), &sent.code()),
        None,
        None,
    );

    // With the outbox transport, a BYOK tenant still sends through its own account, and the
    // others write to the outbox.
    srv.restart_with(&[("TESSERA__SMS__TRANSPORT", "outbox")]);
    byok.rebase(&srv);
    plain.rebase(&srv);
    assert_accepted(
        &request_sms(&byok, &fr(903), "login_or_create"),
        "BYOK, outbox",
    );
    let sent = stub.wait_to(&fr(903), 1);
    sent.assert_sent_with(BYOK_SID, BYOK_TOKEN, BYOK_MG, &fr(903));
    assert_accepted(
        &request_sms(&plain, &fr(904), "login_or_create"),
        "platform, outbox",
    );
    let m = wait_sms(&srv, &plain.slug, LOGIN_KIND, &fr(904), 1);
    sms_tokens(
        &plain,
        &verify_sms(&plain, &fr(904), &code_of(&m)),
        None,
        None,
    );
    stub.assert_none_to(&srv, &plain, &fr(904));
    assert!(
        outbox_to(&srv, LOGIN_KIND, &fr(903)).is_empty(),
        "the BYOK message went to the outbox too"
    );
}

#[test]
fn provider_errors_are_retried_only_when_temporary() {
    let stub = ProviderStub::start();
    let (_smtp, srv, api, _s) = sms_setup("Retry Co", &http_env(&stub));

    // 503 once, then accepted: the message arrives on the second try.
    stub.then_answer(503, provider_error(503, 20500, "Service Unavailable"));
    assert_accepted(&request_sms(&api, &fr(1001), "login_or_create"), "503 once");
    let second = stub.wait_to(&fr(1001), 2);
    let first = stub.to(&fr(1001)).swap_remove(0);
    assert_eq!((first.status, second.status), (503, 201));
    assert_eq!(first.form, second.form, "the retry sends the same message");
    second.assert_sent_with(PLATFORM_SID, PLATFORM_TOKEN, PLATFORM_MG, &fr(1001));
    sms_tokens(
        &api,
        &verify_sms(&api, &fr(1001), &second.code()),
        None,
        None,
    );

    // 429 is retried too.
    stub.then_answer(429, provider_error(429, 20429, "Too Many Requests"));
    assert_accepted(&request_sms(&api, &fr(1002), "login_or_create"), "429 once");
    let second = stub.wait_to(&fr(1002), 2);
    assert_eq!(second.status, 201);

    // Another 4xx is final.
    stub.then_answer(
        400,
        provider_error(400, 21211, "The 'To' number is not a valid phone number."),
    );
    assert_accepted(&request_sms(&api, &fr(1003), "login_or_create"), "400");
    assert_eq!(stub.wait_to(&fr(1003), 1).status, 400);
    // The courier let go of it: a message to be retried stays in its hands (counted in
    // `tessera_sms_queue_depth`) until its last try, so once it holds nothing no try is left.
    wait_for_idle_delivery(&srv, "sms");
    assert_eq!(stub.to(&fr(1003)).len(), 1, "a 400 was retried");
    assert!(
        srv.log_text()
            .contains("text message refused; not retrying"),
        "the courier did not say it gave the message up"
    );
}

// ---------------------------------------------------------------------------------------------
// Phone verification of a signed-in user
// ---------------------------------------------------------------------------------------------

#[test]
fn users_verify_a_phone_which_moves_to_whoever_confirms_it_last() {
    let (smtp, mut srv, mut api, _s) = user_setup("Phone Co", &[]);
    let n = fr(1101);
    let u1 = api.verified_user(&smtp, "una@example.com", USER_PASSWORD);
    let u2 = api.verified_user(&smtp, "udo@example.com", USER_PASSWORD);
    let (id1, id2) = (user_id(&u1), user_id(&u2));
    assert_eq!(api.me(&u1.access).expect(200)["phone"], Value::Null);

    // A bearer is needed, and guests may not.
    let r = api.send_as(
        Some(&api.api_key),
        "POST",
        PHONE_VERIFY,
        None,
        Some(&json!({ "phone": n })),
        Some(&fresh_client_ip()),
    );
    assert_eq!(r.status, 401, "no bearer: {}", r.body);
    let s = srv.login(&api.owner, PASSWORD);
    enable_guests(&srv, &s, &api.slug);
    let guest = new_guest(&api, None).tokens.access;
    assert_error(
        &phone_verify(&api, &guest, &n),
        403,
        ANON_NOT_ALLOWED,
        "a guest",
    );

    // Validation and the country allowlist (SMS OTP stays off: not needed here).
    assert_error(
        &phone_verify(&api, &u1.access, "hello world"),
        400,
        INVALID,
        "bad",
    );
    assert_error(&phone_verify(&api, &u1.access, US), 400, COUNTRY, "US");

    // U1 verifies n.
    let r = phone_verify(&api, &u1.access, "+33 6 12 00 11 01");
    assert_accepted(&r, "U1 verifies n");
    let m = wait_sms(&srv, &api.slug, PHONE_KIND, &n, 1);
    let code = code_of(&m);
    assert_spaced(&phone_verify(&api, &u1.access, &n), "n again within 60 s");
    assert_error(
        &phone_confirm(&api, &u1.access, &n, &other_code(&code)),
        401,
        EXPIRED,
        "a wrong code",
    );
    let r = phone_confirm(&api, &u1.access, &n, &code);
    let user = r.expect(200);
    assert_eq!(user["id"], id1.as_str(), "{user}");
    assert_eq!(user["phone"], n.as_str(), "{user}");
    assert_eq!(user["phone_verified"], true, "{user}");
    assert_eq!(user["email"], "una@example.com", "{user}");
    let me = api.me(&u1.access);
    assert_eq!(keys(user), keys(me.expect(200)), "the shape of /me");
    assert_eq!(me.body["phone"], n.as_str());
    assert_eq!(me.body["phone_verified"], true);
    assert_error(
        &phone_confirm(&api, &u1.access, &n, &code),
        401,
        EXPIRED,
        "the code again",
    );

    // Five wrong codes kill a code.
    let m2 = fr(1102);
    assert_accepted(&phone_verify(&api, &u1.access, &m2), "U1 verifies m");
    let code_m = code_of(&wait_sms(&srv, &api.slug, PHONE_KIND, &m2, 1));
    for i in 1..=5 {
        let r = phone_confirm(&api, &u1.access, &m2, &other_code(&code_m));
        assert_eq!(r.status, 401, "wrong code #{i}: {}", r.body);
    }
    let r = past_throttle(|| phone_confirm(&api, &u1.access, &m2, &code_m));
    assert_error(&r, 401, EXPIRED, "the right code after five wrong ones");
    assert_eq!(api.me(&u1.access).expect(200)["phone"], n.as_str());

    // U2 confirms n (in a new 60-second window): it moves from U1 to U2.
    restart(&mut srv, &mut [&mut api]);
    let (u1, u2) = (renew(&api, &u1), renew(&api, &u2));
    assert_accepted(&phone_verify(&api, &u2.access, &n), "U2 verifies n");
    let code = code_of(&wait_sms(&srv, &api.slug, PHONE_KIND, &n, 2));
    assert_error(
        &phone_confirm(&api, &u2.access, &fr(1103), &code),
        401,
        EXPIRED,
        "another number than the one requested",
    );
    let r = phone_confirm(&api, &u2.access, &n, &code);
    assert_eq!(r.expect(200)["phone"], n.as_str(), "{}", r.body);
    assert_eq!(r.body["id"], id2.as_str());
    let me1 = api.me(&u1.access);
    assert_eq!(me1.expect(200)["phone"], Value::Null, "{}", me1.body);
    assert_ne!(me1.body["phone_verified"], true, "{}", me1.body);

    // SMS OTP to n signs U2 in (once more in a new window).
    restart(&mut srv, &mut [&mut api]);
    let s = srv.login(&api.owner, PASSWORD);
    enable_sms(&srv, &s, &api.slug);
    assert_accepted(&request_sms(&api, &n, "login"), "login to n");
    let code = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &n, 1));
    sms_tokens(&api, &verify_sms(&api, &n, &code), Some(&id2), None);
}

/// A stolen access token must not attach a number (a permanent SMS sign-in): confirming is
/// step-up gated like MFA setup. Without a step-up token the gate's challenge answers and the
/// code stays usable; a token of another session does not pass; a fresh one does.
#[test]
fn confirming_a_phone_needs_a_step_up_token_of_the_session() {
    let (smtp, srv, api, _s) = user_setup("Gate Phone Co", &[]);
    let n = fr(1901);
    let u = api.verified_user(&smtp, "gia@example.com", USER_PASSWORD);
    assert_accepted(&phone_verify(&api, &u.access, &n), "verify n");
    let code = code_of(&wait_sms(&srv, &api.slug, PHONE_KIND, &n, 1));

    let r = phone_confirm_with(&api, &u.access, &n, &code, None);
    assert_error(&r, 401, "account_linking/mfa_required", "no step-up token");
    assert_eq!(
        r.body["error"]["details"]["next_action"], "verify_mfa",
        "{}",
        r.body
    );
    assert!(
        r.header("www-authenticate")
            .is_some_and(|w| w.contains("insufficient_user_authentication")),
        "{:?}",
        r.header("www-authenticate")
    );
    assert_error(
        &phone_confirm_with(&api, &u.access, &n, &code, Some("not-a-token")),
        401,
        EXPIRED,
        "a bad step-up token",
    );
    // A step-up token of another session of the same user does not pass either.
    let other = api.login_ok("gia@example.com", USER_PASSWORD);
    let r = api.post_as(
        "/v1/auth/step-up/password",
        Some(&other.access),
        &json!({ "password": USER_PASSWORD }),
    );
    let foreign = r.expect(200)["step_up_token"]
        .as_str()
        .expect("token")
        .to_owned();
    assert_error(
        &phone_confirm_with(&api, &u.access, &n, &code, Some(&foreign)),
        401,
        EXPIRED,
        "another session's step-up token",
    );
    assert_eq!(api.me(&u.access).expect(200)["phone"], Value::Null);

    // With its own step-up, the same code confirms the number.
    let r = phone_confirm(&api, &u.access, &n, &code);
    assert_eq!(r.expect(200)["phone"], n.as_str(), "{}", r.body);
}

#[test]
fn an_account_whose_address_is_unconfirmed_cannot_take_a_phone_number() {
    let (smtp, srv, api, s) = user_setup("Hijack Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    // A guest claims the account of an address it cannot confirm; its bearer stays valid.
    let guest = new_guest(&api, None).tokens.access;
    let victim = "victim@example.com";
    let r = api.send_as(
        Some(&api.api_key),
        "POST",
        "/v1/auth/register",
        Some(&guest),
        Some(&json!({ "email": victim, "password": USER_PASSWORD, "consent": true })),
        Some(&fresh_client_ip()),
    );
    assert_eq!(r.expect(200)["user"]["is_anonymous"], false, "{}", r.body);
    let me = api.me(&guest);
    let me = me.expect(200);
    assert_eq!(
        (
            me["email"].as_str(),
            &me["email_verified"],
            &me["is_anonymous"]
        ),
        (Some(victim), &json!(false), &json!(false)),
        "{me}"
    );

    // No number for it: neither a code, nor a confirmation whatever the code.
    let n = fr(1801);
    assert_error(
        &phone_verify(&api, &guest, &n),
        403,
        NOT_VERIFIED,
        "verify, address unconfirmed",
    );
    for code in ["123456", "000000"] {
        assert_error(
            &phone_confirm(&api, &guest, &n, code),
            403,
            NOT_VERIFIED,
            &format!("confirm {code}, address unconfirmed"),
        );
    }
    // (SMS sign-in on, for the later code that shows nothing else is on its way.)
    enable_sms(&srv, &s, &api.slug);
    assert_no_sms(&srv, &api, &[&n]);
    assert_eq!(api.me(&guest).expect(200)["phone"], Value::Null);

    // Once the address is confirmed, its account may.
    let token = api.verification_token(&smtp, victim, 1);
    let r = api.post("/v1/auth/verify-email", &json!({ "token": token }));
    assert_eq!(r.expect(200)["verified"], true, "{}", r.body);
    let t = api.login_ok(victim, USER_PASSWORD);
    assert_accepted(&phone_verify(&api, &t.access, &n), "address confirmed");
    let code = code_of(&wait_sms(&srv, &api.slug, PHONE_KIND, &n, 1));
    let r = phone_confirm(&api, &t.access, &n, &code);
    assert_eq!(r.expect(200)["phone"], n.as_str(), "{}", r.body);
    // Any user with a confirmed address may too.
    let other = api.verified_user(&smtp, "vera@example.com", USER_PASSWORD);
    assert_accepted(
        &phone_verify(&api, &other.access, &fr(1802)),
        "another user, address confirmed",
    );
    wait_sms(&srv, &api.slug, PHONE_KIND, &fr(1802), 1);
}

/// Asserts a phone notice names the number only by its last two digits.
#[track_caller]
fn assert_names_only_the_ending(mail: &crate::support::ReceivedMail, e164: &str) {
    let digits = e164.trim_start_matches('+');
    let ending = &digits[digits.len() - 2..];
    assert!(
        contains_word(&mail.text, ending),
        "the ending {ending} is not in {:?}",
        mail.text
    );
    // The whole number in any usual writing, or even its last four digits.
    let national = &digits[2..];
    for shown in [e164, digits, national, &digits[digits.len() - 4..]] {
        assert!(
            !mail.text.contains(shown),
            "{shown} is in the notice {:?}",
            mail.text
        );
    }
}

#[test]
fn owners_hear_by_mail_when_a_number_joins_or_leaves_their_account() {
    let (smtp, mut srv, mut api, _s) = user_setup("Notice Co", &[]);
    let n = fr(1747);
    let (e1, e2) = ("nora@example.com", "nils@example.com");
    let u1 = api.verified_user(&smtp, e1, USER_PASSWORD);
    let u2 = api.verified_user(&smtp, e2, USER_PASSWORD);

    // U1 confirms n: U1 hears of it.
    assert_accepted(&phone_verify(&api, &u1.access, &n), "U1 verifies n");
    let code = code_of(&wait_sms(&srv, &api.slug, PHONE_KIND, &n, 1));
    phone_confirm(&api, &u1.access, &n, &code).expect(200);
    let added = smtp.wait_for(&api.slug, PHONE_ADDED, e1, 1);
    assert_names_only_the_ending(&added, &n);

    // U2 confirms n (in a new 60-second window): U1 hears it left, U2 that it came.
    restart(&mut srv, &mut [&mut api]);
    let u2 = renew(&api, &u2);
    assert_accepted(&phone_verify(&api, &u2.access, &n), "U2 verifies n");
    let code = code_of(&wait_sms(&srv, &api.slug, PHONE_KIND, &n, 2));
    phone_confirm(&api, &u2.access, &n, &code).expect(200);
    let removed = smtp.wait_for(&api.slug, PHONE_REMOVED, e1, 1);
    assert_names_only_the_ending(&removed, &n);
    let added = smtp.wait_for(&api.slug, PHONE_ADDED, e2, 1);
    assert_names_only_the_ending(&added, &n);

    // One notice each, no more (a copy sent again after the restart, delivery being at least
    // once, has the same Message-ID), once mail asked for later has arrived and the postman
    // holds nothing more.
    api.register("later@example.com", USER_PASSWORD).expect(200);
    api.verification_token(&smtp, "later@example.com", 1);
    wait_for_idle_delivery(&srv, "mail");
    let notices = |kind: &str, to: &str| {
        let ids: std::collections::BTreeSet<String> = smtp
            .mails_of(&api.slug, kind, to)
            .iter()
            .map(|m| {
                let id = m.header("message-id");
                id.unwrap_or_else(|| panic!("no Message-ID: {m:?}"))
                    .to_owned()
            })
            .collect();
        ids.len()
    };
    assert_eq!(notices(PHONE_ADDED, e1), 1, "phone_added to U1");
    assert_eq!(notices(PHONE_REMOVED, e1), 1, "phone_removed to U1");
    assert_eq!(notices(PHONE_ADDED, e2), 1, "phone_added to U2");
    assert!(smtp.mails_of(&api.slug, PHONE_REMOVED, e2).is_empty());
}

#[test]
fn an_sms_code_for_a_user_with_mfa_asks_for_the_second_factor() {
    let (smtp, mut srv, mut api, _s) = user_setup("Mfa Sms Co", &[]);
    let n = fr(1201);
    let t0 = api.verified_user(&smtp, "mina@example.com", USER_PASSWORD);
    let uid = user_id(&t0);
    let mfa = api.enable_mfa(&t0.access);
    assert_accepted(&phone_verify(&api, &t0.access, &n), "verify n");
    let code = code_of(&wait_sms(&srv, &api.slug, PHONE_KIND, &n, 1));
    phone_confirm(&api, &t0.access, &n, &code).expect(200);

    restart(&mut srv, &mut [&mut api]);
    let s = srv.login(&api.owner, PASSWORD);
    enable_sms(&srv, &s, &api.slug);
    assert_accepted(&request_sms(&api, &n, "login"), "login to n");
    let code = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &n, 1));
    let r = verify_sms(&api, &n, &code);
    let body = r.expect(200);
    assert_eq!(body["mfa_required"], true, "{body}");
    assert!(
        body.get("access_token").is_none() && body.get("refresh_token").is_none(),
        "tokens before the second factor: {body}"
    );
    let challenge = body["mfa_challenge_token"]
        .as_str()
        .unwrap_or_else(|| panic!("no mfa_challenge_token in {body}"))
        .to_owned();
    // The code is used up by the challenge.
    assert_error(&verify_sms(&api, &n, &code), 401, EXPIRED, "code again");

    let step = totp_step_now().max(mfa.step + 1);
    let t = UserTokens::from_answer(&api.mfa_verify(&challenge, &mfa.totp.at_step(step), None));
    let (_, claims) = api.verify_access(&t.access);
    assert_eq!(claims["sub"], uid.as_str(), "{claims}");
    assert_eq!(claims["aal"], "AAL2", "{claims}");
    let amr = claims["amr"].as_array().expect("amr");
    assert!(
        amr.contains(&json!("sms")) && amr.contains(&json!("otp")),
        "{claims}"
    );
}

#[test]
fn an_sms_code_with_oauth_params_needs_its_binding_and_answers_redirect_to() {
    let (_smtp, srv, api, _s) = sms_setup("Resume Sms Co", &[]);
    let phone = fr(1301);
    let r = post(
        &api,
        SMS_OTP,
        &json!({
            "phone": phone,
            "mode": "login_or_create",
            "oauth_params": {"client_id": "c2", "redirect_uri": "https://app.example.com/cb", "state": "xyz"},
        }),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(
        keys(&r.body),
        set(&["accepted", "resume_binding"]),
        "{}",
        r.body
    );
    let binding = r.body["resume_binding"]
        .as_str()
        .expect("binding")
        .to_owned();
    assert_eq!(binding.chars().count(), 43, "{binding:?}");
    let code = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &phone, 1));

    assert_error(&verify_sms(&api, &phone, &code), 401, EXPIRED, "no binding");
    let other = if binding == "B".repeat(43) { "C" } else { "B" }.repeat(43);
    let r = post(
        &api,
        SMS_VERIFY,
        &json!({ "phone": phone, "code": code, "resume_binding": other }),
    );
    assert_error(&r, 401, EXPIRED, "another binding");
    let r = post(
        &api,
        SMS_VERIFY,
        &json!({ "phone": phone, "code": code, "resume_binding": binding }),
    );
    let expected = format!(
        "{}/v1/tenants/{}/oauth/authorize?client_id=c2&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb&state=xyz",
        api.base, api.slug
    );
    let t = sms_tokens(&api, &r, None, Some(&expected));
    assert_eq!(api.me(&t.access).expect(200)["phone"], phone.as_str());
    let r = post(
        &api,
        SMS_VERIFY,
        &json!({ "phone": phone, "code": code, "resume_binding": binding }),
    );
    assert_error(&r, 401, EXPIRED, "the code again, with its binding");
}

/// Twenty correct verifies at once log in once; a used code is no guess, so the number is
/// not blocked afterwards.
#[test]
fn twenty_concurrent_verifies_of_one_sms_code_log_in_once_and_lock_nothing() {
    let (_smtp, srv, api, _s) = sms_setup("Race Sms Co", &[]);
    let phone = fr(1401);
    assert_accepted(&request_sms(&api, &phone, "login_or_create"), "request");
    let code = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &phone, 1));

    let barrier = Barrier::new(20);
    let answers: Vec<AuthAnswer> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..20)
            .map(|_| {
                sc.spawn(|| {
                    barrier.wait();
                    verify_sms(&api, &phone, &code)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let won: Vec<&AuthAnswer> = answers.iter().filter(|a| a.status == 200).collect();
    assert_eq!(
        won.len(),
        1,
        "answers: {:?}",
        answers
            .iter()
            .map(|a| (a.status, &a.body))
            .collect::<Vec<_>>()
    );
    for a in answers.iter().filter(|a| a.status != 200) {
        assert_error(a, 401, EXPIRED, "a loser of the race");
    }
    sms_tokens(&api, won[0], None, None);
    // Nothing was counted against the number: a wrong code now is one failure, not a block.
    let wrong = if code == "000000" { "000001" } else { "000000" };
    assert_error(
        &verify_sms(&api, &phone, wrong),
        401,
        EXPIRED,
        "a wrong code later",
    );
}

// ---------------------------------------------------------------------------------------------
// The dashboard's test message
// ---------------------------------------------------------------------------------------------

#[test]
fn the_dashboard_sms_test_sends_through_the_tenants_provider() {
    let stub = ProviderStub::start();
    let (smtp, mut srv, mut api, s) = user_setup("Test Co", &[]);

    // The outbox, with SMS OTP off.
    let r = sms_test(&srv, &s, &api.slug, "+33 6 12 00 15 01");
    let body = r.expect(200);
    assert_eq!(keys(body), set(&["message_id", "provider"]), "{body}");
    assert_eq!(body["provider"], "outbox", "{body}");
    let id = body["message_id"].as_str().expect("message_id").to_owned();
    let m = wait_sms(&srv, &api.slug, TEST_KIND, &fr(1501), 1);
    assert_eq!(m["id"], id.as_str(), "{m}");

    // Refusals.
    assert_error(
        &sms_test(&srv, &s, &api.slug, "hello world"),
        400,
        INVALID,
        "bad number",
    );
    assert_error(&sms_test(&srv, &s, &api.slug, US), 400, COUNTRY, "US");
    let r = AuthAnswer::read(srv.dash(
        "POST",
        SMS_TEST,
        &s,
        Some(&json!({ "tenantSlug": api.slug })),
    ));
    assert_error(&r, 400, INVALID, "no phone");
    // Another tenant (the caller is no member), and one that does not exist.
    srv.signup("Elsewhere", "admin@example.com");
    assert_eq!(sms_test(&srv, &s, "elsewhere", &fr(1502)).status, 404);
    assert_eq!(sms_test(&srv, &s, "no-such-tenant", &fr(1502)).status, 404);
    // A member who is not the owner.
    let r = srv.dash(
        "POST",
        &format!("/v1/auth/dashboard/tenants/{}/members", api.slug),
        &s,
        Some(&json!({ "email": "admin@example.com", "role": "admin" })),
    );
    assert_eq!(r.status(), 201);
    srv.accept_mailed_invite(&smtp, "admin@example.com", 1, PASSWORD);
    let admin = srv.login("admin@example.com", PASSWORD);
    let r = sms_test(&srv, &admin, &api.slug, &fr(1503));
    assert_eq!(r.status, 403, "{}", r.body);
    // (SMS sign-in on, for the later code that shows nothing else is on its way.)
    enable_sms(&srv, &s, &api.slug);
    assert_no_sms(&srv, &api, &[&fr(1502), &fr(1503)]);

    // It counts against the monthly cap.
    patch_security(&srv, &s, &api.slug, json!({ "sms_otp_monthly_cap": 1 }));
    assert_capped(&sms_test(&srv, &s, &api.slug, &fr(1504)), "cap reached");
    patch_security(&srv, &s, &api.slug, json!({ "sms_otp_monthly_cap": 100 }));

    // The platform's HTTP provider: an error is answered at once, without retries.
    let env = http_env(&stub);
    srv.restart_with(&env_refs(&env));
    api.rebase(&srv);
    let s = srv.login(&api.owner, PASSWORD);
    stub.always_answer(Some((401, provider_error(401, 20003, "Authenticate"))));
    let r = sms_test(&srv, &s, &api.slug, &fr(1505));
    assert_error(&r, 502, PROVIDER_ERROR, "provider 401");
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("401") && message.contains("20003"),
        "{}",
        r.body
    );
    // Tried once while the request waited...
    assert_eq!(stub.to(&fr(1505)).len(), 1, "the test was retried");
    // ...and not handed to the courier for a later try either: a sign-in code asked for now
    // goes through the courier after it, and a message to be retried stays in the courier's
    // hands until its last try, so once the code was tried and the courier holds nothing, no
    // try of the test is left.
    let later = fr(1508);
    assert_accepted(
        &request_sms(&api, &later, "login_or_create"),
        "a later sign-in code",
    );
    stub.wait_to(&later, 1);
    wait_for_idle_delivery(&srv, "sms");
    assert_eq!(stub.to(&fr(1505)).len(), 1, "the test was retried");

    stub.always_answer(None);
    let r = sms_test(&srv, &s, &api.slug, &fr(1506));
    let body = r.expect(200);
    assert_eq!(body["provider"], "platform", "{body}");
    let sent = stub.wait_to(&fr(1506), 1);
    sent.assert_sent_with(PLATFORM_SID, PLATFORM_TOKEN, PLATFORM_MG, &fr(1506));
    assert_eq!(body["message_id"], json!(sent.sid), "{body}");

    // The tenant's own account.
    set_byok(&srv, &s, &api.slug);
    let r = sms_test(&srv, &s, &api.slug, &fr(1507));
    let body = r.expect(200);
    assert_eq!(body["provider"], "byok", "{body}");
    let sent = stub.wait_to(&fr(1507), 1);
    sent.assert_sent_with(BYOK_SID, BYOK_TOKEN, BYOK_MG, &fr(1507));
    assert_eq!(body["message_id"], json!(sent.sid), "{body}");
}

#[test]
fn the_eleventh_dashboard_test_message_an_hour_is_refused() {
    let (_smtp, srv, api, s) = user_setup("Test Limit Co", &[]);
    patch_security(&srv, &s, &api.slug, json!({ "sms_otp_monthly_cap": 1000 }));
    for n in 0..10 {
        let r = sms_test(&srv, &s, &api.slug, &fr(2200 + n));
        assert_eq!(r.expect(200)["provider"], "outbox", "test #{}", n + 1);
    }
    let r = sms_test(&srv, &s, &api.slug, &fr(2210));
    assert_retry_after(&r, RATE_LIMITED, 1..=3600, "the eleventh test");
    // The limit is the tenant's, whoever asks: another session of the owner is refused too.
    let again = srv.login(&api.owner, PASSWORD);
    let r = sms_test(&srv, &again, &api.slug, &fr(2211));
    assert_retry_after(&r, RATE_LIMITED, 1..=3600, "another session");
    // Another tenant has a limit of its own, and sign-in codes are not limited by it.
    let other = UserApi::signup(&srv, "Other Limit Co", "owner@other.example.com");
    let s2 = srv.login(&other.owner, PASSWORD);
    assert_eq!(
        sms_test(&srv, &s2, &other.slug, &fr(2212)).expect(200)["provider"],
        "outbox"
    );
    enable_sms(&srv, &s, &api.slug);
    assert_accepted(
        &request_sms(&api, &fr(2213), "login_or_create"),
        "a sign-in code",
    );
    wait_sms(&srv, &api.slug, LOGIN_KIND, &fr(2213), 1);
    for n in 0..10 {
        wait_sms(&srv, &api.slug, TEST_KIND, &fr(2200 + n), 1);
    }
    assert_no_sms(&srv, &api, &[&fr(2210), &fr(2211)]);
}

#[test]
fn the_providers_own_words_reach_only_a_tenant_with_its_own_account() {
    const SECRET: &str = "SECRETWORD";
    let stub = ProviderStub::start();
    let (_smtp, srv, api, s) = user_setup("Words Co", &env_refs(&http_env(&stub)));
    stub.always_answer(Some((
        401,
        provider_error(401, 20003, &format!("Authenticate {SECRET}")),
    )));

    // The platform's account: the status and the provider's error code, not its message.
    let r = sms_test(&srv, &s, &api.slug, &fr(2301));
    assert_error(&r, 502, PROVIDER_ERROR, "platform account, provider 401");
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("20003"), "{}", r.body);
    assert!(!r.body.to_string().contains(SECRET), "{}", r.body);
    assert!(!r.body.to_string().contains("Authenticate"), "{}", r.body);
    let sent = stub.wait_to(&fr(2301), 1);
    assert_eq!(sent.user.as_deref(), Some(PLATFORM_SID));

    // The tenant's own account: its owner reads the provider's message.
    set_byok(&srv, &s, &api.slug);
    let r = sms_test(&srv, &s, &api.slug, &fr(2302));
    assert_error(&r, 502, PROVIDER_ERROR, "own account, provider 401");
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("20003") && message.contains(&format!("Authenticate {SECRET}")),
        "{}",
        r.body
    );
    let sent = stub.wait_to(&fr(2302), 1);
    assert_eq!(sent.user.as_deref(), Some(BYOK_SID));
}

// ---------------------------------------------------------------------------------------------
// Secrets stay out of the log
// ---------------------------------------------------------------------------------------------

#[test]
fn provider_tokens_and_codes_stay_out_of_the_log() {
    let stub = ProviderStub::start();
    let mut env = http_env(&stub);
    env.push((
        "TESSERA__LOG__LEVEL".into(),
        "tessera=debug,tessera_actors=debug,tessera_storage=debug,info".into(),
    ));
    let (_smtp, mut srv, api, s) = sms_setup("Quiet Co", &env);
    let mut codes = Vec::new();

    // The platform account: a send, a verify, a temporary and a final provider error.
    stub.then_answer(503, provider_error(503, 20500, "Service Unavailable"));
    assert_accepted(&request_sms(&api, &fr(1601), "login_or_create"), "platform");
    let sent = stub.wait_to(&fr(1601), 2);
    codes.push(sent.code());
    sms_tokens(&api, &verify_sms(&api, &fr(1601), &sent.code()), None, None);
    stub.then_answer(401, provider_error(401, 20003, "Authenticate"));
    assert_error(
        &sms_test(&srv, &s, &api.slug, &fr(1602)),
        502,
        PROVIDER_ERROR,
        "provider 401",
    );

    // The tenant's own account.
    set_byok(&srv, &s, &api.slug);
    assert_accepted(&request_sms(&api, &fr(1603), "login_or_create"), "BYOK");
    let sent = stub.wait_to(&fr(1603), 1);
    assert_eq!(sent.password.as_deref(), Some(BYOK_TOKEN));
    codes.push(sent.code());
    assert_error(
        &verify_sms(&api, &fr(1603), &other_code(&sent.code())),
        401,
        EXPIRED,
        "a wrong code",
    );
    sms_tokens(&api, &verify_sms(&api, &fr(1603), &sent.code()), None, None);
    stub.then_answer(401, provider_error(401, 20003, "Authenticate"));
    assert_error(
        &sms_test(&srv, &s, &api.slug, &fr(1604)),
        502,
        PROVIDER_ERROR,
        "BYOK 401",
    );

    // Every line about the sends is written: the courier's before it lets go of a message,
    // the dashboard's before its answer.
    wait_for_idle_delivery(&srv, "sms");
    let log = srv.log_text();
    assert!(!log.trim().is_empty(), "no log captured");
    assert!(
        log.contains("text message sent") && log.contains("test text message not sent"),
        "the sends are not in the log"
    );
    assert!(
        !log.contains(PLATFORM_TOKEN),
        "the platform token is in the log"
    );
    assert!(!log.contains(BYOK_TOKEN), "the BYOK token is in the log");
    for code in &codes {
        assert!(!contains_word(&log, code), "the code {code} is in the log");
    }
    // The BYOK token is sealed at rest.
    srv.kill_and_check_absent(BYOK_TOKEN);
}

/// Sign-in and confirmation codes live ten minutes: each still works 30 s before its end and
/// is refused 30 s after it (on the server's offset clock, moved by restarts).
#[test]
fn sms_codes_work_until_ten_minutes_and_not_after() {
    let faults = [(
        "TESSERA__TESTING__FAULT_INJECTION".to_owned(),
        "true".to_owned(),
    )];
    let (smtp, mut srv, mut api, _s) = sms_setup("Sms Expiry Co", &faults);
    // Users with a password, who can step up as confirming a number needs.
    let u1 = api.verified_user(&smtp, "early@example.com", USER_PASSWORD);
    let u2 = api.verified_user(&smtp, "late@example.com", USER_PASSWORD);
    let (early, late, early_confirm, late_confirm) = (fr(4101), fr(4102), fr(4103), fr(4104));
    let issued = std::time::Instant::now();
    assert_accepted(&request_sms(&api, &early, "login_or_create"), "early");
    assert_accepted(&request_sms(&api, &late, "login_or_create"), "late");
    assert_accepted(&phone_verify(&api, &u1.access, &early_confirm), "early");
    assert_accepted(&phone_verify(&api, &u2.access, &late_confirm), "late");
    let early_code = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &early, 1));
    let late_code = code_of(&wait_sms(&srv, &api.slug, LOGIN_KIND, &late, 1));
    let early_confirm_code = code_of(&wait_sms(&srv, &api.slug, PHONE_KIND, &early_confirm, 1));
    let late_confirm_code = code_of(&wait_sms(&srv, &api.slug, PHONE_KIND, &late_confirm, 1));

    // 9 min 30 s on, both codes still work.
    let offset = crate::support::offset_for_age(issued, 570);
    restart_with(
        &mut srv,
        &mut api,
        &[("TESSERA__TESTING__CLOCK_OFFSET_SECS", &offset)],
    );
    sms_tokens(&api, &verify_sms(&api, &early, &early_code), None, None);
    let t1 = renew(&api, &u1);
    let r = phone_confirm(&api, &t1.access, &early_confirm, &early_confirm_code);
    assert_eq!(
        r.expect(200)["phone"],
        early_confirm.as_str(),
        "a confirmation code at 9 min 30 s: {}",
        r.body
    );

    // 10 min 30 s on, neither does.
    restart_with(
        &mut srv,
        &mut api,
        &[("TESSERA__TESTING__CLOCK_OFFSET_SECS", "630")],
    );
    assert_error(
        &verify_sms(&api, &late, &late_code),
        401,
        EXPIRED,
        "a sign-in code at 10 min 30 s",
    );
    let t2 = renew(&api, &u2);
    assert_error(
        &phone_confirm(&api, &t2.access, &late_confirm, &late_confirm_code),
        401,
        EXPIRED,
        "a confirmation code at 10 min 30 s",
    );
    assert_eq!(api.me(&t2.access).expect(200)["phone"], Value::Null);
}

#[test]
fn a_never_confirmed_account_enrols_no_mfa_and_the_owners_reset_ends_its_holder() {
    let (smtp, srv, api, s) = user_setup("Reset Hijack Co", &[]);
    enable_guests(&srv, &s, &api.slug);
    // A guest claims the address of someone else and never confirms it: it may not enrol
    // TOTP (which would survive the owner's reset).
    let guest = new_guest(&api, None).tokens.access;
    let victim = "owner.of.address@example.com";
    let r = api.send_as(
        Some(&api.api_key),
        "POST",
        "/v1/auth/register",
        Some(&guest),
        Some(&json!({ "email": victim, "password": USER_PASSWORD, "consent": true })),
        Some(&fresh_client_ip()),
    );
    assert_eq!(r.expect(200)["user"]["email_verified"], false, "{}", r.body);
    assert_error(
        &api.mfa_setup(&guest),
        403,
        NOT_VERIFIED,
        "TOTP setup, address unconfirmed",
    );
    assert_eq!(api.me(&guest).expect(200)["mfa_enabled"], false);

    // The address's owner resets the password with the mailed link.
    api.post("/v1/auth/forgot-password", &json!({ "email": victim }))
        .expect(202);
    let mail = smtp.wait_for(&api.slug, "password_reset", victim, 1);
    let token = mail
        .token_after(&api.link("reset-password"))
        .unwrap_or_else(|| panic!("no reset link in {}", mail.text));
    let new_password = "the real owner's passphrase";
    api.post(
        "/v1/auth/reset-password",
        &json!({ "token": token, "password": new_password }),
    )
    .expect(200);

    // The registrant's session is gone: the owner signs in with the password alone.
    assert_eq!(api.me(&guest).status, 401);
    let t = api.login_ok(victim, new_password);
    let me = api.me(&t.access);
    let me = me.expect(200);
    assert_eq!(
        (&me["mfa_enabled"], &me["email_verified"]),
        (&json!(false), &json!(true)),
        "{me}"
    );
}
