//! The command surface of minor protection: `GuardianCmd` (what the child's and the
//! guardian's pages ask) and `guardian_cmd`, which carries one out.

use tessera_storage::sha256;
use time::OffsetDateTime;

use super::{
    records::GuardianPurpose,
    values::{ConsentView, GuardianAnswer, PortalAction},
};
use crate::{
    error::TenantError,
    outbound::MailJob,
    tenant::{audit::AuditContext, messages::Credential, records::ChildStatus, state::TenantState},
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

impl TenantState {
    pub fn guardian_cmd(
        &mut self,
        cmd: GuardianCmd,
        ip: std::net::IpAddr,
        ctx: &AuditContext,
    ) -> Result<(GuardianAnswer, Vec<MailJob>), TenantError> {
        self.guardian_call(ip)?;
        let now = OffsetDateTime::now_utc();
        match cmd {
            GuardianCmd::Request {
                email,
                credential,
                password_ok,
                guardian,
                ip,
            } => self.request_consent(&email, (&credential, password_ok), &guardian, ip, ctx),
            GuardianCmd::ConsentView { token } => {
                let mut batch = self.cx.store.batch();
                let found = self.guardian_link(&mut batch, &token, GuardianPurpose::Consent, now);
                self.cx.store.apply(batch)?;
                let (rec, child) = found?;
                if child.guardian.as_ref().map(|g| g.status) != Some(ChildStatus::Held) {
                    return Err(TenantError::GuardianInvalid);
                }
                let m = &self.cx.settings.minors;
                let view = ConsentView {
                    tenant: self.guardian_tenant(),
                    child_email: child.email.clone().unwrap_or_default(),
                    controller: self.controller(),
                    lawful_basis: m.lawful_basis.clone(),
                    purposes: m.purposes.clone(),
                    data_categories: m.data_categories.clone(),
                    retention: m.retention.clone(),
                    expires_at: rec.expires_at,
                    wallet_available: self.guardian_wallet_available(now),
                    adult_proven: rec.adult_proven,
                };
                Ok((GuardianAnswer::Consent(Box::new(view)), Vec::new()))
            }
            GuardianCmd::Consent { token, accept } => self.answer_consent(&token, accept, ctx),
            GuardianCmd::WalletBegin { token, ip } => {
                let mut batch = self.cx.store.batch();
                let found = self.guardian_link(&mut batch, &token, GuardianPurpose::Consent, now);
                self.cx.store.apply(batch)?;
                let (_, child) = found?;
                if child.guardian.as_ref().map(|g| g.status) != Some(ChildStatus::Held) {
                    return Err(TenantError::GuardianInvalid);
                }
                let link = sha256(token.as_bytes());
                let begun = self.eudi_begin(
                    crate::tenant::eudi::EudiPurpose::Age,
                    None,
                    ip,
                    now,
                    Some(link),
                )?;
                Ok((GuardianAnswer::WalletBegun(Box::new(begun)), Vec::new()))
            }
            GuardianCmd::PortalView { token } => {
                let mut batch = self.cx.store.batch();
                let found = self.guardian_link(&mut batch, &token, GuardianPurpose::Portal, now);
                self.cx.store.apply(batch)?;
                let (_, child) = found?;
                let view = self.portal_view(&child, None)?;
                Ok((GuardianAnswer::Portal(Box::new(view)), Vec::new()))
            }
            GuardianCmd::Portal {
                token,
                action,
                confirm_nonce,
            } => self.portal_action(&token, action, confirm_nonce, ctx),
            GuardianCmd::Download { token } => {
                let mut batch = self.cx.store.batch();
                let found = self.guardian_link(&mut batch, &token, GuardianPurpose::Export, now);
                self.cx.store.apply(batch)?;
                let (rec, child) = found?;
                let sealed = rec.archive.ok_or(TenantError::GuardianInvalid)?;
                let plain = self
                    .cx
                    .master_key
                    .open(&self.cx.user_aad(child.id, "guardian_export"), &sealed)?;
                let archive = serde_json::from_slice(&plain)
                    .map_err(|e| TenantError::Internal(e.to_string()))?;
                Ok((GuardianAnswer::Archive(archive), Vec::new()))
            }
        }
    }
}
