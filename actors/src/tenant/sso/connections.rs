//! What the tenant's admins do with an organization's single sign-on connections: create,
//! list, change and delete them. The edge has read and checked the provider's side (the
//! SAML metadata, the OpenID discovery document) and made the service provider's key; the
//! secrets are sealed here, bound to the tenant and the connection.

use serde::Serialize;
use tessera_storage::{Kind, Sealed};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    error::SsoError,
    records::{
        id_pair, AttributeMapping, GroupRole, OidcSettings, OrgConnectionIndex, SamlSettings,
        SsoConnectionRecord, SsoProtocol,
    },
    Sso,
};
use crate::{
    error::TenantError,
    outbound::MailJob,
    tenant::{audit::AuditContext, ctx::TenantCtx, organizations::OrganizationRecord},
};

/// Connections one organization has.
pub const MAX_CONNECTIONS: usize = 10;

/// A connection as the admins set it, validated by the edge. A secret left `None` keeps the
/// stored one (a new connection needs it).
#[derive(Clone, Debug)]
pub struct ConnectionSpec {
    pub name: String,
    pub enabled: bool,
    pub protocol: ProtocolSpec,
    pub jit: bool,
    pub mapping: AttributeMapping,
    pub group_roles: Vec<GroupRole>,
    pub default_role: String,
}

/// The protocol's side of a [`ConnectionSpec`].
#[derive(Clone)]
pub enum ProtocolSpec {
    Saml {
        idp_entity_id: String,
        idp_sso_url: String,
        idp_certificates: Vec<String>,
        metadata_url: Option<String>,
        /// The service provider's key (PKCS#8 PEM) and certificate, made by the edge for a new
        /// connection.
        sp_key: Option<(String, String)>,
        allow_idp_initiated: bool,
        idp_initiated_redirect_uri: Option<String>,
    },
    Oidc {
        issuer: String,
        client_id: String,
        client_secret: Option<String>,
        scopes: Vec<String>,
    },
}

impl std::fmt::Debug for ProtocolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtocolSpec::Saml { idp_entity_id, .. } => f
                .debug_struct("Saml")
                .field("idp_entity_id", idp_entity_id)
                .finish_non_exhaustive(),
            ProtocolSpec::Oidc { issuer, .. } => f
                .debug_struct("Oidc")
                .field("issuer", issuer)
                .finish_non_exhaustive(),
        }
    }
}

/// A connection as answered: everything but the secrets.
#[derive(Clone, Debug, Serialize)]
pub struct ConnectionView {
    pub id: Uuid,
    pub organization_id: Uuid,
    pub name: String,
    #[serde(rename = "type")]
    pub protocol: &'static str,
    pub enabled: bool,
    pub jit: bool,
    pub attribute_mapping: AttributeMapping,
    pub group_roles: Vec<GroupRole>,
    pub default_role: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saml: Option<SamlView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oidc: Option<OidcView>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

#[derive(Clone, Debug, Serialize)]
pub struct SamlView {
    pub idp_entity_id: String,
    pub idp_sso_url: String,
    pub idp_certificates: Vec<String>,
    pub metadata_url: Option<String>,
    pub sp_certificate: String,
    pub allow_idp_initiated: bool,
    pub idp_initiated_redirect_uri: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct OidcView {
    pub issuer: String,
    pub client_id: String,
    pub scopes: Vec<String>,
}

impl ConnectionView {
    pub fn of(c: &SsoConnectionRecord) -> Self {
        let (saml, oidc) = match &c.protocol {
            SsoProtocol::Saml(s) => (
                Some(SamlView {
                    idp_entity_id: s.idp_entity_id.clone(),
                    idp_sso_url: s.idp_sso_url.clone(),
                    idp_certificates: s.idp_certificates.clone(),
                    metadata_url: s.metadata_url.clone(),
                    sp_certificate: s.sp_certificate.clone(),
                    allow_idp_initiated: s.allow_idp_initiated,
                    idp_initiated_redirect_uri: s.idp_initiated_redirect_uri.clone(),
                }),
                None,
            ),
            SsoProtocol::Oidc(o) => (
                None,
                Some(OidcView {
                    issuer: o.issuer.clone(),
                    client_id: o.client_id.clone(),
                    scopes: o.scopes.clone(),
                }),
            ),
        };
        ConnectionView {
            id: c.id,
            organization_id: c.organization,
            name: c.name.clone(),
            protocol: c.protocol.as_str(),
            enabled: c.enabled,
            jit: c.jit,
            attribute_mapping: c.mapping.clone(),
            group_roles: c.group_roles.clone(),
            default_role: c.default_role.clone(),
            saml,
            oidc,
            created_at: c.created_at,
            updated_at: c.updated_at,
        }
    }
}

/// The name a connection's secret is sealed under.
pub(super) fn secret_name(connection: Uuid) -> Vec<u8> {
    format!("sso/{connection}").into_bytes()
}

type Done<T> = Result<(T, Vec<MailJob>), TenantError>;

impl Sso {
    /// The connection `id` of `org` (any organization's with `None`).
    pub(super) fn connection(
        &self,
        cx: &TenantCtx,
        org: Option<Uuid>,
        id: Uuid,
    ) -> Result<SsoConnectionRecord, TenantError> {
        cx.store
            .get::<SsoConnectionRecord>(id.as_bytes())?
            .filter(|c| org.is_none_or(|o| o == c.organization))
            .ok_or(TenantError::NotFound)
    }

