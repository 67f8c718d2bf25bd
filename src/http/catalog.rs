//! The resource scope catalog (spec 2.13, 3.3, 4.6): `/v1/resources/{resourceId}/scopes`,
//! for a dashboard session of an owner of the tenant that owns the resource (the operator
//! registers resources with `tessera admin resource register`).
//!
//! Checks, in the order their errors are given:
//! 1. the body's shape (400 `validation/invalid_request` naming each field): `scope_name` a
//!    string; `sensitivity` `normal` or `elevated` (default `elevated`); `display_metadata`
//!    a closed object, either `{kind: "locale_text", locale_text: {en, pl, de, fr, es}}` with
//!    all five locales and no other (an unknown locale is refused, not ignored), each not
//!    blank and at most 256 characters once normalised, or `{kind: "i18n_key", i18n_key}`;
//! 2. `scope_name` not in a reserved namespace (`mcp:`, `tessera:`, `sso:`, `agent:`, or a
//!    bare protocol scope: `openid`, `profile`, `email`, `phone`, `address`,
//!    `offline_access`): 400 `resource_scope_catalog/reserved_namespace`;
//! 3. `scope_name` matching `^[a-z][a-z0-9_.:-]{0,63}$`: else 400
//!    `resource_scope_catalog/malformed_scope_name`;
//! 4. an `i18n_key` under `consent.scopes.`: else 400
//!    `resource_scope_catalog/i18n_key_outside_namespace`;
//! 5. every locale text non-empty after normalisation: else 400
//!    `resource_scope_catalog/locale_text_invalid`.
//!
//! Normalisation: whitespace runs become one space, invisible (default-ignorable),
//! bidirectional-control and other control characters are removed, the ends are trimmed.
//! The text is then kept as written.

