//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` attributes and the
//! request and response types. Nothing here is written by hand but the document's header and
//! [`complete`], which adds the answers the layers and extractors in front of every handler
//! give, so no handler has to repeat them and none can forget them.

use std::collections::BTreeSet;

use utoipa::{
    openapi::{
        header::HeaderBuilder,
        path::Operation,
        request_body::RequestBody,
        schema::SchemaType,
        security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
        ContentBuilder, ObjectBuilder, Ref, RefOr, Required, Response, ResponseBuilder, Schema,
        Type,
    },
    Modify, OpenApi,
};

use super::{
    error::{ErrorBody, ErrorDetail},
    tenant::TenantResponse,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tessera",
        version = "1.0.0",
        description = "Multi-tenant authentication platform. Errors always have the shape \
            {\"error\": {\"code\", \"message\", \"details\"?}}; every response carries X-Request-Id \
            (the client's if it sent exactly one of 1-128 characters among A-Za-z0-9._:-, else a \
            generated UUID). \
            The one exception is a request that is not valid HTTP/1.1 (an unknown Transfer-Encoding, \
            a malformed or conflicting Content-Length, a forbidden byte in a header or the request \
            line, an over-long URI or header section): no route sees it, and the HTTP layer answers \
            a bare 400, 414 or 431 with no body and closes the connection. \
            Browser apps: every end-user route answers a CORS preflight (OPTIONS) from any origin; \
            a real request from an origin is refused with 403 cors/origin_not_allowed when the API \
            key's tenant lists allowed_origins (dashboard settings/cors) and that origin is not on \
            the list. Dashboard routes are same-origin unless the operator lists \
            server.dashboard_origins."
    ),
    // TenantResponse is answered through tenant::CallersTenant, a response set whose schemas
    // the paths do not collect.
    components(schemas(ErrorBody, ErrorDetail, TenantResponse)),
    modifiers(&SecuritySchemes),
    tags(
        (name = "platform", description = "Health, readiness, metrics and this document"),
        (name = "onboarding", description = "Self-service tenant creation"),
        (name = "tenant", description = "The tenant of the calling API key"),
        (name = "accounts", description = "End users: registration, login, tokens, sessions, passwords"),
        (name = "passwordless", description = "Sign-in by e-mailed link or code, or texted code"),
        (name = "mfa", description = "TOTP multi-factor authentication and recovery codes"),
        (name = "step-up", description = "Step-up re-authentication (RFC 9470) and the routes it gates"),
        (name = "passkeys", description = "Passkeys (WebAuthn): registration, sign-in with or without a user handle, the owner's list"),
        (name = "guardian", description = "Guardian (parental) consent for minors: the child's request, the consent page, the guardian portal (GDPR art. 8)"),
        (name = "wallet", description = "EU digital identity wallet sign-in and age verification (OpenID4VP 1.0 with SD-JWT VC and mdoc)"),
        (name = "tokens", description = "A tenant's signing keys and discovery document"),
        (name = "oauth", description = "The tenant's OAuth 2.1 / OpenID Connect provider: authorize, consent, token, userinfo, revocation, introspection, and the user's consents"),
        (name = "dashboard", description = "Tenant operators: sessions, tenants, members, API keys, audit log"),
        (name = "dashboard settings", description = "Every tenant setting"),
        (name = "webhooks", description = "The tenant's webhook endpoints and their delivery log. \
            Each event is POSTed as JSON `{\"type\", \"timestamp\" (RFC 3339), \"data\"}` and \
            signed per Standard Webhooks: `webhook-id` (the event's id, the same on every \
            attempt), `webhook-timestamp` (Unix seconds of the attempt), `webhook-signature` \
            (`v1,<base64 HMAC-SHA256 of \"{id}.{timestamp}.{body}\">`, keyed by the \
            base64-decoded part of the secret after `whsec_`; two space-separated signatures \
            for 24 hours after a rotation). Events (`data` holds ids, never secrets): \
            `user.created` {user_id, method (password, guest_claim, email_otp, sms_otp, social, \
            eudi_wallet, admin), email_verified}, never for a blocked registration; \
            `user.deleted` {user_id}; `user.email_verified` {user_id}; `session.revoked` \
            {user_id, scope (one, all, all_but_current), session_id or kept_session_id, reason}; \
            `agent.revoked` {agent_id, client_id, name, revoked_at}; `webhook.test` \
            {endpoint_id, message}, sent only by the test route. A 2xx answer within 10 s \
            delivers; anything else is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and \
            10 h; an endpoint failing for 5 days is disabled and its owners are mailed."),
    )
)]
pub struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .description(Some("An end user's access token"))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "management_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A tenant's management key (`tmk_...`), for its back end only",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            DASHBOARD_SESSION,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The `session_token` of a dashboard login, as `Authorization: Bearer`",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            DASHBOARD_COOKIE,
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                super::dashboard::SESSION_COOKIE,
                "The dashboard session cookie set at login; writes also need the header \
                 X-CSRF-Token",
            ))),
        );
    }
}

