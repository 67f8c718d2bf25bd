//! Tenant settings: security (spec 2.8), e-mail domains, guest sign-ins and the default role,
//! the passkey domain, and wallet login and age verification (spec 2.9, 2.10).
//!
//! Reads need any role, writes the owner role. Every request type rejects unknown fields, and
//! every rule is checked before anything is sent to the tenant actor, so a refused update
//! changes nothing.

use std::collections::BTreeMap;
use tessera_actors::tenant::{PasskeysMsg, SettingsMsg};

use axum::{
    extract::{Path, State},
    http::HeaderMap,
    Json,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_actors::tenant::{
    passkeys::MAX_PASSKEY_ORIGINS,
    settings::{
        AssuranceFloor, AssuranceKind, DefaultRole, DpiaLink, EmailDomains, EudiAgeConfig,
        EudiConfig, KeyResolution, MfaPolicy, MinorSettings, SecurityPatch, SettingsChange,
        TrustAnchor, UrlSettings,
    },
    SettingsView,
};
use time::OffsetDateTime;
use utoipa::{
    openapi::{
        schema::{AdditionalProperties, ArrayBuilder, OneOfBuilder, SchemaType},
        Array, Object, ObjectBuilder, Schema, Type,
    },
    ToSchema,
};

use super::Dashboard;
use crate::app::AppState;
use crate::http::fields::{is_app_url, normalize_domain, nullable};
use crate::http::{
    cors::{normalize_origin, MAX_ALLOWED_ORIGINS},
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::ApiJson,
};

/// A present, non-null value of a field that must not be null.
fn not_null<T: Clone>(e: &mut FieldErrors, field: &str, v: &Option<Option<T>>) -> Option<T> {
    match v {
        None => None,
        Some(None) => {
            e.check(field, false, "must not be null");
            None
        }
        Some(Some(x)) => Some(x.clone()),
    }
}

fn in_range(e: &mut FieldErrors, field: &str, v: Option<i64>, min: i64, max: i64) -> Option<u32> {
    let v = v?;
    let ok = (min..=max).contains(&v);
    e.check(field, ok, format!("must be an integer from {min} to {max}"));
    if ok {
        u32::try_from(v).ok()
    } else {
        None
    }
}

fn is_sid(s: &str, prefix: &str) -> bool {
    s.len() == 34
        && s.starts_with(prefix)
        && s[2..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

async fn update(
    state: &AppState,
    auth: &Dashboard,
    slug: &str,
    change: SettingsChange,
) -> Result<SettingsView, ApiError> {
    let (_, tenant) = auth.owner(state, slug)?;
    Ok(tenant
        .call(|reply| SettingsMsg::UpdateSettings {
            change: change.clone(),
            ctx: auth.ctx.clone(),
            reply,
        })
        .await?)
}

/// Whether the request carries `X-Service-Confirm: <what>`, the confirmation of a change with
/// consequences the caller must have seen.
fn confirmed(headers: &HeaderMap, what: &str) -> bool {
    headers
        .get("x-service-confirm")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == what)
}

async fn read(state: &AppState, auth: &Dashboard, slug: &str) -> Result<SettingsView, ApiError> {
    let (_, tenant) = auth.member(state, slug)?;
    Ok(tenant
        .call(|reply| SettingsMsg::GetSettings { reply })
        .await?)
}

// ---------------------------------------------------------------- document schemas

// The handlers read these fields as text (or JSON) so a bad value is a field error naming it;
// these schemas tell the document what is accepted, exactly as the checks below do.

/// A string that is one of `values`.
fn enum_schema(values: &[&str]) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
}

/// One of `values`, or `null` (which means the default).
fn nullable_enum_schema(values: &[&str]) -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(
            values.iter().map(|v| Value::from(*v)).chain([Value::Null]),
        ))
        .build()
}

/// At least `min` items, each one of `values`.
fn enum_list_schema(values: &[&str], min: usize) -> Array {
    ArrayBuilder::new()
        .items(enum_schema(values))
        .min_items(Some(min))
        .build()
}

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

fn default_role_schema() -> Object {
    enum_schema(&["reader", "member", "admin"]).build()
}

fn attributes_schema() -> Array {
    enum_list_schema(ATTRIBUTES, 1)
}

fn algs_schema() -> Array {
    enum_list_schema(ALGS, 1)
}

fn formats_schema() -> Array {
    enum_list_schema(FORMATS, 1)
}

fn level_schema() -> Object {
    nullable_enum_schema(LEVELS)
}

fn on_status_schema() -> Object {
    nullable_enum_schema(ON_STATUS)
}

fn floor_kind_schema() -> Object {
    enum_schema(&["aal", "eidas"]).build()
}

fn age_states_schema() -> Array {
    enum_list_schema(AGE_STATES, 0)
}

/// Spec 2.10: `{method: "jwks_uri", jwksUri}`, `{method: "did_web", did}` or
/// `{method: "x5c", x5cRoots}`, nothing else.
fn key_resolution_schema() -> Schema {
    let method = |name: &str| {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("method", enum_schema(&[name]))
            .required("method")
            .additional_properties(Some(AdditionalProperties::FreeForm(false)))
    };
    OneOfBuilder::new()
        .item(
            method("jwks_uri")
                .property(
                    "jwksUri",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .description(Some("An http(s) URI")),
                )
                .required("jwksUri"),
        )
        .item(
            method("did_web")
                .property(
                    "did",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .pattern(Some("^did:web:.")),
                )
                .required("did"),
        )
        .item(
            method("x5c")
                .property(
                    "x5cRoots",
                    ArrayBuilder::new()
                        .items(
                            ObjectBuilder::new()
                                .schema_type(Type::String)
                                .min_length(Some(1)),
                        )
                        .min_items(Some(1)),
                )
                .required("x5cRoots"),
        )
        .build()
        .into()
}

