//! An organization's single sign-on connections over HTTP (the tenant's admins; served
//! twice like the other organization routes): SAML 2.0 identity providers (metadata by URL
//! or XML, or its three parts by hand) and OpenID providers (the issuer's discovery document
//! is read and must name it), with just-in-time provisioning, the attribute mapping and the
//! groups that give organization roles. A SAML connection gets its own key pair when it is
//! created: the certificate is in the answer and in its service-provider metadata, for the
//! IdP to encrypt assertions to.

use axum::{http::StatusCode, response::Response, Json};
use serde::{Deserialize, Serialize};
use tessera_actors::tenant::sso::{
    connections::{ConnectionSpec, ConnectionView, ProtocolSpec},
    msg::{SsoAnswer, SsoCmd},
    records::{AttributeMapping, GroupRole, SsoConnectionRecord, SsoProtocol},
};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use super::OrgAdmin;
use crate::http::{
    dashboard::created,
    error::{len_between, ApiError, ErrorBody, FieldErrors},
    extract::ApiJson,
    path_id::{not_found_as, TenantSlug},
    sso::connection_base,
};
use tessera_actors::tenant::organizations::policy::valid_role_name;

/// Group mappings of one connection.
const MAX_GROUP_ROLES: usize = 100;
/// Scopes an OpenID connection asks for besides `openid`.
const MAX_SCOPES: usize = 20;
/// IdP certificates of one SAML connection.
const MAX_CERTS: usize = 5;

#[derive(Serialize, Deserialize, ToSchema, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct AttributeMappingBody {
    /// The attribute (claim) holding the address; empty: the SAML NameID, the OpenID `email`
    /// claim. Default empty.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub email: Option<String>,
    /// Default `given_name`.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub given_name: Option<String>,
    /// Default `family_name`.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub family_name: Option<String>,
    /// Default `groups`.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub groups: Option<String>,
}

#[derive(Serialize, Deserialize, ToSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct GroupRoleBody {
    /// A group the provider names (1-256 characters).
    #[schema(min_length = 1, max_length = 256)]
    pub group: String,
    /// An organization role.
    #[schema(min_length = 1, max_length = 64)]
    pub role: String,
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct SamlBody {
    /// Where the IdP's metadata is read (https; private addresses only when `[sso]
    /// allow_private_targets`).
    #[schema(max_length = 2048)]
    pub metadata_url: Option<String>,
    /// The IdP's metadata itself, up to 10,000 characters (a larger document by
    /// `metadata_url`, read up to 1 MiB).
    #[schema(max_length = 10000)]
    pub metadata_xml: Option<String>,
    /// Without metadata: the IdP's entity id, ...
    #[schema(max_length = 1024)]
    pub idp_entity_id: Option<String>,
    /// ... its SingleSignOnService URL (HTTP-Redirect binding), ...
    #[schema(max_length = 2048)]
    pub idp_sso_url: Option<String>,
    /// ... and its signing certificates (PEM or base64 DER).
    pub idp_certificates: Option<Vec<String>>,
    /// Take unsolicited (IdP-initiated) responses. Default false.
    pub allow_idp_initiated: Option<bool>,
    /// Where an unsolicited sign-in goes: one of the tenant's URLs (required with
    /// `allow_idp_initiated`).
    #[schema(max_length = 2048)]
    pub idp_initiated_redirect_uri: Option<String>,
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct OidcBody {
    /// The provider's issuer: its discovery document must name it exactly.
    #[schema(max_length = 2048)]
    pub issuer: Option<String>,
    #[schema(min_length = 1, max_length = 512)]
    pub client_id: Option<String>,
    /// Kept when left out on a change of the same client.
    #[schema(min_length = 1, max_length = 2048)]
    pub client_secret: Option<String>,
    /// Asked for besides `openid`. Default `["email", "profile"]`.
    pub scopes: Option<Vec<String>>,
}

/// A connection as created, or changed (fields left out are unchanged).
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ConnectionRequest {
    /// 1-200 characters.
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// `saml` or `oidc` (on creation; fixed after).
    #[serde(rename = "type")]
    #[schema(pattern = "^(saml|oidc)$")]
    pub protocol: Option<String>,
    /// Default true.
    pub enabled: Option<bool>,
    /// Create an account for a provider account without one. Default true.
    pub jit: Option<bool>,
    pub attribute_mapping: Option<AttributeMappingBody>,
    /// Group -> role, the first match wins.
    pub group_roles: Option<Vec<GroupRoleBody>>,
    /// The role when no group matches. Default `member`.
    #[schema(min_length = 1, max_length = 64)]
    pub default_role: Option<String>,
    pub saml: Option<SamlBody>,
    pub oidc: Option<OidcBody>,
}

/// A SAML connection's service provider, as its IdP is told.
#[derive(Serialize, ToSchema)]
pub struct ServiceProvider {
    pub entity_id: String,
    pub acs_url: String,
    /// Its metadata (the entity id is this URL).
    pub metadata_url: String,
    /// The certificate assertions are encrypted to (PEM).
    pub certificate: String,
}

#[derive(Serialize, ToSchema)]
pub struct SamlSettingsView {
    pub idp_entity_id: String,
    pub idp_sso_url: String,
    pub idp_certificates: Vec<String>,
    pub metadata_url: Option<String>,
    pub allow_idp_initiated: bool,
    pub idp_initiated_redirect_uri: Option<String>,
    pub sp: ServiceProvider,
}

#[derive(Serialize, ToSchema)]
pub struct OidcSettingsView {
    pub issuer: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    /// The redirect URI to register at the provider.
    pub redirect_uri: String,
}

/// A connection (never its secrets).
#[derive(Serialize, ToSchema)]
pub struct Connection {
    pub id: Uuid,
    pub organization_id: Uuid,
    pub name: String,
    /// `saml` or `oidc`.
    #[serde(rename = "type")]
    pub protocol: String,
    pub enabled: bool,
    pub jit: bool,
    pub attribute_mapping: AttributeMappingBody,
    pub group_roles: Vec<GroupRoleBody>,
    pub default_role: String,
    /// Where a sign-in starts (add `redirect_uri`, one of the tenant's URLs).
    pub start_url: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saml: Option<SamlSettingsView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc: Option<OidcSettingsView>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Serialize, ToSchema)]