use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tessera_actors::{
    directory::catalog::{
        CatalogScopeRecord, DisplayMetadata, LocaleText, NewCatalogScope, ResourceRecord,
        ScopeStatus, Sensitivity, PLATFORM_RESOURCE_ID,
    },
    records::Role,
    DirectoryMsg,
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::dashboard::{audit_in, Dashboard};
use crate::app::AppState;
use crate::http::{
    error::{ApiError, ErrorBody, FieldErrors},
    extract::ApiJson,
    fields::{scope_name_ok, PROTOCOL_SCOPES},
};

const LOCALES: [&str; 5] = ["en", "pl", "de", "fr", "es"];
const RESERVED_PREFIXES: [&str; 4] = ["mcp:", "tessera:", "sso:", "agent:"];
const I18N_NAMESPACE: &str = "consent.scopes.";

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterScopeRequest {
    /// `^[a-z][a-z0-9_.:-]{0,63}$`, outside the reserved namespaces.
    #[schema(required = true, max_length = 64)]
    pub scope_name: Option<String>,
    /// `normal` (an individually checkable consent item) or `elevated` (the default).
    pub sensitivity: Option<String>,
    /// `{kind: "locale_text", locale_text: {en, pl, de, fr, es}}` or `{kind: "i18n_key",
    /// i18n_key: "consent.scopes.<name>"}`.
    #[schema(required = true, value_type = Object)]
    pub display_metadata: Option<Value>,
}

/// A catalog entry (spec 2.13).
#[derive(Serialize, ToSchema)]
pub struct CatalogEntry {
    pub id: Uuid,
    pub resource_id: Uuid,
    pub scope_name: String,
    /// `pending_review` until the operator approves it, then `approved`.
    pub status: String,
    /// `normal` or `elevated`.
    pub sensitivity: String,
    pub requires_platform_enable: bool,
    #[schema(value_type = Object)]
    pub display_metadata: Value,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl From<CatalogScopeRecord> for CatalogEntry {
    fn from(s: CatalogScopeRecord) -> Self {
        CatalogEntry {
            id: s.id,
            resource_id: s.resource_id,
            scope_name: s.scope_name,
            status: match s.status {
                ScopeStatus::PendingReview => "pending_review",
                ScopeStatus::Approved => "approved",
            }
            .to_owned(),
            sensitivity: match s.sensitivity {
                Sensitivity::Normal => "normal",
                Sensitivity::Elevated => "elevated",
            }
            .to_owned(),
            requires_platform_enable: s.requires_platform_enable,
            display_metadata: serde_json::to_value(&s.display_metadata).unwrap_or(Value::Null),
            created_at: s.created_at,
            updated_at: s.updated_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct CatalogPagination {
    /// Always null: the list is one page.
    pub next_cursor: Option<String>,
    pub has_more: bool,
}

#[derive(Serialize, ToSchema)]
pub struct CatalogList {
    pub data: Vec<CatalogEntry>,
    pub pagination: CatalogPagination,
}

/// Whether `c` is removed from locale text: a control, bidirectional-control or
/// default-ignorable (invisible) character.
pub(crate) fn invisible(c: char) -> bool {
    c.is_control()
        || matches!(
            u32::from(c),
            0x00AD
                | 0x034F
                | 0x061C
                | 0x115F..=0x1160
                | 0x17B4..=0x17B5
                | 0x180B..=0x180F
                | 0x200B..=0x200F
                | 0x202A..=0x202E
                | 0x2060..=0x206F
                | 0x3164
                | 0xFE00..=0xFE0F
                | 0xFEFF
                | 0xFFA0
                | 0xFFF0..=0xFFF8
                | 0x1BCA0..=0x1BCA3
                | 0x1D173..=0x1D17A
                | 0xE0000..=0xE0FFF
        )
}

/// Spec 2.13's normalisation of a locale text.
pub fn normalize_locale_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_whitespace() {
            if !out.is_empty() && !out.ends_with(' ') {
                out.push(' ');
            }
        } else if !invisible(c) {
            out.push(c);
        }
    }
    out.trim_end().to_owned()
}

pub(crate) fn reserved(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    PROTOCOL_SCOPES.contains(&lower.as_str())
        || RESERVED_PREFIXES.iter().any(|p| lower.starts_with(p))
}

fn catalog_error(code: &str, message: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, code, message)
}

/// The display metadata, or the errors of its shape in `e`. Locale texts come back
/// normalised; `Err` carries the specific error of step 4 or 5 once the shape is right.
fn display_metadata(
    e: &mut FieldErrors,
    v: Option<&Value>,
) -> Option<Result<DisplayMetadata, ApiError>> {
    const F: &str = "display_metadata";
    let Some(obj) = v.and_then(Value::as_object) else {
        e.check(
            F,
            false,
            "is required: an object with kind locale_text or i18n_key",
        );
        return None;
    };
    let kind = obj.get("kind").and_then(Value::as_str);
    let allowed: &[&str] = match kind {
        Some("locale_text") => &["kind", "locale_text"],
        Some("i18n_key") => &["kind", "i18n_key"],
        _ => {
            e.check(
                &format!("{F}.kind"),
                false,
                "must be locale_text or i18n_key",
            );
            return None;
        }
    };
    let before = e.len();
    for k in obj.keys().filter(|k| !allowed.contains(&k.as_str())) {
        e.check(&format!("{F}.{k}"), false, "is not a field of this kind");
    }
    if kind == Some("i18n_key") {
        let Some(key) = obj.get("i18n_key").and_then(Value::as_str) else {
            e.check(&format!("{F}.i18n_key"), false, "is required: a string");
            return None;
        };
        if e.len() > before {
            return None;
        }
        let ok = key
            .strip_prefix(I18N_NAMESPACE)
            .is_some_and(well_formed_key);
        return Some(if ok {
            Ok(DisplayMetadata::I18nKey {
                i18n_key: key.to_owned(),
            })
        } else {
            Err(catalog_error(
                "resource_scope_catalog/i18n_key_outside_namespace",
                "i18n_key must be consent.scopes.<name>",
            ))
        });
    }
    let Some(texts) = obj.get("locale_text").and_then(Value::as_object) else {
        e.check(
            &format!("{F}.locale_text"),
            false,
            "is required: an object with en, pl, de, fr and es",
        );
        return None;
    };
    for k in texts.keys().filter(|k| !LOCALES.contains(&k.as_str())) {
        e.check(
            &format!("{F}.locale_text.{k}"),
            false,
            "is not one of the locales en, pl, de, fr, es",
        );
    }
    let mut normalised = Vec::with_capacity(LOCALES.len());
    let mut emptied = false;
    for locale in LOCALES {
        let field = format!("{F}.locale_text.{locale}");
        match texts.get(locale).and_then(Value::as_str) {
            Some(t) if !t.trim().is_empty() => {
                let n = normalize_locale_text(t);
                e.check(
                    &field,
                    n.chars().count() <= 256,
                    "must be at most 256 characters",
                );
                emptied |= n.is_empty();
                normalised.push(n);
            }
            _ => {
                e.check(&field, false, "is required: a text that is not blank");
                normalised.push(String::new());
            }
        }
    }
    if e.len() > before {
        return None;
    }
    if emptied {
        return Some(Err(catalog_error(
            "resource_scope_catalog/locale_text_invalid",
            "a locale text is empty once invisible, bidirectional and control characters are removed",
        )));
    }
    let mut it = normalised.into_iter();
    let mut next = || it.next().unwrap_or_default();
    Some(Ok(DisplayMetadata::LocaleText {
        locale_text: LocaleText {
            en: next(),
            pl: next(),
            de: next(),
            fr: next(),
            es: next(),
        },
    }))
}

/// The part of an i18n key after `consent.scopes.`.
fn well_formed_key(rest: &str) -> bool {
    !rest.is_empty()
        && rest.len() <= 128
        && rest
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.:-".contains(&b))
}

/// The resource, if it exists and the caller owns its tenant, with that tenant's slug.
async fn owned_resource(
    state: &AppState,
    auth: &Dashboard,
    resource_id: &str,
) -> Result<Option<(ResourceRecord, String)>, ApiError> {
    let Ok(id) = Uuid::parse_str(resource_id) else {
        return Ok(None);
    };
    let resource = state
        .directory
        .request(|reply| DirectoryMsg::GetResource { id, reply })
        .await?;
    Ok(resource.and_then(|r| {
        let slug = auth
            .session
            .memberships
            .iter()
            .find(|m| m.tenant == r.tenant && m.role == Role::Owner)?
            .slug
            .clone();
        Some((r, slug))
    }))
}

fn platform_immutable(resource_id: &str) -> Result<(), ApiError> {
    if Uuid::parse_str(resource_id).is_ok_and(|id| id == PLATFORM_RESOURCE_ID) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "resource_scope_catalog/platform_resource_immutable",
            "the platform's own resource cannot be changed",
        ));
    }
    Ok(())
}

