//! Wallet (EUDI) login (spec 2.10): the requested attributes, the trusted issuers and the
//! status-list policy.
//!
//! One section of the dashboard's settings, in a file of its own as every section is: its
//! request and answer types, the rules of its fields and its read and write routes.

use std::collections::BTreeMap;

use axum::{
    extract::{Path, State},
    Json,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_actors::tenant::{
    settings::{
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

use super::{enum_list_schema, enum_schema, in_range, nullable_enum_schema, one_of, read, update};
use crate::{
    app::AppState,
    http::{
        dashboard::Dashboard,
        error::{len_between, ApiError, ErrorBody, FieldErrors},
        extract::ApiJson,
    },
};

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
