//! The security settings (spec 2.8): the MFA policy, e-mail rules, account linking, text
//! messages (with the tenant's own provider account) and the passwordless methods.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use axum::Json;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    settings::{
        rules::{SettingsFaults, MFA_GRACE_DAYS, SMS_MONTHLY_CAP},
        MfaPolicy, SecurityPatch, SettingsChange,
    },
    SettingsView,
};
use time::OffsetDateTime;
use utoipa::{
    openapi::{
        schema::{ArrayBuilder, SchemaType},
        Array, Object, ObjectBuilder, Type,
    },
    ToSchema,
};

use super::{enum_schema, invalid, not_null, Caller};
use crate::http::error_responses::NoSessionOrReauth;
use crate::http::error_responses::{ForbiddenOrCsrf, NotCallersTenant, Unauthenticated};
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    fields::nullable,
    path_id::TenantSlug,
};

fn mfa_policy_schema() -> Object {
    enum_schema(&["optional", "required"]).build()
}

fn countries_schema() -> Array {
    ArrayBuilder::new()
        .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some("^[A-Z]{2}$")),
        )
        .max_items(Some(300))
        .build()
}

/// Spec 2.8: every field optional; `null` clears the nullable ones.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct UpdateTenantSecurityRequest {
    /// `optional` or `required`.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = mfa_policy_schema, required = false)]
    pub mfa_policy: Option<Option<String>>,
    /// 3-30.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = i64, required = false, minimum = 3, maximum = 30)]
    pub mfa_grace_period_days: Option<Option<i64>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = bool, required = false)]
    pub block_disposable_emails: Option<Option<bool>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = bool, required = false)]
    pub block_email_subaddresses: Option<Option<bool>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = bool, required = false)]
    pub automatic_account_linking_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = bool, required = false)]
    pub explicit_account_linking_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = bool, required = false)]
    pub sms_otp_enabled: Option<Option<bool>>,
    /// 0-100000 with the tenant's own provider account (all three `byok_provider_*` set); on
    /// the platform's account at most the tier's ceiling (the operator's
    /// `[sms.platform_monthly_cap_max]`), which also bounds a larger stored value when texts
    /// are sent.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = i64, required = false, minimum = 0, maximum = 100000)]
    pub sms_otp_monthly_cap: Option<Option<i64>>,
    /// `^AC[a-f0-9]{32}$`, or null to clear.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, pattern = "^AC[a-f0-9]{32}$", nullable)]
    pub byok_provider_account_sid: Option<Option<String>>,
    /// 32-128 characters, or null to clear. Stored encrypted; never returned.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, min_length = 32, max_length = 128, nullable)]
    pub byok_provider_auth_token: Option<Option<String>>,
    /// `^MG[a-f0-9]{32}$`, or null to clear.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>, pattern = "^MG[a-f0-9]{32}$", nullable)]
    pub byok_provider_messaging_service_sid: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = bool, required = false)]
    pub magic_link_enabled: Option<Option<bool>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = bool, required = false)]
    pub email_otp_enabled: Option<Option<bool>>,
    /// At most 300 codes matching `^[A-Z]{2}$`; null or `[]` restores the full platform list.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = countries_schema, required = false)]
    pub sms_allowed_countries: Option<Option<Vec<String>>>,
}

impl UpdateTenantSecurityRequest {
    fn touches_byok(&self) -> bool {
        self.byok_provider_account_sid.is_some()
            || self.byok_provider_auth_token.is_some()
            || self.byok_provider_messaging_service_sid.is_some()
    }