pub struct ConnectionList {
    pub data: Vec<Connection>,
}

impl Connection {
    fn of(state: &crate::app::App, slug: &str, c: &SsoConnectionRecord) -> Self {
        let v = ConnectionView::of(c);
        let base = connection_base(state, slug, c.id);
        Connection {
            id: v.id,
            organization_id: v.organization_id,
            name: v.name,
            protocol: v.protocol.to_owned(),
            enabled: v.enabled,
            jit: v.jit,
            attribute_mapping: AttributeMappingBody {
                email: Some(v.attribute_mapping.email),
                given_name: Some(v.attribute_mapping.given_name),
                family_name: Some(v.attribute_mapping.family_name),
                groups: Some(v.attribute_mapping.groups),
            },
            group_roles: v
                .group_roles
                .into_iter()
                .map(|g| GroupRoleBody {
                    group: g.group,
                    role: g.role,
                })
                .collect(),
            default_role: v.default_role,
            start_url: format!("{base}/start"),
            saml: v.saml.map(|s| SamlSettingsView {
                idp_entity_id: s.idp_entity_id,
                idp_sso_url: s.idp_sso_url,
                idp_certificates: s.idp_certificates,
                metadata_url: s.metadata_url,
                allow_idp_initiated: s.allow_idp_initiated,
                idp_initiated_redirect_uri: s.idp_initiated_redirect_uri,
                sp: ServiceProvider {
                    entity_id: format!("{base}/metadata"),
                    acs_url: format!("{base}/acs"),
                    metadata_url: format!("{base}/metadata"),
                    certificate: s.sp_certificate,
                },
            }),
            oidc: v.oidc.map(|o| OidcSettingsView {
                issuer: o.issuer,
                client_id: o.client_id,
                scopes: o.scopes,
                redirect_uri: format!("{base}/callback"),
            }),
            created_at: v.created_at,
            updated_at: v.updated_at,
        }
    }
}

