//! What tenant actors hand to the outside world: mail and text messages to deliver, and the
//! wake-ups of webhook delivery.
//!
//! A tenant actor writes each message into its own persisted queue (sealed, in the same batch
//! as the change that caused it), then submits it here. The delivery side (in the binary) sends
//! it with retries and reports back with `TenantMsg::MailSettled`, which removes it from the
//! queue. After a restart the actor submits whatever is still queued: delivery is at least
//! once, and nothing acknowledged is lost.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde::{Deserialize, Serialize};
use tessera_storage::TenantId;
use uuid::Uuid;

/// What a message is about; the delivery side renders it from a template per kind.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MailKind {
    /// Confirms the address: `link` carries a single-use token (24 h).
    VerifyEmail { link: String },
    /// Someone tried to register an address that already has an account.
    AccountExists { reset_link: String },
    /// A single-use password-reset link (1 h).
    PasswordReset { link: String },
    /// To a new address: a single-use link (1 h) that moves the account to it.
    EmailChange { link: String },
    /// To the account's current address: a move to another address (`masked`) was asked
    /// for; it happens only once the new address is confirmed.
    EmailChangeAsked { masked: String },
    /// To an address that already has an account: someone asked to move another account
    /// to it, and nothing changed.
    EmailChangeTaken,
    /// The password was changed or reset; no link, a warning to act if it was not the owner.
    PasswordChanged,
    /// A passwordless login link (single use, 10 minutes).
    MagicLink { link: String },
    /// A passwordless login code (6 digits, 10 minutes).
    EmailOtp { code: String },
    /// A step-up code (6 digits, 5 minutes), with the app's hint of what it is for.
    StepUpEmailOtp {
        code: String,
        action_hint: Option<String>,
    },
    /// A single-use step-up link (10 minutes), with the app's hint of what it is for.
    StepUpMagicLink {
        link: String,
        action_hint: Option<String>,
    },
    /// A phone number (`ending`: its last two digits) now signs in to the account.
    PhoneAdded { ending: String },
    /// The account's phone number (`ending`: its last two digits) was confirmed by another account and left this one.
    PhoneRemoved { ending: String },
    /// An account a tenant admin made for this address: a single-use link (7 days) to choose
    /// a password, which also confirms the address.
    Invitation { link: String },
    /// A tenant admin removed the account's authenticator app and recovery codes.
    MfaReset,
    /// An agent asks to act for the user (CIBA): a link (for the request's lifetime) to the
    /// hosted page that approves or denies it, with the message the agent shows.
    AgentRequest {
        link: String,
        agent_name: String,
        binding_message: Option<String>,
    },
    /// To a tenant owner: an agent was revoked.
    AgentRevoked {
        agent_name: String,
        client_id: String,
    },
    /// To a tenant owner: a webhook endpoint failed for days and was disabled.
    WebhookDisabled { url: String, endpoint_id: String },
    /// To a guardian: a minor (`child_email`) asks for consent; the link (7 days, single use)
    /// opens the consent page.
    GuardianConsent { link: String, child_email: String },
    /// To a guardian who consented: a link (an hour) to the guardian portal.
    GuardianPortal { link: String, child_email: String },
    /// To a guardian: the download link (24 hours) of the child's data.
    GuardianExport { link: String, child_email: String },
    /// An invitation to join an organization (`organization`: its name): a single-use link
    /// (7 days).
    OrganizationInvitation { link: String, organization: String },
}

impl MailKind {
    /// A stable name for logs and the outbox listing.
    pub fn name(&self) -> &'static str {
        match self {
            MailKind::VerifyEmail { .. } => "verify_email",
            MailKind::AccountExists { .. } => "account_exists",
            MailKind::PasswordReset { .. } => "password_reset",
            MailKind::EmailChange { .. } => "email_change",
            MailKind::EmailChangeAsked { .. } => "email_change_asked",
            MailKind::EmailChangeTaken => "email_change_taken",
            MailKind::PasswordChanged => "password_changed",
            MailKind::MagicLink { .. } => "magic_link",
            MailKind::EmailOtp { .. } => "email_otp",
            MailKind::StepUpEmailOtp { .. } => "step_up_email_otp",
            MailKind::StepUpMagicLink { .. } => "step_up_magic_link",
            MailKind::PhoneAdded { .. } => "phone_added",
            MailKind::PhoneRemoved { .. } => "phone_removed",
            MailKind::Invitation { .. } => "invitation",
            MailKind::OrganizationInvitation { .. } => "organization_invitation",
            MailKind::MfaReset => "mfa_reset",
            MailKind::AgentRequest { .. } => "agent_request",
            MailKind::AgentRevoked { .. } => "agent_revoked",
            MailKind::WebhookDisabled { .. } => "webhook_disabled",
            MailKind::GuardianConsent { .. } => "guardian_consent",
            MailKind::GuardianPortal { .. } => "guardian_portal",
            MailKind::GuardianExport { .. } => "guardian_export",
        }
    }
}

impl std::fmt::Debug for MailKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Links and codes are bearer secrets: never print them.
        f.write_str(self.name())
    }
}

