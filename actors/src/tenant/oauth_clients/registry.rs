//! The registry of OAuth clients: owners register, change, delete and re-key them (and
//! clients register themselves, RFC 7591, within caps of their own); the operator attests
//! third-party ones. Every change is audited and published before it is answered.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::oauth_clients::memory::OAuthClients;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use tessera_storage::{sha256, Kind};
use time::OffsetDateTime;

use std::sync::Arc;

use super::{
    published::PublishedClients,
    records::{ClientType, OAuthClientProfile, OAuthClientRecord},
};
use crate::error::OAuthClientError;
use crate::{
    error::TenantError,
    tenant::{audit::AuditContext, keys::KeyAlg},
};

/// Clients a tenant's owners may register.
pub const MAX_OAUTH_CLIENTS: usize = 100;
/// Clients that registered themselves (RFC 7591) a tenant may hold, apart from the owners'.
pub const MAX_DYNAMIC_CLIENTS: usize = 200;

/// A client as the dashboard registers it; validated by the caller.
#[derive(Clone, Debug)]
pub struct NewOAuthClient {
    pub profile: OAuthClientProfile,
    /// RS256 needs the tenant's RS256 key: the caller adds it first (`AddIdTokenKey`).
    pub id_token_signed_response_alg: KeyAlg,
}

/// A change to a client; `None` leaves a field as it is. Validated by the caller.
#[derive(Clone, Debug, Default)]
pub struct OAuthClientPatch {
    pub name: Option<String>,
    pub description: Option<Option<String>>,
    pub logo_url: Option<Option<String>>,
    pub redirect_uris: Option<Vec<String>>,
    pub post_logout_redirect_uris: Option<Vec<String>>,
    pub allowed_scopes: Option<Vec<String>>,
    pub first_party: Option<bool>,
    /// RS256 needs the tenant's RS256 key: the caller adds it first (`AddIdTokenKey`).
    pub id_token_signed_response_alg: Option<KeyAlg>,
}

/// A client with its new secret: the only time the secret is anywhere but in the caller's
/// hands.
#[derive(Clone, Debug)]
pub struct IssuedClient {
    pub record: OAuthClientRecord,
    pub client_secret: Option<String>,
}

/// A new client secret and its hash.
fn new_secret() -> (String, [u8; 32], String) {
    let bytes: [u8; 32] = rand::random();
    let secret = format!("tcs_{}", URL_SAFE_NO_PAD.encode(bytes));
    let prefix = secret.chars().take(12).collect();
    (secret.clone(), sha256(secret.as_bytes()), prefix)
}

fn new_client_id() -> String {
    let bytes: [u8; 16] = rand::random();
    format!("tc_{}", hex::encode(bytes))
}

/// Sets `field` to `new` if given, noting `name` in `changed` when that changes it.
fn apply<T: PartialEq>(
    changed: &mut Vec<&'static str>,
    name: &'static str,
    field: &mut T,
    new: Option<T>,
) {
    if let Some(v) = new {
        if v != *field {
            changed.push(name);
        }
        *field = v;
    }
}

impl OAuthClients {
    /// Whether the tenant has a key of `alg` for ID tokens (RS256 once `AddIdTokenKey` made
    /// it; the HTTP layer asks for it before a client that needs it is written).
    fn id_token_alg_available(&self, cx: &TenantCtx, alg: KeyAlg) -> Result<(), TenantError> {
        if alg == KeyAlg::RS256 && !cx.cells.keys.load().has_rsa() {
            return Err(TenantError::Internal(
                "no RS256 key: add one (AddIdTokenKey) before registering the client".into(),
            ));
        }
        Ok(())
    }