    /// `org`'s connections, oldest first.
    pub(super) fn connections(
        &self,
        cx: &TenantCtx,
        org: Uuid,
    ) -> Result<Vec<SsoConnectionRecord>, TenantError> {
        let mut out = Vec::new();
        for item in cx.store.scan::<OrgConnectionIndex>(org.as_bytes()) {
            let (key, _) = item?;
            let Some(id) = key.get(16..32).and_then(|b| Uuid::from_slice(b).ok()) else {
                continue;
            };
            if let Some(c) = cx.store.get::<SsoConnectionRecord>(id.as_bytes())? {
                out.push(c);
            }
        }
        Ok(out)
    }

    fn seal(&self, cx: &TenantCtx, id: Uuid, plain: &str) -> Result<Sealed, TenantError> {
        Ok(cx
            .master_key
            .seal(&cx.secret_aad(&secret_name(id)), plain.as_bytes())?)
    }

    /// The connection's secret, opened: the SAML key (PEM) or the OpenID client secret.
    pub(super) fn opened_secret(
        &self,
        cx: &TenantCtx,
        c: &SsoConnectionRecord,
    ) -> Result<String, TenantError> {
        let sealed = match &c.protocol {
            SsoProtocol::Saml(s) => &s.sp_key,
            SsoProtocol::Oidc(o) => &o.client_secret,
        };
        let plain = cx
            .master_key
            .open(&cx.secret_aad(&secret_name(c.id)), sealed)?;
        String::from_utf8(plain.to_vec())
            .map_err(|_| TenantError::Internal("a sealed connection secret is not text".into()))
    }

    /// The stored protocol settings `spec` makes, its secrets sealed (a `None` secret keeps
    /// `current`'s; a change of protocol needs them all).
    fn protocol(
        &self,
        cx: &TenantCtx,
        id: Uuid,
        spec: ProtocolSpec,
        current: Option<&SsoProtocol>,
    ) -> Result<SsoProtocol, TenantError> {
        Ok(match spec {
            ProtocolSpec::Saml {
                idp_entity_id,
                idp_sso_url,
                idp_certificates,
                metadata_url,
                sp_key,
                allow_idp_initiated,
                idp_initiated_redirect_uri,
            } => {
                let (sp_key, sp_certificate) = match (sp_key, current) {
                    (Some((key, cert)), _) => (self.seal(cx, id, &key)?, cert),
                    (None, Some(SsoProtocol::Saml(s))) => {
                        (s.sp_key.clone(), s.sp_certificate.clone())
                    }
                    (None, _) => {
                        return Err(SsoError::Incomplete {
                            field: "the service provider's key",
                        }
                        .into())
                    }
                };
                match &idp_initiated_redirect_uri {
                    None if allow_idp_initiated => {
                        return Err(SsoError::Incomplete {
                            field: "saml.idp_initiated_redirect_uri",
                        }
                        .into())
                    }
                    Some(to) if !cx.settings.urls.allows(to) => {
                        return Err(SsoError::NotTenantUrl {
                            field: "saml.idp_initiated_redirect_uri",
                        }
                        .into())
                    }
                    _ => {}
                }
                SsoProtocol::Saml(SamlSettings {
                    idp_entity_id,
                    idp_sso_url,
                    idp_certificates,
                    metadata_url,
                    sp_key,
                    sp_certificate,
                    allow_idp_initiated,
                    idp_initiated_redirect_uri,
                })
            }
            ProtocolSpec::Oidc {
                issuer,
                client_id,
                client_secret,
                scopes,
            } => {
                let client_secret = match (client_secret, current) {
                    (Some(s), _) => self.seal(cx, id, &s)?,
                    // A stored secret stays with its provider and client: never sent to another.
                    (None, Some(SsoProtocol::Oidc(o)))
                        if o.client_id == client_id && o.issuer == issuer =>
                    {
                        o.client_secret.clone()
                    }
                    (None, _) => {
                        return Err(SsoError::Incomplete {
                            field: "oidc.client_secret",
                        }
                        .into())
                    }
                };
                SsoProtocol::Oidc(OidcSettings {
                    issuer,
                    client_id,
                    client_secret,
                    scopes,
                })
            }
        })
    }

    /// Whether every role `spec` names exists.
    fn check_roles(&self, cx: &TenantCtx, spec: &ConnectionSpec) -> Result<(), TenantError> {
        cx.role_exists(&spec.default_role)?;
        for g in &spec.group_roles {
            cx.role_exists(&g.role)?;
        }
        Ok(())
    }

