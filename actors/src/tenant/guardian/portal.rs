//! The guardian's portal: what it shows, and its actions (withdraw consent, export the
//! child's data, erase the account with a confirmation); and the portal link mailed on
//! request, answered alike whether or not a link was sent.

use crate::tenant::ctx::TenantCtx;
use crate::tenant::guardian::memory::Guardian;

use tessera_storage::{random_token, sha256, Kind};
use time::OffsetDateTime;
use uuid::Uuid;

use super::{
    records::{
        GuardianPurpose, GuardianTokenRecord, CONFIRM_TTL, EXPORTS_PER_LINK, EXPORT_TTL, PORTAL_TTL,
    },
    values::{GuardianAnswer, PortalAction, PortalView},
};
use crate::error::GuardianError;
use crate::{
    error::TenantError,
    outbound::{MailJob, MailKind},
    tenant::{
        audit::AuditContext,
        effects::Effects,
        records::{ChildStatus, UserRecord},
    },
};

impl Guardian {
    pub(super) fn portal_view(
        &self,
        cx: &TenantCtx,
        child: &UserRecord,
        confirm_token: Option<String>,
    ) -> Result<PortalView, TenantError> {
        let g = child
            .guardian
            .as_ref()
            .ok_or(TenantError::Guardian(GuardianError::Invalid))?;
        let actions = match g.status {
            ChildStatus::Active => vec![
                PortalAction::Withdraw,
                PortalAction::Export,
                PortalAction::Delete,
            ],
            ChildStatus::Held | ChildStatus::Blocked => {
                vec![PortalAction::Export, PortalAction::Delete]
            }
        };
        Ok(PortalView {
            tenant: self.guardian_tenant(cx),
            child_email: child.email.clone().unwrap_or_default(),
            status: g.status,
            registered_at: child.created_at,
            last_login_at: child.last_sign_in_at,
            data_categories: g
                .receipt
                .as_ref()
                .map(|r| r.data_categories.clone())
                .unwrap_or_else(|| cx.settings.minors.data_categories.clone()),
            receipt: g.receipt.clone(),
            controller: g
                .receipt
                .as_ref()
                .map(|r| r.controller.clone())
                .unwrap_or_else(|| self.controller(cx)),
            actions,
            confirm_token,
        })
    }

    /// A portal action by the guardian who consented.
    pub(super) fn portal_action(
        &mut self,
        cx: &mut TenantCtx,
        token: &str,
        action: PortalAction,
        confirm_nonce: Option<String>,
        ctx: &AuditContext,
    ) -> Result<(GuardianAnswer, Vec<MailJob>), TenantError> {
        let now = OffsetDateTime::now_utc();
        let mut fx = cx.effects();
        let (mut rec, mut child) =
            match self.guardian_link(cx, &mut fx.batch, token, GuardianPurpose::Portal, now) {
                Ok(found) => found,
                Err(e) => return cx.fail(fx, e),
            };
        let portal_view = self.portal_view(cx, &child, None)?;
        if !portal_view.actions.contains(&action) {
            return Err(TenantError::Guardian(GuardianError::ConsentNotPending));
        }
        let hash = sha256(token.as_bytes());
        let ids = serde_json::json!({ "user_id": child.id, "action": action.as_str() });
        match action {
            PortalAction::Withdraw => {
                let Some(mut g) = child.guardian.clone() else {
                    return Err(TenantError::Guardian(GuardianError::Invalid));
                };
                g.status = ChildStatus::Held;
                g.status_at = now;
                child.guardian = Some(g);
                fx.batch.put(child.id.as_bytes(), &child)?;
                let ended = cx.revoke_user_sessions(&mut fx.batch, child.id, None)?;
                if ended > 0 {
                    cx.emit_session_revoked(
                        &mut fx.batch,
                        child.id,
                        crate::tenant::webhooks::Revoked::All,
                        "guardian_consent_withdrawn",
                    )?;
                }
                cx.emit_event(
                    &mut fx.batch,
                    "guardian.consent_withdrawn",
                    serde_json::json!({ "user_id": child.id }),
                )?;
                cx.audit_into(&mut fx.batch, "guardian.consent_withdrawn", ctx, ids)?;
                let mail = cx.commit(fx)?;
                let view = self.portal_view(cx, &child, None)?;
                Ok((GuardianAnswer::Portal(Box::new(view)), mail))
            }
            PortalAction::Export => {
                if rec.exports >= EXPORTS_PER_LINK {
                    let left = (rec.expires_at - now).whole_seconds().max(1);
                    return Err(TenantError::RateLimited {
                        retry_after: u64::try_from(left).unwrap_or(1),
                    });
                }
                rec.exports += 1;
                fx.batch.put(&hash, &rec)?;
                let archive = cx.export_of(&child, now)?;
                let plain = serde_json::to_vec(&archive)
                    .map_err(|e| TenantError::Internal(e.to_string()))?;
                let sealed = cx
                    .master_key
                    .seal(&cx.user_aad(child.id, "guardian_export"), &plain)?;
                let download = self.put_guardian_token(
                    cx,
                    &mut fx.batch,
                    &GuardianTokenRecord {
                        purpose: GuardianPurpose::Export,
                        child: child.id,
                        guardian: rec.guardian.clone(),
                        expires_at: now + EXPORT_TTL,
                        confirm: None,
                        archive: Some(sealed),
                        adult_proven: false,
                        exports: 0,
                    },
                )?;
                let link = cx.link("v1/guardian/export", &download);
                cx.queue_mail(
                    &mut fx,
                    &rec.guardian,
                    MailKind::GuardianExport {
                        link,
                        child_email: child.email.clone().unwrap_or_default(),
                    },
                )?;
                cx.audit_into(&mut fx.batch, "guardian.data_exported", ctx, ids)?;
                let mail = cx.commit(fx)?;
                Ok((GuardianAnswer::Portal(Box::new(portal_view)), mail))
            }
            PortalAction::Delete => {
                let confirmed = match (&rec.confirm, &confirm_nonce) {
                    (Some((want, until)), Some(nonce)) => {
                        *until > now.unix_timestamp()
                            && tessera_storage::ct_eq(
                                want.as_bytes(),
                                hex::encode(sha256(nonce.as_bytes())).as_bytes(),
                            )
                    }
                    _ => false,
                };
                if confirm_nonce.is_some() && !confirmed {
                    return Err(TenantError::Guardian(GuardianError::Invalid));
                }
                if !confirmed {
                    let nonce = random_token(32);
                    rec.confirm = Some((
                        hex::encode(sha256(nonce.as_bytes())),
                        (now + CONFIRM_TTL).unix_timestamp(),
                    ));
                    fx.batch.put(&hash, &rec)?;
                    cx.commit(fx)?;
                    let view = self.portal_view(cx, &child, Some(nonce))?;
                    return Ok((GuardianAnswer::Portal(Box::new(view)), Vec::new()));
                }
                fx.batch.remove(Kind::GuardianToken, &hash);
                cx.erase_child(&mut fx, &child)?;
                // The record of the erasure names the erased id and nothing else.
                cx.audit_into(
                    &mut fx.batch,
                    "guardian.account_deleted",
                    ctx,
                    serde_json::json!({ "deleted_user_id": child.id }),
                )?;
                let mail = cx.commit(fx)?;
                Ok((
                    GuardianAnswer::Deleted {
                        tenant: self.guardian_tenant(cx),
                    },
                    mail,
                ))
            }
        }
    }