fn provider_refused(what: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "sso/provider_invalid",
        format!("{what}: {e}"),
    )
}

/// The spec a request makes over `current` (a new connection: none), with the provider's
/// side read and checked.
async fn spec_of(
    state: &crate::app::App,
    req: ConnectionRequest,
    current: Option<&SsoConnectionRecord>,
) -> Result<ConnectionSpec, ApiError> {
    let mut e = FieldErrors::new();
    let name = req
        .name
        .clone()
        .or_else(|| current.map(|c| c.name.clone()))
        .unwrap_or_default();
    e.check("name", len_between(name.trim(), 1, 200), "1-200 characters");
    let protocol = match (&req.protocol, current) {
        (Some(p), Some(c)) if p != c.protocol.as_str() => {
            e.check("type", false, "cannot change; create another connection");
            p.clone()
        }
        (Some(p), _) => p.clone(),
        (None, Some(c)) => c.protocol.as_str().to_owned(),
        (None, None) => String::new(),
    };
    e.check(
        "type",
        matches!(protocol.as_str(), "saml" | "oidc"),
        "saml or oidc",
    );
    let current_mapping = current.map(|c| c.mapping.clone());
    let m = req.attribute_mapping.clone().unwrap_or_default();
    let pick = |given: Option<String>, kept: Option<String>, default: &str| {
        given.or(kept).unwrap_or_else(|| default.to_owned())
    };
    // Each name left out keeps its value (a new connection: its default).
    let kept = |f: fn(&AttributeMapping) -> &String| current_mapping.as_ref().map(|k| f(k).clone());
    let mapping = AttributeMapping {
        email: req
            .attribute_mapping
            .as_ref()
            .and_then(|a| a.email.clone())
            .or_else(|| kept(|k| &k.email))
            .unwrap_or_default(),
        given_name: pick(m.given_name.clone(), kept(|k| &k.given_name), "given_name"),
        family_name: pick(
            m.family_name.clone(),
            kept(|k| &k.family_name),
            "family_name",
        ),
        groups: pick(m.groups.clone(), kept(|k| &k.groups), "groups"),
    };
    for (field, v) in [
        ("attribute_mapping.email", &mapping.email),
        ("attribute_mapping.given_name", &mapping.given_name),
        ("attribute_mapping.family_name", &mapping.family_name),
        ("attribute_mapping.groups", &mapping.groups),
    ] {
        e.check(field, v.len() <= 200, "at most 200 characters");
    }
    let group_roles: Vec<GroupRole> = match (&req.group_roles, current) {
        (Some(g), _) => g
            .iter()
            .map(|g| GroupRole {
                group: g.group.clone(),
                role: g.role.clone(),
            })
            .collect(),
        (None, Some(c)) => c.group_roles.clone(),
        (None, None) => Vec::new(),
    };
    e.check(
        "group_roles",
        group_roles.len() <= MAX_GROUP_ROLES,
        format!("at most {MAX_GROUP_ROLES}"),
    );
    for g in &group_roles {
        e.check(
            "group_roles",
            len_between(&g.group, 1, 256),
            "a group of 1-256 characters",
        );
        e.check("group_roles", valid_role_name(&g.role), "a role name");
    }
    let default_role = req
        .default_role
        .clone()
        .or_else(|| current.map(|c| c.default_role.clone()))
        .unwrap_or_else(|| "member".into());
    e.check(
        "default_role",
        valid_role_name(&default_role),
        "a role name",
    );
    e.finish()?;
    let protocol = match protocol.as_str() {
        "saml" => saml_spec(state, req.saml.unwrap_or_default(), current).await?,
        _ => oidc_spec(state, req.oidc.unwrap_or_default(), current).await?,
    };
    Ok(ConnectionSpec {
        name: name.trim().to_owned(),
        enabled: req
            .enabled
            .or_else(|| current.map(|c| c.enabled))
            .unwrap_or(true),
        protocol,
        jit: req.jit.or_else(|| current.map(|c| c.jit)).unwrap_or(true),
        mapping,
        group_roles,
        default_role,
    })
}

