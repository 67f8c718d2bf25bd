//! The input format and the oracle of the `request_bodies` target, shared with the seed replay
//! of the integration tests (`tests/it/fuzz_seeds.rs` includes this file by path), so the
//! replay decodes a seed exactly as the fuzzer does. Self-contained: std and `serde_json`
//! only, no item of the fuzz crate.
//!
//! Input: byte 0 picks the route (`ROUTES[b % len]`), byte 1 the content type
//! (`CONTENT_TYPES[b % len]`), the rest is the body.

/// What a route needs to get past authentication.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Auth {
    /// No credentials.
    None,
    /// `X-API-Key` of the API tenant.
    ApiKey,
    /// `X-API-Key` of the users tenant and the access token of one of its users (a guest in
    /// the fuzz target; a registered, verified user in the seed replay).
    User,
    /// The dashboard session of the dashboard tenant's owner; `{slug}` is that tenant.
    Dashboard,
}

/// One route that reads a body.
#[derive(Debug)]
pub struct Route {
    pub method: &'static str,
    pub path: &'static str,
    pub auth: Auth,
}

const fn route(method: &'static str, path: &'static str, auth: Auth) -> Route {
    Route { method, path, auth }
}

/// Every route that reads a body, except `POST /v1/auth/logout` (whose optional body is parsed
/// by the same `optional_json` as the guest sign-in and step-up initiations, and which would
/// end the user's session on nearly every input). Append only: the seeds name routes by index.
pub const ROUTES: &[Route] = &[
    route("POST", "/v1/onboarding/signup", Auth::None), // 0
    route("POST", "/v1/auth/register", Auth::ApiKey),   // 1
    route("POST", "/v1/auth/verify-email", Auth::ApiKey), // 2
    route("POST", "/v1/auth/resend-verification", Auth::ApiKey), // 3
    route("POST", "/v1/auth/login", Auth::ApiKey),      // 4
    route("POST", "/v1/auth/refresh", Auth::ApiKey),    // 5
    route("POST", "/v1/auth/forgot-password", Auth::ApiKey), // 6
    route("POST", "/v1/auth/reset-password", Auth::ApiKey), // 7
    route("POST", "/v1/auth/anonymous", Auth::ApiKey),  // 8
    route("POST", "/v1/auth/mfa/verify", Auth::ApiKey), // 9
    route("POST", "/v1/auth/magic-link", Auth::ApiKey), // 10
    route("POST", "/v1/auth/magic-link/verify", Auth::ApiKey), // 11
    route("POST", "/v1/auth/email-otp", Auth::ApiKey),  // 12
    route("POST", "/v1/auth/email-otp/verify", Auth::ApiKey), // 13
    route("POST", "/v1/auth/sms-otp", Auth::ApiKey),    // 14
    route("POST", "/v1/auth/sms-otp/verify", Auth::ApiKey), // 15
    route("POST", "/v1/auth/change-password", Auth::User), // 16
    route("POST", "/v1/auth/mfa/verify-setup", Auth::User), // 17
    route("POST", "/v1/auth/mfa/disable", Auth::User),  // 18
    route("POST", "/v1/auth/mfa/recovery-codes", Auth::User), // 19
    route("POST", "/v1/users/me/phone/verify", Auth::User), // 20
    route("POST", "/v1/users/me/phone/confirm", Auth::User), // 21
    route("POST", "/v1/auth/step-up/password", Auth::User), // 22
    route("POST", "/v1/auth/step-up/email-otp/initiate", Auth::User), // 23
    route("POST", "/v1/auth/step-up/email-otp/verify", Auth::User), // 24
    route("POST", "/v1/auth/step-up/magic-link/initiate", Auth::User), // 25
    route("POST", "/v1/auth/step-up/magic-link/verify", Auth::User), // 26
    route("POST", "/v1/auth/dashboard/login", Auth::None), // 27
    route("POST", "/v1/auth/dashboard/accept-invite", Auth::None), // 28
    route("POST", "/v1/auth/dashboard/reauth", Auth::Dashboard), // 29
    route("POST", "/v1/auth/dashboard/sms-test", Auth::Dashboard), // 30
    route(
        "POST",
        "/v1/auth/dashboard/tenants/{slug}/members",
        Auth::Dashboard,
    ), // 31
    route(
        "PATCH",
        "/v1/auth/dashboard/tenants/{slug}/settings/security",
        Auth::Dashboard,
    ), // 32
    route(
        "PUT",
        "/v1/auth/dashboard/tenants/{slug}/settings/email-domains",
        Auth::Dashboard,
    ), // 33
    route(
        "PATCH",
        "/v1/auth/dashboard/tenants/{slug}/settings/anonymous",
        Auth::Dashboard,
    ), // 34
    route(
        "PATCH",
        "/v1/auth/dashboard/tenants/{slug}/settings/roles",
        Auth::Dashboard,
    ), // 35
    route(
        "PUT",
        "/v1/auth/dashboard/tenants/{slug}/settings/passkey-domain",
        Auth::Dashboard,
    ), // 36
    route(
        "PUT",
        "/v1/auth/dashboard/tenants/{slug}/settings/eudi",
        Auth::Dashboard,
    ), // 37
    route(
        "PUT",
        "/v1/auth/dashboard/tenants/{slug}/settings/eudi-age",
        Auth::Dashboard,
    ), // 38
];

/// `None`: no Content-Type header. `application/merge-patch+json` (like no header) is refused
/// with 415 before any body is read: it keeps the refusal path under the fuzzer.
pub const CONTENT_TYPES: &[Option<&str>] = &[
    Some("application/json"),
    Some("application/json; charset=utf-8"),
    Some("application/merge-patch+json"),
    None,
];

/// One input, decoded: the route, the content type and the body. `None` for an input shorter
/// than the two selector bytes (nothing is sent).
pub fn decode(data: &[u8]) -> Option<(&'static Route, Option<&'static str>, &[u8])> {
    let [sel, ct, body @ ..] = data else {
        return None;
    };
    let route = &ROUTES[usize::from(*sel) % ROUTES.len()];
    let content_type = CONTENT_TYPES[usize::from(*ct) % CONTENT_TYPES.len()];
    Some((route, content_type, body))
}

/// What is wrong with an answer to any body, whatever the body: a 500; an error answer
/// without the contract's error envelope, `{"error": {"code": "...", "message": "..."}}`; a
/// 400 `validation/invalid_request` that names no field (`error.details.fields`, an object of
/// field paths to messages, at least one). `None` when nothing is.
pub fn answer_problem(status: u16, body: &[u8]) -> Option<String> {
    let shown = || String::from_utf8_lossy(body).into_owned();
    if status == 500 {
        return Some(format!("internal error: {}", shown()));
    }
    if status < 400 {
        return None;
    }
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Some(format!(
            "{status} answered with a body that is not JSON: {:?}",
            shown()
        ));
    };
    let code = v["error"]["code"].as_str();
    let message = v["error"]["message"].as_str();
    match (code, message) {
        (Some(c), Some(_)) if !c.is_empty() => {}
        _ => return Some(format!("{status} answered without the error envelope: {v}")),
    }
    if status == 400 && code == Some("validation/invalid_request") {
        let named = v["error"]["details"]["fields"]
            .as_object()
            .is_some_and(|f| !f.is_empty() && f.values().all(serde_json::Value::is_string));
        if !named {
            return Some(format!("a validation error that names no field: {v}"));
        }
    }
    None
}