    /// Stores `client` with its audit event (`extra` added to the event's metadata).
    fn oauth_client_write(
        &mut self,
        cx: &mut TenantCtx,
        client: &OAuthClientRecord,
        event: &str,
        ctx: &AuditContext,
        extra: serde_json::Value,
    ) -> Result<(), TenantError> {
        let mut fx = cx.effects();
        fx.batch.put(client.client_id.as_bytes(), client)?;
        self.oauth_client_audit(cx, &mut fx.batch, event, client, ctx, extra)?;
        cx.commit(fx)?;
        self.publish_oauth_clients(cx)
    }

    fn oauth_client_audit(
        &mut self,
        cx: &mut TenantCtx,
        batch: &mut tessera_storage::TenantBatch,
        event: &str,
        client: &OAuthClientRecord,
        ctx: &AuditContext,
        extra: serde_json::Value,
    ) -> Result<(), TenantError> {
        let mut metadata = serde_json::json!({
            "client_id": client.client_id,
            "name": client.profile.name,
            "client_type": client.profile.client_type.as_str(),
        });
        if let (Some(m), serde_json::Value::Object(extra)) = (metadata.as_object_mut(), extra) {
            m.extend(extra);
        }
        cx.audit_into(batch, event, ctx, metadata)
    }

    /// Publishes the registry as it is now for the HTTP edge.
    fn publish_oauth_clients(&self, cx: &TenantCtx) -> Result<(), TenantError> {
        cx.cells
            .oauth_clients
            .store(Arc::new(PublishedClients::load(&cx.store)?));
        Ok(())
    }

