//! Minor protection (GDPR art. 8): the consent age and the consent receipt's text.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use std::collections::BTreeMap;

use axum::Json;
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::{
    settings::{
        rules::{SettingsFaults, CONSENT_AGES, DPIA_VERSIONS, LINKED_AT_RULE},
        ConsentTexts, DpiaLink, MinorSettings, SettingsChange,
    },
    SettingsView,
};
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::Caller;
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    path_id::TenantSlug,
};

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

/// What a guardian consents to, in one of the hosted pages' languages.
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsentTextsBody {
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
}

impl ConsentTextsBody {
    /// The texts as stored: trimmed.
    fn stored(&self) -> ConsentTexts {
        let trimmed = |items: &[String]| items.iter().map(|i| i.trim().to_owned()).collect();
        ConsentTexts {
            lawful_basis: self.lawful_basis.trim().to_owned(),
            purposes: trimmed(&self.purposes),
            data_categories: trimmed(&self.data_categories),
            retention: self.retention.trim().to_owned(),
        }
    }
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
    /// The consent page's text in other languages (`en`, `pl`, `de`, `fr`, `es`); a guardian
    /// reading the page in one of them sees it. The receipt keeps the text above.
    pub translations: BTreeMap<String, ConsentTextsBody>,
}

/// The whole setting; every field but `controller_name`, `dpia` and `translations` is required.
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
    /// The consent page's text in other languages of the hosted pages, by language; absent:
    /// none.
    #[serde(default)]
    pub translations: BTreeMap<String, ConsentTextsBody>,
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
        translations: m
            .translations
            .into_iter()
            .map(|(lang, t)| {
                let body = ConsentTextsBody {
                    lawful_basis: t.lawful_basis,
                    purposes: t.purposes,
                    data_categories: t.data_categories,
                    retention: t.retention,
                };
                (lang, body)
            })
            .collect(),
    }
}

/// The tenant's minor-protection setting (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/minors", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The setting", body = MinorSettingsResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_minors(caller: Caller) -> Result<Json<MinorSettingsResponse>, ApiError> {
    Ok(Json(minors_response(caller.read().await?)))
}

/// Replaces the tenant's minor-protection setting (owner); audited as
/// `settings.minors.updated`. With protection on, registration needs `date_of_birth` (or an
/// `age_verification_token`), and accounts of people younger than `digital_consent_age` are
/// held until a guardian consents. Accounts already held stay held if it is turned off.
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/minors", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = PutMinorSettingsRequest,
    responses(
        (status = 200, description = "The stored setting", body = MinorSettingsResponse),
        (status = 400, description = "`validation/invalid_request` naming each bad field", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_minors(
    caller: Caller,
    ApiJson(req): ApiJson<PutMinorSettingsRequest>,
) -> Result<Json<MinorSettingsResponse>, ApiError> {
    caller.owner()?;
    // What the request's types cannot hold is refused here; every other rule is the
    // settings' (texts are kept trimmed).
    let mut f = SettingsFaults::new();
    let age = CONSENT_AGES.take(&mut f, "digital_consent_age", req.digital_consent_age);
    let trimmed = |items: &[String]| items.iter().map(|i| i.trim().to_owned()).collect();
    let dpia = req.dpia.as_ref().map(|d| {
        let version = DPIA_VERSIONS.take(&mut f, "dpia.dpia_version", d.dpia_version);
        let linked_at =
            OffsetDateTime::parse(&d.linked_at, &time::format_description::well_known::Rfc3339)
                .ok()
                .filter(|t| t.offset().is_utc() && d.linked_at.ends_with('Z'));
        f.check("dpia.linked_at", linked_at.is_some(), LINKED_AT_RULE);
        DpiaLink {
            dpia_key: d.dpia_key,
            dpia_version: version.unwrap_or(DPIA_VERSIONS.min),
            dpia_content_hash: d.dpia_content_hash.clone(),
            linked_at: linked_at.unwrap_or(OffsetDateTime::UNIX_EPOCH),
        }
    });
    let minors = MinorSettings {
        minor_protection_enabled: req.minor_protection_enabled,
        digital_consent_age: age.and_then(|a| u8::try_from(a).ok()).unwrap_or(16),
        controller_name: req.controller_name.as_deref().map(|c| c.trim().to_owned()),
        lawful_basis: req.lawful_basis.trim().to_owned(),
        purposes: trimmed(&req.purposes),
        data_categories: trimmed(&req.data_categories),
        retention: req.retention.trim().to_owned(),
        dpia,
        translations: req
            .translations
            .iter()
            .map(|(lang, t)| (lang.clone(), t.stored()))
            .collect(),
    };
    let change = SettingsChange::Minors(Box::new(minors));
    Ok(Json(minors_response(caller.apply(f, change).await?)))
}
