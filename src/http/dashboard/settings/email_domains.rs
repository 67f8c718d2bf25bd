//! The registration e-mail domain lists: an allowlist and a blocklist, replaced together.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use axum::Json;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    settings::{
        rules::{SettingsFaults, MAX_EMAIL_DOMAINS},
        EmailDomains, SettingsChange,
    },
    SettingsView,
};
use utoipa::ToSchema;

use super::{normalize_entries, Caller};
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    fields::normalize_domain,
    path_id::TenantSlug,
};

/// Both lists are replaced at once; an absent list is empty.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutEmailDomainsRequest {
    /// When non-empty, only these domains may register. At most 100, each 1-253 characters.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub allowlist: Vec<String>,
    /// These domains may not register. At most 100, each 1-253 characters.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub blocklist: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct EmailDomainsResponse {
    /// Lowercase, punycoded, de-duplicated.
    pub allowlist: Vec<String>,
    pub blocklist: Vec<String>,
}

fn normalize_list(f: &mut SettingsFaults, field: &str, list: &[String]) -> Vec<String> {
    normalize_entries(
        f,
        field,
        list,
        MAX_EMAIL_DOMAINS,
        normalize_domain,
        |shown| format!("{shown:?} is not a valid domain (1-253 characters, e.g. example.com)"),
    )
}

fn domains_response(v: SettingsView) -> EmailDomainsResponse {
    EmailDomainsResponse {
        allowlist: v.settings.email_domains.allowlist,
        blocklist: v.settings.email_domains.blocklist,
    }
}

/// The registration e-mail domain lists (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/email-domains", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "Both lists", body = EmailDomainsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_email_domains(caller: Caller) -> Result<Json<EmailDomainsResponse>, ApiError> {
    Ok(Json(domains_response(caller.read().await?)))
}

/// Replaces both lists atomically (owner).
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/email-domains", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = PutEmailDomainsRequest,
    responses(
        (status = 200, description = "The stored lists", body = EmailDomainsResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad entry", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_email_domains(
    caller: Caller,
    ApiJson(req): ApiJson<PutEmailDomainsRequest>,
) -> Result<Json<EmailDomainsResponse>, ApiError> {
    caller.owner()?;
    let mut f = SettingsFaults::new();
    let allowlist = normalize_list(&mut f, "allowlist", &req.allowlist);
    let blocklist = normalize_list(&mut f, "blocklist", &req.blocklist);
    let change = SettingsChange::EmailDomains(EmailDomains {
        allowlist,
        blocklist,
    });
    Ok(Json(domains_response(caller.apply(f, change).await?)))
}
