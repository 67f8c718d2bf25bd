//! The command surface of minor protection: `GuardianCmd` (what the child's and the
//! guardian's pages ask) and `guardian_cmd`, which carries one out up to the wallet
//! (`GuardianStep`).

use tessera_storage::sha256;
use time::OffsetDateTime;

use super::{
    records::GuardianPurpose,
    values::{ConsentView, GuardianAnswer, PortalAction},
};
use crate::error::GuardianError;
use crate::{
    error::TenantError,
    outbound::MailJob,
    tenant::{
        audit::AuditContext, ctx::TenantCtx, guardian::memory::Guardian, messages::Credential,
        records::ChildStatus,
    },
};

/// A guardian command. The HTTP layer checks the forms' CSRF values before it sends one.
#[derive(Clone)]
pub enum GuardianCmd {
    /// A held child asks `guardian` (normalised) for consent, after its password was checked
    /// off the actor (`credential` from `LoginBegin`).
    Request {
        email: String,
        credential: Credential,
        password_ok: bool,
        guardian: String,
        ip: std::net::IpAddr,
    },
    /// The consent page's look at its link (nothing is used).
    ConsentView { token: String },
    /// The guardian's answer.
    Consent { token: String, accept: bool },
    /// The guardian proves adulthood with the EU wallet: an age check tied to the link.
    WalletBegin { token: String, ip: std::net::IpAddr },
    /// The portal's look at its link.
    PortalView { token: String },
    /// A portal action; a deletion without `confirm_nonce` answers the nonce to send.
    Portal {
        token: String,
        action: PortalAction,
        confirm_nonce: Option<String>,
    },
    /// An export's download.
    Download { token: String },
}

impl std::fmt::Debug for GuardianCmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GuardianCmd::Request { .. } => "GuardianCmd::Request",
            GuardianCmd::ConsentView { .. } => "GuardianCmd::ConsentView",
            GuardianCmd::Consent { .. } => "GuardianCmd::Consent",
            GuardianCmd::WalletBegin { .. } => "GuardianCmd::WalletBegin",
            GuardianCmd::PortalView { .. } => "GuardianCmd::PortalView",
            GuardianCmd::Portal { .. } => "GuardianCmd::Portal",
            GuardianCmd::Download { .. } => "GuardianCmd::Download",
        })
    }
}

impl GuardianCmd {
    /// Whether the command only reads.
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            GuardianCmd::ConsentView { .. }
                | GuardianCmd::PortalView { .. }
                | GuardianCmd::Download { .. }
        )
    }
}

impl Guardian {
    /// Carries out one command of the guardian's pages, up to the wallet: a wallet age check
    /// proves the link here and is begun by the wallet flow (`TenantState::guardian_cmd`).
    pub(in crate::tenant) fn guardian_cmd(
        &mut self,
        cx: &mut TenantCtx,
        cmd: GuardianCmd,
        ip: std::net::IpAddr,
        ctx: &AuditContext,
    ) -> Result<GuardianStep, TenantError> {
        self.guardian_call(ip)?;
        let now = OffsetDateTime::now_utc();
        let answered = match cmd {
            GuardianCmd::WalletBegin { token, ip } => {
                let mut batch = cx.store.batch();
                let found =
                    self.guardian_link(cx, &mut batch, &token, GuardianPurpose::Consent, now);
                cx.store.apply(batch)?;
                let (_, child) = found?;
                if child.guardian.as_ref().map(|g| g.status) != Some(ChildStatus::Held) {
                    return Err(TenantError::Guardian(GuardianError::Invalid));
                }
                return Ok(GuardianStep::AgeCheck {
                    link: sha256(token.as_bytes()),
                    ip,
                    now,
                });
            }
            GuardianCmd::Request {
                email,
                credential,
                password_ok,
                guardian,
                ip,
            } => self.request_consent(cx, &email, (&credential, password_ok), &guardian, ip, ctx),
            GuardianCmd::ConsentView { token } => {
                let mut batch = cx.store.batch();
                let found =
                    self.guardian_link(cx, &mut batch, &token, GuardianPurpose::Consent, now);
                cx.store.apply(batch)?;
                let (rec, child) = found?;
                if child.guardian.as_ref().map(|g| g.status) != Some(ChildStatus::Held) {
                    return Err(TenantError::Guardian(GuardianError::Invalid));
                }
                let m = &cx.settings.minors;
                let view = ConsentView {
                    tenant: self.guardian_tenant(cx),
                    child_email: child.email.clone().unwrap_or_default(),
                    controller: self.controller(cx),
                    lawful_basis: m.lawful_basis.clone(),
                    purposes: m.purposes.clone(),
                    data_categories: m.data_categories.clone(),
                    retention: m.retention.clone(),
                    expires_at: rec.expires_at,
                    wallet_available: cx.guardian_wallet_available(now),
                    adult_proven: rec.adult_proven,
                    translations: m.translations.clone(),
                };
                Ok((GuardianAnswer::Consent(Box::new(view)), Vec::new()))
            }
            GuardianCmd::Consent { token, accept } => self.answer_consent(cx, &token, accept, ctx),
            GuardianCmd::PortalView { token } => {
                let mut batch = cx.store.batch();
                let found =
                    self.guardian_link(cx, &mut batch, &token, GuardianPurpose::Portal, now);
                cx.store.apply(batch)?;
                let (_, child) = found?;
                let view = self.portal_view(cx, &child, None)?;
                Ok((GuardianAnswer::Portal(Box::new(view)), Vec::new()))
            }
            GuardianCmd::Portal {
                token,
                action,
                confirm_nonce,
            } => self.portal_action(cx, &token, action, confirm_nonce, ctx),
            GuardianCmd::Download { token } => {
                let mut batch = cx.store.batch();
                let found =
                    self.guardian_link(cx, &mut batch, &token, GuardianPurpose::Export, now);
                cx.store.apply(batch)?;
                let (rec, child) = found?;
                let sealed = rec
                    .archive
                    .ok_or(TenantError::Guardian(GuardianError::Invalid))?;
                let plain = cx
                    .master_key
                    .open(&cx.user_aad(child.id, "guardian_export"), &sealed)?;
                let archive = serde_json::from_slice(&plain)
                    .map_err(|e| TenantError::Internal(e.to_string()))?;
                Ok((GuardianAnswer::Archive(archive), Vec::new()))
            }
        };
        answered.map(|(answer, mail)| GuardianStep::Answered(answer, mail))
    }
}

/// Where a guardian command ends: answered by the guardian flow, or a wallet age check for a
/// proven consent link, which the wallet flow begins.
pub(in crate::tenant) enum GuardianStep {
    Answered(GuardianAnswer, Vec<MailJob>),
    AgeCheck {
        /// The consent link's token's SHA-256.
        link: [u8; 32],
        ip: std::net::IpAddr,
        now: OffsetDateTime,
    },
}
