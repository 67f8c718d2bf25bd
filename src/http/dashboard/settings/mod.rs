//! Tenant settings: security (spec 2.8), e-mail domains, guest sign-ins and the default role,
//! the passkey domain, and wallet login and age verification (spec 2.9, 2.10).
//!
//! Reads need any role, writes the owner role. Every request type rejects unknown fields, and
//! every rule is checked before anything is sent to the tenant actor, so a refused update
//! changes nothing. The rules of the settings themselves (ranges, limits, formats,
//! vocabularies) are `tessera_actors::tenant::settings::rules`', which the actor checks
//! again; these routes add what only the edge knows (a domain's or an origin's normal form,
//! an app URL's shape, the pages' languages) and what a request's types cannot hold.
//!
//! Each section is a module of its own (its types, rules and routes); this one holds what
//! they share: reading the settings and writing one change through the tenant's actor, the
//! field helpers and the document's enum schemas.

use axum::http::StatusCode;
use tessera_actors::SettingsError;

pub mod agents;
pub mod anonymous;
pub mod branding;
pub mod email_domains;
pub mod minors;
pub mod passkey_domain;
pub mod roles;
pub mod security;
pub mod urls;
pub mod users;
pub mod wallet;
pub mod wallet_age;

use axum::{
    extract::{FromRequestParts, Path},
    http::{request::Parts, HeaderMap},
    response::{IntoResponse, Response},
};
use serde_json::Value;
use tessera_actors::tenant::SettingsMsg;
use tessera_actors::{
    tenant::{
        settings::{rules::SettingsFaults, SettingsChange},
        SettingsView,
    },
    TenantHandle,
};
use utoipa::openapi::{
    schema::{ArrayBuilder, SchemaType},
    Array, Object, ObjectBuilder, Type,
};

use crate::{
    app::AppState,
    http::{dashboard::Dashboard, error::ApiError},
};

/// A present, non-null value of a field that must not be null.
pub(super) fn not_null<T: Clone>(
    f: &mut SettingsFaults,
    field: &str,
    v: &Option<Option<T>>,
) -> Option<T> {
    match v {
        None => None,
        Some(None) => {
            f.check(field, false, "must not be null");
            None
        }
        Some(Some(x)) => Some(x.clone()),
    }
}

/// The 400 that names every field of the request that breaks a rule: those found in reading
/// it (`faults`) and the change's own ([`SettingsChange::check`]), the rules the tenant's
/// actor keeps too.
pub(super) fn check(mut faults: SettingsFaults, change: &SettingsChange) -> Result<(), ApiError> {
    change.check(&mut faults);
    invalid(faults)
}

/// The 400 that names each field of `faults`, when there is one.
pub(super) fn invalid(faults: SettingsFaults) -> Result<(), ApiError> {
    if faults.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid_fields(faults.into_fields()))
    }
}

/// Whether the request carries `X-Service-Confirm: <what>`, the confirmation of a change with
/// consequences the caller must have seen.
pub(super) fn confirmed(headers: &HeaderMap, what: &str) -> bool {
    headers
        .get("x-service-confirm")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == what)
}

/// Who calls a settings route, and for which tenant: the dashboard session and the slug in
/// the path, read in that order.
pub struct Caller {
    state: AppState,
    pub auth: Dashboard,
    slug: String,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let auth = Dashboard::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Path(slug) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Caller {
            state: state.clone(),
            auth,
            slug,
        })
    }
}

impl Caller {
    /// A caller made from a session already authenticated (the console's).
    pub fn new(state: AppState, auth: Dashboard, slug: String) -> Self {
        Caller { state, auth, slug }
    }

    /// What the caller is made of, for a route that reads them apart (the social providers').
    pub fn into_parts(self) -> (AppState, Dashboard, String) {
        (self.state, self.auth, self.slug)
    }

    /// The tenant, when the caller is its owner.
    pub(super) fn owner(&self) -> Result<TenantHandle, ApiError> {
        Ok(self.auth.owner(&self.state, &self.slug)?.1)
    }

    /// The settings, for any member.
    pub(super) async fn read(&self) -> Result<SettingsView, ApiError> {
        let (_, tenant) = self.auth.member(&self.state, &self.slug)?;
        Ok(tenant
            .call(|reply| SettingsMsg::GetSettings { reply })
            .await?)
    }

    /// Writes one change read from a request: `faults` and the change's own rules checked
    /// first ([`check`], every bad field at once), then [`Caller::update`].
    pub(super) async fn apply(
        &self,
        faults: SettingsFaults,
        change: SettingsChange,
    ) -> Result<SettingsView, ApiError> {
        check(faults, &change)?;
        self.update(change).await
    }

    /// Writes one change, checked, as the tenant's owner.
    pub(super) async fn update(&self, change: SettingsChange) -> Result<SettingsView, ApiError> {
        self.owner()?
            .call(|reply| SettingsMsg::UpdateSettings {
                change: change.clone(),
                ctx: self.auth.ctx.clone(),
                reply,
            })
            .await
            .map_err(ApiError::from)
    }
}

// ---------------------------------------------------------------- document schemas

// The handlers read these fields as text (or JSON) so a bad value is a field error naming it;
// these schemas tell the document what is accepted, exactly as the checks do.

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
    f: &mut SettingsFaults,
    field: &str,
    list: &[String],
    max: usize,
    normalize: impl Fn(&str) -> Option<String>,
    why: impl Fn(&str) -> String,
) -> Vec<String> {
    f.at_most(field, list.len(), max);
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
                f.check(&format!("{field}[{i}]"), false, why(&shown));
            }
        }
    }
    out
}

/// How a settings change's refusals answer: a change that breaks a rule of the settings is the
/// same 400 as the routes' own check gives.
impl From<SettingsError> for ApiError {
    fn from(e: SettingsError) -> Self {
        match e {
            SettingsError::Invalid { fields } => ApiError::invalid_fields(fields),
            SettingsError::PrivilegedDefaultRoleUnconfirmed { default_role } => {
                ApiError::new(
                    StatusCode::CONFLICT,
                    "anonymous/privileged_default_role_unconfirmed",
                    "enabling guest sign-ins for the first time while the default role grants more than read access needs the header X-Service-Confirm: privileged-default-role",
                )
                .with_details(serde_json::json!({
                    "reason": "default_role_grants_more_than_read",
                    "default_role": default_role,
                    "required_header": "X-Service-Confirm: privileged-default-role",
                }))
            }
        }
    }
}