    /// `POST /v1/guardian/management-link`: a portal link to `guardian` when they consented
    /// for the account at `child_email`; otherwise as much written, nothing sent.
    pub fn guardian_management_link(
        &mut self,
        cx: &mut TenantCtx,
        child_email: &str,
        guardian: &str,
        ip: std::net::IpAddr,
        ctx: &AuditContext,
    ) -> Result<Vec<MailJob>, TenantError> {
        // Before any lookup: the refusal tells nothing about the addresses.
        self.guardian_call(ip)?;
        let now = OffsetDateTime::now_utc();
        let child = cx.user_by_email(child_email)?.filter(|c| {
            c.guardian
                .as_ref()
                .is_some_and(|g| g.consented_by.as_deref() == Some(guardian))
        });
        let rec = GuardianTokenRecord {
            purpose: GuardianPurpose::Portal,
            child: child.as_ref().map_or_else(Uuid::now_v7, |c| c.id),
            guardian: guardian.to_owned(),
            expires_at: now + PORTAL_TTL,
            confirm: None,
            archive: None,
            adult_proven: false,
            exports: 0,
        };
        let allowed = child
            .as_ref()
            .is_some_and(|c| self.guardian_mail_allowed(cx, c.id, guardian));
        let Some(child) = child.filter(|_| allowed) else {
            let records = [serde_json::to_value(&rec)]
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| TenantError::Internal(e.to_string()))?;
            let kind = MailKind::GuardianPortal {
                link: cx.link("v1/guardian/portal", &cx.link_token()),
                child_email: child_email.to_owned(),
            };
            cx.write_decoy(&cx.decoy_of(guardian, kind, &records)?)?;
            return Ok(Vec::new());
        };
        let mut fx = cx.effects();
        let token = self.put_guardian_token(cx, &mut fx.batch, &rec)?;
        fx.locale = child.locale.clone();
        cx.queue_mail(
            &mut fx,
            guardian,
            MailKind::GuardianPortal {
                link: cx.link("v1/guardian/portal", &token),
                child_email: child_email.to_owned(),
            },
        )?;
        cx.audit_into(
            &mut fx.batch,
            "guardian.management_link_sent",
            ctx,
            serde_json::json!({ "user_id": child.id }),
        )?;
        cx.commit(fx)
    }

    /// Portal links are spaced like other mail to one account.
    fn guardian_mail_allowed(&mut self, cx: &mut TenantCtx, child: Uuid, guardian: &str) -> bool {
        let mut seed = child.as_bytes().to_vec();
        seed.extend_from_slice(guardian.as_bytes());
        let digest = sha256(&seed);
        let mut key = [0u8; 16];
        key.copy_from_slice(&digest[..16]);
        cx.mail_allowed(Uuid::from_bytes(key))
    }
}

// What this flow lends the other flows and the credential inventory: kernel methods, reached
// through the context.
impl TenantCtx {
    /// Stages the erasure of a minor's account (with its guardian links, see
    /// `erase_user`); the messages queued about it are withdrawn from delivery.
    pub(super) fn erase_child(
        &mut self,
        fx: &mut Effects,
        child: &UserRecord,
    ) -> Result<(), TenantError> {
        let withdrawn = self.erase_user(fx, child)?;
        self.runtime.outbound.withdraw(&withdrawn);
        Ok(())
    }
}
