//! Wallet age verification: on or off, and the member states whose age proofs are taken.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use axum::Json;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    settings::{
        rules::{SettingsFaults, AGE_MEMBER_STATES},
        EudiAgeConfig, SettingsChange,
    },
    SettingsView,
};
use time::OffsetDateTime;
use utoipa::{openapi::Array, ToSchema};

use super::{enum_list_schema, Caller};
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    path_id::TenantSlug,
};

fn age_states_schema() -> Array {
    enum_list_schema(AGE_MEMBER_STATES, 0)
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
    params(TenantSlug),
    responses(
        (status = 200, description = "The configuration", body = EudiAgeConfigResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_eudi_age(caller: Caller) -> Result<Json<EudiAgeConfigResponse>, ApiError> {
    Ok(Json(eudi_age_response(caller.read().await?)))
}

/// Replaces the wallet age-verification configuration (owner).
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/eudi-age", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = UpdateEudiAgeConfig,
    responses(
        (status = 200, description = "The stored configuration", body = EudiAgeConfigResponse),
        (status = 400, description = "`validation/invalid_request`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_eudi_age(
    caller: Caller,
    ApiJson(req): ApiJson<UpdateEudiAgeConfig>,
) -> Result<Json<EudiAgeConfigResponse>, ApiError> {
    caller.owner()?;
    let mut f = SettingsFaults::new();
    f.check(
        "age_verification_enabled",
        req.age_verification_enabled.is_some(),
        "is required",
    );
    let change = SettingsChange::EudiAge(EudiAgeConfig {
        age_verification_enabled: req.age_verification_enabled.unwrap_or(false),
        supported_member_states: req.supported_member_states,
        updated_at: OffsetDateTime::now_utc(),
    });
    Ok(Json(eudi_age_response(caller.apply(f, change).await?)))
}
