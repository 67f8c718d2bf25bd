//! Tenant settings: security (spec 2.8), e-mail domains, guest sign-ins and the default role,
//! the passkey domain, and wallet login and age verification (spec 2.9, 2.10).
//!
//! Reads need any role, writes the owner role. Every request type rejects unknown fields, and
//! every rule is checked before anything is sent to the tenant actor, so a refused update
//! changes nothing.
//!
//! Each section is a module of its own (its types, rules and routes); this one holds what
//! they share: reading the settings and writing one change through the tenant's actor, the
//! field helpers and the document's enum schemas.

pub mod agents;
pub mod anonymous;
pub mod email_domains;
pub mod minors;
pub mod passkey_domain;
pub mod roles;
pub mod security;
pub mod urls;
pub mod users;
pub mod wallet;
pub mod wallet_age;

use axum::http::HeaderMap;
use serde_json::Value;
use tessera_actors::tenant::{settings::SettingsChange, SettingsView, TenantMsg};
use utoipa::openapi::{
    schema::{ArrayBuilder, SchemaType},
    Array, Object, ObjectBuilder, Type,
};

use crate::{
    app::AppState,
    http::{
        dashboard::Dashboard,
        error::{ApiError, FieldErrors},
    },
};

/// A present, non-null value of a field that must not be null.
pub(super) fn not_null<T: Clone>(
    e: &mut FieldErrors,
    field: &str,
    v: &Option<Option<T>>,
) -> Option<T> {
    match v {
        None => None,
        Some(None) => {
            e.check(field, false, "must not be null");
            None
        }
        Some(Some(x)) => Some(x.clone()),
    }
}

pub(super) fn in_range(
    e: &mut FieldErrors,
    field: &str,
    v: Option<i64>,
    min: i64,
    max: i64,
) -> Option<u32> {
    let v = v?;
    let ok = (min..=max).contains(&v);
    e.check(field, ok, format!("must be an integer from {min} to {max}"));
    if ok {
        u32::try_from(v).ok()
    } else {
        None
    }
}

pub(super) async fn update(
    state: &AppState,
    auth: &Dashboard,
    slug: &str,
    change: SettingsChange,
) -> Result<SettingsView, ApiError> {
    let (_, tenant) = auth.owner(state, slug)?;
    Ok(tenant
        .call(|reply| TenantMsg::UpdateSettings {
            change: change.clone(),
            ctx: auth.ctx.clone(),
            reply,
        })
        .await?)
}

/// Whether the request carries `X-Service-Confirm: <what>`, the confirmation of a change with
/// consequences the caller must have seen.
pub(super) fn confirmed(headers: &HeaderMap, what: &str) -> bool {
    headers
        .get("x-service-confirm")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == what)
}

pub(super) async fn read(
    state: &AppState,
    auth: &Dashboard,
    slug: &str,
) -> Result<SettingsView, ApiError> {
    let (_, tenant) = auth.member(state, slug)?;
    Ok(tenant
        .call(|reply| TenantMsg::GetSettings { reply })
        .await?)
}

// ---------------------------------------------------------------- document schemas

// The handlers read these fields as text (or JSON) so a bad value is a field error naming it;
// these schemas tell the document what is accepted, exactly as the checks below do.

/// A string that is one of `values`.
pub(super) fn enum_schema(values: &[&str]) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values.iter().copied()))
}

/// One of `values`, or `null` (which means the default).
pub(super) fn nullable_enum_schema(values: &[&str]) -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(
            values.iter().map(|v| Value::from(*v)).chain([Value::Null]),
        ))
        .build()
}

/// At least `min` items, each one of `values`.
pub(super) fn enum_list_schema(values: &[&str], min: usize) -> Array {
    ArrayBuilder::new()
        .items(enum_schema(values))
        .min_items(Some(min))
        .build()
}

/// At most `max` entries, each normalized by `normalize` and de-duplicated in order; each bad
/// entry is a field error naming it (`field[i]`) with `why(the entry's first 64 characters)`.
pub(super) fn normalize_entries(
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

/// Whether `v` is one of `allowed`; the field's error if not.
pub(super) fn one_of(e: &mut FieldErrors, field: &str, v: &str, allowed: &[&str]) -> bool {
    let ok = allowed.contains(&v);
    e.check(field, ok, format!("must be one of {}", allowed.join(", ")));
    ok
}
