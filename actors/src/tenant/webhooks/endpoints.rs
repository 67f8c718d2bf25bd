//! The tenant's endpoints as the dashboard manages them: create, update, delete, rotate
//! the secret (sealed under the master key, the previous one signing for the overlap), and
//! send a test event.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::webhooks::Webhooks;

use base64::{engine::general_purpose::STANDARD, Engine};
use tessera_storage::{Kind, Sealed};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    policy::{MAX_ENDPOINTS, ROTATION_OVERLAP, TEST_EVENT},
    records::{
        delivery_key, due_key, OutboundEventRecord, WebhookDeliveryRecord, WebhookEndpointRecord,
    },
};
use crate::error::WebhookError;
use crate::{error::TenantError, tenant::audit::AuditContext};

/// A fresh signing secret: `whsec_` and the standard base64 of 32 random bytes.
pub(super) fn new_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    format!("whsec_{}", STANDARD.encode(bytes))
}

/// An endpoint as registered, validated by the caller.
#[derive(Clone, Debug)]
pub struct NewEndpoint {
    pub url: String,
    pub description: Option<String>,
    pub event_types: Vec<String>,
}

/// A change to an endpoint, validated by the caller; `None`: unchanged.
#[derive(Clone, Debug, Default)]
pub struct EndpointPatch {
    pub url: Option<String>,
    pub description: Option<Option<String>>,
    pub event_types: Option<Vec<String>>,
    pub enabled: Option<bool>,
}

/// An endpoint with its new secret (creation, rotation): the secret is shown this once.
#[derive(Clone)]
pub struct IssuedEndpoint {
    pub record: WebhookEndpointRecord,
    pub secret: String,
}

impl std::fmt::Debug for IssuedEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedEndpoint")
            .field("record", &self.record)
            .finish_non_exhaustive()
    }
}

impl Webhooks {
    fn webhook_aad(&self, cx: &TenantCtx, endpoint: Uuid) -> Vec<u8> {
        let mut aad = cx.store.tenant_id().as_bytes().to_vec();
        aad.extend_from_slice(b"/webhook/");
        aad.extend_from_slice(endpoint.as_bytes());
        aad
    }

    fn seal_secret(
        &self,
        cx: &TenantCtx,
        endpoint: Uuid,
        secret: &str,
    ) -> Result<Sealed, TenantError> {
        Ok(cx
            .master_key
            .seal(&self.webhook_aad(cx, endpoint), secret.as_bytes())?)
    }

    pub(super) fn open_secret(
        &self,
        cx: &TenantCtx,
        endpoint: Uuid,
        sealed: &Sealed,
    ) -> Result<String, TenantError> {
        let plain = cx
            .master_key
            .open(&self.webhook_aad(cx, endpoint), sealed)?;
        String::from_utf8(plain.to_vec()).map_err(|e| TenantError::Internal(e.to_string()))
    }

    pub(super) fn endpoint(
        &self,
        cx: &TenantCtx,
        id: Uuid,
    ) -> Result<WebhookEndpointRecord, TenantError> {
        cx.store
            .get::<WebhookEndpointRecord>(id.as_bytes())?
            .ok_or(TenantError::NotFound)
    }