fn url_field(e: &mut FieldErrors, field: &str, url: &str, allow_private: bool) {
    e.check(
        field,
        url.len() <= 2048 && crate::webhooks::check_url(url, allow_private).is_ok(),
        if allow_private {
            "an absolute http(s) URL"
        } else {
            "an https URL at a public address"
        },
    );
}

async fn saml_spec(
    state: &crate::app::App,
    b: SamlBody,
    current: Option<&SsoConnectionRecord>,
) -> Result<ProtocolSpec, ApiError> {
    let allow_private = state.config.sso.allow_private_targets;
    let kept = match current.map(|c| &c.protocol) {
        Some(SsoProtocol::Saml(s)) => Some(s),
        _ => None,
    };
    let mut e = FieldErrors::new();
    if let Some(u) = &b.metadata_url {
        url_field(&mut e, "saml.metadata_url", u, allow_private);
    }
    e.check(
        "saml.metadata_xml",
        b.metadata_xml
            .as_ref()
            .is_none_or(|x| x.chars().count() <= 10_000),
        "at most 10,000 characters (a larger document by metadata_url)",
    );
    e.check(
        "saml",
        !(b.metadata_url.is_some() && b.metadata_xml.is_some()),
        "metadata_url or metadata_xml, not both",
    );
    e.finish()?;
    let metadata = match (&b.metadata_url, &b.metadata_xml) {
        (Some(url), _) => Some(
            state
                .federation
                .text(url)
                .await
                .map_err(|err| provider_refused("the IdP's metadata could not be read", err))?,
        ),
        (None, Some(xml)) => Some(xml.clone()),
        (None, None) => None,
    };
    let (entity, sso_url, certs) = match metadata {
        Some(xml) => {
            let m = tessera_saml::parse_idp_metadata(&xml)
                .map_err(|err| provider_refused("the IdP's metadata", err))?;
            (m.entity_id, m.sso_redirect_url, m.certs)
        }
        None => (
            b.idp_entity_id
                .clone()
                .or_else(|| kept.map(|s| s.idp_entity_id.clone()))
                .unwrap_or_default(),
            b.idp_sso_url
                .clone()
                .or_else(|| kept.map(|s| s.idp_sso_url.clone()))
                .unwrap_or_default(),
            b.idp_certificates
                .clone()
                .or_else(|| kept.map(|s| s.idp_certificates.clone()))
                .unwrap_or_default(),
        ),
    };
    let redirect = b
        .idp_initiated_redirect_uri
        .clone()
        .or_else(|| kept.and_then(|s| s.idp_initiated_redirect_uri.clone()));
    let allow_idp_initiated = b
        .allow_idp_initiated
        .or_else(|| kept.map(|s| s.allow_idp_initiated))
        .unwrap_or(false);
    let mut e = FieldErrors::new();
    e.check(
        "saml.idp_entity_id",
        len_between(&entity, 1, 1024),
        "the IdP's entity id (or its metadata)",
    );
    e.check(
        "saml.idp_sso_url",
        crate::webhooks::check_url(&sso_url, true).is_ok(),
        "the IdP's SingleSignOnService URL (or its metadata)",
    );
    e.check(
        "saml.idp_certificates",
        (1..=MAX_CERTS).contains(&certs.len()) && certs.iter().all(|c| c.len() <= 16 * 1024),
        format!("1-{MAX_CERTS} signing certificates (or the IdP's metadata)"),
    );
    if let Some(r) = &redirect {
        e.check(
            "saml.idp_initiated_redirect_uri",
            len_between(r, 1, 2048),
            "one of the tenant's URLs",
        );
    }
    e.check(
        "saml.idp_initiated_redirect_uri",
        !allow_idp_initiated || redirect.is_some(),
        "required with allow_idp_initiated",
    );
    e.finish()?;
    let sp_key = match kept {
        Some(_) => None,
        None => Some(
            tessera_saml::sp_keypair("Tessera SAML service provider")
                .map_err(ApiError::internal)?,
        ),
    };
    Ok(ProtocolSpec::Saml {
        idp_entity_id: entity,
        idp_sso_url: sso_url,
        idp_certificates: certs,
        // Where the settings came from: kept only while nothing else replaced them.
        metadata_url: match (&b.metadata_url, &b.metadata_xml, &b.idp_entity_id) {
            (Some(u), _, _) => Some(u.clone()),
            (None, None, None) if b.idp_sso_url.is_none() && b.idp_certificates.is_none() => {
                kept.and_then(|s| s.metadata_url.clone())
            }
            _ => None,
        },
        sp_key,
        allow_idp_initiated,
        idp_initiated_redirect_uri: redirect,
    })
}