    pub(super) fn create_connection(
        &mut self,
        cx: &mut TenantCtx,
        org: Uuid,
        spec: ConnectionSpec,
        ctx: &AuditContext,
    ) -> Done<SsoConnectionRecord> {
        cx.store
            .get::<OrganizationRecord>(org.as_bytes())?
            .ok_or(TenantError::NotFound)?;
        self.check_roles(cx, &spec)?;
        if self.connections(cx, org)?.len() >= MAX_CONNECTIONS {
            return Err(SsoError::ConnectionLimit {
                limit: MAX_CONNECTIONS,
            }
            .into());
        }
        let id = Uuid::now_v7();
        let now = OffsetDateTime::now_utc();
        let record = SsoConnectionRecord {
            id,
            organization: org,
            name: spec.name,
            enabled: spec.enabled,
            protocol: self.protocol(cx, id, spec.protocol, None)?,
            jit: spec.jit,
            mapping: spec.mapping,
            group_roles: spec.group_roles,
            default_role: spec.default_role,
            created_at: now,
            updated_at: now,
        };
        let mut fx = cx.effects();
        fx.batch.put(id.as_bytes(), &record)?;
        fx.batch
            .put(&id_pair(org, id), &OrgConnectionIndex::default())?;
        cx.audit_into(
            &mut fx.batch,
            "organization.connection.created",
            ctx,
            serde_json::json!({
                "organization_id": org, "connection_id": id, "type": record.protocol.as_str(),
            }),
        )?;
        let mail = cx.commit(fx)?;
        Ok((record, mail))
    }

    pub(super) fn update_connection(
        &mut self,
        cx: &mut TenantCtx,
        (org, id): (Uuid, Uuid),
        spec: ConnectionSpec,
        ctx: &AuditContext,
    ) -> Done<SsoConnectionRecord> {
        let current = self.connection(cx, Some(org), id)?;
        self.check_roles(cx, &spec)?;
        let provider_of = |p: &SsoProtocol| match p {
            SsoProtocol::Saml(s) => s.idp_entity_id.clone(),
            SsoProtocol::Oidc(o) => o.issuer.clone(),
        };
        let before = provider_of(&current.protocol);
        let record = SsoConnectionRecord {
            name: spec.name,
            enabled: spec.enabled,
            protocol: self.protocol(cx, id, spec.protocol, Some(&current.protocol))?,
            jit: spec.jit,
            mapping: spec.mapping,
            group_roles: spec.group_roles,
            default_role: spec.default_role,
            updated_at: OffsetDateTime::now_utc(),
            ..current
        };
        let mut fx = cx.effects();
        // Another provider's subjects are other people: the links made through the old one go.
        let moved = provider_of(&record.protocol) != before;
        if moved {
            cx.drop_links(&mut fx.batch, id)?;
        }
        fx.batch.put(id.as_bytes(), &record)?;
        cx.audit_into(
            &mut fx.batch,
            "organization.connection.updated",
            ctx,
            serde_json::json!({
                "organization_id": org, "connection_id": id, "links_removed": moved,
            }),
        )?;
        let mail = cx.commit(fx)?;
        Ok((record, mail))
    }

    pub(super) fn delete_connection(
        &mut self,
        cx: &mut TenantCtx,
        (org, id): (Uuid, Uuid),
        ctx: &AuditContext,
    ) -> Done<()> {
        self.connection(cx, Some(org), id)?;
        let mut fx = cx.effects();
        cx.drop_connection(&mut fx.batch, org, id)?;
        cx.audit_into(
            &mut fx.batch,
            "organization.connection.deleted",
            ctx,
            serde_json::json!({ "organization_id": org, "connection_id": id }),
        )?;
        let mail = cx.commit(fx)?;
        Ok(((), mail))
    }
}

impl TenantCtx {
    /// Removes a connection, its index entry and its users' links (into `batch`); the users
    /// keep their accounts and memberships.
    pub(in crate::tenant) fn drop_connection(
        &self,
        batch: &mut tessera_storage::TenantBatch,
        org: Uuid,
        id: Uuid,
    ) -> Result<(), TenantError> {
        batch.remove(Kind::SsoConnection, id.as_bytes());
        batch.remove(Kind::OrgConnection, &id_pair(org, id));
        self.drop_links(batch, id)
    }

    /// Removes a connection's links to users (into `batch`).
    pub(in crate::tenant) fn drop_links(
        &self,
        batch: &mut tessera_storage::TenantBatch,
        id: Uuid,
    ) -> Result<(), TenantError> {
        for item in self
            .store
            .scan::<super::records::SsoIdentityRecord>(id.as_bytes())
        {
            let (key, link) = item?;
            batch.remove(Kind::SsoIdentity, &key);
            batch.remove(Kind::UserSso, &id_pair(link.user_id, id));
        }
        Ok(())
    }
}