/// The security scheme of a dashboard session sent as a bearer token.
pub const DASHBOARD_SESSION: &str = "dashboard_session";
/// The security scheme of a dashboard session sent as its cookie (writes need `X-CSRF-Token`).
pub const DASHBOARD_COOKIE: &str = "dashboard_cookie";

/// Adds to every operation the answers that come from in front of its handler, unless the
/// operation documents that status itself:
/// - a JSON request body (`ApiJson`, `optional_json`): 400 `validation/invalid_request`, 413
///   `validation/payload_too_large`, 415 `validation/unsupported_media_type`;
/// - any security requirement (`ApiTenant`, `UserBearer`, `Dashboard`): 401;
/// - an API key: 403 `cors/origin_not_allowed` (the CORS check in front of every end-user
///   route);
/// - a dashboard cookie on a write: 403 `dashboard/csrf_failed`;
/// - every route (the request timeout, an actor that does not answer): 503 with `Retry-After`.
///
/// And every 429 (always made by `ApiError::rate_limited`) gets its `Retry-After` and
/// `X-Service-Docs` headers, and an optional body is "absent, or this", never "null".
pub fn complete(doc: &mut utoipa::openapi::OpenApi) {
    for item in doc.paths.paths.values_mut() {
        let ops = [
            (false, &mut item.get),
            (false, &mut item.head),
            (true, &mut item.post),
            (true, &mut item.put),
            (true, &mut item.patch),
            (true, &mut item.delete),
        ];
        for (writes, op) in ops {
            if let Some(op) = op.as_mut() {
                complete_operation(op, writes);
            }
        }
    }
}

fn complete_operation(op: &mut Operation, writes: bool) {
    if let Some(body) = op.request_body.as_mut() {
        optional_body_is_absent_not_null(body);
    }
    let json_body = op
        .request_body
        .as_ref()
        .is_some_and(|b| b.content.contains_key("application/json"));
    let schemes = security_schemes(op);
    let responses = &mut op.responses.responses;
    let mut add = |status: &str, response: Response| {
        responses
            .entry(status.to_owned())
            .or_insert(RefOr::T(response));
    };
    if json_body {
        add(
            "400",
            error_response(
                "`validation/invalid_request`: the body is not a JSON object (whitespace alone \
                 included), an object repeats a key, or a field is missing, unknown or invalid \
                 (named by its path in `details.fields`)",
            ),
        );
        add(
            "413",
            error_response("`validation/payload_too_large`: the body is over the size limit"),
        );
        add(
            "415",
            error_response(
                "`validation/unsupported_media_type`: the body is not `application/json` (with \
                 at most the parameter `charset=utf-8`; `+json` types are refused)",
            ),
        );
    }
    if !schemes.is_empty() {
        add(
            "401",
            error_response(
                "Missing or invalid credentials: `auth/missing_api_key`, `auth/invalid_api_key`, \
                 `auth/invalid_token` (also for a malformed Authorization header) or \
                 `dashboard/unauthenticated`",
            ),
        );
    }
    if writes && schemes.contains(DASHBOARD_COOKIE) {
        add(
            "403",
            error_response(
                "`dashboard/csrf_failed`: a cookie-authenticated write without the session's \
                 X-CSRF-Token",
            ),
        );
    }
    add(
        "503",
        with_retry_after(
            ResponseBuilder::new()
                .description(
                    "`service/unavailable`: the request timed out or the tenant is briefly \
                     unavailable; retry after `Retry-After` seconds",
                )
                .content("application/json", error_content()),
        )
        .build(),
    );
    if let Some(RefOr::T(r)) = responses.get_mut("429") {
        let retry_after = positive_integer_header("Seconds to wait before retrying");
        r.headers
            .entry("Retry-After".to_owned())
            .or_insert(retry_after);
        r.headers
            .entry("X-Service-Docs".to_owned())
            .or_insert_with(|| {
                HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::String).format(Some(
                        utoipa::openapi::SchemaFormat::Custom("uri".to_owned()),
                    )))
                    .description(Some("Where the rate limits are explained"))
                    .build()
            });
    }
    if schemes.contains("api_key") {
        const CORS: &str = "`cors/origin_not_allowed`: a browser request (with `Origin`) from an \
                            origin the API key's tenant does not list in `allowed_origins`";
        match responses.get_mut("403") {
            Some(RefOr::T(r)) => r.description = format!("{}; or {CORS}", r.description),
            Some(RefOr::Ref(_)) => {}
            None => {
                responses.insert("403".to_owned(), RefOr::T(error_response(CORS)));
            }
        }
    }
}

