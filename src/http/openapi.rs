//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` attributes and the
//! request and response types. Nothing here is written by hand but the document's header.

use utoipa::{
    openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme},
    Modify, OpenApi,
};

use super::error::{ErrorBody, ErrorDetail};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Tessera",
        version = "1.0.0",
        description = "Multi-tenant authentication platform. Errors always have the shape \
            {\"error\": {\"code\", \"message\", \"details\"?}}; every response carries X-Request-Id."
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    modifiers(&SecuritySchemes),
    tags(
        (name = "platform", description = "Health, readiness, metrics and this document"),
        (name = "onboarding", description = "Self-service tenant creation"),
        (name = "tenant", description = "The tenant of the calling API key"),
        (name = "accounts", description = "End users: registration, login, tokens, sessions, passwords"),
        (name = "passwordless", description = "Sign-in by e-mailed link or code, or texted code"),
        (name = "mfa", description = "TOTP multi-factor authentication and recovery codes"),
        (name = "step-up", description = "Step-up re-authentication (RFC 9470) and the routes it gates"),
        (name = "tokens", description = "A tenant's signing keys and discovery document"),
        (name = "dashboard", description = "Tenant operators: sessions, tenants, members, API keys, audit log"),
        (name = "dashboard settings", description = "Every tenant setting"),
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
                    .build(),
            ),
        );
    }
}