// ---------------------------------------------------------------- security (2.8)

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
        let mut e = FieldErrors::new();
        let mfa_policy = not_null(&mut e, "mfa_policy", &self.mfa_policy).and_then(|p| {
            let parsed = match p.as_str() {
                "optional" => Some(MfaPolicy::Optional),
                "required" => Some(MfaPolicy::Required),
                _ => None,
            };
            e.check(
                "mfa_policy",
                parsed.is_some(),
                "must be optional or required",
            );
            parsed
        });
        let grace = not_null(&mut e, "mfa_grace_period_days", &self.mfa_grace_period_days);
        let mfa_grace_period_days = in_range(&mut e, "mfa_grace_period_days", grace, 3, 30);
        let cap = not_null(&mut e, "sms_otp_monthly_cap", &self.sms_otp_monthly_cap);
        let sms_otp_monthly_cap = in_range(&mut e, "sms_otp_monthly_cap", cap, 0, 100_000);
        if let Some(Some(sid)) = &self.byok_provider_account_sid {
            e.check(
                "byok_provider_account_sid",
                is_sid(sid, "AC"),
                "must match ^AC[a-f0-9]{32}$",
            );
        }
        if let Some(Some(sid)) = &self.byok_provider_messaging_service_sid {
            e.check(
                "byok_provider_messaging_service_sid",
                is_sid(sid, "MG"),
                "must match ^MG[a-f0-9]{32}$",
            );
        }
        if let Some(Some(token)) = &self.byok_provider_auth_token {
            e.check(
                "byok_provider_auth_token",
                len_between(token, 32, 128),
                "must be 32-128 characters",
            );
        }
        if let Some(Some(list)) = &self.sms_allowed_countries {
            e.check(
                "sms_allowed_countries",
                list.len() <= 300,
                "at most 300 codes",
            );
            for (i, c) in list.iter().enumerate() {
                e.check(
                    &format!("sms_allowed_countries[{i}]"),
                    c.len() == 2 && c.bytes().all(|b| b.is_ascii_uppercase()),
                    "must be a two-letter uppercase ISO 3166-1 alpha-2 code (^[A-Z]{2}$)",
                );
            }
        }
        let patch = SecurityPatch {
            mfa_policy,
            mfa_grace_period_days,
            block_disposable_emails: not_null(
                &mut e,
                "block_disposable_emails",
                &self.block_disposable_emails,
            ),
            block_email_subaddresses: not_null(
                &mut e,
                "block_email_subaddresses",
                &self.block_email_subaddresses,
            ),
            automatic_account_linking_enabled: not_null(
                &mut e,
                "automatic_account_linking_enabled",
                &self.automatic_account_linking_enabled,
            ),
            explicit_account_linking_enabled: not_null(
                &mut e,
                "explicit_account_linking_enabled",
                &self.explicit_account_linking_enabled,
            ),
            sms_otp_enabled: not_null(&mut e, "sms_otp_enabled", &self.sms_otp_enabled),
            sms_otp_monthly_cap,
            byok_provider_account_sid: self.byok_provider_account_sid,
            byok_provider_auth_token: self.byok_provider_auth_token,
            byok_provider_messaging_service_sid: self.byok_provider_messaging_service_sid,
            magic_link_enabled: not_null(&mut e, "magic_link_enabled", &self.magic_link_enabled),
            email_otp_enabled: not_null(&mut e, "email_otp_enabled", &self.email_otp_enabled),
            sms_allowed_countries: self.sms_allowed_countries,
        };
        e.finish()?;
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
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "Security settings", body = SecuritySettingsResponse),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_security(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<SecuritySettingsResponse>, ApiError> {
    Ok(Json(read(&state, &auth, &slug).await?.into()))
}

/// Updates security settings (owner; BYOK changes need a re-authentication in the last 5
/// minutes).
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/security", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = UpdateTenantSecurityRequest,
    responses(
        (status = 200, description = "The updated settings", body = SecuritySettingsResponse),
        (status = 400, description = "`validation/invalid_request` naming each field; `sms_otp_monthly_cap` above the tier's ceiling (`[sms.platform_monthly_cap_max]`, named in the message) while the tenant sends through the platform's SMS account", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated` or `dashboard/reauth_required`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn patch_security(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<UpdateTenantSecurityRequest>,
) -> Result<Json<SecuritySettingsResponse>, ApiError> {
    auth.owner(&state, &slug)?;
    let byok = req.touches_byok();
    let patch = req.into_patch()?;
    if byok {
        auth.require_recent_reauth()?;
    }
    let view = update(
        &state,
        &auth,
        &slug,
        SettingsChange::Security(Box::new(patch)),
    )
    .await?;
    Ok(Json(view.into()))
}

// ---------------------------------------------------------------- e-mail domains

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

fn normalize_list(e: &mut FieldErrors, field: &str, list: &[String]) -> Vec<String> {
    normalize_entries(e, field, list, 100, normalize_domain, |shown| {
        format!("{shown:?} is not a valid domain (1-253 characters, e.g. example.com)")
    })
}

/// At most `max` entries, each normalized by `normalize` and de-duplicated in order; each bad
/// entry is a field error naming it (`field[i]`) with `why(the entry's first 64 characters)`.
fn normalize_entries(
    e: &mut FieldErrors,
    field: &str,
    list: &[String],
    max: usize,
    normalize: impl Fn(&str) -> Option<String>,
    why: impl Fn(&str) -> String,
) -> Vec<String> {
    e.check(field, list.len() <= max, format!("at most {max} entries"));
    let mut out: Vec<String> = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        match normalize(entry) {
            Some(d) => {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
            None => {
                let shown: String = entry.chars().take(64).collect();
                e.check(&format!("{field}[{i}]"), false, why(&shown));
            }
        }
    }
    out
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
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "Both lists", body = EmailDomainsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_email_domains(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<EmailDomainsResponse>, ApiError> {
    Ok(Json(domains_response(read(&state, &auth, &slug).await?)))
}

/// Replaces both lists atomically (owner).
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/email-domains", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = PutEmailDomainsRequest,
    responses(
        (status = 200, description = "The stored lists", body = EmailDomainsResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad entry", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_email_domains(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<PutEmailDomainsRequest>,
) -> Result<Json<EmailDomainsResponse>, ApiError> {
    auth.owner(&state, &slug)?;
    let mut e = FieldErrors::new();
    let allowlist = normalize_list(&mut e, "allowlist", &req.allowlist);
    let blocklist = normalize_list(&mut e, "blocklist", &req.blocklist);
    e.finish()?;
    let change = SettingsChange::EmailDomains(EmailDomains {
        allowlist,
        blocklist,
    });
    Ok(Json(domains_response(
        update(&state, &auth, &slug, change).await?,
    )))
}

// ---------------------------------------------------------------- anonymous and roles

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTenantAnonymousSettingsRequest {
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = bool, required = false)]
    pub anonymous_signins_enabled: Option<Option<bool>>,
    /// 1-180.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = i64, required = false, minimum = 1, maximum = 180)]
    pub anonymous_user_ttl_days: Option<Option<i64>>,
}

#[derive(Serialize, ToSchema)]
pub struct AnonymousSettingsResponse {
    pub anonymous_signins_enabled: bool,
    pub anonymous_user_ttl_days: u32,
}

fn anonymous_response(v: SettingsView) -> AnonymousSettingsResponse {
    AnonymousSettingsResponse {
        anonymous_signins_enabled: v.settings.anonymous.anonymous_signins_enabled,
        anonymous_user_ttl_days: v.settings.anonymous.anonymous_user_ttl_days,
    }
}

/// Guest sign-in settings (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/anonymous", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "Guest sign-in settings", body = AnonymousSettingsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_anonymous(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<AnonymousSettingsResponse>, ApiError> {
    Ok(Json(anonymous_response(read(&state, &auth, &slug).await?)))
}

/// Updates guest sign-in settings (owner). Enabling them for the first time while the default
/// role grants more than read access needs `X-Service-Confirm: privileged-default-role`.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/anonymous", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        ("slug" = String, Path, description = "The tenant's slug"),
        ("X-Service-Confirm" = Option<String>, Header, description = "`privileged-default-role` to confirm"),
    ),
    request_body = UpdateTenantAnonymousSettingsRequest,
    responses(
        (status = 200, description = "The updated settings", body = AnonymousSettingsResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`anonymous/privileged_default_role_unconfirmed`", body = ErrorBody),
    ))]
pub async fn patch_anonymous(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<UpdateTenantAnonymousSettingsRequest>,
) -> Result<Json<AnonymousSettingsResponse>, ApiError> {
    auth.owner(&state, &slug)?;
    let mut e = FieldErrors::new();
    let enabled = not_null(
        &mut e,
        "anonymous_signins_enabled",
        &req.anonymous_signins_enabled,
    );
    let ttl = not_null(
        &mut e,
        "anonymous_user_ttl_days",
        &req.anonymous_user_ttl_days,
    );
    let ttl_days = in_range(&mut e, "anonymous_user_ttl_days", ttl, 1, 180);
    e.finish()?;
    let confirmed_privileged = confirmed(&headers, "privileged-default-role");
    let change = SettingsChange::Anonymous {
        enabled,
        ttl_days,
        confirmed_privileged,
    };
    Ok(Json(anonymous_response(
        update(&state, &auth, &slug, change).await?,
    )))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTenantRolesRequest {
    /// `reader` (read access only), `member` or `admin`.
    #[serde(default)]
    #[schema(schema_with = default_role_schema, required = true)]
    pub default_role: String,
}

#[derive(Serialize, ToSchema)]
pub struct RolesResponse {
    /// The role new end users get.
    pub default_role: DefaultRoleName,
}

/// `reader`, `member` or `admin`.
#[derive(Serialize, ToSchema)]
#[serde(transparent)]
pub struct DefaultRoleName(pub String);

fn roles_response(v: SettingsView) -> RolesResponse {
    let name = match v.settings.default_role {
        DefaultRole::Reader => "reader",
        DefaultRole::Member => "member",
        DefaultRole::Admin => "admin",
    };
    RolesResponse {
        default_role: DefaultRoleName(name.into()),
    }
}

/// The default role of new end users (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/roles", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The default role", body = RolesResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_roles(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<RolesResponse>, ApiError> {
    Ok(Json(roles_response(read(&state, &auth, &slug).await?)))
}

/// Sets the default role of new end users (owner).
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/roles", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = UpdateTenantRolesRequest,
    responses(
        (status = 200, description = "The default role", body = RolesResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn patch_roles(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<UpdateTenantRolesRequest>,
) -> Result<Json<RolesResponse>, ApiError> {
    auth.owner(&state, &slug)?;
    let role = match req.default_role.as_str() {
        "reader" => DefaultRole::Reader,
        "member" => DefaultRole::Member,
        "admin" => DefaultRole::Admin,
        _ => {
            return Err(ApiError::invalid_field(
                "default_role",
                "must be reader, member or admin",
            ))
        }
    };
    let change = SettingsChange::DefaultRole(role);
    Ok(Json(roles_response(
        update(&state, &auth, &slug, change).await?,
    )))
}

// ---------------------------------------------------------------- passkey domain

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
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The relying-party id and origins", body = PasskeyDomainResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_passkey_domain(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<PasskeyDomainResponse>, ApiError> {
    Ok(Json(passkey_domain_response(
        read(&state, &auth, &slug).await?,
    )))
}

/// An extra passkey origin: a web origin as browsers send it, or an Android app's
/// `android:apk-key-hash:` origin, exactly.
fn passkey_origin(input: &str) -> Option<String> {
    if let Some(hash) = input.strip_prefix("android:apk-key-hash:") {
        let ok = (16..=128).contains(&hash.len())
            && hash
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        return ok.then(|| input.to_owned());
    }
    normalize_origin(input).filter(|o| o == input)
}

/// Sets the passkey relying-party id and extra origins (owner). A new relying-party id
/// strands the passkeys registered under the old one; while there are any, the change needs
/// `X-Service-Confirm: passkey-rp-id-change` (409 `passkey/rp_id_in_use` without it).
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/passkey-domain", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        ("slug" = String, Path, description = "The tenant's slug"),
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
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    headers: HeaderMap,
    ApiJson(req): ApiJson<UpdateTenantPasskeyDomainRequest>,
) -> Result<Json<PasskeyDomainResponse>, ApiError> {
    let (_, tenant) = auth.owner(&state, &slug)?;
    let mut e = FieldErrors::new();
    let rp_id = match req.passkey_rp_id {
        None => {
            e.check("passkey_rp_id", false, "is required (a domain or null)");
            None
        }
        Some(None) => Some(None),
        Some(Some(id)) => {
            let ok = (1..=253).contains(&id.len())
                && id.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'.' || b == b'-'
                });
            e.check(
                "passkey_rp_id",
                ok,
                "must be 1-253 characters matching ^[a-z0-9.-]+$",
            );
            Some(Some(id))
        }
    };
    if let Some(origins) = &req.passkey_origins {
        e.check(
            "passkey_origins",
            origins.len() <= MAX_PASSKEY_ORIGINS,
            "at most 20 origins",
        );
        for (i, o) in origins.iter().enumerate() {
            e.check(
                &format!("passkey_origins[{i}]"),
                passkey_origin(o).is_some(),
                "must be an origin as browsers send it (scheme://host[:port], lowercase, no path) or android:apk-key-hash:<base64url>",
            );
        }
    }
    e.finish()?;
    let confirmed = confirmed(&headers, "passkey-rp-id-change");
    // An origin listed twice is kept once, in the order first given.
    let origins = req.passkey_origins.map(|list| {
        let mut seen = std::collections::HashSet::new();
        list.into_iter()
            .filter(|o| seen.insert(o.clone()))
            .collect::<Vec<_>>()
    });
    let v = tenant
        .call(|reply| PasskeysMsg::PasskeyDomain {
            rp_id: rp_id.clone(),
            origins: origins.clone(),
            confirmed,
            ctx: auth.ctx.clone(),
            reply,
        })
        .await?;
    Ok(Json(passkey_domain_response(v)))
}

