//! What tenant actors hand to the outside world: mail to deliver.
//!
//! A tenant actor writes each message into its own persisted queue (sealed, in the same batch
//! as the change that caused it), then submits it here. The delivery side (in the binary) sends
//! it with retries and reports back with `TenantMsg::MailSettled`, which removes it from the
//! queue. After a restart the actor submits whatever is still queued: delivery is at least
//! once, and nothing acknowledged is lost.

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
}

impl MailKind {
    /// A stable name for logs and the outbox listing.
    pub fn name(&self) -> &'static str {
        match self {
            MailKind::VerifyEmail { .. } => "verify_email",
            MailKind::AccountExists { .. } => "account_exists",
            MailKind::PasswordReset { .. } => "password_reset",
            MailKind::PasswordChanged => "password_changed",
            MailKind::MagicLink { .. } => "magic_link",
            MailKind::EmailOtp { .. } => "email_otp",
            MailKind::StepUpEmailOtp { .. } => "step_up_email_otp",
            MailKind::StepUpMagicLink { .. } => "step_up_magic_link",
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

/// The delivery side, as tenant actors see it. `submit` must not block: it hands the job over
/// (a channel send) and returns.
pub trait Outbound: Send + Sync + 'static {
    fn submit(&self, job: MailJob);
}

/// Delivery through a tokio channel: the binary's postman owns the receiving end.
#[derive(Clone)]
pub struct ChannelOutbound(pub tokio::sync::mpsc::UnboundedSender<MailJob>);

impl Outbound for ChannelOutbound {
    fn submit(&self, job: MailJob) {
        if self.0.send(job).is_err() {
            tracing::warn!("mail delivery is stopped; the message stays queued");
        }
    }
}
