//! The command surface of webhooks: `WebhookCmd` (what the dashboard and the worker ask),
//! its answers, and `webhook_cmd`, which carries one out.

use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    endpoints::{EndpointPatch, IssuedEndpoint, NewEndpoint},
    records::{WebhookDeliveryRecord, WebhookEndpointRecord},
    worker::{AttemptOutcome, DueBatch},
};
use crate::tenant::ctx::TenantCtx;
use crate::tenant::webhooks::Webhooks;
use crate::{error::TenantError, outbound::MailJob, tenant::audit::AuditContext};

/// What the dashboard and the worker ask of webhooks.
#[derive(Clone, Debug)]
pub enum WebhookCmd {
    Create(NewEndpoint),
    List,
    Get(Uuid),
    Update(Uuid, EndpointPatch),
    Delete(Uuid),
    RotateSecret(Uuid),
    /// Queues a `webhook.test` event for this endpoint alone.
    Test(Uuid),
    /// An endpoint's deliveries, newest first, older than the event `before`.
    Deliveries {
        endpoint: Uuid,
        before: Option<Uuid>,
        limit: usize,
    },
    /// Attempts a delivery again now (a spent one starts a new round of attempts).
    Redeliver {
        endpoint: Uuid,
        event: Uuid,
    },
    /// The worker: deliveries due now.
    Due,
    /// The worker: how an attempt went.
    Outcome(AttemptOutcome),
}

impl WebhookCmd {
    /// Whether the command only reads (its answer need not wait for the disk). `Due` writes
    /// only what it would write again (spent deliveries of disabled endpoints).
    pub fn answers_at_once(&self) -> bool {
        matches!(
            self,
            WebhookCmd::List | WebhookCmd::Get(_) | WebhookCmd::Deliveries { .. } | WebhookCmd::Due
        )
    }
}

/// A delivery with the type of its event, for the log.
#[derive(Clone, Debug)]
pub enum WebhookAnswer {
    Issued(Box<IssuedEndpoint>),
    Endpoint(Box<WebhookEndpointRecord>),
    Endpoints(Vec<WebhookEndpointRecord>),
    Delivery(Box<WebhookDeliveryRecord>),
    Deliveries(Vec<WebhookDeliveryRecord>, Option<Uuid>),
    Due(DueBatch),
    /// When the next delivery is due, after an outcome.
    Next(Option<OffsetDateTime>),
    Done,
}

impl Webhooks {
    pub fn webhook_cmd(
        &mut self,
        cx: &mut TenantCtx,
        cmd: WebhookCmd,
        ctx: &AuditContext,
    ) -> Result<(WebhookAnswer, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let answer = match cmd {
            WebhookCmd::Create(new) => {
                WebhookAnswer::Issued(Box::new(self.create_endpoint(cx, new, ctx, now)?))
            }
            WebhookCmd::List => WebhookAnswer::Endpoints(cx.endpoints()?),
            WebhookCmd::Get(id) => WebhookAnswer::Endpoint(Box::new(self.endpoint(cx, id)?)),
            WebhookCmd::Update(id, patch) => {
                WebhookAnswer::Endpoint(Box::new(self.update_endpoint(cx, id, patch, ctx, now)?))
            }
            WebhookCmd::Delete(id) => {
                self.delete_endpoint(cx, id, ctx)?;
                WebhookAnswer::Done
            }
            WebhookCmd::RotateSecret(id) => {
                WebhookAnswer::Issued(Box::new(self.rotate_endpoint_secret(cx, id, ctx, now)?))
            }
            WebhookCmd::Test(id) => {
                WebhookAnswer::Delivery(Box::new(self.test_endpoint(cx, id, ctx, now)?))
            }
            WebhookCmd::Deliveries {
                endpoint,
                before,
                limit,
            } => {
                let (page, next) = self.deliveries(cx, endpoint, before, limit)?;
                WebhookAnswer::Deliveries(page, next)
            }
            WebhookCmd::Redeliver { endpoint, event } => {
                WebhookAnswer::Delivery(Box::new(self.redeliver(cx, endpoint, event, ctx, now)?))
            }
            WebhookCmd::Due => WebhookAnswer::Due(self.due_deliveries(cx, now)?),
            WebhookCmd::Outcome(o) => {
                let mail = self.record_outcome(cx, o)?;
                return Ok((WebhookAnswer::Next(self.next_webhook_due(cx)?), mail));
            }
        };
        Ok((answer, Vec::new()))
    }
}