// ---------------------------------------------------------------- browser origins

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutCorsRequest {
    /// Exact browser origins (`scheme://host[:port]`, no path) that may call the end-user
    /// API; at most 50. Empty: any origin (the API key is public and end-user calls carry no
    /// cookie, so an origin check guards against other sites reusing the key, not against
    /// credential theft). Required; the list replaces the stored one.
    #[schema(max_items = 50)]
    pub allowed_origins: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct CorsResponse {
    /// Normalized: lowercase scheme and host, punycode, no default port; de-duplicated.
    pub allowed_origins: Vec<String>,
}

fn cors_response(v: SettingsView) -> CorsResponse {
    CorsResponse {
        allowed_origins: v.settings.allowed_origins,
    }
}

/// The browser origins allowed to call the end-user API (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/cors", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The list; empty: any origin", body = CorsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_cors(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<CorsResponse>, ApiError> {
    Ok(Json(cors_response(read(&state, &auth, &slug).await?)))
}

/// Replaces the list of browser origins allowed to call the end-user API (owner). A request
/// from another origin with this tenant's key is then refused with 403
/// `cors/origin_not_allowed` before anything happens.
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/cors", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = PutCorsRequest,
    responses(
        (status = 200, description = "The stored list", body = CorsResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad entry", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_cors(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<PutCorsRequest>,
) -> Result<Json<CorsResponse>, ApiError> {
    auth.owner(&state, &slug)?;
    let mut e = FieldErrors::new();
    let origins = normalize_entries(
        &mut e,
        "allowed_origins",
        &req.allowed_origins,
        MAX_ALLOWED_ORIGINS,
        normalize_origin,
        |shown| format!("{shown:?} is not an origin (scheme://host[:port], no path)"),
    );
    e.finish()?;
    Ok(Json(cors_response(
        update(
            &state,
            &auth,
            &slug,
            SettingsChange::AllowedOrigins(origins),
        )
        .await?,
    )))
}

// ---------------------------------------------------------------- users

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchUserSettingsRequest {
    /// Whether `DELETE /v1/users/me` lets a user erase their own account (default true).
    pub self_service_deletion_enabled: Option<bool>,
    /// The language of mail and hosted pages for users who chose none: `en` (default),
    /// `pl`, `de`, `fr` or `es`.
    #[schema(pattern = "^(en|pl|de|fr|es)$")]
    pub default_locale: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct UserSettingsResponse {
    pub self_service_deletion_enabled: bool,
    pub default_locale: String,
}

fn user_settings_response(v: SettingsView) -> UserSettingsResponse {
    UserSettingsResponse {
        self_service_deletion_enabled: v.settings.users.self_service_deletion_enabled,
        default_locale: v.settings.users.default_locale,
    }
}

/// What users may do about their own accounts (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/users", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The settings", body = UserSettingsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_users(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<UserSettingsResponse>, ApiError> {
    Ok(Json(user_settings_response(
        read(&state, &auth, &slug).await?,
    )))
}

/// Changes what users may do about their own accounts (owner); audited as
/// `settings.users.updated`.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/users", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = PatchUserSettingsRequest,
    responses(
        (status = 200, description = "The settings as they are now", body = UserSettingsResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn patch_users(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<PatchUserSettingsRequest>,
) -> Result<Json<UserSettingsResponse>, ApiError> {
    let mut e = FieldErrors::new();
    if let Some(l) = &req.default_locale {
        e.check(
            "default_locale",
            crate::i18n::LOCALES.contains(&l.as_str()),
            "must be one of en, pl, de, fr, es",
        );
    }
    e.finish()?;
    let change = SettingsChange::Users {
        self_service_deletion_enabled: req.self_service_deletion_enabled,
        default_locale: req.default_locale,
    };
    Ok(Json(user_settings_response(
        update(&state, &auth, &slug, change).await?,
    )))
}

// ---------------------------------------------------------------- wallet (2.10)

const ATTRIBUTES: &[&str] = &[
    "family_name",
    "given_name",
    "birth_date",
    "nationality",
    "age_over_16",
    "age_over_18",
    "age_over_21",
    "resident_country",
    "resident_city",
    "email",
    "phone_number",
];
const ALGS: &[&str] = &["ES256", "EdDSA"];
const FORMATS: &[&str] = &["dc+sd-jwt", "mso_mdoc"];
const LEVELS: &[&str] = &["low", "substantial", "high"];
const ON_STATUS: &[&str] = &["reject", "accept_with_cache", "accept_unverified"];
const AGE_STATES: &[&str] = &["PL", "DE", "FR", "IE"];

/// A trusted issuer of wallet credentials.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TrustAnchorInput {
    #[schema(value_type = String, required = true, min_length = 1)]
    pub issuer: Option<String>,
    /// Two characters.
    #[schema(min_length = 2, max_length = 2)]
    pub member_state: Option<String>,
    /// At least one of `ES256`, `EdDSA`.
    #[schema(schema_with = algs_schema, required = true)]
    pub allowed_algs: Option<Vec<String>>,
    /// `low`, `substantial` or `high` (default).
    #[schema(schema_with = level_schema, required = false)]
    pub max_assurance_level: Option<String>,
    /// At least one of `dc+sd-jwt`, `mso_mdoc`.
    #[schema(schema_with = formats_schema, required = true)]
    pub allowed_formats: Option<Vec<String>>,
    /// `{method: "jwks_uri", jwksUri}`, `{method: "did_web", did}` (`^did:web:`) or
    /// `{method: "x5c", x5cRoots: [..1+]}`.
    #[schema(schema_with = key_resolution_schema, required = true)]
    pub key_resolution: Option<Value>,
    /// Locale to display name.
    pub display_name: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssuranceFloorInput {
    /// `aal` or `eidas`.
    #[schema(schema_with = floor_kind_schema, required = true)]
    pub kind: Option<String>,
    #[schema(value_type = String, required = true, min_length = 1)]
    pub value: Option<String>,
}

/// Spec 2.10, request side.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateTenantEudiConfig {
    #[schema(value_type = bool, required = true)]
    pub enabled: Option<bool>,
    /// At least one attribute on update.
    #[schema(schema_with = attributes_schema, required = true)]
    pub requested_attributes: Option<Vec<String>>,
    #[serde(default)]
    pub trust_anchors: Vec<TrustAnchorInput>,
    #[serde(default)]
    pub required_assurance_floor: Option<AssuranceFloorInput>,
    /// At most 300 characters.
    #[serde(default)]
    #[schema(max_length = 300)]
    pub purpose: Option<String>,
    /// `reject`, `accept_with_cache` (default) or `accept_unverified`.
    #[schema(schema_with = on_status_schema, required = false)]
    pub on_status_unavailable: Option<String>,
    /// 0-86400, default 3600.
    #[schema(minimum = 0, maximum = 86400)]
    pub max_status_staleness_seconds: Option<i64>,
}

/// Spec 2.10, response side: the stored configuration with defaults filled in.
#[derive(Serialize, ToSchema)]
pub struct EudiConfigResponse {
    pub enabled: bool,
    pub requested_attributes: Vec<String>,
    #[schema(value_type = Vec<Object>)]
    pub trust_anchors: Vec<TrustAnchor>,
    #[schema(value_type = Option<Object>)]
    pub required_assurance_floor: Option<AssuranceFloor>,
    pub purpose: Option<String>,
    pub on_status_unavailable: String,
    pub max_status_staleness_seconds: u32,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

fn eudi_response(v: SettingsView) -> EudiConfigResponse {
    let c = v.settings.eudi;
    EudiConfigResponse {
        enabled: c.enabled,
        requested_attributes: c.requested_attributes,
        trust_anchors: c.trust_anchors,
        required_assurance_floor: c.required_assurance_floor,
        purpose: c.purpose,
        on_status_unavailable: c.on_status_unavailable,
        max_status_staleness_seconds: c.max_status_staleness_seconds,
        updated_at: c.updated_at,
    }
}

fn one_of(e: &mut FieldErrors, field: &str, v: &str, allowed: &[&str]) -> bool {
    let ok = allowed.contains(&v);
    e.check(field, ok, format!("must be one of {}", allowed.join(", ")));
    ok
}

fn list_of(
    e: &mut FieldErrors,
    field: &str,
    v: &Option<Vec<String>>,
    allowed: &[&str],
) -> Vec<String> {
    let Some(list) = v else {
        e.check(field, false, "is required");
        return Vec::new();
    };
    e.check(field, !list.is_empty(), "must have at least one item");
    for (i, item) in list.iter().enumerate() {
        one_of(e, &format!("{field}[{i}]"), item, allowed);
    }
    list.clone()
}

fn key_resolution(e: &mut FieldErrors, field: &str, v: &Option<Value>) -> Option<KeyResolution> {
    let Some(v) = v else {
        e.check(field, false, "is required");
        return None;
    };
    let Some(obj) = v.as_object() else {
        e.check(field, false, "must be an object with a method");
        return None;
    };
    let method = obj.get("method").and_then(Value::as_str).unwrap_or("");
    let allowed_keys: &[&str] = match method {
        "jwks_uri" => &["method", "jwksUri"],
        "did_web" => &["method", "did"],
        "x5c" => &["method", "x5cRoots"],
        _ => {
            e.check(
                &format!("{field}.method"),
                false,
                "must be jwks_uri, did_web or x5c",
            );
            return None;
        }
    };
    for k in obj.keys() {
        e.check(
            &format!("{field}.{k}"),
            allowed_keys.contains(&k.as_str()),
            format!("is not a field of the {method} method"),
        );
    }
    match method {
        "jwks_uri" => {
            let uri = obj.get("jwksUri").and_then(Value::as_str).unwrap_or("");
            let ok = reqwest::Url::parse(uri)
                .is_ok_and(|u| matches!(u.scheme(), "https" | "http") && u.host().is_some());
            e.check(&format!("{field}.jwksUri"), ok, "must be an http(s) URI");
            ok.then(|| KeyResolution::JwksUri {
                jwks_uri: uri.to_owned(),
            })
        }
        "did_web" => {
            let did = obj.get("did").and_then(Value::as_str).unwrap_or("");
            let ok = did.starts_with("did:web:") && did.len() > "did:web:".len();
            e.check(&format!("{field}.did"), ok, "must match ^did:web:");
            ok.then(|| KeyResolution::DidWeb {
                did: did.to_owned(),
            })
        }
        _ => {
            let roots: Option<Vec<String>> = obj
                .get("x5cRoots")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().map(|r| r.as_str().map(str::to_owned)).collect());
            let ok = roots.as_ref().is_some_and(|r| {
                !r.is_empty()
                    && r.len() <= 20
                    && r.iter()
                        .all(|s| tessera_eudi::x509::root_from_config(s).is_ok())
            });
            e.check(
                &format!("{field}.x5cRoots"),
                ok,
                "must be 1-20 certificates (base64 DER or PEM)",
            );
            ok.then(|| KeyResolution::X5c {
                x5c_roots: roots.unwrap_or_default(),
            })
        }
    }
}

impl UpdateTenantEudiConfig {
    fn into_config(self) -> Result<EudiConfig, ApiError> {
        let mut e = FieldErrors::new();
        e.check("enabled", self.enabled.is_some(), "is required");
        let requested_attributes = list_of(
            &mut e,
            "requested_attributes",
            &self.requested_attributes,
            ATTRIBUTES,
        );
        let mut anchors = Vec::new();
        for (i, a) in self.trust_anchors.iter().enumerate() {
            let f = |name: &str| format!("trust_anchors[{i}].{name}");
            let issuer = a.issuer.clone().unwrap_or_default();
            e.check(
                &f("issuer"),
                !issuer.is_empty(),
                "is required (at least 1 character)",
            );
            if let Some(ms) = &a.member_state {
                e.check(
                    &f("memberState"),
                    ms.chars().count() == 2,
                    "must be 2 characters",
                );
            }
            let allowed_algs = list_of(&mut e, &f("allowedAlgs"), &a.allowed_algs, ALGS);
            let level = a
                .max_assurance_level
                .clone()
                .unwrap_or_else(|| "high".into());
            one_of(&mut e, &f("maxAssuranceLevel"), &level, LEVELS);
            let allowed_formats =
                list_of(&mut e, &f("allowedFormats"), &a.allowed_formats, FORMATS);
            let resolution = key_resolution(&mut e, &f("keyResolution"), &a.key_resolution);
            if let Some(names) = &a.display_name {
                for (locale, name) in names {
                    e.check(
                        &f(&format!("displayName.{locale}")),
                        len_between(locale, 2, 35) && len_between(name, 1, 200),
                        "locale 2-35 characters, name 1-200 characters",
                    );
                }
            }
            if let Some(key_resolution) = resolution {
                anchors.push(TrustAnchor {
                    issuer,
                    member_state: a.member_state.clone(),
                    allowed_algs,
                    max_assurance_level: level,
                    allowed_formats,
                    key_resolution,
                    display_name: a.display_name.clone(),
                });
            }
        }
        let floor = self.required_assurance_floor.as_ref().and_then(|f| {
            let kind = match f.kind.as_deref() {
                Some("aal") => Some(AssuranceKind::Aal),
                Some("eidas") => Some(AssuranceKind::Eidas),
                _ => None,
            };
            e.check(
                "required_assurance_floor.kind",
                kind.is_some(),
                "must be aal or eidas",
            );
            let value = f.value.clone().unwrap_or_default();
            e.check(
                "required_assurance_floor.value",
                !value.is_empty(),
                "is required (at least 1 character)",
            );
            kind.map(|kind| AssuranceFloor { kind, value })
        });
        if let Some(p) = &self.purpose {
            e.check(
                "purpose",
                p.chars().count() <= 300,
                "at most 300 characters",
            );
        }
        let on_status = self
            .on_status_unavailable
            .clone()
            .unwrap_or_else(|| "accept_with_cache".into());
        one_of(&mut e, "on_status_unavailable", &on_status, ON_STATUS);
        let staleness = in_range(
            &mut e,
            "max_status_staleness_seconds",
            Some(self.max_status_staleness_seconds.unwrap_or(3600)),
            0,
            86_400,
        );
        e.finish()?;
        Ok(EudiConfig {
            enabled: self.enabled.unwrap_or(false),
            requested_attributes,
            trust_anchors: anchors,
            required_assurance_floor: floor,
            purpose: self.purpose,
            on_status_unavailable: on_status,
            max_status_staleness_seconds: staleness.unwrap_or(3600),
            updated_at: OffsetDateTime::now_utc(),
        })
    }
}

/// Wallet login configuration (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/eudi", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The configuration with defaults", body = EudiConfigResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_eudi(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<EudiConfigResponse>, ApiError> {
    Ok(Json(eudi_response(read(&state, &auth, &slug).await?)))
}

/// Replaces the wallet login configuration (owner).
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/eudi", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = UpdateTenantEudiConfig,
    responses(
        (status = 200, description = "The stored configuration", body = EudiConfigResponse),
        (status = 400, description = "`validation/invalid_request` naming each field", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_eudi(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<UpdateTenantEudiConfig>,
) -> Result<Json<EudiConfigResponse>, ApiError> {
    auth.owner(&state, &slug)?;
    let config = req.into_config()?;
    let v = update(&state, &auth, &slug, SettingsChange::Eudi(Box::new(config))).await?;
    Ok(Json(eudi_response(v)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEudiAgeConfig {
    #[schema(value_type = bool, required = true)]
    pub age_verification_enabled: Option<bool>,
    /// Any of `PL`, `DE`, `FR`, `IE`; default `[]`.
    #[serde(default)]
    #[schema(schema_with = age_states_schema)]
    pub supported_member_states: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct EudiAgeConfigResponse {
    pub age_verification_enabled: bool,
    pub supported_member_states: Vec<String>,
    /// Whether an age threshold (`age_over_*`) can be asked of a wallet: age verification is on
    /// and at least one member state is supported.
    pub threshold_supported: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

fn eudi_age_response(v: SettingsView) -> EudiAgeConfigResponse {
    let c = v.settings.eudi_age;
    EudiAgeConfigResponse {
        threshold_supported: c.age_verification_enabled && !c.supported_member_states.is_empty(),
        age_verification_enabled: c.age_verification_enabled,
        supported_member_states: c.supported_member_states,
        updated_at: c.updated_at,
    }
}

/// Wallet age-verification configuration (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/eudi-age", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The configuration", body = EudiAgeConfigResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_eudi_age(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<EudiAgeConfigResponse>, ApiError> {
    Ok(Json(eudi_age_response(read(&state, &auth, &slug).await?)))
}

/// Replaces the wallet age-verification configuration (owner).
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/eudi-age", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = UpdateEudiAgeConfig,
    responses(
        (status = 200, description = "The stored configuration", body = EudiAgeConfigResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_eudi_age(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<UpdateEudiAgeConfig>,
) -> Result<Json<EudiAgeConfigResponse>, ApiError> {
    auth.owner(&state, &slug)?;
    let mut e = FieldErrors::new();
    e.check(
        "age_verification_enabled",
        req.age_verification_enabled.is_some(),
        "is required",
    );
    let mut states: Vec<String> = Vec::new();
    for (i, s) in req.supported_member_states.iter().enumerate() {
        if one_of(
            &mut e,
            &format!("supported_member_states[{i}]"),
            s,
            AGE_STATES,
        ) && !states.contains(s)
        {
            states.push(s.clone());
        }
    }
    e.finish()?;
    let change = SettingsChange::EudiAge(EudiAgeConfig {
        age_verification_enabled: req.age_verification_enabled.unwrap_or(false),
        supported_member_states: states,
        updated_at: OffsetDateTime::now_utc(),
    });
    Ok(Json(eudi_age_response(
        update(&state, &auth, &slug, change).await?,
    )))
}

// ---------------------------------------------------------------- the app's URLs

/// At most this many redirect URLs.
pub const MAX_REDIRECT_URLS: usize = 50;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutUrlsRequest {
    /// The app's address: where the hosted pages send users when a link names no
    /// `redirect_to`. An absolute `https` URL (`http` only for `localhost` and `127.0.0.1`),
    /// without a fragment or user info; `null`: none. Required.
    #[schema(format = "uri", max_length = 2048)]
    pub site_url: Option<String>,
    /// Other exact URLs a request's `redirect_to` may name (the same rules); at most 50.
    /// Required; the list replaces the stored one.
    #[schema(max_items = 50)]
    pub redirect_urls: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct UrlsResponse {
    pub site_url: Option<String>,
    pub redirect_urls: Vec<String>,
}

fn urls_response(v: SettingsView) -> UrlsResponse {
    UrlsResponse {
        site_url: v.settings.urls.site_url,
        redirect_urls: v.settings.urls.redirect_urls,
    }
}

/// The tenant's site URL and redirect URLs (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/urls", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The URLs", body = UrlsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_urls(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<UrlsResponse>, ApiError> {
    Ok(Json(urls_response(read(&state, &auth, &slug).await?)))
}

/// Replaces the tenant's site URL and redirect URLs (owner); audited as
/// `settings.urls.updated`. Links mailed earlier with a `redirect_to` that is no longer
/// listed then end at the site URL.
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/urls", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = PutUrlsRequest,
    responses(
        (status = 200, description = "The stored URLs", body = UrlsResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad entry", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_urls(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<PutUrlsRequest>,
) -> Result<Json<UrlsResponse>, ApiError> {
    auth.owner(&state, &slug)?;
    let mut e = FieldErrors::new();
    const WHY: &str = "must be an absolute https URL (http only for localhost and 127.0.0.1), \
                       without user info or fragment, at most 2048 characters";
    if let Some(site) = &req.site_url {
        e.check("site_url", is_app_url(site), WHY);
    }
    let redirect_urls = normalize_entries(
        &mut e,
        "redirect_urls",
        &req.redirect_urls,
        MAX_REDIRECT_URLS,
        |u| is_app_url(u).then(|| u.to_owned()),
        |shown| format!("{shown:?} {WHY}"),
    );
    e.finish()?;
    let urls = UrlSettings {
        site_url: req.site_url,
        redirect_urls,
    };
    Ok(Json(urls_response(
        update(&state, &auth, &slug, SettingsChange::Urls(urls)).await?,
    )))
}

/// The tenant's agent settings.
#[derive(Serialize, ToSchema)]
pub struct AgentSettingsResponse {
    /// Whether public clients (MCP clients) may register themselves at
    /// `/v1/tenants/{slug}/oauth/register` (RFC 7591). Such clients are `unverified` on the
    /// consent screen and registrations are limited per client address.
    pub dynamic_client_registration: bool,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchAgentSettingsRequest {
    pub dynamic_client_registration: Option<bool>,
}

fn agents_response(v: SettingsView) -> AgentSettingsResponse {
    AgentSettingsResponse {
        dynamic_client_registration: v.settings.dynamic_client_registration,
    }
}

/// The tenant's agent settings (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/agents", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The settings", body = AgentSettingsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_agents(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<AgentSettingsResponse>, ApiError> {
    Ok(Json(agents_response(read(&state, &auth, &slug).await?)))
}

/// Changes the tenant's agent settings (owner); audited as `settings.agents.updated`.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/settings/agents", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = PatchAgentSettingsRequest,
    responses(
        (status = 200, description = "The stored settings", body = AgentSettingsResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn patch_agents(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<PatchAgentSettingsRequest>,
) -> Result<Json<AgentSettingsResponse>, ApiError> {
    auth.owner(&state, &slug)?;
    let Some(on) = req.dynamic_client_registration else {
        return Ok(Json(agents_response(read(&state, &auth, &slug).await?)));
    };
    let change = SettingsChange::Agents {
        dynamic_client_registration: on,
    };
    Ok(Json(agents_response(
        update(&state, &auth, &slug, change).await?,
    )))
}

// ---------------------------------------------------------------- minors

/// Spec 2.7 DpiaVcGateLink: which version of the tenant's DPIA covers this processing.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DpiaVcGateLink {
    pub dpia_key: uuid::Uuid,
    /// 1 or more.
    #[schema(minimum = 1, maximum = 4294967295_i64)]
    pub dpia_version: i64,
    #[schema(min_length = 1, max_length = 256)]
    pub dpia_content_hash: String,
    /// RFC 3339, UTC (`Z`).
    #[schema(format = "date-time")]
    pub linked_at: String,
}

/// The minor-protection setting (GDPR art. 8), and the consent receipt's text.
#[derive(Serialize, ToSchema)]
pub struct MinorSettingsResponse {
    pub minor_protection_enabled: bool,
    /// 13-16: below it, a guardian must consent.
    pub digital_consent_age: u8,
    /// The controller named on consent receipts; null: the tenant's name.
    pub controller_name: Option<String>,
    pub lawful_basis: String,
    pub purposes: Vec<String>,
    pub data_categories: Vec<String>,
    pub retention: String,
    pub dpia: Option<DpiaVcGateLink>,
}

/// The whole setting; every field but `controller_name` and `dpia` is required.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutMinorSettingsRequest {
    pub minor_protection_enabled: bool,
    /// 13-16 (by the member state's law).
    #[schema(minimum = 13, maximum = 16)]
    pub digital_consent_age: i64,
    /// 1-200 characters; null or absent: the tenant's name.
    #[schema(min_length = 1, max_length = 200)]
    pub controller_name: Option<String>,
    #[schema(min_length = 1, max_length = 500)]
    pub lawful_basis: String,
    /// 1-20 entries of 1-200 characters.
    #[schema(min_items = 1, max_items = 20)]
    pub purposes: Vec<String>,
    /// 1-20 entries of 1-200 characters.
    #[schema(min_items = 1, max_items = 20)]
    pub data_categories: Vec<String>,
    #[schema(min_length = 1, max_length = 500)]
    pub retention: String,
    pub dpia: Option<DpiaVcGateLink>,
}

fn minors_response(v: SettingsView) -> MinorSettingsResponse {
    let m = v.settings.minors;
    MinorSettingsResponse {
        minor_protection_enabled: m.minor_protection_enabled,
        digital_consent_age: m.digital_consent_age,
        controller_name: m.controller_name,
        lawful_basis: m.lawful_basis,
        purposes: m.purposes,
        data_categories: m.data_categories,
        retention: m.retention,
        dpia: m.dpia.map(|d| DpiaVcGateLink {
            dpia_key: d.dpia_key,
            dpia_version: i64::from(d.dpia_version),
            dpia_content_hash: d.dpia_content_hash,
            linked_at: d
                .linked_at
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
        }),
    }
}

/// The tenant's minor-protection setting (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/minors", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    responses(
        (status = 200, description = "The setting", body = MinorSettingsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_minors(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
) -> Result<Json<MinorSettingsResponse>, ApiError> {
    Ok(Json(minors_response(read(&state, &auth, &slug).await?)))
}

/// A text of 1 to `max` characters after trimming, or the field's error.
fn text_field(e: &mut FieldErrors, field: &str, v: &str, max: usize) -> String {
    let t = v.trim();
    e.check(
        field,
        (1..=max).contains(&t.chars().count()) && !t.chars().any(char::is_control),
        format!("must be 1-{max} characters without control characters"),
    );
    t.to_owned()
}

/// Replaces the tenant's minor-protection setting (owner); audited as
/// `settings.minors.updated`. With protection on, registration needs `date_of_birth` (or an
/// `age_verification_token`), and accounts of people younger than `digital_consent_age` are
/// held until a guardian consents. Accounts already held stay held if it is turned off.
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/minors", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("slug" = String, Path, description = "The tenant's slug")),
    request_body = PutMinorSettingsRequest,
    responses(
        (status = 200, description = "The stored setting", body = MinorSettingsResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad field", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_minors(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(slug): Path<String>,
    ApiJson(req): ApiJson<PutMinorSettingsRequest>,
) -> Result<Json<MinorSettingsResponse>, ApiError> {
    auth.owner(&state, &slug)?;
    let mut e = FieldErrors::new();
    let age = in_range(
        &mut e,
        "digital_consent_age",
        Some(req.digital_consent_age),
        13,
        16,
    );
    let controller_name = req
        .controller_name
        .as_deref()
        .map(|c| text_field(&mut e, "controller_name", c, 200));
    let lawful_basis = text_field(&mut e, "lawful_basis", &req.lawful_basis, 500);
    let retention = text_field(&mut e, "retention", &req.retention, 500);
    let mut list = |field: &str, items: &[String]| -> Vec<String> {
        e.check(
            field,
            (1..=20).contains(&items.len()),
            "must hold 1-20 entries",
        );
        items
            .iter()
            .enumerate()
            .map(|(i, item)| text_field(&mut e, &format!("{field}[{i}]"), item, 200))
            .collect()
    };
    let purposes = list("purposes", &req.purposes);
    let data_categories = list("data_categories", &req.data_categories);
    let dpia = match &req.dpia {
        None => None,
        Some(d) => {
            e.check(
                "dpia.dpia_version",
                d.dpia_version >= 1 && u32::try_from(d.dpia_version).is_ok(),
                "must be an integer from 1 to 4294967295",
            );
            e.check(
                "dpia.dpia_content_hash",
                len_between(&d.dpia_content_hash, 1, 256),
                "must be 1-256 characters",
            );
            let linked_at =
                OffsetDateTime::parse(&d.linked_at, &time::format_description::well_known::Rfc3339)
                    .ok()
                    .filter(|t| t.offset().is_utc() && d.linked_at.ends_with('Z'));
            e.check(
                "dpia.linked_at",
                linked_at.is_some(),
                "must be an RFC 3339 UTC timestamp (ending in Z)",
            );
            match (linked_at, u32::try_from(d.dpia_version)) {
                (Some(linked_at), Ok(version)) if version >= 1 => Some(DpiaLink {
                    dpia_key: d.dpia_key,
                    dpia_version: version,
                    dpia_content_hash: d.dpia_content_hash.clone(),
                    linked_at,
                }),
                _ => None,
            }
        }
    };
    e.finish()?;
    let minors = MinorSettings {
        minor_protection_enabled: req.minor_protection_enabled,
        digital_consent_age: age.and_then(|a| u8::try_from(a).ok()).unwrap_or(16),
        controller_name,
        lawful_basis,
        purposes,
        data_categories,
        retention,
        dpia,
    };
    let change = SettingsChange::Minors(Box::new(minors));
    Ok(Json(minors_response(
        update(&state, &auth, &slug, change).await?,
    )))
}