async fn oidc_spec(
    state: &crate::app::App,
    b: OidcBody,
    current: Option<&SsoConnectionRecord>,
) -> Result<ProtocolSpec, ApiError> {
    let kept = match current.map(|c| &c.protocol) {
        Some(SsoProtocol::Oidc(o)) => Some(o),
        _ => None,
    };
    let issuer = b
        .issuer
        .or_else(|| kept.map(|o| o.issuer.clone()))
        .unwrap_or_default();
    let client_id = b
        .client_id
        .or_else(|| kept.map(|o| o.client_id.clone()))
        .unwrap_or_default();
    let scopes = b
        .scopes
        .or_else(|| kept.map(|o| o.scopes.clone()))
        .unwrap_or_else(|| vec!["email".into(), "profile".into()]);
    let mut e = FieldErrors::new();
    url_field(
        &mut e,
        "oidc.issuer",
        &issuer,
        state.config.sso.allow_private_targets,
    );
    e.check(
        "oidc.client_id",
        len_between(&client_id, 1, 512),
        "1-512 characters",
    );
    if let Some(s) = &b.client_secret {
        e.check(
            "oidc.client_secret",
            len_between(s, 1, 2048),
            "1-2048 characters",
        );
    }
    e.check(
        "oidc.scopes",
        scopes.len() <= MAX_SCOPES
            && scopes.iter().all(|s| {
                len_between(s, 1, 100) && s.bytes().all(|b| b.is_ascii_graphic() && b != b'"')
            }),
        format!("at most {MAX_SCOPES} scope tokens"),
    );
    e.finish()?;
    state
        .federation
        .provider(&issuer)
        .await
        .map_err(|err| provider_refused("the issuer's discovery document", err))?;
    Ok(ProtocolSpec::Oidc {
        issuer,
        client_id,
        client_secret: b.client_secret,
        scopes,
    })
}

fn connection_of(
    a: &OrgAdmin,
    state: &crate::app::App,
    answer: SsoAnswer,
) -> Result<Connection, ApiError> {
    match answer {
        SsoAnswer::Connection(c) => Ok(Connection::of(state, &a.m.tenant.slug, &c)),
        _ => Err(ApiError::internal("unexpected single sign-on answer")),
    }
}

async fn sso(a: &OrgAdmin, cmd: SsoCmd, what: &str) -> Result<SsoAnswer, ApiError> {
    a.m.tenant
        .sso(&a.m.ctx, cmd)
        .await
        .map_err(|e| not_found_as(what, e))
}

/// An organization's connections (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/connections", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id")),
    responses(
        (status = 200, description = "The connections", body = ConnectionList),
        (status = 404, description = "`resource/not_found`: no such organization; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn list(
    axum::extract::State(state): axum::extract::State<crate::app::AppState>,
    a: OrgAdmin,
) -> Result<Json<ConnectionList>, ApiError> {
    let org = a.id("org_id", "organization")?;
    match sso(&a, SsoCmd::Connections(org), "organization").await? {
        SsoAnswer::Connections(all) => Ok(Json(ConnectionList {
            data: all
                .iter()
                .map(|c| Connection::of(&state, &a.m.tenant.slug, c))
                .collect(),
        })),
        _ => Err(ApiError::internal("unexpected single sign-on answer")),
    }
}

/// Creates a connection (admin, owner). SAML: the IdP by its metadata (URL or XML) or its
/// three parts; the answer's `saml.sp` is what the IdP is told. OpenID: the issuer (its
/// discovery document is read now), the client registered there with `oidc.redirect_uri`.
#[utoipa::path(post, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/connections", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(TenantSlug, ("org_id" = String, Path, description = "The organization's id")),
    request_body = ConnectionRequest,
    responses(
        (status = 201, description = "The connection", body = Connection),
        (status = 400, description = "`validation/invalid_request` (`details.fields` names each); `sso/provider_invalid`: the IdP's metadata or the issuer's discovery document could not be read or is wrong; `organization/unknown_role`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such organization; or not one of the caller's tenants", body = ErrorBody),
        (status = 409, description = "`organization/limit_reached` (10 connections)", body = ErrorBody),
    ))]