fn resource_not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "resource_scope_catalog/resource_not_found",
        "no resource with this id is owned by a tenant you own",
    )
}

/// Registers a scope on a resource (an owner of the resource's tenant). It starts
/// `pending_review`: not grantable until the operator approves it.
#[utoipa::path(post, path = "/v1/resources/{resourceId}/scopes", tag = "resource scope catalog",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("resourceId" = String, Path, description = "The resource's id")),
    request_body = RegisterScopeRequest,
    responses(
        (status = 201, description = "The entry, `pending_review`", body = CatalogEntry),
        (status = 400, description = "`validation/invalid_request` naming each bad field, `resource_scope_catalog/reserved_namespace`, `.../malformed_scope_name`, `.../i18n_key_outside_namespace`, `.../locale_text_invalid`, `.../resource_cap_exceeded`, `.../tenant_aggregate_cap_exceeded`", body = ErrorBody),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`resource_scope_catalog/platform_resource_immutable`, `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource_scope_catalog/resource_not_found`: unknown, or not owned by a tenant the caller owns", body = ErrorBody),
        (status = 409, description = "`resource_scope_catalog/duplicate`", body = ErrorBody),
    ))]
pub async fn register(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(resource_id): Path<String>,
    ApiJson(req): ApiJson<RegisterScopeRequest>,
) -> Result<Response, ApiError> {
    platform_immutable(&resource_id)?;
    let (resource, slug) = owned_resource(&state, &auth, &resource_id)
        .await?
        .ok_or_else(resource_not_found)?;
    let mut e = FieldErrors::new();
    e.check(
        "scope_name",
        req.scope_name.is_some(),
        "is required: a string",
    );
    let sensitivity = match req.sensitivity.as_deref() {
        None | Some("elevated") => Some(Sensitivity::Elevated),
        Some("normal") => Some(Sensitivity::Normal),
        Some(_) => None,
    };
    e.check(
        "sensitivity",
        sensitivity.is_some(),
        "must be normal or elevated",
    );
    let metadata = display_metadata(&mut e, req.display_metadata.as_ref());
    e.finish()?;
    let name = req.scope_name.unwrap_or_default();
    if reserved(&name) {
        return Err(catalog_error(
            "resource_scope_catalog/reserved_namespace",
            "scope names may not start with mcp:, tessera:, sso: or agent:, nor be a bare protocol scope",
        ));
    }
    if !scope_name_ok(&name) {
        return Err(catalog_error(
            "resource_scope_catalog/malformed_scope_name",
            "scope names match ^[a-z][a-z0-9_.:-]{0,63}$",
        ));
    }
    let display_metadata = metadata.ok_or_else(|| ApiError::internal("display metadata"))??;
    let caps = &state.config.catalog;
    let scope = NewCatalogScope {
        resource_id: resource.id,
        scope_name: name,
        sensitivity: sensitivity.unwrap_or(Sensitivity::Elevated),
        display_metadata,
        per_resource_cap: caps.max_scopes_per_resource,
        per_tenant_cap: caps.max_scopes_per_tenant,
    };
    let tenant = resource.tenant;
    let entry = state
        .directory
        .request(|reply| DirectoryMsg::RegisterCatalogScope {
            tenant,
            scope: scope.clone(),
            reply,
        })
        .await?;
    audit_in(
        &state,
        vec![slug],
        "resource_scope.registered",
        &auth.ctx,
        serde_json::json!({
            "resource_id": entry.resource_id,
            "scope_id": entry.id,
            "scope_name": entry.scope_name,
        }),
    )
    .await;
    Ok((StatusCode::CREATED, Json(CatalogEntry::from(entry))).into_response())
}