/// One message to deliver.
#[derive(Clone, Serialize, Deserialize)]
pub struct MailJob {
    /// Unique per message (UUID v7); also its key in the tenant's queue.
    pub id: Uuid,
    pub tenant: TenantId,
    pub tenant_slug: String,
    /// Shown in the message ("Sign in to <tenant name>").
    pub tenant_name: String,
    pub to: String,
    pub kind: MailKind,
    /// The language it is written in (`en`, `pl`, `de`, `fr`, `es`).
    #[serde(default = "english")]
    pub locale: String,
}

fn english() -> String {
    "en".to_owned()
}

impl std::fmt::Debug for MailJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailJob")
            .field("id", &self.id)
            .field("tenant", &self.tenant)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// What a text message is about; the delivery side words it.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum SmsKind {
    /// A passwordless login code (6 digits, 10 minutes).
    LoginCode,
    /// A code confirming a signed-in user's phone number (6 digits, 10 minutes).
    PhoneVerify,
    /// The dashboard's test message.
    Test,
}

impl SmsKind {
    /// A stable name for logs and the outbox listing.
    pub fn name(self) -> &'static str {
        match self {
            SmsKind::LoginCode => "login_code",
            SmsKind::PhoneVerify => "phone_verify",
            SmsKind::Test => "test",
        }
    }
}

/// Whose provider account sends a message.
#[derive(Clone, PartialEq, Eq)]
pub enum SmsAccount {
    /// The platform's, from the server configuration.
    Platform,
    /// The tenant's own (its three `byok_provider_*` settings).
    Own {
        account_sid: String,
        auth_token: String,
        messaging_service_sid: String,
    },
}

/// One text message to deliver. Never persisted: a code is worth minutes, so a message lost
/// with a crash is asked for again rather than sent late.
#[derive(Clone)]
pub struct SmsJob {
    pub id: Uuid,
    pub tenant: TenantId,
    pub tenant_slug: String,
    pub tenant_name: String,
    /// E.164.
    pub to: String,
    pub kind: SmsKind,
    /// The code the message carries (none for a test).
    pub code: Option<String>,
    pub account: SmsAccount,
}

impl std::fmt::Debug for SmsJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The number, the code and the account's token stay out of every log.
        f.debug_struct("SmsJob")
            .field("id", &self.id)
            .field("tenant", &self.tenant)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// The delivery side, as tenant actors see it. Submitting must not block: it hands the job
/// over (a channel send) and returns.
pub trait Outbound: Send + Sync + 'static {
    fn submit(&self, job: MailJob);
    fn submit_sms(&self, job: SmsJob);
    /// Withdraws submitted messages (their account was erased): an attempt not yet made is
    /// not made.
    fn withdraw(&self, ids: &[Uuid]);
    /// Tells webhook delivery that `tenant` has deliveries due at `at` (written and durable).
    fn webhooks_due(&self, tenant: TenantId, at: time::OffsetDateTime);
}

/// The messages withdrawn after they were submitted, shared by the tenant actors (who add)
/// and delivery (who checks before each attempt). An entry is forgotten when delivery sees it,
/// or after a day (the message was delivered or given up on by then).
#[derive(Clone, Default)]
pub struct Withdrawn(Arc<Mutex<HashMap<Uuid, Instant>>>);

/// How long an unseen withdrawal is remembered.
const WITHDRAWN_FOR: Duration = Duration::from_secs(24 * 3600);

impl Withdrawn {
    pub fn add(&self, ids: &[Uuid]) {
        let now = Instant::now();
        if let Ok(mut map) = self.0.lock() {
            map.retain(|_, at| now.duration_since(*at) < WITHDRAWN_FOR);
            map.extend(ids.iter().map(|id| (*id, now)));
        }
    }

    /// Whether `id` was withdrawn (and forgets it).
    pub fn take(&self, id: Uuid) -> bool {
        self.0.lock().is_ok_and(|mut map| map.remove(&id).is_some())
    }
}

/// Delivery through tokio channels: the binary's postman and SMS courier own the receiving
/// ends.
#[derive(Clone)]
pub struct ChannelOutbound {
    pub mail: tokio::sync::mpsc::UnboundedSender<MailJob>,
    pub sms: tokio::sync::mpsc::UnboundedSender<SmsJob>,
    pub withdrawn: Withdrawn,
    /// The webhook worker's wake-ups: a tenant and when its next delivery is due.
    pub webhooks: tokio::sync::mpsc::UnboundedSender<(TenantId, time::OffsetDateTime)>,
}

impl Outbound for ChannelOutbound {
    fn submit(&self, job: MailJob) {
        if self.mail.send(job).is_err() {
            tracing::warn!("mail delivery is stopped; the message stays queued");
        }
    }

    fn submit_sms(&self, job: SmsJob) {
        if self.sms.send(job).is_err() {
            tracing::warn!("text message delivery is stopped; the message is dropped");
        }
    }

    fn withdraw(&self, ids: &[Uuid]) {
        self.withdrawn.add(ids);
    }

    fn webhooks_due(&self, tenant: TenantId, at: time::OffsetDateTime) {
        if self.webhooks.send((tenant, at)).is_err() {
            tracing::warn!(tenant = %tenant, "webhook delivery is stopped; deliveries stay queued");
        }
    }
}