/// An optional body is written `Option<T>` in a `request_body` attribute, which utoipa renders
/// as "null or T". The server takes no body or a T, never a JSON `null`: the document says the
/// body is not required and, when sent, is a T.
fn optional_body_is_absent_not_null(body: &mut RequestBody) {
    if matches!(body.required, Some(Required::True)) {
        return;
    }
    for content in body.content.values_mut() {
        let Some(RefOr::T(Schema::OneOf(one_of))) = &content.schema else {
            continue;
        };
        let is_null = |s: &RefOr<Schema>| matches!(s, RefOr::T(Schema::Object(o)) if o.schema_type == SchemaType::Type(Type::Null));
        let mut rest = one_of.items.iter().filter(|s| !is_null(s));
        if let (Some(only), None) = (rest.next(), rest.next()) {
            if one_of.items.len() == 2 {
                content.schema = Some(only.clone());
            }
        }
    }
}

/// The names of the security schemes any of `op`'s requirements name.
fn security_schemes(op: &Operation) -> BTreeSet<String> {
    op.security
        .iter()
        .flatten()
        .filter_map(|req| serde_json::to_value(req).ok())
        .filter_map(|v| match v {
            serde_json::Value::Object(m) => Some(m.into_iter().map(|(k, _)| k)),
            _ => None,
        })
        .flatten()
        .collect()
}

fn error_content() -> utoipa::openapi::Content {
    ContentBuilder::new()
        .schema(Some(Ref::from_schema_name("ErrorBody")))
        .build()
}

fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content("application/json", error_content())
        .build()
}

fn positive_integer_header(description: &str) -> utoipa::openapi::header::Header {
    HeaderBuilder::new()
        .schema(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1)),
        )
        .description(Some(description))
        .build()
}

fn with_retry_after(b: ResponseBuilder) -> ResponseBuilder {
    b.header(
        "Retry-After",
        positive_integer_header("Seconds to wait before retrying"),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use serde_json::Value;

    /// Every operation documents what the layers and extractors in front of its handler can
    /// answer, and every dashboard route but login, invitation acceptance and the password reset names the
    /// session.
    #[test]
    fn every_operation_documents_the_answers_of_the_layers() {
        let (_, doc) = crate::http::routes(true);
        let doc: Value = serde_json::to_value(&doc).unwrap();
        let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let has = |status: &str| op["responses"].get(status).is_some();
                let what = format!("{method} {path}");
                assert!(has("503"), "{what}: no 503");
                if op["requestBody"]["content"]
                    .get("application/json")
                    .is_some()
                {
                    for s in ["400", "413", "415"] {
                        assert!(has(s), "{what}: JSON body but no {s}");
                    }
                }
                let names: Vec<&String> = op["security"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|r| r.as_object().unwrap().keys())
                    .collect();
                for n in &names {
                    assert!(
                        schemes.contains_key(n.as_str()),
                        "{what}: unknown scheme {n}"
                    );
                }
                if !names.is_empty() {
                    assert!(has("401"), "{what}: credentials but no 401");
                }
                let public = [
                    "/v1/auth/dashboard/login",
                    "/v1/auth/dashboard/login/mfa",
                    "/v1/auth/dashboard/accept-invite",
                    "/v1/auth/dashboard/forgot-password",
                    "/v1/auth/dashboard/reset-password",
                ];
                if path.starts_with("/v1/auth/dashboard/") && !public.contains(&path.as_str()) {
                    assert!(
                        names.iter().any(|n| n.as_str() == super::DASHBOARD_SESSION),
                        "{what}: a dashboard route without the session scheme"
                    );
                    if method != "get" {
                        assert!(has("403"), "{what}: cookie writes can fail CSRF, no 403");
                    }
                }
                if let Some(schema) = op["requestBody"]["content"]["application/json"].get("schema")
                {
                    let null = serde_json::json!({"type": "null"});
                    let nullable = schema["oneOf"]
                        .as_array()
                        .is_some_and(|alts| alts.contains(&null));
                    assert!(!nullable, "{what}: a JSON null body is documented");
                }
                if let Some(r) = op["responses"].get("429") {
                    assert!(
                        r["headers"].get("Retry-After").is_some(),
                        "{what}: 429 without Retry-After"
                    );
                }
            }
        }
    }
}
