//! Wallet (EUDI) login (spec 2.10): the requested attributes, the trusted issuers and the
//! status-list policy.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use std::collections::BTreeMap;

use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_actors::tenant::{
    settings::{
        rules::{
            SettingsFaults, ANCHOR_ALGS, ANCHOR_FORMATS, ASSURANCE_LEVELS, ON_STATUS_UNAVAILABLE,
            STATUS_STALENESS_SECONDS, WALLET_ATTRIBUTES,
        },
        AssuranceFloor, AssuranceKind, EudiConfig, KeyResolution, SettingsChange, TrustAnchor,
    },
    SettingsView,
};
use time::OffsetDateTime;
use utoipa::{
    openapi::{
        schema::{AdditionalProperties, ArrayBuilder, OneOfBuilder},
        Array, Object, ObjectBuilder, Schema, Type,
    },
    ToSchema,
};

use super::{check, enum_list_schema, enum_schema, nullable_enum_schema, Caller};
use crate::http::{
    error::{ApiError, ErrorBody},
    extract::ApiJson,
    path_id::TenantSlug,
};

fn attributes_schema() -> Array {
    enum_list_schema(WALLET_ATTRIBUTES, 1)
}

fn algs_schema() -> Array {
    enum_list_schema(ANCHOR_ALGS, 1)
}

fn formats_schema() -> Array {
    enum_list_schema(ANCHOR_FORMATS, 1)
}

fn level_schema() -> Object {
    nullable_enum_schema(ASSURANCE_LEVELS)
}

fn on_status_schema() -> Object {
    nullable_enum_schema(ON_STATUS_UNAVAILABLE)
}

fn floor_kind_schema() -> Object {
    enum_schema(&["aal", "eidas"]).build()
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

/// A list the request must carry; when it is missing, none and its field's fault.
fn required<'a>(f: &mut SettingsFaults, field: &str, v: &'a Option<Vec<String>>) -> &'a [String] {
    f.check(field, v.is_some(), "is required");
    v.as_deref().unwrap_or_default()
}

