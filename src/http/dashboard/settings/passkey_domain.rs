//! The passkey relying-party id and the extra origins its ceremonies accept.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use crate::origin::normalize_origin;
use axum::{http::HeaderMap, Json};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::PasskeysMsg;
use tessera_actors::tenant::{
    settings::rules::{
        check_passkey_domain, SettingsFaults, ANDROID_ORIGIN_PREFIX, PASSKEY_ORIGIN_RULE,
    },
    SettingsView,
};
use utoipa::ToSchema;

use super::{confirmed, invalid, Caller};
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    fields::nullable,
    path_id::TenantSlug,
};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTenantPasskeyDomainRequest {
    /// 1-253 characters matching `^[a-z0-9.-]+$`, or null for the host of the accounts URL.
    /// Required.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, required = true, nullable, min_length = 1, max_length = 253, pattern = "^[a-z0-9.-]+$")]
    pub passkey_rp_id: Option<Option<String>>,
    /// Exact origins accepted besides `https://<rp id>` and its subdomains: web origins
    /// (`http://localhost:5173` in development) or Android apps
    /// (`android:apk-key-hash:<base64url SHA-256 of the signing certificate>`). At most 20;
    /// absent keeps the list.
    #[schema(max_items = 20)]
    pub passkey_origins: Option<Vec<String>>,
}

#[derive(Serialize, ToSchema)]
pub struct PasskeyDomainResponse {
    /// The relying-party id set; null: the host of the accounts URL.
    pub passkey_rp_id: Option<String>,
    /// The extra origins accepted in passkey ceremonies.
    pub passkey_origins: Vec<String>,
}

fn passkey_domain_response(v: SettingsView) -> PasskeyDomainResponse {
    PasskeyDomainResponse {
        passkey_rp_id: v.settings.passkey_rp_id,
        passkey_origins: v.settings.passkey_origins,
    }
}

/// The passkey relying-party id and extra origins (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/passkey-domain", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The relying-party id and origins", body = PasskeyDomainResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_passkey_domain(caller: Caller) -> Result<Json<PasskeyDomainResponse>, ApiError> {
    Ok(Json(passkey_domain_response(caller.read().await?)))
}

/// Sets the passkey relying-party id and extra origins (owner). A new relying-party id
/// strands the passkeys registered under the old one; while there are any, the change needs
/// `X-Service-Confirm: passkey-rp-id-change` (409 `passkey/rp_id_in_use` without it).
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/passkey-domain", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("X-Service-Confirm" = Option<String>, Header, description = "`passkey-rp-id-change` to strand existing passkeys"),
    ),
    request_body = UpdateTenantPasskeyDomainRequest,
    responses(
        (status = 200, description = "The relying-party id and origins", body = PasskeyDomainResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`passkey/rp_id_in_use`: users hold passkeys under the current id; `details.passkeys` says how many", body = ErrorBody),
    ))]
pub async fn put_passkey_domain(
    caller: Caller,
    headers: HeaderMap,
    ApiJson(req): ApiJson<UpdateTenantPasskeyDomainRequest>,
) -> Result<Json<PasskeyDomainResponse>, ApiError> {
    let tenant = caller.owner()?;
    let mut f = SettingsFaults::new();
    let rp_id = match req.passkey_rp_id {
        None => {
            f.check("passkey_rp_id", false, "is required (a domain or null)");
            None
        }
        given => given,
    };
    // A web origin's normal form is the edge's; the rest of the rules are the settings'.
    for (i, o) in req.passkey_origins.iter().flatten().enumerate() {
        if !o.starts_with(ANDROID_ORIGIN_PREFIX) {
            let exact = normalize_origin(o).is_some_and(|n| n == *o);
            f.check(&format!("passkey_origins[{i}]"), exact, PASSKEY_ORIGIN_RULE);
        }
    }
    check_passkey_domain(&mut f, rp_id.as_ref(), req.passkey_origins.as_deref());
    invalid(f)?;
    let confirmed = confirmed(&headers, "passkey-rp-id-change");
    let v = tenant
        .call(|reply| PasskeysMsg::PasskeyDomain {
            rp_id: rp_id.clone(),
            origins: req.passkey_origins.clone(),
            confirmed,
            ctx: caller.auth.ctx.clone(),
            reply,
        })
        .await
        .map_err(ApiError::from)?;
    Ok(Json(passkey_domain_response(v)))
}