/// The resource's entries, oldest first: always an envelope of one page; empty for an
/// unknown resource or one the caller does not own.
#[utoipa::path(get, path = "/v1/resources/{resourceId}/scopes", tag = "resource scope catalog",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(("resourceId" = String, Path, description = "The resource's id")),
    responses(
        (status = 200, description = "The entries", body = CatalogList),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
    ))]
pub async fn list(
    State(state): State<AppState>,
    auth: Dashboard,
    Path(resource_id): Path<String>,
) -> Result<Json<CatalogList>, ApiError> {
    let data = match owned_resource(&state, &auth, &resource_id).await? {
        Some((r, _)) => {
            let (tenant, resource) = (r.tenant, r.id);
            state
                .directory
                .request(|reply| DirectoryMsg::ListCatalogScopes {
                    tenant,
                    resource,
                    reply,
                })
                .await?
        }
        None => Vec::new(),
    };
    Ok(Json(CatalogList {
        data: data.into_iter().map(Into::into).collect(),
        pagination: CatalogPagination {
            next_cursor: None,
            has_more: false,
        },
    }))
}

/// Removes an entry: tokens already issued keep it, future mints do not include it.
#[utoipa::path(delete, path = "/v1/resources/{resourceId}/scopes/{id}", tag = "resource scope catalog",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        ("resourceId" = String, Path, description = "The resource's id"),
        ("id" = String, Path, description = "The entry's id"),
    ),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "`dashboard/unauthenticated`", body = ErrorBody),
        (status = 403, description = "`resource_scope_catalog/platform_resource_immutable`, `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource_scope_catalog/resource_not_found`, `resource_scope_catalog/not_found`", body = ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    auth: Dashboard,
    Path((resource_id, id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    platform_immutable(&resource_id)?;
    let (resource, slug) = owned_resource(&state, &auth, &resource_id)
        .await?
        .ok_or_else(resource_not_found)?;
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "resource_scope_catalog/not_found",
            "no catalog entry with this id on the resource",
        )
    };
    let scope = Uuid::parse_str(&id).map_err(|_| not_found())?;
    let (tenant, resource) = (resource.tenant, resource.id);
    let removed = state
        .directory
        .request(|reply| DirectoryMsg::DeleteCatalogScope {
            tenant,
            resource,
            scope,
            reply,
        })
        .await
        .map_err(|e| match e {
            tessera_actors::CallError::Failed(tessera_actors::DirectoryError::NotFound) => {
                not_found()
            }
            e => e.into(),
        })?;
    audit_in(
        &state,
        vec![slug],
        "resource_scope.deleted",
        &auth.ctx,
        serde_json::json!({
            "resource_id": removed.resource_id,
            "scope_id": removed.id,
            "scope_name": removed.scope_name,
        }),
    )
    .await;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_text_is_normalised_as_spec_2_13_says() {
        assert_eq!(
            normalize_locale_text("  Read   your\torders \n"),
            "Read your orders"
        );
        assert_eq!(normalize_locale_text("a\u{200B}b\u{202E}c\u{FEFF}"), "abc");
        assert_eq!(normalize_locale_text("x \u{200B} y"), "x y");
        assert_eq!(normalize_locale_text("\u{200B}\u{2066}\u{0007}"), "");
        assert_eq!(
            normalize_locale_text("Zamówienia – odczyt"),
            "Zamówienia – odczyt"
        );
    }

    #[test]
    fn scope_names_reserved_and_malformed() {
        for r in [
            "openid",
            "offline_access",
            "mcp:tools",
            "tessera:x",
            "sso:y",
            "agent:z",
            "MCP:x",
        ] {
            assert!(reserved(r), "{r}");
        }
        for ok in ["orders:read", "a", "billing.v2-x_y"] {
            assert!(!reserved(ok) && scope_name_ok(ok), "{ok}");
        }
        for bad in ["Orders", "9x", "has space", "", &"a".repeat(65)] {
            assert!(!scope_name_ok(bad), "{bad}");
        }
    }
}