    fn into_patch(self) -> Result<SecurityPatch, ApiError> {
        let mut f = SettingsFaults::new();
        let mfa_policy = not_null(&mut f, "mfa_policy", &self.mfa_policy).and_then(|p| {
            let parsed = match p.as_str() {
                "optional" => Some(MfaPolicy::Optional),
                "required" => Some(MfaPolicy::Required),
                _ => None,
            };
            f.check(
                "mfa_policy",
                parsed.is_some(),
                "must be optional or required",
            );
            parsed
        });
        let grace = not_null(&mut f, "mfa_grace_period_days", &self.mfa_grace_period_days);
        let mfa_grace_period_days =
            grace.and_then(|v| MFA_GRACE_DAYS.take(&mut f, "mfa_grace_period_days", v));
        let cap = not_null(&mut f, "sms_otp_monthly_cap", &self.sms_otp_monthly_cap);
        let sms_otp_monthly_cap =
            cap.and_then(|v| SMS_MONTHLY_CAP.take(&mut f, "sms_otp_monthly_cap", v));
        let patch = SecurityPatch {
            mfa_policy,
            mfa_grace_period_days,
            block_disposable_emails: not_null(
                &mut f,
                "block_disposable_emails",
                &self.block_disposable_emails,
            ),
            block_email_subaddresses: not_null(
                &mut f,
                "block_email_subaddresses",
                &self.block_email_subaddresses,
            ),
            automatic_account_linking_enabled: not_null(
                &mut f,
                "automatic_account_linking_enabled",
                &self.automatic_account_linking_enabled,
            ),
            explicit_account_linking_enabled: not_null(
                &mut f,
                "explicit_account_linking_enabled",
                &self.explicit_account_linking_enabled,
            ),
            sms_otp_enabled: not_null(&mut f, "sms_otp_enabled", &self.sms_otp_enabled),
            sms_otp_monthly_cap,
            byok_provider_account_sid: self.byok_provider_account_sid,
            byok_provider_auth_token: self.byok_provider_auth_token,
            byok_provider_messaging_service_sid: self.byok_provider_messaging_service_sid,
            magic_link_enabled: not_null(&mut f, "magic_link_enabled", &self.magic_link_enabled),
            email_otp_enabled: not_null(&mut f, "email_otp_enabled", &self.email_otp_enabled),
            sms_allowed_countries: self.sms_allowed_countries,
        };
        // The patch's own rules (the SIDs, the token, the countries) are the settings'.
        patch.check(&mut f);
        invalid(f)?;
        Ok(patch)
    }
}

#[derive(Serialize, ToSchema)]
pub struct SecuritySettingsResponse {
    pub mfa_policy: String,
    pub mfa_grace_period_days: u32,
    pub block_disposable_emails: bool,
    pub block_email_subaddresses: bool,
    pub automatic_account_linking_enabled: bool,
    pub explicit_account_linking_enabled: bool,
    pub sms_otp_enabled: bool,
    pub sms_otp_monthly_cap: u32,
    pub byok_provider_account_sid: Option<String>,
    /// Whether a BYOK auth token is stored; the token itself is never returned.
    pub byok_provider_auth_token_set: bool,
    pub byok_provider_messaging_service_sid: Option<String>,
    pub magic_link_enabled: bool,
    pub email_otp_enabled: bool,
    /// `null`: the full platform allowlist.
    pub sms_allowed_countries: Option<Vec<String>>,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl From<SettingsView> for SecuritySettingsResponse {
    fn from(v: SettingsView) -> Self {
        let s = v.settings.security;
        SecuritySettingsResponse {
            mfa_policy: match s.mfa_policy {
                MfaPolicy::Optional => "optional".into(),
                MfaPolicy::Required => "required".into(),
            },
            mfa_grace_period_days: s.mfa_grace_period_days,
            block_disposable_emails: s.block_disposable_emails,
            block_email_subaddresses: s.block_email_subaddresses,
            automatic_account_linking_enabled: s.automatic_account_linking_enabled,
            explicit_account_linking_enabled: s.explicit_account_linking_enabled,
            sms_otp_enabled: s.sms_otp_enabled,
            sms_otp_monthly_cap: s.sms_otp_monthly_cap,
            byok_provider_account_sid: s.byok_provider_account_sid,
            byok_provider_auth_token_set: v.byok_token_set,
            byok_provider_messaging_service_sid: s.byok_provider_messaging_service_sid,
            magic_link_enabled: s.magic_link_enabled,
            email_otp_enabled: s.email_otp_enabled,
            sms_allowed_countries: s.sms_allowed_countries,
            updated_at: v.settings.updated_at,
        }
    }
}

/// The tenant's security settings (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/security", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "Security settings", body = SecuritySettingsResponse),
        Unauthenticated, NotCallersTenant,
    ))]
pub async fn get_security(caller: Caller) -> Result<Json<SecuritySettingsResponse>, ApiError> {
    Ok(Json(caller.read().await?.into()))
}

/// Updates security settings (owner; BYOK changes need a re-authentication in the last 5
/// minutes).
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/security", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = UpdateTenantSecurityRequest,
    responses(
        (status = 200, description = "The updated settings", body = SecuritySettingsResponse),
        (status = 400, description = "`validation/invalid_request` naming each field; `sms_otp_monthly_cap` above the tier's ceiling (`[sms.platform_monthly_cap_max]`, named in the message) while the tenant sends through the platform's SMS account", body = ErrorBody),
        NoSessionOrReauth,
        ForbiddenOrCsrf, NotCallersTenant,
    ))]
pub async fn patch_security(
    caller: Caller,
    ApiJson(req): ApiJson<UpdateTenantSecurityRequest>,
) -> Result<Json<SecuritySettingsResponse>, ApiError> {
    caller.owner()?;
    let byok = req.touches_byok();
    let patch = req.into_patch()?;
    if byok {
        caller.auth.require_recent_reauth()?;
    }
    let change = SettingsChange::Security(Box::new(patch));
    Ok(Json(caller.update(change).await?.into()))
}