    /// The tenant's clients, oldest first.
    pub fn oauth_clients(&self, cx: &TenantCtx) -> Result<Vec<OAuthClientRecord>, TenantError> {
        let mut out = Vec::new();
        for item in cx.store.scan::<OAuthClientRecord>(b"") {
            out.push(item?.1);
        }
        out.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then(a.client_id.cmp(&b.client_id))
        });
        Ok(out)
    }

    /// Registers an owner's client; a confidential one gets its secret, answered here only.
    pub fn oauth_client_create(
        &mut self,
        cx: &mut TenantCtx,
        new: NewOAuthClient,
        ctx: &AuditContext,
    ) -> Result<IssuedClient, TenantError> {
        self.oauth_client_make(cx, new, false, ctx)
    }

    /// Registers a client, an owner's or (`dynamic`) one registering itself; each kind has
    /// its own cap, so clients registering themselves never take the owners' places.
    pub(super) fn oauth_client_make(
        &mut self,
        cx: &mut TenantCtx,
        new: NewOAuthClient,
        dynamic: bool,
        ctx: &AuditContext,
    ) -> Result<IssuedClient, TenantError> {
        let cap = if dynamic {
            MAX_DYNAMIC_CLIENTS
        } else {
            MAX_OAUTH_CLIENTS
        };
        let held = cx
            .store
            .scan::<OAuthClientRecord>(b"")
            .filter_map(Result::ok)
            .filter(|(_, c)| c.dynamic == dynamic)
            .count();
        if held >= cap {
            return Err(TenantError::OAuthClient(OAuthClientError::Limit));
        }
        self.id_token_alg_available(cx, new.id_token_signed_response_alg)?;
        let now = OffsetDateTime::now_utc();
        let secret = (new.profile.client_type == ClientType::Confidential).then(new_secret);
        let record = OAuthClientRecord {
            client_id: new_client_id(),
            profile: new.profile,
            attested_at: None,
            secret_hash: secret.as_ref().map(|s| s.1),
            secret_prefix: secret.as_ref().map(|s| s.2.clone()),
            created_at: now,
            updated_at: now,
            secret_rotated_at: None,
            dynamic,
            id_token_signed_response_alg: Some(new.id_token_signed_response_alg),
        };
        let extra = serde_json::json!({
            "redirect_uris": record.profile.redirect_uris,
            "allowed_scopes": record.profile.allowed_scopes,
            "first_party": record.profile.first_party,
        });
        self.oauth_client_write(cx, &record, "oauth_client.created", ctx, extra)?;
        Ok(IssuedClient {
            record,
            client_secret: secret.map(|s| s.0),
        })
    }

    pub fn oauth_client_update(
        &mut self,
        cx: &mut TenantCtx,
        client_id: &str,
        patch: OAuthClientPatch,
        ctx: &AuditContext,
    ) -> Result<OAuthClientRecord, TenantError> {
        let mut record = cx.oauth_client(client_id)?;
        let mut changed = Vec::new();
        let c = &mut changed;
        // Each field the patch sets replaces the profile's (the API names them alike).
        macro_rules! apply_each {
            ($($field:ident),+) => {
                $(apply(c, stringify!($field), &mut record.profile.$field, patch.$field);)+
            };
        }
        apply_each!(
            name,
            description,
            logo_url,
            redirect_uris,
            post_logout_redirect_uris,
            allowed_scopes,
            first_party
        );
        if let Some(alg) = patch.id_token_signed_response_alg {
            self.id_token_alg_available(cx, alg)?;
            if record.id_token_signed_response_alg != Some(alg) {
                c.push("id_token_signed_response_alg");
            }
            record.id_token_signed_response_alg = Some(alg);
        }
        if changed.is_empty() {
            return Ok(record);
        }
        record.updated_at = OffsetDateTime::now_utc();
        let extra = serde_json::json!({ "changed": changed });
        self.oauth_client_write(cx, &record, "oauth_client.updated", ctx, extra)?;
        Ok(record)
    }

    pub fn oauth_client_delete(
        &mut self,
        cx: &mut TenantCtx,
        client_id: &str,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        let record = cx.oauth_client(client_id)?;
        let mut fx = cx.effects();
        fx.batch
            .remove(Kind::OAuthClient, record.client_id.as_bytes());
        self.oauth_client_audit(
            cx,
            &mut fx.batch,
            "oauth_client.deleted",
            &record,
            ctx,
            serde_json::json!({}),
        )?;
        cx.commit(fx)?;
        self.publish_oauth_clients(cx)
    }

    /// A new secret for a confidential client; the old one stops working at once.
    pub fn oauth_client_rotate_secret(
        &mut self,
        cx: &mut TenantCtx,
        client_id: &str,
        ctx: &AuditContext,
    ) -> Result<IssuedClient, TenantError> {
        let mut record = cx.oauth_client(client_id)?;
        if record.profile.client_type != ClientType::Confidential {
            return Err(TenantError::OAuthClient(OAuthClientError::Public));
        }
        let (secret, hash, prefix) = new_secret();
        let now = OffsetDateTime::now_utc();
        record.secret_hash = Some(hash);
        record.secret_prefix = Some(prefix);
        record.secret_rotated_at = Some(now);
        record.updated_at = now;
        let extra = serde_json::json!({ "secret_prefix": record.secret_prefix });
        self.oauth_client_write(cx, &record, "oauth_client.secret_rotated", ctx, extra)?;
        Ok(IssuedClient {
            record,
            client_secret: Some(secret),
        })
    }

    /// The operator's attestation of a third-party client (the admin CLI). Attesting again
    /// keeps the first date.
    pub fn oauth_client_attest(
        &mut self,
        cx: &mut TenantCtx,
        client_id: &str,
        ctx: &AuditContext,
    ) -> Result<OAuthClientRecord, TenantError> {
        let mut record = cx.oauth_client(client_id)?;
        if record.attested_at.is_some() {
            return Ok(record);
        }
        let now = OffsetDateTime::now_utc();
        record.attested_at = Some(now);
        record.updated_at = now;
        self.oauth_client_write(
            cx,
            &record,
            "oauth_client.attested",
            ctx,
            serde_json::json!({}),
        )?;
        Ok(record)
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    pub fn oauth_client(&self, client_id: &str) -> Result<OAuthClientRecord, TenantError> {
        self.store
            .get::<OAuthClientRecord>(client_id.as_bytes())?
            .ok_or(TenantError::NotFound)
    }
}