pub async fn create(
    axum::extract::State(state): axum::extract::State<crate::app::AppState>,
    a: OrgAdmin,
    ApiJson(req): ApiJson<ConnectionRequest>,
) -> Result<Response, ApiError> {
    a.m.write()?;
    let org = a.id("org_id", "organization")?;
    let spec = spec_of(&state, req, None).await?;
    let answer = sso(&a, SsoCmd::CreateConnection { org, spec }, "organization").await?;
    Ok(created(connection_of(&a, &state, answer)?))
}

/// A connection (any member).
#[utoipa::path(get, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/connections/{connection_id}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("org_id" = String, Path, description = "The organization's id"),
        ("connection_id" = String, Path, description = "The connection's id"),
    ),
    responses(
        (status = 200, description = "The connection", body = Connection),
        (status = 404, description = "`resource/not_found`: no such connection; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn show(
    axum::extract::State(state): axum::extract::State<crate::app::AppState>,
    a: OrgAdmin,
) -> Result<Json<Connection>, ApiError> {
    let org = a.id("org_id", "connection")?;
    let id = a.id("connection_id", "connection")?;
    let answer = sso(&a, SsoCmd::Connection { org, id }, "connection").await?;
    Ok(Json(connection_of(&a, &state, answer)?))
}

/// Changes a connection (admin, owner): the fields given; new metadata is read again.
#[utoipa::path(patch, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/connections/{connection_id}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("org_id" = String, Path, description = "The organization's id"),
        ("connection_id" = String, Path, description = "The connection's id"),
    ),
    request_body = ConnectionRequest,
    responses(
        (status = 200, description = "The connection", body = Connection),
        (status = 400, description = "`validation/invalid_request` (`details.fields` names each); `sso/provider_invalid`: the IdP's metadata or the issuer's discovery document could not be read or is wrong; `organization/unknown_role`", body = ErrorBody),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such connection; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn update(
    axum::extract::State(state): axum::extract::State<crate::app::AppState>,
    a: OrgAdmin,
    ApiJson(req): ApiJson<ConnectionRequest>,
) -> Result<Json<Connection>, ApiError> {
    a.m.write()?;
    let org = a.id("org_id", "connection")?;
    let id = a.id("connection_id", "connection")?;
    let current = match sso(&a, SsoCmd::Connection { org, id }, "connection").await? {
        SsoAnswer::Connection(c) => *c,
        _ => return Err(ApiError::internal("unexpected single sign-on answer")),
    };
    let spec = spec_of(&state, req, Some(&current)).await?;
    let answer = sso(&a, SsoCmd::UpdateConnection { org, id, spec }, "connection").await?;
    Ok(Json(connection_of(&a, &state, answer)?))
}

/// Deletes a connection (admin, owner): its links to users go with it; the users keep their
/// accounts and memberships.
#[utoipa::path(delete, path = "/v1/auth/dashboard/tenants/{slug}/organizations/{org_id}/connections/{connection_id}", tag = "organizations",
    security(("dashboard_session" = []), ("dashboard_cookie" = [])),
    params(
        TenantSlug,
        ("org_id" = String, Path, description = "The organization's id"),
        ("connection_id" = String, Path, description = "The connection's id"),
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "`dashboard/forbidden` (viewer), `dashboard/csrf_failed`", body = ErrorBody),
        (status = 404, description = "`resource/not_found`: no such connection; or not one of the caller's tenants", body = ErrorBody),
    ))]
pub async fn delete(a: OrgAdmin) -> Result<StatusCode, ApiError> {
    a.m.write()?;
    let org = a.id("org_id", "connection")?;
    let id = a.id("connection_id", "connection")?;
    sso(&a, SsoCmd::DeleteConnection { org, id }, "connection").await?;
    Ok(StatusCode::NO_CONTENT)
}