    pub(super) fn create_endpoint(
        &mut self,
        cx: &mut TenantCtx,
        new: NewEndpoint,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<IssuedEndpoint, TenantError> {
        if cx.endpoints()?.len() >= MAX_ENDPOINTS {
            return Err(TenantError::Webhook(WebhookError::Limit));
        }
        let id = Uuid::now_v7();
        let secret = new_secret();
        let record = WebhookEndpointRecord {
            id,
            url: new.url,
            description: new.description,
            event_types: new.event_types,
            secret: self.seal_secret(cx, id, &secret)?,
            previous_secret: None,
            previous_until: None,
            enabled: true,
            disabled_reason: None,
            disabled_at: None,
            failing_since: None,
            created_at: now,
            updated_at: now,
            secret_rotated_at: None,
        };
        let mut fx = cx.effects();
        fx.batch.put(id.as_bytes(), &record)?;
        cx.audit_into(
            &mut fx.batch,
            "webhook.endpoint_created",
            ctx,
            serde_json::json!({ "endpoint_id": id, "event_types": record.event_types }),
        )?;
        cx.commit(fx)?;
        Ok(IssuedEndpoint { record, secret })
    }

    pub(super) fn update_endpoint(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        patch: EndpointPatch,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<WebhookEndpointRecord, TenantError> {
        let mut e = self.endpoint(cx, id)?;
        let mut fields = Vec::new();
        if let Some(url) = patch.url {
            e.url = url;
            fields.push("url");
        }
        if let Some(d) = patch.description {
            e.description = d;
            fields.push("description");
        }
        if let Some(t) = patch.event_types {
            e.event_types = t;
            fields.push("event_types");
        }
        if let Some(enabled) = patch.enabled {
            if enabled && !e.enabled {
                e.enabled = true;
                e.disabled_at = None;
                e.disabled_reason = None;
                e.failing_since = None;
            } else if !enabled && e.enabled {
                e.enabled = false;
                e.disabled_at = Some(now);
                e.disabled_reason = Some("owner".to_owned());
            }
            fields.push("enabled");
        }
        e.updated_at = now;
        let mut fx = cx.effects();
        fx.batch.put(id.as_bytes(), &e)?;
        cx.audit_into(
            &mut fx.batch,
            "webhook.endpoint_updated",
            ctx,
            serde_json::json!({ "endpoint_id": id, "fields": fields, "enabled": e.enabled }),
        )?;
        cx.commit(fx)?;
        Ok(e)
    }

    /// Deletes an endpoint with its delivery log; its pending deliveries end with it.
    pub(super) fn delete_endpoint(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        ctx: &AuditContext,
    ) -> Result<(), TenantError> {
        self.endpoint(cx, id)?;
        let mut fx = cx.effects();
        fx.batch.remove(Kind::WebhookEndpoint, id.as_bytes());
        for item in cx.store.scan::<WebhookDeliveryRecord>(id.as_bytes()) {
            let (key, d) = item?;
            fx.batch.remove(Kind::WebhookDelivery, &key);
            if let Some(at) = d.next_attempt_at {
                fx.batch
                    .remove(Kind::WebhookDue, &due_key(at, d.endpoint, d.event));
            }
            cx.webhooks.in_flight.remove(&(d.endpoint, d.event));
        }
        cx.audit_into(
            &mut fx.batch,
            "webhook.endpoint_deleted",
            ctx,
            serde_json::json!({ "endpoint_id": id }),
        )?;
        cx.commit(fx)?;
        Ok(())
    }

    /// A new secret; the current one keeps signing alongside it for [`ROTATION_OVERLAP`].
    pub(super) fn rotate_endpoint_secret(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<IssuedEndpoint, TenantError> {
        let mut e = self.endpoint(cx, id)?;
        let secret = new_secret();
        e.previous_secret = Some(e.secret.clone());
        e.previous_until = Some(now + ROTATION_OVERLAP);
        e.secret = self.seal_secret(cx, id, &secret)?;
        e.secret_rotated_at = Some(now);
        e.updated_at = now;
        let mut fx = cx.effects();
        fx.batch.put(id.as_bytes(), &e)?;
        cx.audit_into(
            &mut fx.batch,
            "webhook.secret_rotated",
            ctx,
            serde_json::json!({ "endpoint_id": id }),
        )?;
        cx.commit(fx)?;
        Ok(IssuedEndpoint { record: e, secret })
    }

    pub(super) fn test_endpoint(
        &mut self,
        cx: &mut TenantCtx,
        id: Uuid,
        ctx: &AuditContext,
        now: OffsetDateTime,
    ) -> Result<WebhookDeliveryRecord, TenantError> {
        let e = self.endpoint(cx, id)?;
        if !e.enabled {
            return Err(TenantError::Webhook(WebhookError::Disabled));
        }
        let event = OutboundEventRecord {
            id: Uuid::now_v7(),
            event_type: TEST_EVENT.to_owned(),
            at: now,
            data: serde_json::json!({
                "endpoint_id": id,
                "message": "a test event sent from the dashboard",
            }),
        };
        let mut fx = cx.effects();
        cx.queue_event(&mut fx.batch, &event, &[id])?;
        cx.audit_into(
            &mut fx.batch,
            "webhook.test_sent",
            ctx,
            serde_json::json!({ "endpoint_id": id, "event_id": event.id }),
        )?;
        cx.commit(fx)?;
        cx.store
            .get::<WebhookDeliveryRecord>(&delivery_key(id, event.id))?
            .ok_or_else(|| TenantError::Internal("a queued test delivery is missing".into()))
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    pub(super) fn endpoints(&self) -> Result<Vec<WebhookEndpointRecord>, TenantError> {
        let mut out = Vec::new();
        for item in self.store.scan::<WebhookEndpointRecord>(b"") {
            out.push(item?.1);
        }
        Ok(out)
    }
}