/// The key resolution as sent: its method and the fields that method takes, the values as
/// they are (the settings' rules judge them). `None`, with the fault, when there is no method
/// to read.
fn key_resolution(f: &mut SettingsFaults, field: &str, v: &Option<Value>) -> Option<KeyResolution> {
    let Some(v) = v else {
        f.check(field, false, "is required");
        return None;
    };
    let Some(obj) = v.as_object() else {
        f.check(field, false, "must be an object with a method");
        return None;
    };
    let method = obj.get("method").and_then(Value::as_str).unwrap_or("");
    let allowed_keys: &[&str] = match method {
        "jwks_uri" => &["method", "jwksUri"],
        "did_web" => &["method", "did"],
        "x5c" => &["method", "x5cRoots"],
        _ => {
            f.check(
                &format!("{field}.method"),
                false,
                "must be jwks_uri, did_web or x5c",
            );
            return None;
        }
    };
    for k in obj.keys() {
        f.check(
            &format!("{field}.{k}"),
            allowed_keys.contains(&k.as_str()),
            format!("is not a field of the {method} method"),
        );
    }
    let text = |key: &str| {
        obj.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    Some(match method {
        "jwks_uri" => KeyResolution::JwksUri {
            jwks_uri: text("jwksUri"),
        },
        "did_web" => KeyResolution::DidWeb { did: text("did") },
        // Anything but a list of strings is no certificate.
        _ => KeyResolution::X5c {
            x5c_roots: obj
                .get("x5cRoots")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().map(|r| r.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
        },
    })
}

/// What stands in for a key resolution that could not be read, once its fault is recorded: a
/// resolution that keeps the settings' rules, so that the rest of its anchor is still checked
/// under the anchor's own index and nothing else is named. The request is refused anyway.
fn unread_resolution() -> KeyResolution {
    KeyResolution::DidWeb {
        did: "did:web:unread".to_owned(),
    }
}

impl UpdateTenantEudiConfig {
    fn into_change(self) -> Result<SettingsChange, ApiError> {
        let mut f = SettingsFaults::new();
        f.check("enabled", self.enabled.is_some(), "is required");
        // At least one attribute on update: the stored defaults have none.
        let requested_attributes =
            required(&mut f, "requested_attributes", &self.requested_attributes).to_vec();
        if self.requested_attributes.is_some() {
            f.check(
                "requested_attributes",
                !requested_attributes.is_empty(),
                "must have at least one item",
            );
        }
        let mut anchors = Vec::new();
        for (i, a) in self.trust_anchors.iter().enumerate() {
            let at = |name: &str| format!("trust_anchors[{i}].{name}");
            let allowed_algs = required(&mut f, &at("allowedAlgs"), &a.allowed_algs).to_vec();
            let allowed_formats =
                required(&mut f, &at("allowedFormats"), &a.allowed_formats).to_vec();
            let key_resolution = key_resolution(&mut f, &at("keyResolution"), &a.key_resolution);
            anchors.push(TrustAnchor {
                issuer: a.issuer.clone().unwrap_or_default(),
                member_state: a.member_state.clone(),
                allowed_algs,
                max_assurance_level: a
                    .max_assurance_level
                    .clone()
                    .unwrap_or_else(|| "high".into()),
                allowed_formats,
                key_resolution: key_resolution.unwrap_or_else(unread_resolution),
                display_name: a.display_name.clone(),
            });
        }
        let floor = self.required_assurance_floor.as_ref().map(|fl| {
            let kind = match fl.kind.as_deref() {
                Some("aal") => Some(AssuranceKind::Aal),
                Some("eidas") => Some(AssuranceKind::Eidas),
                _ => None,
            };
            f.check(
                "required_assurance_floor.kind",
                kind.is_some(),
                "must be aal or eidas",
            );
            AssuranceFloor {
                kind: kind.unwrap_or(AssuranceKind::Aal),
                value: fl.value.clone().unwrap_or_default(),
            }
        });
        let staleness = STATUS_STALENESS_SECONDS.take(
            &mut f,
            "max_status_staleness_seconds",
            self.max_status_staleness_seconds.unwrap_or(3600),
        );
        let config = EudiConfig {
            enabled: self.enabled.unwrap_or(false),
            requested_attributes,
            trust_anchors: anchors,
            required_assurance_floor: floor,
            purpose: self.purpose,
            on_status_unavailable: self
                .on_status_unavailable
                .unwrap_or_else(|| "accept_with_cache".into()),
            max_status_staleness_seconds: staleness.unwrap_or(3600),
            updated_at: OffsetDateTime::now_utc(),
        };
        let change = SettingsChange::Eudi(Box::new(config));
        check(f, &change)?;
        Ok(change)
    }
}

/// Wallet login configuration (any role).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/settings/eudi", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    responses(
        (status = 200, description = "The configuration with defaults", body = EudiConfigResponse),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn get_eudi(caller: Caller) -> Result<Json<EudiConfigResponse>, ApiError> {
    Ok(Json(eudi_response(caller.read().await?)))
}

/// Replaces the wallet login configuration (owner).
#[utoipa::path(put, path = "/v1/auth/dashboard/tenants/{slug}/settings/eudi", tag = "dashboard settings",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug),
    request_body = UpdateTenantEudiConfig,
    responses(
        (status = 200, description = "The stored configuration", body = EudiConfigResponse),
        (status = 400, description = "`validation/invalid_request` naming each field", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` or `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "Not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn put_eudi(
    caller: Caller,
    ApiJson(req): ApiJson<UpdateTenantEudiConfig>,
) -> Result<Json<EudiConfigResponse>, ApiError> {
    caller.owner()?;
    let change = req.into_change()?;
    Ok(Json(eudi_response(caller.update(change).await?)))
}
